import Foundation
import XCTest
@testable import Torch

/// Autograd features (retainGrad, hooks, backward(gradient:), accumulation, autograd.grad with
/// createGraph, grad modes, detach, in-place ops and the version counter, error messages) and the
/// repr of real tensors against PyTorch (Tests/Fixtures/core_misc.json, kind "repr").
final class AutogradFeatureTests: XCTestCase {
    static let cases: [[String: Any]] = (try? loadFixtureCases("core_misc")) ?? []

    private func leaf(_ values: [Double]) -> Tensor { torch.tensor(values, dtype: .float64, requiresGrad: true) }

    // MARK: retainGrad, hooks, backward(gradient:), accumulation

    func testRetainGrad() {
        let x = leaf([1, 2, 3])
        let y = x * 3
        y.retainGrad()
        XCTAssertTrue(y.retainsGrad)
        let z = (y * y).sum()
        z.backward()
        assertClose(y.grad!, [6, 12, 18])
        assertClose(x.grad!, [18, 36, 54])
        XCTAssertNil((x * 2).grad, "non-leaf without retainGrad has no grad")
        // retainGrad on a leaf is a no-op; its grad is kept anyway.
        x.retainGrad()
        XCTAssertFalse(x.retainsGrad)
    }

    func testHooks() {
        // Leaf hook replaces the gradient before accumulation.
        let x = leaf([1, 2])
        x.registerHook { $0 * 2 }
        (x * x).sum().backward()
        assertClose(x.grad!, [4, 8])
        // Non-leaf hook observes and can replace the gradient flowing on.
        let a = leaf([1, 2, 3])
        let b = a * 2
        var seen: Tensor?
        b.registerHook { g in seen = g.detach(); return nil }
        let c = b * b
        c.registerHook { g in g * 10 }
        c.sum().backward()
        assertClose(seen!, [40, 80, 120])            // d(sum 10 * b^2)/db = 20 b
        assertClose(a.grad!, [80, 160, 240])
        let p = leaf([1])
        let q = p * 5
        q.registerHook { torch.zerosLike($0) }
        q.sum().backward()
        assertClose(p.grad!, [0])
    }

    func testBackwardWithGradient() {
        let x = leaf([1, 2, 3])
        let y = x * x
        y.backward(torch.tensor([1, 0.5, 2], dtype: .float64))
        assertClose(x.grad!, [2, 2, 12])
        let m = torch.tensor([[1.0, 2], [3, 4]], requiresGrad: true)
        let n = m.exp()
        n.backward(torch.onesLike(n))
        assertClose(m.grad!, n.detach(), atol: 1e-6)
    }

    func testAccumulationAcrossBackwardCalls() {
        let x = leaf([1, 2])
        let y = (x * x * x).sum()
        y.backward(retainGraph: true)
        assertClose(x.grad!, [3, 12])
        y.backward()
        assertClose(x.grad!, [6, 24])
        // A new graph accumulates into the same .grad until it is cleared.
        (x * 2).sum().backward()
        assertClose(x.grad!, [8, 26])
        x.grad = nil
        (x * 2).sum().backward()
        assertClose(x.grad!, [2, 2])
        // Two paths into the same leaf add up.
        let z = leaf([3])
        ((z * 2) + (z * z)).sum().backward()
        assertClose(z.grad!, [8])
    }

    func testAutogradGradDoesNotTouchGrad() {
        let x = leaf([1, 2])
        let y = (x * x).sum()
        let g = torch.autograd.grad([y], [x])[0]!
        assertClose(g, [2, 4])
        XCTAssertNil(x.grad)
        // Several inputs; allowUnused gives nil for an unused one.
        let a = leaf([2]), b = leaf([5]), unused = leaf([1])
        let r = torch.autograd.grad([(a * b).sum()], [a, b, unused], allowUnused: true)
        assertClose(r[0]!, [5])
        assertClose(r[1]!, [2])
        XCTAssertNil(r[2])
        // gradOutputs for a non-scalar output.
        let v = a * 3
        assertClose(torch.autograd.grad([v], [a], gradOutputs: [torch.tensor([2.0], dtype: .float64)])[0]!, [6])
    }

