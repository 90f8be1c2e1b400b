import XCTest
@testable import Torch

// MARK: - Runner for Tests/Fixtures/shape_ops.json (shared with ShapeCopiesTests and SoftmaxTests)

/// Applies fixture op `op` with `args` to `xs` (see scripts/fixtures/shape_ops.py).
private func applyShapeOp(_ op: String, _ a: [String: Any], _ xs: [Tensor]) -> [Tensor] {
    func int(_ k: String) -> Int { a[k] as! Int }
    func ints(_ k: String) -> [Int] { a[k] as! [Int] }
    switch op {
    case "cat": return [torch.cat(xs, dim: int("dim"))]
    case "stack": return [torch.stack(xs, dim: int("dim"))]
    case "hstack": return [torch.hstack(xs)]
    case "vstack": return [torch.vstack(xs)]
    case "split": return xs[0].split(int("size"), dim: int("dim"))
    case "split_sizes": return xs[0].split(ints("sizes"), dim: int("dim"))
    case "chunk": return xs[0].chunk(int("chunks"), dim: int("dim"))
    case "unbind": return xs[0].unbind(dim: int("dim"))
    case "repeat": return [xs[0].repeat(ints("sizes"))]
    case "tile": return [xs[0].tile(ints("dims"))]
    case "flip": return [xs[0].flip(ints("dims"))]
    case "roll": return [xs[0].roll(shifts: ints("shifts"), dims: ints("dims"))]
    case "tril": return [xs[0].tril(diagonal: int("diagonal"))]
    case "triu": return [xs[0].triu(diagonal: int("diagonal"))]
    case "diag": return [xs[0].diag(diagonal: int("diagonal"))]
    case "diagonal": return [xs[0].diagonal(offset: int("offset"), dim1: int("dim1"), dim2: int("dim2"))]
    case "diag_embed": return [xs[0].diagEmbed(offset: int("offset"), dim1: int("dim1"), dim2: int("dim2"))]
    case "trace": return [xs[0].trace()]
    case "meshgrid": return torch.meshgrid(xs, indexing: a["indexing"] as! String)
    case "repeat_interleave": return [xs[0].repeatInterleave(int("repeats"), dim: a["dim"] as? Int)]
    case "softmax", "log_softmax", "softmin":
        let dtype = (a["dtype"] as? String).map { name in DType.allCases.first { $0.name == name }! }
        if op == "softmax" { return [xs[0].softmax(dim: int("dim"), dtype: dtype)] }
        if op == "log_softmax" { return [xs[0].logSoftmax(dim: int("dim"), dtype: dtype)] }
        return [xs[0].softmin(dim: int("dim"), dtype: dtype)]
    default:
        preconditionFailure("unknown fixture op \(op)")
    }
}

/// Runs every case of shape_ops.json whose op is in `ops`, with every input layout (contiguous,
/// transposed storage, sliced) unless a case pins it; checks outputs, dtypes and input gradients.
/// Returns the number of cases run.
@discardableResult
func runShapeOpFixtures(_ ops: Set<String>, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
    var count = 0
    for c in try loadFixtureCases("shape_ops") where ops.contains(c["op"] as! String) {
        count += 1
        for layout in ["contiguous", "transposed", "sliced"] {
            runShapeOpCase(c, layout: layout, file: file, line: line)
        }
    }
    XCTAssertGreaterThan(count, 0, "no fixture cases for \(ops)", file: file, line: line)
    return count
}

