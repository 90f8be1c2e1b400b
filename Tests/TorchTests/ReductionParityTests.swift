import Foundation
import XCTest
@testable import Torch

/// PyTorch parity of Ops/Reduction.swift against Tests/Fixtures/reduction.json
/// (scripts/fixtures/reduction.py): values, dtypes, indices and gradients over all elements, one
/// or several dims, keepdim, negative dims, NaN propagation and empty tensors, on contiguous,
/// transposed and sliced inputs; plus gradchecks of every differentiable reduction.
final class ReductionParityTests: XCTestCase {
    static let cases: [[String: Any]] = (try? loadFixtureCases("reduction")) ?? []

    /// The `dim` argument of a case: nil (all), one dim, or several.
    enum Dims { case all, one(Int), several([Int]) }

    static func dims(_ args: [String: Any]) -> Dims {
        switch args["dim"] {
        case let n as NSNumber: return .one(n.intValue)
        case let l as [NSNumber]: return .several(l.map(\.intValue))
        default: return .all
        }
    }

    static func number(_ v: Any?) -> Double? {
        if let s = v as? String { return s == "inf" ? .infinity : (s == "-inf" ? -.infinity : Double(s)) }
        return (v as? NSNumber)?.doubleValue
    }

    /// Runs `op` like the fixture did; returns (values, indices?) for max/min along a dim.
    static func apply(_ op: String, _ a: Tensor, _ args: [String: Any]) -> (Tensor, Tensor?) {
        let keepdim = args["keepdim"] as? Bool ?? false
        let dims = Self.dims(args)
        var list: [Int]? {
            switch dims { case .all: return nil; case .one(let d): return [d]; case .several(let l): return l }
        }
        let correction = (args["correction"] as? NSNumber)?.intValue ?? 1
        switch (op, dims) {
        case ("sum", .all): return (a.sum(), nil)
        case ("sum", .one(let d)): return (a.sum(dim: d, keepdim: keepdim), nil)
        case ("sum", .several(let l)): return (a.sum(dim: l, keepdim: keepdim), nil)
        case ("mean", .all): return (a.mean(), nil)
        case ("mean", .one(let d)): return (a.mean(dim: d, keepdim: keepdim), nil)
        case ("mean", .several(let l)): return (a.mean(dim: l, keepdim: keepdim), nil)
        case ("prod", .all): return (a.prod(), nil)
        case ("prod", .one(let d)): return (a.prod(dim: d, keepdim: keepdim), nil)
        case ("var", _): return (a.var(dim: list, correction: correction, keepdim: keepdim), nil)
        case ("std", _): return (a.std(dim: list, correction: correction, keepdim: keepdim), nil)
        case ("norm", _): return (a.norm(p: number(args["p"])!, dim: list, keepdim: keepdim), nil)
        case ("logsumexp", .one(let d)): return (a.logsumexp(dim: d, keepdim: keepdim), nil)
        case ("logsumexp", .several(let l)): return (a.logsumexp(dim: l, keepdim: keepdim), nil)
        case ("amax", _): return (a.amax(dim: list ?? [], keepdim: keepdim), nil)
        case ("amin", _): return (a.amin(dim: list ?? [], keepdim: keepdim), nil)
        case ("argmax", .all): return (a.argmax(), nil)
        case ("argmax", .one(let d)): return (a.argmax(dim: d, keepdim: keepdim), nil)
        case ("argmin", .all): return (a.argmin(), nil)
        case ("argmin", .one(let d)): return (a.argmin(dim: d, keepdim: keepdim), nil)
        case ("all", .all): return (a.all(), nil)
        case ("all", .one(let d)): return (a.all(dim: d, keepdim: keepdim), nil)
        case ("any", .all): return (a.any(), nil)
        case ("any", .one(let d)): return (a.any(dim: d, keepdim: keepdim), nil)
        case ("max", .all): return (a.max(), nil)
        case ("min", .all): return (a.min(), nil)
        case ("max", .one(let d)): let r = a.max(dim: d, keepdim: keepdim); return (r.values, r.indices)
        case ("min", .one(let d)): let r = a.min(dim: d, keepdim: keepdim); return (r.values, r.indices)
        case ("cumsum", .one(let d)): return (a.cumsum(dim: d), nil)
        case ("cumprod", .one(let d)): return (a.cumprod(dim: d), nil)
        default: fatalError("unhandled reduction case \(op) \(args)")
        }
    }