    // MARK: Second derivatives (createGraph)

    /// d²/dx² of sum(f(x)) by autograd twice, against the analytic second derivative.
    private func assertSecondDerivative(_ f: (Tensor) -> Tensor, _ expected: (Tensor) -> Tensor, _ name: String,
                                        file: StaticString = #filePath, line: UInt = #line) {
        let x = torch.tensor([-1.3, -0.4, 0.3, 0.9, 1.7], dtype: .float64, requiresGrad: true)
        let g = torch.autograd.grad([f(x).sum()], [x], createGraph: true)[0]!
        XCTAssertTrue(g.requiresGrad, "\(name): first derivative must be differentiable", file: file, line: line)
        let g2 = torch.autograd.grad([g.sum()], [x])[0]!
        assertClose(g2, torch.noGrad { expected(x.detach()) }, atol: 1e-10, rtol: 1e-10, name, file: file, line: line)
    }

    func testSecondDerivatives() {
        assertSecondDerivative({ $0 * $0 * $0 }, { $0 * 6 }, "mul")
        assertSecondDerivative({ $0.exp() }, { $0.exp() }, "exp")
        assertSecondDerivative({ $0.sin() }, { -$0.sin() }, "sin")
        assertSecondDerivative({ $0.tanh() }, { x in let t = x.tanh(); return -2 * t * (1 - t * t) }, "tanh")
        assertSecondDerivative({ $0.sigmoid() }, { x in let s = x.sigmoid(); return s * (1 - s) * (1 - 2 * s) }, "sigmoid")
        assertSecondDerivative({ $0.pow(3) }, { $0 * 6 }, "pow3")
        assertSecondDerivative({ $0.pow(2) }, { torch.fullLike($0, 2) }, "pow2")
        assertSecondDerivative({ ($0 * $0 + 1).pow(1.5) }, { x in
            let u = x * x + 1
            return 3 * u.pow(0.5) + 3 * x * x * u.pow(-0.5)
        }, "pow1.5")
        assertSecondDerivative({ torch.pow(2.0, $0) }, { torch.pow(2.0, $0) * 0.4804530139182014 }, "rpow")
        assertSecondDerivative({ $0.exp().pow(torch.tensor([2.0], dtype: .float64)) }, { ($0 * 2).exp() * 4 }, "powTensor")
        assertSecondDerivative({ $0 / ($0 * $0 + 1) }, { x in
            let d = x * x + 1
            return 2 * x * (x * x - 3) / (d * d * d)
        }, "div")
        // Mixed partials: d/dy (d(x*y)/dx) = 1, d/dy (d(x²y³)/dx) = 6xy².
        let x = torch.tensor([1.5], dtype: .float64, requiresGrad: true), y = torch.tensor([-2.0], dtype: .float64, requiresGrad: true)
        let gx = torch.autograd.grad([(x * x * y * y * y).sum()], [x], createGraph: true)[0]!
        assertClose(torch.autograd.grad([gx.sum()], [y])[0]!, [6 * 1.5 * 4])
        // Third derivative of x^4 = 24x.
        let z = torch.tensor([0.7], dtype: .float64, requiresGrad: true)
        let d1 = torch.autograd.grad([z.pow(4).sum()], [z], createGraph: true)[0]!
        let d2 = torch.autograd.grad([d1.sum()], [z], createGraph: true)[0]!
        let d3 = torch.autograd.grad([d2.sum()], [z])[0]!
        assertClose(d3, [24 * 0.7], atol: 1e-10)
        // backward(createGraph:) leaves a differentiable .grad.
        let w = torch.tensor([0.5, 2.0], dtype: .float64, requiresGrad: true)
        (w * w * w).sum().backward(createGraph: true)
        XCTAssertNotNil(w.grad?.gradFn)
        let hess = torch.autograd.grad([w.grad!.sum()], [w])[0]!
        assertClose(hess, [3, 12])
    }

