import XCTest
@testable import Torch

/// index_select / index_add / index_put / masked_fill / masked_select / nonzero / argwhere / take /
/// where(condition) against PyTorch (Tests/Fixtures/index_ops.json, scripts/fixtures/index_ops.py).
final class IndexOpsTests: XCTestCase {
    private func run(_ op: String, _ x: Tensor, _ args: [String: Any], _ extra: [Tensor]) -> [Tensor] {
        func t(_ key: String) -> Tensor { fixtureTensor(args[key]!) }
        switch op {
        case "index_select": return [x.indexSelect(args["dim"] as! Int, t("index"))]
        case "masked_fill": return [x.maskedFill(t("mask"), args["value"] as! Double)]
        case "masked_fill_tensor": return [x.maskedFill(x.detach() .> 0, extra[0])]
        case "masked_select": return [x.maskedSelect(t("mask"))]
        case "nonzero": return [x.nonzero()]
        case "nonzero_tuple": return x.nonzero(asTuple: true)
        case "argwhere": return [torch.argwhere(x)]
        case "where1": return torch.where(x .> 0.5)
        case "take": return [x.take(t("index"))]
        case "index_put":
            let indices: [Tensor?] = (args["indices"] as! [Any]).map { $0 is NSNull ? nil : fixtureTensor($0) }
            var v = extra[0]
            if let vs = args["value_shape"] as? [Int] { v = v.reshape(vs) }
            return [x.indexPut(indices, v, accumulate: args["accumulate"] as! Bool)]
        case "index_add":
            return [x.indexAdd(args["dim"] as! Int, t("index"), extra[0], alpha: args["alpha"] as! Double)]
        default:
            XCTFail("unknown op \(op)"); return []
        }
    }

    func testMatchesPyTorch() throws {
        let cases = try loadFixtureCases("index_ops")
        XCTAssertGreaterThan(cases.count, 60)
        for c in cases {
            let op = c["op"] as! String, args = c["args"] as! [String: Any]
            let extras = (c["tensors"] as! [Any]).map { fixtureTensor($0) }
            let expected = (c["outputs"] as? [Any] ?? [c["output"]!]).map { fixtureTensor($0) }
            let input = c["input"] as! [String: Any]
            let layouts = (input["shape"] as! [Int]).count >= 2 ? ["contiguous", "transposed", "sliced"] : ["contiguous", "sliced"]
            for layout in layouts where (input["shape"] as! [Int]).count > 0 || layout == "contiguous" {
                let x = fixtureTensor(input, layout: layout)
                let out = run(op, x, args, extras)
                XCTAssertEqual(out.count, expected.count, op)
                for (o, e) in zip(out, expected) {
                    XCTAssertEqual(o.dtype, e.dtype, "\(op) \(layout)")
                    assertClose(o, e, atol: 1e-6, rtol: 1e-6, "\(op) \(layout) \(args.keys.sorted())")
                }
                guard let grads = c["grads"] as? [Any] else { continue }
                let xg = fixtureTensor(input, layout: layout).requiresGrad_()
                let eg = extras.map { $0.isFloatingPoint ? $0.clone().requiresGrad_() : $0 }
                let y = run(op, xg, args, eg)[0]
                let diff = [xg] + eg.filter { $0.isFloatingPoint }
                let got = torch.autograd.grad([(y * fixtureTensor(c["weight"]!)).sum()], diff, allowUnused: true)
                for (k, g) in grads.enumerated() {
                    assertClose(got[k] ?? torch.zerosLike(diff[k]), fixtureTensor(g), atol: 1e-10, "grad \(k) \(op) \(layout)")
                }
            }
        }
    }