private func runShapeOpCase(_ c: [String: Any], layout: String, file: StaticString, line: UInt) {
    let op = c["op"] as! String, args = c["args"] as! [String: Any]
    let atol = (c["atol"] as! NSNumber).doubleValue, rtol = (c["rtol"] as! NSNumber).doubleValue
    let label = "\(op) \(args) layout=\(layout)"
    var leaves: [Tensor] = [], inputs: [Tensor] = []
    for spec in c["inputs"] as! [[String: Any]] {
        let expand = spec["expand"] as? [Int]
        let leaf = fixtureTensor(spec["t"]!, layout: expand != nil ? "contiguous" : (spec["layout"] as? String ?? layout))
        if spec["grad"] as! Bool { leaf.requiresGrad_() }
        leaves.append(leaf)
        inputs.append(expand.map { leaf.expand($0) } ?? leaf)
    }
    let outs = applyShapeOp(op, args, inputs)
    let expected = c["outputs"] as! [Any]
    XCTAssertEqual(outs.count, expected.count, "number of outputs, \(label)", file: file, line: line)
    for (i, (o, e)) in zip(outs, expected).enumerated() {
        let want = fixtureTensor(e)
        XCTAssertEqual(o.dtype, want.dtype, "dtype of output \(i), \(label)", file: file, line: line)
        assertClose(o, want, atol: atol, rtol: rtol, "output \(i), \(label)", file: file, line: line)
    }
    var loss: Tensor?
    for (o, w) in zip(outs, c["weights"] as! [Any]) where !(w is NSNull) && o.requiresGrad {
        let term = (o * fixtureTensor(w)).sum()
        loss = loss.map { $0 + term } ?? term
    }
    let expectedGrads = c["grads"] as! [Any]
    guard let loss else {
        XCTAssertTrue(expectedGrads.allSatisfy { $0 is NSNull }, "PyTorch has gradients, \(label)", file: file, line: line)
        return
    }
    let want = leaves.filter(\.requiresGrad)
    let got = torch.autograd.grad([loss], want, allowUnused: true)
    var k = 0
    for (leaf, e) in zip(leaves, expectedGrads) where leaf.requiresGrad {
        defer { k += 1 }
        if e is NSNull {
            if let g = got[k] { XCTAssertEqual(g.abs().sum().item(), 0, "grad \(k) should be zero, \(label)", file: file, line: line) }
            continue
        }
        guard let g = got[k] else { XCTFail("missing grad \(k), \(label)", file: file, line: line); continue }
        let w = fixtureTensor(e)
        XCTAssertEqual(g.dtype, w.dtype, "grad dtype \(k), \(label)", file: file, line: line)
        assertClose(g, w, atol: atol, rtol: rtol, "grad \(k), \(label)", file: file, line: line)
    }
}

// MARK: - Tests

final class JoiningTests: XCTestCase {
    func testFixtures() throws {
        try runShapeOpFixtures(["cat", "stack", "hstack", "vstack", "split", "split_sizes", "chunk", "unbind"])
    }

    func testCatBasicsAndPromotion() {
        let a = torch.tensor([[1, 2], [3, 4]])
        let b = torch.tensor([[0.5], [1.5]], dtype: .float64)
        let c = torch.cat([a, b], dim: 1)
        XCTAssertEqual(c.dtype, .float64)
        XCTAssertEqual(c.shape, [2, 3])
        assertClose(c, [1, 2, 0.5, 3, 4, 1.5])
        XCTAssertEqual(torch.cat([torch.tensor([true]), torch.tensor([2], dtype: .uint8)]).dtype, .uint8)
        XCTAssertEqual(torch.cat([a, a], dim: -1).shape, [2, 4])
        XCTAssertEqual(torch.concat([a, a]).shape, [4, 2])
    }

    func testCatLegacyEmptySkip() {
        let e = torch.empty(0)
        let x = torch.ones(2, 2)
        XCTAssertEqual(torch.cat([e, x, e], dim: 1).shape, [2, 2])
        let allEmpty = torch.cat([e, torch.empty(0, dtype: .float64)])
        XCTAssertEqual(allEmpty.shape, [0])
        XCTAssertEqual(allEmpty.dtype, .float64)
        // Empty tensors of other shapes are not skipped: they must match.
        XCTAssertEqual(torch.cat([torch.empty(0, 2), x]).shape, [2, 2])
        // Gradient of a skipped input is an empty tensor.
        let le = torch.empty(0).requiresGrad_()
        let lx = torch.ones(2, 2).requiresGrad_()
        torch.cat([le, lx], dim: 1).sum().backward()
        XCTAssertEqual(le.grad?.shape, [0])
        assertClose(lx.grad!, [1, 1, 1, 1])
    }