    /// Numerical check of second derivatives: the Jacobian of autograd's first derivative (built
    /// with createGraph) against central differences of that first derivative.
    private func gradgradcheck(_ x0: Tensor, eps: Double = 1e-6, tol: Double = 1e-5, name: String = "", _ f: @escaping (Tensor) -> Tensor,
                               file: StaticString = #filePath, line: UInt = #line) {
        let x = x0.double().detach().contiguousCopy().requiresGrad_()
        func firstGrad(_ t: Tensor) -> Tensor { torch.autograd.grad([f(t).sum()], [t], createGraph: true)[0]! }
        let w = torch.randn(x.shape, dtype: .float64, generator: Generator().manualSeed(3))
        let analytic = torch.autograd.grad([(firstGrad(x) * w).sum()], [x])[0]!.toArray(as: Double.self)
        let p = x.storage.data.assumingMemoryBound(to: Double.self)
        for i in 0..<x.numel {
            let orig = p[i]
            p[i] = orig + eps
            let plus = (firstGrad(x) * w).sum().item()
            p[i] = orig - eps
            let minus = (firstGrad(x) * w).sum().item()
            p[i] = orig
            let numeric = (plus - minus) / (2 * eps)
            if !(Swift.abs(numeric - analytic[i]) <= tol * (1 + Swift.abs(numeric))) {
                XCTFail("gradgradcheck \(name) element \(i): analytic \(analytic[i]) vs numeric \(numeric)", file: file, line: line)
                return
            }
        }
    }

