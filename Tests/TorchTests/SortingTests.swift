import XCTest
@testable import Torch

/// The sort family against PyTorch (Tests/Fixtures/sorting.json, scripts/fixtures/sorting.py).
final class SortingTests: XCTestCase {
    private func run(_ op: String, _ x: Tensor, _ a: [String: Any]) -> [Tensor] {
        func t(_ key: String) -> Tensor { fixtureTensor(a[key]!) }
        func pair(_ r: (values: Tensor, indices: Tensor)) -> [Tensor] { [r.values, r.indices] }
        func unique(_ r: UniqueResult) -> [Tensor] { [r.output] + [r.inverse, r.counts].compactMap { $0 } }
        let dim = a["dim"] as? Int, keepdim = a["keepdim"] as? Bool ?? false
        switch op {
        case "sort": return pair(x.sort(dim: dim!, descending: a["descending"] as! Bool, stable: true))
        case "argsort": return [torch.argsort(x, dim: dim!, descending: a["descending"] as! Bool, stable: true)]
        case "topk": return pair(x.topk(a["k"] as! Int, dim: dim!, largest: a["largest"] as! Bool))
        case "kthvalue":
            let r = x.kthvalue(a["k"] as! Int, dim: dim!, keepdim: keepdim)
            return x.dtype == .int64 ? [r.values] : pair(r)
        case "median_all": return [x.median()]
        case "median": return pair(x.median(dim: dim!, keepdim: keepdim))
        case "nanmedian_all": return [torch.nanmedian(x)]
        case "nanmedian": return pair(x.nanmedian(dim: dim!, keepdim: keepdim))
        case "mode": return pair(torch.mode(x, dim: dim!, keepdim: keepdim))
        case "unique":
            let inverse = a["inverse"] as! Bool, counts = a["counts"] as! Bool
            if inverse { return unique(torch.unique(x, returnInverse: true, returnCounts: counts, dim: dim)) }
            return unique(x.unique(returnCounts: counts, dim: dim))
        case "unique_consecutive":
            return unique(torch.uniqueConsecutive(x, returnInverse: a["inverse"] as! Bool, returnCounts: a["counts"] as! Bool, dim: dim))
        case "searchsorted":
            return [torch.searchsorted(x, t("values"), outInt32: a["int32"] as? Bool ?? false, right: a["right"] as! Bool,
                                       sorter: a["sorter"].map { fixtureTensor($0) })]
        case "searchsorted_scalar": return [torch.searchsorted(x, a["value"] as! Double)]
        case "bucketize": return [torch.bucketize(x, t("boundaries"), right: a["right"] as! Bool)]
        case "bincount":
            return [x.bincount(weights: a["weights"].map { fixtureTensor($0) }, minlength: a["minlength"] as! Int)]
        case "histc": return [x.histc(bins: a["bins"] as! Int, min: a["min"] as! Double, max: a["max"] as! Double)]
        default:
            XCTFail("unknown op \(op)"); return []
        }
    }

    func testMatchesPyTorch() throws {
        let cases = try loadFixtureCases("sorting")
        XCTAssertGreaterThan(cases.count, 70)
        for c in cases {
            let op = c["op"] as! String, args = c["args"] as! [String: Any]
            let expected = (c["outputs"] as! [Any]).map { fixtureTensor($0) }
            let input = c["input"] as! [String: Any]
            let rank = (input["shape"] as! [Int]).count
            let layouts = rank >= 2 ? ["contiguous", "transposed", "sliced"] : (rank == 1 ? ["contiguous", "sliced"] : ["contiguous"])
            for layout in layouts {
                let x = fixtureTensor(input, layout: layout)
                let out = run(op, x, args)
                XCTAssertEqual(out.count, expected.count, op)
                for (k, (o, e)) in zip(out, expected).enumerated() {
                    XCTAssertEqual(o.dtype, e.dtype, "\(op) output \(k) \(layout) \(args)")
                    assertClose(o, e, atol: 0, rtol: 0, "\(op) output \(k) \(layout) \(args)")
                }
                guard let grad = c["grad"] else { continue }
                let xg = fixtureTensor(input, layout: layout).requiresGrad_()
                let y = run(op, xg, args)[0]
                let g = torch.autograd.grad([(y * fixtureTensor(c["weight"]!)).sum()], [xg])[0]!
                assertClose(g, fixtureTensor(grad), atol: 1e-12, "grad \(op) \(layout) \(args)")
            }
        }
    }