    func testCatOfManyAndLarge() {
        // Enough elements to take the parallel copy path.
        let parts = (0..<5).map { torch.full([300, 70 + $0], Double($0)) }
        let c = torch.cat(parts, dim: 1)
        XCTAssertEqual(c.shape, [300, 360])
        let cols = torch.cat(parts.map { $0.t() }, dim: 0).t()
        XCTAssertTrue(c.equal(cols))
        var total = 0
        for i in 0..<5 { total += 300 * (70 + i) * i }
        XCTAssertEqual(c.sum().item(), Double(total))
    }

    func testStack() {
        let a = torch.tensor([1.0, 2]), b = torch.tensor([3.0, 4])
        assertClose(torch.stack([a, b]), [1, 2, 3, 4])
        assertClose(torch.stack([a, b], dim: 1), [1, 3, 2, 4])
        assertClose(torch.stack([a, b], dim: -1), [1, 3, 2, 4])
        let s = torch.stack([torch.tensor(1.0), torch.tensor(2)])
        XCTAssertEqual(s.shape, [2])
        XCTAssertEqual(s.dtype, .float32)
    }

    func testHstackVstack() {
        let h = torch.hstack([torch.tensor(1.0), torch.tensor([2.0, 3])])
        assertClose(h, [1, 2, 3])
        let v = torch.vstack([torch.tensor(1.0), torch.tensor(2.0)])
        XCTAssertEqual(v.shape, [2, 1])
        XCTAssertEqual(torch.vstack([torch.ones(3), torch.ones(2, 3)]).shape, [3, 3])
        XCTAssertEqual(torch.hstack([torch.ones(2, 1), torch.ones(2, 3)]).shape, [2, 4])
    }

    func testSplitChunkSizes() {
        XCTAssertEqual(splitSizes(dimSize: 5, splitSize: 2), [2, 2, 1])
        XCTAssertEqual(splitSizes(dimSize: 4, splitSize: 10), [4])
        XCTAssertEqual(splitSizes(dimSize: 0, splitSize: 3), [0])
        XCTAssertEqual(splitSizes(dimSize: 0, splitSize: 0), [0])
        XCTAssertEqual(chunkSizes(dimSize: 5, chunks: 3), [2, 2, 1])
        XCTAssertEqual(chunkSizes(dimSize: 6, chunks: 4), [2, 2, 2])
        XCTAssertEqual(chunkSizes(dimSize: 5, chunks: 4), [2, 2, 1])
        XCTAssertEqual(chunkSizes(dimSize: 2, chunks: 5), [1, 1])
        XCTAssertEqual(chunkSizes(dimSize: 0, chunks: 3), [0, 0, 0])
        XCTAssertEqual(torch.empty(0, 3).chunk(3).map(\.shape), [[0, 3], [0, 3], [0, 3]])
        XCTAssertEqual(torch.arange(6).chunk(4).map(\.shape), [[2], [2], [2]])
    }

    func testSplitsAreViews() {
        let x = torch.arange(12.0).view(3, 4)
        let parts = x.split(2, dim: 1)
        XCTAssertEqual(parts.map(\.shape), [[3, 2], [3, 2]])
        XCTAssertTrue(parts[1].storage === x.storage)
        x.fill_(7)
        XCTAssertEqual(parts[1].sum().item(), 42)
        let rows = x.unbind(dim: 0)
        XCTAssertEqual(rows.count, 3)
        XCTAssertTrue(rows[2].storage === x.storage)
        let cols = torch.unbind(torch.arange(6).view(2, 3), dim: 1)
        XCTAssertEqual(cols[2].toArray(as: Int.self), [2, 5])
        XCTAssertEqual(torch.split(torch.arange(5), [1, 4]).map(\.shape), [[1], [4]])
        XCTAssertEqual(torch.chunk(torch.arange(5), 2).map(\.shape), [[3], [2]])
    }