    func testGradgradcheck() {
        let x = torch.tensor([[0.3, -1.2, 0.8], [1.5, 0.4, -0.6]], dtype: .float64)
        gradgradcheck(x, name: "$0 * $0 * $0") { $0 * $0 * $0 }
        gradgradcheck(x, name: "$0.exp() * $0.sin()") { $0.exp() * $0.sin() }
        gradgradcheck(x, name: "$0.tanh() + $0.sigmoid()") { $0.tanh() + $0.sigmoid() }
        gradgradcheck(x.abs() + 0.5, name: "$0.pow($0)") { $0.pow($0) }
        gradgradcheck(x.abs() + 0.5, name: "$0.log() / $0.sqrt()") { $0.log() / $0.sqrt() }
        gradgradcheck(x, name: "$0.softplusLike()") { $0.softplusLike() }
        gradgradcheck(x, name: "$0.var(dim: 1).reshape(-1) * 1") { $0.var(dim: 1).reshape(-1) * 1 }
        gradgradcheck(x, name: "$0.std(dim: [0])") { $0.std(dim: [0]) }
        gradgradcheck(x, name: "$0.logsumexp(dim: 1)") { $0.logsumexp(dim: 1) }
        gradgradcheck(x, name: "$0.cumprod(dim: 1)") { $0.cumprod(dim: 1) }
        gradgradcheck(torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]], dtype: .float64), name: "$0.cumprod(dim: 1)") { $0.cumprod(dim: 1) }
        gradgradcheck(x, name: "$0.prod(dim: 1)") { $0.prod(dim: 1) }
        // One zero per group: the first and second derivatives go through the product of the others.
        let oneZero = torch.tensor([[2.0, 0.0, 3.0], [0.5, -1.0, 1.5]], dtype: .float64)
        gradgradcheck(oneZero, name: "$0.prod(dim: 1) at a zero") { $0.prod(dim: 1) }
        gradgradcheck(oneZero, name: "$0.prod() at a zero") { $0.prod().reshape(1) }
        gradgradcheck(oneZero, name: "$0.prod(dim: 0) at a zero") { $0.prod(dim: 0) }
        gradgradcheck(x, name: "$0.norm(dim: 1)") { $0.norm(dim: 1) }
        gradgradcheck(x, name: "$0.mm($0.t())") { $0.mm($0.t()) }
        gradgradcheck(x, name: "$0.amax(dim: [1]) * $0.sum(dim: 1)") { $0.amax(dim: [1]) * $0.sum(dim: 1) }
        gradgradcheck(x, name: "torch.where($0 .> 0, $0 * $0, -$0.pow(3))") { torch.where($0 .> 0, $0 * $0, -$0.pow(3)) }
        gradgradcheck(x, name: "$0.clamp(min: -0.5, max: 1.0).pow(2)") { $0.clamp(min: -0.5, max: 1.0).pow(2) }
        gradgradcheck(x, name: "torch.maximum($0, $0 * 0.5 + 0.3).pow(2)") { torch.maximum($0, $0 * 0.5 + 0.3).pow(2) }
    }

    // MARK: Grad modes, detach, requiresGrad

    func testGradModes() {
        let x = leaf([1, 2])
        let y = torch.noGrad { x * 2 }
        XCTAssertFalse(y.requiresGrad)
        XCTAssertNil(y.gradFn)
        let z = torch.noGrad { torch.enableGrad { x * 2 } }
        XCTAssertEqual(z.gradFn?.name, "MulBackward0")
        XCTAssertTrue(torch.isGradEnabled())
        torch.setGradEnabled(false)
        XCTAssertFalse(torch.isGradEnabled())
        XCTAssertNil((x * 3).gradFn)
        torch.setGradEnabled(true)
        XCTAssertTrue(torch.isGradEnabled())
        XCTAssertNotNil((x * 3).gradFn)
        // noGrad returns values and restores the mode even when nested.
        let v: Int = torch.noGrad { torch.noGrad { 5 } }
        XCTAssertEqual(v, 5)
        XCTAssertTrue(torch.isGradEnabled())
        // Parameter updates in noGrad: in-place on a leaf that requires grad is allowed there.
        torch.noGrad { x.sub_(torch.tensor([0.5, 0.5], dtype: .float64)) }
        assertClose(x, [0.5, 1.5])
        XCTAssertTrue(x.isLeaf && x.requiresGrad)
    }

    func testDetach() {
        let x = leaf([1, 2, 3])
        let y = x * 2
        let d = y.detach()
        XCTAssertFalse(d.requiresGrad)
        XCTAssertNil(d.gradFn)
        XCTAssertTrue(d.storage === y.storage)
        d.fill_(7)                              // shares storage: y sees the change
        XCTAssertEqual(y.toArray(as: Double.self), [7, 7, 7])
        let e = x * 1
        e.detach_()
        XCTAssertTrue(e.isLeaf)
        XCTAssertFalse(e.requiresGrad)
        // Using a detached value cuts the graph: no gradient flows through it.
        let z = (x * y.detach()).sum()
        z.backward()
        assertClose(x.grad!, [7, 7, 7])
    }

    func testRequiresGradAndMessages() {
        let t = torch.tensor([1.0, 2.0])
        XCTAssertTrue(t.requiresGrad_().requiresGrad)
        XCTAssertTrue(t.isLeaf)
        t.requiresGrad_(false)
        XCTAssertFalse(t.requiresGrad)
        // The messages PyTorch 2.x gives (the checks stop with these; preconditions cannot be caught).
        XCTAssertEqual(AutogradMessage.nonLeafRequiresGrad,
                       "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        XCTAssertEqual(AutogradMessage.requiresGradDType, "only Tensors of floating point dtype can require gradients")
        XCTAssertEqual(AutogradMessage.implicitGradNonScalar, "grad can be implicitly created only for scalar outputs")
        XCTAssertEqual(AutogradMessage.leafInPlace, "a leaf Variable that requires grad is being used in an in-place operation.")
        XCTAssertEqual(AutogradMessage.viewOfLeafInPlace, "a view of a leaf Variable that requires grad is being used in an in-place operation.")
        XCTAssertEqual(AutogradMessage.retainGradWithoutGrad, "can't retain_grad on Tensor that has requires_grad=False")
        XCTAssertEqual(AutogradMessage.hookWithoutGrad, "cannot register a hook on a tensor that doesn't require gradient")
        XCTAssertEqual(AutogradMessage.noGradFn(0), "element 0 of tensors does not require grad and does not have a grad_fn")
        XCTAssertEqual(AutogradMessage.shapeMismatch(0, gradient: [2], output: [3]),
                       "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of torch.Size([3]).")
        XCTAssertEqual(AutogradMessage.unusedInput(0),
                       "The differentiated Tensor at index 0 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.")
        XCTAssertTrue(AutogradMessage.backwardTwice.hasPrefix("Trying to backward through the graph a second time"))
    }

    // MARK: In-place ops and the version counter

    func testInPlaceOperatorsAndGradients() {
        let a = torch.tensor([1.0, 2.0, 3.0])
        a += torch.tensor([1.0, 1.0, 1.0]); a -= 0.5; a *= 2; a /= torch.tensor([1.0, 2.0, 5.0])
        assertClose(a, [3, 2.5, 1.4])
        let i = torch.tensor([1, 2])
        i += torch.tensor([3, 4])
        XCTAssertEqual(i.toArray(as: Int.self), [4, 6])
        XCTAssertEqual(i.dtype, .int64)
        // In-place on a non-leaf that requires grad records the op and keeps gradients right.
        let x = leaf([1, 2, 3])
        let y = x * 1
        y += x                 // y = 2x
        XCTAssertEqual(y.gradFn?.name, "AddBackward0")
        y *= x                 // y = 2x²
        XCTAssertEqual(y.gradFn?.name, "MulBackward0")
        y.exp_()               // y = exp(2x²)
        y.sum().backward()
        assertClose(x.grad!, torch.noGrad { (2 * x * x).exp() * 4 * x }, atol: 1e-6, rtol: 1e-9)
        let u = leaf([0.5, 1.5])
        let v = u * 2
        v.pow_(torch.tensor([3.0], dtype: .float64))
        v.sub_(u, alpha: 2)
        v.div_(torch.tensor([2.0], dtype: .float64))
        v.sum().backward()
        assertClose(u.grad!, [(3 * 8 * 0.25 - 2) / 2, (3 * 8 * 2.25 - 2) / 2])
        gradcheck([torch.randn(4)]) { xs in
            let t = xs[0] * 1
            t.mul_(xs[0]); t.add_(xs[0], alpha: 0.5); t.sigmoid_()
            return t
        }
    }

    func testVersionCounter() {
        let x = leaf([1, 2, 3])
        let y = x * 2
        let v0 = y.storage.version
        let saved = SavedTensor(y)                 // what `y * y` saves for its backward
        _ = y * y
        y.add_(torch.tensor([1.0], dtype: .float64))
        XCTAssertEqual(y.storage.version, v0 + 1)
        XCTAssertNotEqual(saved.tensor.storage.version, saved.version, "the modification is detected")
        // The message backward() stops with, as PyTorch 2.x words it: the input's current producer.
        XCTAssertEqual(SavedTensor.modifiedMessage(tensor: saved.tensor, gradFn: y.gradFn, outputNr: 0,
                                                   version: y.storage.version, expected: saved.version),
                       "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [3]], which is output 0 of Add, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        let f = torch.ones(2, 2)
        XCTAssertEqual(SavedTensor.modifiedMessage(tensor: f, gradFn: nil, outputNr: 0, version: 2, expected: 1),
                       "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 2]] is at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        // Every in-place op bumps the version, through any view.
        let t = torch.zeros(4)
        let before = t.storage.version
        t.add_(1); t.mul_(2); t.view(2, 2).fill_(3); t.narrow(0, 1, 2).zero_(); t.copy_(torch.ones(4)); t.clamp_(min: 0)
        XCTAssertEqual(t.storage.version, before + 6)
        // An unmodified saved tensor unpacks fine.
        let ok = SavedTensor(x)
        XCTAssertTrue(ok.unpack(AccumulateGrad(x)) === x)
        XCTAssertEqual(Node(name: "MulBackward0", nextEdges: []).shortName, "Mul")
        XCTAssertEqual(Node(name: "CopySlices", nextEdges: []).shortName, "CopySlices")
    }

    /// Deep graphs and long chains release without recursion (a sanity check next to AutogradBasicsTests).
    func testGraphIsFreedAfterBackward() {
        weak var weakNode: Node?
        do {
            let x = leaf([1])
            let y = x.exp()
            weakNode = y.gradFn
            y.sum().backward()
        }
        XCTAssertNil(weakNode)
    }

    // MARK: Printing real tensors

    static func reprTensor(_ name: String) -> Tensor {
        let x = torch.tensor([1.0, 2.0, 3.0], requiresGrad: true)
        let m = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requiresGrad: true)
        switch name {
        case "leaf": return x
        case "mul": return x * 2
        case "add": return x + 1
        case "sub": return x - 1
        case "rsub": return 1 - x
        case "div": return x / 2
        case "rdiv": return 2 / x
        case "neg": return -x
        case "pow": return x.pow(2)
        case "pow3": return x.pow(3)
        case "rpow": return torch.pow(2, x)
        case "powTensor": return x.pow(x)
        case "exp": return x.exp()
        case "sum": return x.sum()
        case "sumDim": return m.sum(dim: 1)
        case "mean": return x.mean()
        case "view": return x.view(3, 1)
        case "t": return m.t()
        case "select": return x.select(0, 1)
        case "unsqueeze": return x.unsqueeze(0)
        case "mm": return m.mm(m)
        case "addmm": return torch.addmm(torch.tensor([1.0, 1.0]), m, m)
        case "dot": return x.dot(x)
        case "mv": return m.mv(torch.tensor([1.0, -1.0]))
        case "sigmoid": return x.sigmoid()
        case "tanh": return x.tanh()
        case "relu": return x.relu()
        case "clamp": return x.clamp(min: 0, max: 2)
        case "max": return x.max()
        case "std": return x.std()
        case "var": return x.var()
        case "cumsum": return x.cumsum(dim: 0)
        case "norm": return x.norm()
        case "logsumexp": return x.logsumexp(dim: 0)
        case "prod": return x.prod()
        case "amax": return m.amax(dim: [1])
        case "where": return torch.where(x .> 1, x, x * 2)
        case "double": return x.double()
        case "clone": return x.clone()
        case "expand": return x.expand(2, 3)
        case "detach": return (x * 2).detach()
        case "f64leaf": return torch.tensor([1.0, 2.5], dtype: .float64, requiresGrad: true)
        case "f64op": return torch.tensor([1.0, 2.5], dtype: .float64, requiresGrad: true) * 3
        case "int": return torch.tensor([1, 2, 3])
        case "bool": return torch.tensor([true, false])
        case "grad":
            (x * x).sum().backward()
            return x.grad!
        default: fatalError("unknown repr case \(name)")
        }
    }

    func testReprMatchesPyTorch() {
        let cases = Self.cases.filter { ($0["kind"] as! String) == "repr" }
        XCTAssertFalse(cases.isEmpty)
        for c in cases {
            let name = c["name"] as! String
            XCTAssertEqual(Self.reprTensor(name).description, c["expected"] as! String, "repr \(name)")
        }
    }
}

private extension Tensor {
    /// log(1 + exp(x)) from primitive ops (a smooth composite for gradgradcheck).
    func softplusLike() -> Tensor { (exp() + 1).log() }
}
