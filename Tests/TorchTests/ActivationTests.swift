import XCTest
@testable import Torch

/// Activation layers and their F twins against PyTorch, gradchecks, in-place forms, functional extras.
final class ActivationTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("nn_layers").filter { $0["kind"] as? String == kind }
    }

    /// The module for a fixture's (name, params).
    private func module(_ name: String, _ p: [String: Any]) -> nn.Module {
        func d(_ k: String) -> Double { (p[k] as! NSNumber).doubleValue }
        func i(_ k: String) -> Int { (p[k] as! NSNumber).intValue }
        switch name {
        case "relu": return nn.ReLU()
        case "relu6": return nn.ReLU6()
        case "leaky_relu": return nn.LeakyReLU(negativeSlope: d("negative_slope"))
        case "elu": return nn.ELU(alpha: d("alpha"))
        case "selu": return nn.SELU()
        case "celu": return nn.CELU(alpha: d("alpha"))
        case "gelu": return nn.GELU(approximate: p["approximate"] as! String)
        case "silu": return nn.SiLU()
        case "mish": return nn.Mish()
        case "sigmoid": return nn.Sigmoid()
        case "tanh": return nn.Tanh()
        case "hardtanh": return nn.Hardtanh(minVal: d("min_val"), maxVal: d("max_val"))
        case "hardsigmoid": return nn.Hardsigmoid()
        case "hardswish": return nn.Hardswish()
        case "softplus": return nn.Softplus(beta: d("beta"), threshold: d("threshold"))
        case "softsign": return nn.Softsign()
        case "logsigmoid": return nn.LogSigmoid()
        case "softmax": return nn.Softmax(dim: i("dim"))
        case "log_softmax": return nn.LogSoftmax(dim: i("dim"))
        case "softmin": return nn.Softmin(dim: i("dim"))
        default: fatalError("unknown activation \(name)")
        }
    }

    /// The F twin for a fixture's (name, params).
    private func functional(_ name: String, _ p: [String: Any]) -> (Tensor) -> Tensor {
        func d(_ k: String) -> Double { (p[k] as! NSNumber).doubleValue }
        func i(_ k: String) -> Int { (p[k] as! NSNumber).intValue }
        switch name {
        case "relu": return { F.relu($0) }
        case "relu6": return { F.relu6($0) }
        case "leaky_relu": return { F.leakyRelu($0, negativeSlope: d("negative_slope")) }
        case "elu": return { F.elu($0, alpha: d("alpha")) }
        case "selu": return { F.selu($0) }
        case "celu": return { F.celu($0, alpha: d("alpha")) }
        case "gelu": return { F.gelu($0, approximate: p["approximate"] as! String) }
        case "silu": return { F.silu($0) }
        case "mish": return { F.mish($0) }
        case "sigmoid": return { F.sigmoid($0) }
        case "tanh": return { F.tanh($0) }
        case "hardtanh": return { F.hardtanh($0, minVal: d("min_val"), maxVal: d("max_val")) }
        case "hardsigmoid": return { F.hardsigmoid($0) }
        case "hardswish": return { F.hardswish($0) }
        case "softplus": return { F.softplus($0, beta: d("beta"), threshold: d("threshold")) }
        case "softsign": return { F.softsign($0) }
        case "logsigmoid": return { F.logsigmoid($0) }
        case "softmax": return { F.softmax($0, dim: i("dim")) }
        case "log_softmax": return { F.logSoftmax($0, dim: i("dim")) }
        case "softmin": return { F.softmin($0, dim: i("dim")) }
        default: fatalError("unknown activation \(name)")
        }
    }

    /// Activations whose grad_fn has PyTorch's name.
    private let sameNode: Set<String> = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
                                         "sigmoid", "tanh", "hardtanh", "hardsigmoid", "hardswish", "softplus", "softsign",
                                         "softmax", "log_softmax"]

    func testEveryActivationMatchesPyTorch() throws {
        let all = try cases("activation")
        XCTAssertEqual(all.count, 112)
        for c in all {
            let name = c["name"] as! String, params = c["params"] as! [String: Any]
            let label = "\(name) \(params) \(c["input"]!) \(c["dtype"]!)"
            let isDouble = c["dtype"] as! String == "float64"
            let tol = isDouble ? 1e-10 : 2e-6
            let m = module(name, params), f = functional(name, params)
            for layout in ["contiguous", "transposed", "sliced"] {
                let x = fixtureTensor(c["x"]!, layout: layout).requiresGrad_()
                let y = m(x)
                assertClose(y, fixtureTensor(c["y"]!), atol: tol, rtol: tol, "\(label) \(layout)")
                if sameNode.contains(name) { XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String, label) }
                y.backward(fixtureTensor(c["g"]!, layout: layout))
                assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: tol, rtol: tol, "\(label) \(layout) grad")
                assertClose(torch.noGrad { f(x) }, y.detach(), atol: 0, rtol: 0, "\(label) F twin")
            }
        }
    }

    func testGradcheckEveryActivation() {
        let specs: [(String, [String: Any])] = [
            ("relu", [:]), ("relu6", [:]), ("leaky_relu", ["negative_slope": 0.2]), ("elu", ["alpha": 0.7]),
            ("selu", [:]), ("celu", ["alpha": 1.5]), ("gelu", ["approximate": "none"]), ("gelu", ["approximate": "tanh"]),
            ("silu", [:]), ("mish", [:]), ("sigmoid", [:]), ("tanh", [:]), ("hardtanh", ["min_val": -1.0, "max_val": 1.0]),
            ("hardsigmoid", [:]), ("hardswish", [:]), ("softplus", ["beta": 2.0, "threshold": 3.0]), ("softsign", [:]),
            ("logsigmoid", [:]), ("softmax", ["dim": 1]), ("log_softmax", ["dim": 0]), ("softmin", ["dim": -1]),
        ]
        let x = torch.tensor([[-4.1, -2.2, -0.7, -0.3], [0.2, 0.6, 1.3, 2.7], [3.4, -5.0, 0.05, 4.4]], dtype: .float64)
        for (name, p) in specs {
            let f = functional(name, p)
            gradcheck([x]) { f($0[0]) }
        }
        gradcheck([torch.randn(2, 3, 4), torch.tensor([0.1, 0.2, 0.3])]) { F.prelu($0[0], $0[1]) }
        gradcheck([torch.randn(2, 3, 2, 2)]) { nn.Softmax2d()($0[0]) }
    }

    func testSecondDerivativesOfFusedActivations() {
        // With createGraph the backward is built from differentiable ops; check d²/dx² numerically.
        let fs: [(String, (Tensor) -> Tensor)] = [
            ("gelu", { F.gelu($0) }), ("gelu_tanh", { F.gelu($0, approximate: "tanh") }), ("silu", { F.silu($0) }),
            ("mish", { F.mish($0) }), ("elu", { F.elu($0, alpha: 0.5) }), ("celu", { F.celu($0, alpha: 2) }),
            ("softplus", { F.softplus($0, beta: 2) }), ("hardswish", { F.hardswish($0) }),
        ]
        let x0 = torch.tensor([-2.5, -0.4, 0.3, 1.7], dtype: .float64)
        for (name, f) in fs {
            gradcheck([x0]) { xs in
                torch.enableGrad { torch.autograd.grad([f(xs[0]).sum()], [xs[0]], createGraph: true)[0]! }
            }
            let x = x0.clone().requiresGrad_()
            let g = torch.autograd.grad([f(x).sum()], [x], createGraph: true)[0]!
            XCTAssertTrue(g.requiresGrad, name)
        }
    }

    func testInPlaceFormsMatchOutOfPlace() {
        let fs: [(String, (Tensor, Bool) -> Tensor)] = [
            ("relu", { F.relu($0, inplace: $1) }), ("relu6", { F.relu6($0, inplace: $1) }),
            ("leaky", { F.leakyRelu($0, negativeSlope: 0.3, inplace: $1) }), ("elu", { F.elu($0, inplace: $1) }),
            ("selu", { F.selu($0, inplace: $1) }), ("celu", { F.celu($0, alpha: 0.5, inplace: $1) }),
            ("silu", { F.silu($0, inplace: $1) }), ("mish", { F.mish($0, inplace: $1) }),
            ("hardtanh", { F.hardtanh($0, minVal: -0.5, maxVal: 2, inplace: $1) }),
            ("hardsigmoid", { F.hardsigmoid($0, inplace: $1) }), ("hardswish", { F.hardswish($0, inplace: $1) }),
        ]
        let base = torch.randn(3, 5) * 3
        for (name, f) in fs {
            let leaf1 = base.clone().requiresGrad_(), leaf2 = base.clone().requiresGrad_()
            let a = f(leaf1 * 1, false)
            let tmp = leaf2 * 1
            let b = f(tmp, true)
            XCTAssertTrue(b === tmp, name)
            assertClose(b, a, atol: 0, rtol: 0, name)
            let g = torch.randn(3, 5)
            a.backward(g)
            b.backward(g)
            assertClose(leaf2.grad!, leaf1.grad!, atol: 1e-6, rtol: 1e-6, name)
        }
        let plain = torch.tensor([-1.0, 2.0])
        XCTAssertTrue(nn.ReLU(inplace: true)(plain) === plain)
        assertClose(plain, [0, 2])
    }

    func testPReLUMatchesPyTorch() throws {
        for c in try cases("prelu") {
            let w = fixtureTensor(c["w"]!)
            let m = nn.PReLU(numParameters: w.numel, dtype: .float64)
            XCTAssertEqual(m.weight.toArray(as: Double.self), [Double](repeating: 0.25, count: w.numel))
            try m.loadStateDict(["weight": w])
            let x = fixtureTensor(c["x"]!).requiresGrad_()
            let y = m(x)
            assertClose(y, fixtureTensor(c["y"]!), atol: 1e-12)
            y.backward(fixtureTensor(c["g"]!))
            assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: 1e-12)
            assertClose(m.weight.grad!, fixtureTensor(c["gw"]!), atol: 1e-10)
        }
    }

    func testSoftmax2dAndImplicitDim() throws {
        let c = try cases("softmax2d")[0]
        assertClose(nn.Softmax2d()(fixtureTensor(c["x"]!)), fixtureTensor(c["y"]!), atol: 1e-12)
        for c in try cases("softmax_implicit") {
            assertClose(nn.Softmax()(fixtureTensor(c["x"]!)), fixtureTensor(c["y"]!), atol: 1e-12, rtol: 1e-12, c["name"] as! String)
        }
    }

    func testNormalizeAndOneHot() throws {
        for c in try cases("normalize") {
            let x = fixtureTensor(c["x"]!).requiresGrad_()
            let y = F.normalize(x, p: (c["p"] as! NSNumber).doubleValue, dim: (c["dim"] as! NSNumber).intValue)
            assertClose(y, fixtureTensor(c["y"]!), atol: 1e-12)
            y.backward(fixtureTensor(c["g"]!))
            assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: 1e-10)
        }
        let c = try cases("one_hot")[0]
        let idx = fixtureTensor(c["x"]!)
        let a = F.oneHot(idx), b = F.oneHot(idx, numClasses: 5)
        XCTAssertEqual(a.dtype, .int64)
        XCTAssertTrue(a.equal(fixtureTensor(c["y"]!)))
        XCTAssertTrue(b.equal(fixtureTensor(c["y5"]!)))
    }

    func testDropout() {
        let x = torch.ones(200, 100)
        torch.manualSeed(1)
        let y = F.dropout(x, p: 0.3)
        let kept = (y .!= 0).to(.float32).mean().item()
        XCTAssertEqual(kept, 0.7, accuracy: 0.02)
        let wrong = (y .!= 0) & ((y - 1 / 0.7).abs() .> 1e-5)
        XCTAssertEqual(wrong.to(.float32).sum().item(), 0)
        XCTAssertTrue(F.dropout(x, p: 0.3, training: false) === x)
        XCTAssertEqual(F.dropout(x, p: 1).abs().sum().item(), 0)
        let leaf = torch.ones(4, 4, requiresGrad: true)
        let d = F.dropout(leaf, p: 0.5)
        d.sum().backward()
        assertClose(leaf.grad!, d.detach())
    }

    /// NaN passes through ReLU6 and Hardtanh and infinities clamp, as in torch 2.15 (36 elements: the vector loop and its tail).
    func testHardtanhKeepsNaN() {
        let row: [Float] = [.nan, .infinity, -.infinity, -1, 0.5, 7]
        let x = torch.tensor(Array([[Float]](repeating: row, count: 6).joined()))
        let relu6 = F.relu6(x).toArray(as: Float.self), clamped = F.hardtanh(x, minVal: -2, maxVal: 3).toArray(as: Float.self)
        for k in 0..<6 {
            XCTAssertTrue(relu6[6 * k].isNaN && clamped[6 * k].isNaN)
            XCTAssertEqual(Array(relu6[(6 * k + 1)..<(6 * k + 6)]), [6, 0, 0, 0.5, 6])
            XCTAssertEqual(Array(clamped[(6 * k + 1)..<(6 * k + 6)]), [3, -2, -1, 0.5, 3])
        }
    }
}