    func testGradFnNames() {
        let x = torch.randn(4, 3).requiresGrad_()
        XCTAssertEqual(torch.cat([x, x]).gradFn?.name, "CatBackward0")
        XCTAssertEqual(torch.stack([x, x]).gradFn?.name, "StackBackward0")
        XCTAssertEqual(torch.hstack([x, x]).gradFn?.name, "CatBackward0")
        XCTAssertEqual(x.split(2)[0].gradFn?.name, "SplitBackward0")
        XCTAssertEqual(x.split([1, 3])[1].gradFn?.name, "SplitWithSizesBackward0")
        XCTAssertEqual(x.chunk(2)[0].gradFn?.name, "SplitBackward0")
        XCTAssertEqual(x.unbind(dim: 1)[0].gradFn?.name, "UnbindBackward0")
        // All outputs share one node.
        let parts = x.split(1)
        XCTAssertTrue(parts[0].gradFn === parts[3].gradFn)
        XCTAssertEqual(parts[3].outputNr, 3)
    }

    func testGradcheck() {
        let a = torch.randn(2, 3), b = torch.randn(2, 2), c = torch.randn(2, 3)
        gradcheck([a, b]) { torch.cat([$0[0], $0[1]], dim: 1) }
        gradcheck([a, c]) { torch.cat([$0[0].t(), $0[1].t()], dim: 0) }
        gradcheck([a, c]) { torch.stack([$0[0], $0[1]], dim: 1) }
        gradcheck([a, c]) { torch.hstack([$0[0], $0[1]]) }
        gradcheck([a, c]) { torch.vstack([$0[0], $0[1]]) }
        let x = torch.randn(5, 4)
        gradcheck([x]) { xs in
            let p = xs[0].split(2)
            return torch.cat([p[2] * 3, p[0] * p[0]], dim: 0)
        }
        gradcheck([x]) { xs in
            let p = xs[0].split([1, 3], dim: 1)
            return p[1].sum(dim: 1) + p[0].squeeze(1)
        }
        gradcheck([x]) { xs in
            let p = xs[0].chunk(3)
            return p[1] * p[0]
        }
        gradcheck([x]) { xs in
            let r = xs[0].unbind(dim: 1)
            return r[0] * r[3] + r[2]
        }
    }

    func testSecondDerivativeThroughSplitAndCat() {
        // d/dx of sum(cat(p0, p1)^3) twice: 6 x.
        gradcheck([torch.randn(4, 2)]) { xs in
            torch.enableGrad {
                let x = xs[0]
                let p = x.split(3)
                let y = torch.cat([p[1], p[0]]).pow(3).sum()
                return torch.autograd.grad([y], [x], createGraph: true)[0]!
            }
        }
    }

    func testErrorMessages() {
        XCTAssertEqual(catShapeErrorMessage(first: [2, 2], [3, 3], dim: 1, index: 1),
                       "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.")
        XCTAssertEqual(catShapeErrorMessage(first: [2, 2], [2], dim: 1, index: 1),
                       "Tensors must have same number of dimensions: got 2 and 1")
        XCTAssertNil(catShapeErrorMessage(first: [2, 2], [2, 7], dim: 1, index: 3))
        XCTAssertEqual(stackShapeErrorMessage([[2, 2], [2, 2], [3, 3]]),
                       "stack expects each tensor to be equal size, but got [2, 2] at entry 0 and [3, 3] at entry 2")
        XCTAssertEqual(stackShapeErrorMessage([]), "stack expects a non-empty TensorList")
        XCTAssertNil(stackShapeErrorMessage([[1], [1]]))
        XCTAssertEqual(splitWithSizesErrorMessage([2, 2], dimSize: 5, dim: 0),
                       "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[2, 2]")
        XCTAssertEqual(splitWithSizesErrorMessage([6, -1], dimSize: 5, dim: 0),
                       "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[6, -1]")
        XCTAssertEqual(dimErrorMessage(op: "cat", dim: 2, rank: 2),
                       "cat: Dimension out of range (expected to be in range of [-2, 1], but got 2)")
    }
}