    func testReductionsMatchPyTorch() {
        XCTAssertFalse(Self.cases.isEmpty)
        for c in Self.cases {
            let op = c["op"] as! String, args = c["args"] as! [String: Any]
            for layout in fixtureLayouts(c["a"]!) {
                let label = caseLabel(c, "args=\(args) layout=\(layout)")
                let a = fixtureLeaf(c["a"]!, layout: layout, grad: c["w"] != nil)
                let input = (c["expand"] as? [Int]).map { a.expand($0) } ?? a
                let (values, indices) = Self.apply(op, input, args)
                if let out = c["out"] {
                    assertMatches(values, out, label)
                } else {
                    assertMatches(values, c["values"]!, label + " values")
                    assertMatches(indices!, c["indices"]!, label + " indices")
                }
                if let w = c["w"] {
                    guard values.requiresGrad else { XCTFail("output does not require grad \(label)"); continue }
                    values.backward(fixtureTensor(w))
                    assertMatches(a.grad ?? torch.zerosLike(a), c["ga"]!, label + " grad")
                }
            }
        }
    }

    /// Sums that keep a run of middle dims of a contiguous tensor (a conv bias gradient: dims 0, 2, 3) add up
    /// rows in place instead of permuting a copy: against float64 sums, for every dtype, with a zero-size leading dim.
    func testSumOverLeadingAndTrailingDims() {
        torch.manualSeed(6)
        let x = torch.randn(5, 7, 6, 9)
        assertClose(x.sum(dim: [0, 2, 3]).double(), x.double().sum(dim: [0, 2, 3]), atol: 1e-4, rtol: 1e-6)
        assertClose(x.sum(dim: [0, 3], keepdim: true).double(), x.double().sum(dim: [0, 3], keepdim: true), atol: 1e-4, rtol: 1e-6)
        XCTAssertEqual(x.sum(dim: [0, 3], keepdim: true).shape, [1, 7, 6, 1])
        let d = x.double()
        assertClose(d.sum(dim: [0, 2, 3]), d.permute(1, 0, 2, 3).contiguous().view(7, -1).sum(dim: 1), atol: 1e-12, rtol: 1e-12)
        let i = torch.randint(-50, 50, [4, 3, 5])
        XCTAssertEqual(i.sum(dim: [0, 2]).toArray(as: Int64.self), i.permute(1, 0, 2).contiguous().view(3, -1).sum(dim: 1).toArray(as: Int64.self))
        XCTAssertEqual(i.sum(dim: [0, 2]).dtype, .int64)
        let empty = torch.zeros(0, 3, 4)
        XCTAssertEqual(empty.sum(dim: [0, 2]).toArray(as: Float.self), [0, 0, 0])
    }

    func testNodeNames() {
        let x = torch.rand(2, 3, requiresGrad: true)
        XCTAssertEqual(x.sum().gradFn?.name, "SumBackward0")
        XCTAssertEqual(x.sum(dim: 1).gradFn?.name, "SumBackward1")
        XCTAssertEqual(x.mean().gradFn?.name, "MeanBackward0")
        XCTAssertEqual(x.mean(dim: 0).gradFn?.name, "MeanBackward1")
        XCTAssertEqual(x.prod().gradFn?.name, "ProdBackward0")
        XCTAssertEqual(x.prod(dim: 1).gradFn?.name, "ProdBackward1")
        XCTAssertEqual(x.max().gradFn?.name, "MaxBackward1")
        XCTAssertEqual(x.max(dim: 1).values.gradFn?.name, "MaxBackward0")
        XCTAssertEqual(x.amax(dim: [1]).gradFn?.name, "AmaxBackward0")
        XCTAssertEqual(x.cumsum(dim: 1).gradFn?.name, "CumsumBackward0")
        XCTAssertEqual(x.cumprod(dim: 1).gradFn?.name, "CumprodBackward0")
        XCTAssertEqual(x.norm().gradFn?.name, "LinalgVectorNormBackward0")
        XCTAssertEqual(x.norm(p: 1, dim: 1).gradFn?.name, "LinalgVectorNormBackward0")
        XCTAssertEqual(x.logsumexp(dim: 1).gradFn?.name, "LogsumexpBackward0")
        XCTAssertEqual(x.var().gradFn?.name, "VarBackward0")
        XCTAssertEqual(x.std(dim: 1).gradFn?.name, "StdBackward0")
    }