    func testGradcheck() {
        let x = torch.randn(4, 5, dtype: .float64)
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].sort(dim: 0).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].sort(descending: true).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].topk(2, dim: 1).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].topk(3, dim: 0, largest: false).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].kthvalue(2, dim: 1).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].median(dim: 0, keepdim: true).values }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].median() }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].nanmedian(dim: 1).values }
    }

    func testGradFnNames() {
        let x = torch.randn(3, 4, requiresGrad: true)
        XCTAssertEqual(x.sort().values.gradFn?.name, "SortBackward0")
        XCTAssertEqual(x.topk(2).values.gradFn?.name, "TopkBackward0")
        XCTAssertEqual(x.kthvalue(2).values.gradFn?.name, "KthvalueBackward0")
        XCTAssertEqual(x.median().gradFn?.name, "MedianBackward0")
        XCTAssertEqual(x.median(dim: 0).values.gradFn?.name, "MedianBackward1")
        XCTAssertNil(x.argsort().gradFn)
        XCTAssertNil(x.sort().indices.gradFn)
    }

    func testNaNOrderingAndTies() {
        let x = torch.tensor([3.0, .nan, 1, 3, .nan, 2])
        let (v, i) = x.sort()
        XCTAssertEqual(i.toArray(as: Int.self), [2, 5, 0, 3, 1, 4])
        XCTAssertTrue(v[4...].isnan().all().item() != 0)
        XCTAssertEqual(x.sort(descending: true).indices.toArray(as: Int.self), [1, 4, 0, 3, 5, 2])
        XCTAssertEqual(x.topk(1).indices.toArray(as: Int.self), [1])
        XCTAssertTrue(x.median().isnan().item() != 0)
        XCTAssertEqual(x.nanmedian().item(), 2)
        XCTAssertEqual(torch.tensor([Int64](repeating: 4, count: 3)).argsort().toArray(as: Int.self), [0, 1, 2])
    }

    func testLargeRowsMatchSwiftSort() {
        torch.manualSeed(5)
        let x = torch.randn(64, 1000)
        let (v, i) = x.sort(dim: 1)
        let xs = x.toArray(as: Float.self), vs = v.toArray(as: Float.self), ix = i.toArray(as: Int.self)
        for r in [0, 31, 63] {
            let row = Array(xs[(r * 1000)..<((r + 1) * 1000)])
            XCTAssertEqual(Array(vs[(r * 1000)..<((r + 1) * 1000)]), row.sorted())
            XCTAssertEqual(row[ix[r * 1000 + 999]], row.max())
        }
        let (tv, _) = x.topk(5, dim: 1)
        assertClose(tv, x.sort(dim: 1, descending: true).values[.all, ..<5], atol: 0)
        let k = x.kthvalue(300, dim: 1).values
        assertClose(k, v[.all, 299], atol: 0)
    }

    func testUniqueShapesAndFlags() {
        let x = torch.tensor([[2, 1], [2, 3]])
        XCTAssertEqual(x.unique().toArray(as: Int.self), [1, 2, 3])
        let r = x.unique(returnInverse: true)
        XCTAssertEqual(r.inverse?.shape, [2, 2])
        XCTAssertNil(r.counts)
        XCTAssertEqual(torch.unique(x, returnCounts: true).counts?.toArray(as: Int.self), [1, 2, 1])
        XCTAssertEqual(torch.uniqueConsecutive(torch.tensor([1, 1, 2, 1])).toArray(as: Int.self), [1, 2, 1])
        XCTAssertEqual(torch.tensor(5).unique().shape, [1])
        XCTAssertEqual(torch.zeros(0).unique().shape, [0])
    }

    func testMessages() {
        XCTAssertEqual(searchsortedShapeMessage(boundaries: [2, 5], input: [3, 3]),
                       "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor [2, 5] and input value tensor [3, 3]")
    }
}