    func testGradcheck() {
        let x = torch.randn(4, 5, dtype: .float64)
        let idx = torch.tensor([3, 0, 3])
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].indexSelect(0, idx) }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].indexSelect(1, torch.tensor([4, 4, 1])) }
        gradcheck([x, torch.randn(3, 5, dtype: .float64)]) { (xs: [Tensor]) -> Tensor in xs[0].indexAdd(0, idx, xs[1], alpha: 1.5) }
        gradcheck([x, torch.randn(3, dtype: .float64)]) { (xs: [Tensor]) -> Tensor in
            xs[0].indexPut([torch.tensor([0, 1, 1]), torch.tensor([2, 2, 2])], xs[1], accumulate: true)
        }
        gradcheck([x, torch.randn(2, 1, dtype: .float64)]) { (xs: [Tensor]) -> Tensor in
            xs[0].indexPut([torch.tensor([0, 3])], xs[1])
        }
        let m = torch.randn(4, 5) .> 0
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].maskedFill(m, 2) }
        gradcheck([x, torch.randn([], dtype: .float64)]) { (xs: [Tensor]) -> Tensor in xs[0].maskedFill(m, xs[1]) }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].maskedSelect(m) }
        gradcheck([torch.randn(5, dtype: .float64)]) { (xs: [Tensor]) -> Tensor in xs[0].maskedSelect(m) }   // broadcast
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0].take(torch.tensor([[0, 19], [5, 5]])) }
    }

    func testDoubleBackward() {
        // IndexSelectBackward0 -> IndexAddBackward0 -> IndexSelect: second derivative of sum(x[idx]^2).
        let x = torch.tensor([1.0, 2.0, 3.0], dtype: .float64, requiresGrad: true)
        let y = x.indexSelect(0, torch.tensor([2, 2, 0])).pow(2).sum()
        let g = torch.autograd.grad([y], [x], createGraph: true)[0]!
        assertClose(g, [2, 0, 12])
        assertClose(torch.autograd.grad([g.sum()], [x])[0]!, [2, 0, 4])
    }

    func testInPlaceVariants() {
        let x = torch.zeros(5)
        x.indexPut_([torch.tensor([0, 2, 2])], torch.tensor([1.0, 2.0, 3.0]), accumulate: true)
        assertClose(x, [1, 0, 5, 0, 0])
        x.indexPut_(indices: [torch.tensor([4])], values: torch.tensor([9.0]))
        assertClose(x, [1, 0, 5, 0, 9])
        x.indexAdd_(0, torch.tensor([1, 1]), torch.tensor([0.5, 0.25]))
        assertClose(x, [1, 0.75, 5, 0, 9])
        x.maskedFill_(x .> 4, -1)
        assertClose(x, [1, 0.75, -1, 0, -1])
        let v = x.storage.version
        x.maskedFill_(x .< 0, torch.tensor(3.0))
        XCTAssertGreaterThan(x.storage.version, v)
        assertClose(x, [1, 0.75, 3, 0, 3])
        assertClose(x.indexAdd(dim: 0, index: torch.tensor([0]), source: torch.tensor([1.0])), [2, 0.75, 3, 0, 3])
        XCTAssertEqual(torch.nonzero(torch.tensor([0, 3, 0, 4])).shape, [2, 1])
    }

    func testGradFnNames() {
        let x = torch.randn(3, 4, requiresGrad: true)
        XCTAssertEqual(x.indexSelect(0, torch.tensor([1])).gradFn?.name, "IndexSelectBackward0")
        XCTAssertEqual(x.maskedFill(x .> 0, 0).gradFn?.name, "MaskedFillBackward0")
        XCTAssertEqual(x.maskedSelect(x .> 0).gradFn?.name, "MaskedSelectBackward0")
        XCTAssertEqual(x.take(torch.tensor([1])).gradFn?.name, "TakeBackward0")
        XCTAssertEqual(x.indexPut([torch.tensor([1])], torch.tensor(1.0)).gradFn?.name, "IndexPutBackward0")
        XCTAssertEqual(x.indexAdd(0, torch.tensor([1]), torch.ones(1, 4)).gradFn?.name, "IndexAddBackward0")
    }

    /// Embedding-style forward/backward on the parallel paths, against a sequential reference.
    func testEmbeddingLikeLargeIndexAdd() {
        torch.manualSeed(3)
        let rows = 100, width = 64, n = 5000
        let idx = torch.randint(0, rows, [n])
        let src = torch.randn(n, width, dtype: .float64)
        let out = torch.zeros(rows, width, dtype: .float64).indexAdd(0, idx, src)
        var ref = [Double](repeating: 0, count: rows * width)
        let ids = idx.toArray(as: Int.self), s = src.toArray(as: Double.self)
        for (k, r) in ids.enumerated() { for j in 0..<width { ref[r * width + j] += s[k * width + j] } }
        assertClose(out, Tensor(ref, shape: [rows, width]), atol: 1e-9)
        // Deterministic: same result twice, bit for bit.
        let again = torch.zeros(rows, width, dtype: .float64).indexAdd(0, idx, src)
        XCTAssertEqual(again.toArray(as: Double.self), out.toArray(as: Double.self))
        // Accumulating along an inner dim (parallel over the leading dim).
        let g = torch.randn(64, n, 2, dtype: .float64)
        let acc = torch.zeros(64, rows, 2, dtype: .float64).indexPut([nil, idx], g, accumulate: true)
        assertClose(acc.sum(dim: 1), g.sum(dim: 1), atol: 1e-9)
        // Forward gather of rows.
        let table = torch.randn(rows, width)
        let picked = table.indexSelect(0, idx)
        assertClose(picked[17], table[ids[17]], atol: 0)
        assertClose(picked[n - 1], table[ids[n - 1]], atol: 0)
    }

    func testMessages() {
        XCTAssertEqual(takeOutOfRangeMessage(index: 100, numel: 24), "out of range: tried to access index 100 on a tensor of 24 elements.")
        XCTAssertEqual(indexOutOfBoundsMessage(index: -4, dim: 1, size: 3), "index -4 is out of bounds for dimension 1 with size 3")
    }
}