    func testGradcheck() {
        let g = Generator().manualSeed(3)
        func r(_ shape: Int...) -> Tensor { torch.randn(shape, dtype: .float64, generator: g) }
        func pos(_ shape: Int...) -> Tensor { torch.rand(shape, dtype: .float64, generator: g) + 0.5 }
        let x = r(2, 3, 4)
        gradcheck([x]) { $0[0].sum() }
        gradcheck([x]) { $0[0].sum(dim: [0, 2], keepdim: true) }
        gradcheck([x]) { $0[0].mean(dim: -1) }
        gradcheck([x]) { $0[0].mean(dim: [-1, 0]) }
        gradcheck([pos(2, 3)]) { $0[0].prod() }
        gradcheck([pos(2, 3)]) { $0[0].prod(dim: 1, keepdim: true) }
        gradcheck([x]) { $0[0].amax(dim: [0, 2]) }
        gradcheck([x]) { $0[0].amin(dim: [1], keepdim: true) }
        gradcheck([x]) { $0[0].max() }
        gradcheck([x]) { $0[0].min() }
        gradcheck([x]) { $0[0].max(dim: 1).values }
        gradcheck([x]) { $0[0].min(dim: -1, keepdim: true).values }
        gradcheck([x]) { $0[0].var() }
        gradcheck([x]) { $0[0].var(dim: [0, 2], correction: 0, keepdim: true) }
        gradcheck([x]) { $0[0].std(dim: 1) }
        gradcheck([x]) { $0[0].std(dim: [0, 1], correction: 2) }
        gradcheck([x]) { $0[0].norm() }
        gradcheck([x]) { $0[0].norm(p: 1, dim: 1) }
        gradcheck([x]) { $0[0].norm(p: 3, dim: [0, 2]) }
        gradcheck([x]) { $0[0].norm(p: .infinity, dim: 2) }
        gradcheck([x]) { $0[0].logsumexp(dim: 1) }
        gradcheck([x]) { $0[0].logsumexp(dim: [0, 2], keepdim: true) }
        gradcheck([x]) { $0[0].cumsum(dim: 1) }
        gradcheck([x]) { $0[0].cumsum(dim: -1) }
        gradcheck([pos(2, 3, 4)]) { $0[0].cumprod(dim: 2) }
        gradcheck([pos(2, 3, 4)]) { $0[0].cumprod(dim: 0) }
    }

    /// Norm gradients at a zero vector are 0 like PyTorch's (not NaN).
    func testNormGradientAtZero() {
        for p in [2.0, 3.0, 1.0, .infinity] {
            let z = torch.zeros(3, dtype: .float64, requiresGrad: true)
            z.norm(p: p).backward()
            XCTAssertEqual(z.grad!.toArray(as: Double.self).filter { !$0.isFinite }, [], "p=\(p)")
        }
        let z = torch.zeros(2, 2, requiresGrad: true)
        z.norm(dim: 1).sum().backward()
        assertClose(z.grad!, [0, 0, 0, 0])
    }

    /// prod and cumprod gradients stay exact when the input has zeros (one or several per group).
    func testGradcheckWithZeros() {
        let z = torch.tensor([[2.0, 0.0, 3.0, -1.5], [0.0, 0.0, 2.0, 1.0], [1.5, -2.0, 0.5, 4.0]], dtype: .float64)
        gradcheck([z]) { $0[0].prod() }
        gradcheck([z]) { $0[0].prod(dim: 1) }
        gradcheck([z]) { $0[0].prod(dim: 0) }
        gradcheck([z]) { $0[0].cumprod(dim: 1) }
        gradcheck([z]) { $0[0].cumprod(dim: 0) }
    }

    func testDimErrorMessages() {
        XCTAssertEqual(dimErrorMessage(op: "sum", dim: 3, rank: 2),
                       "sum: Dimension out of range (expected to be in range of [-2, 1], but got 3)")
        XCTAssertEqual(dimErrorMessage(op: "sum", dim: -2, rank: 0),
                       "sum: Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    }

    /// 0-d inputs reduce to themselves.
    func testZeroDimInputs() {
        let s = torch.tensor(3.5)
        assertClose(s.sum(), [3.5])
        assertClose(s.sum(dim: 0), [3.5])
        assertClose(s.mean(dim: -1), [3.5])
        XCTAssertEqual(s.max(dim: 0).indices.item(as: Int.self), 0)
        XCTAssertEqual(s.argmax().item(as: Int.self), 0)
        assertClose(s.cumsum(dim: 0), [3.5])
        XCTAssertEqual(s.sum(dim: 0).shape, [])
    }
}
