import XCTest
@testable import Torch

final class ShapeCopiesTests: XCTestCase {
    func testFixtures() throws {
        try runShapeOpFixtures(["repeat", "tile", "flip", "roll", "tril", "triu", "diag", "diagonal", "diag_embed",
                                "trace", "meshgrid", "repeat_interleave"])
    }

    func testRepeatAndTile() {
        let x = torch.tensor([1, 2])
        XCTAssertEqual(x.repeat(2, 2).toArray(as: Int.self), [1, 2, 1, 2, 1, 2, 1, 2])
        XCTAssertEqual(x.repeat([3]).toArray(as: Int.self), [1, 2, 1, 2, 1, 2])
        XCTAssertEqual(x.repeat(0).shape, [0])
        XCTAssertEqual(torch.tensor(5.0).repeat([]).shape, [])
        XCTAssertEqual(torch.ones(2, 3).tile(2).shape, [2, 6])
        XCTAssertEqual(torch.tile(torch.ones(2, 3), [2, 1, 1]).shape, [2, 2, 3])
    }

    func testFlipRoll() {
        let x = torch.arange(6).view(2, 3)
        XCTAssertEqual(x.flip(0).toArray(as: Int.self), [3, 4, 5, 0, 1, 2])
        XCTAssertEqual(x.flip(dims: [0, 1]).toArray(as: Int.self), [5, 4, 3, 2, 1, 0])
        XCTAssertEqual(torch.flip(x, [-1]).toArray(as: Int.self), [2, 1, 0, 5, 4, 3])
        XCTAssertEqual(x.fliplr().toArray(as: Int.self), [2, 1, 0, 5, 4, 3])
        XCTAssertEqual(x.flipud().toArray(as: Int.self), [3, 4, 5, 0, 1, 2])
        XCTAssertEqual(x.t().flip(0).toArray(as: Int.self), [2, 5, 1, 4, 0, 3])
        XCTAssertEqual(torch.empty(0, 3).flip(0).shape, [0, 3])
        XCTAssertEqual(torch.arange(4).roll(shifts: 1).toArray(as: Int.self), [3, 0, 1, 2])
        XCTAssertEqual(torch.arange(4).roll(-1).toArray(as: Int.self), [1, 2, 3, 0])
        XCTAssertEqual(x.roll(shifts: 1, dims: 1).toArray(as: Int.self), [2, 0, 1, 5, 3, 4])
        XCTAssertEqual(x.roll(shifts: [1, 1], dims: [0, 1]).toArray(as: Int.self), [5, 3, 4, 2, 0, 1])
        XCTAssertEqual(torch.roll(x, shifts: 4).toArray(as: Int.self), [2, 3, 4, 5, 0, 1])
        XCTAssertEqual(torch.tensor(1.0).roll(shifts: 3).item(), 1)
        XCTAssertEqual(torch.empty(0).roll(shifts: 3).shape, [0])
        // Large enough for the parallel copy loops.
        let big = torch.arange(200_000).view(400, 500)
        XCTAssertEqual(big.flip(1).select(0, 1).select(0, 0).item(as: Int.self), 999)
        XCTAssertEqual(big.roll(shifts: 3, dims: 1).select(0, 0).select(0, 3).item(as: Int.self), 0)
    }

    func testTriangles() {
        let x = torch.ones(3, 3)
        XCTAssertEqual(x.tril().sum().item(), 6)
        XCTAssertEqual(x.triu(1).sum().item(), 3)
        XCTAssertEqual(torch.tril(x, -1).sum().item(), 3)
        XCTAssertEqual(torch.triu(x, diagonal: -1).sum().item(), 8)
        let b = torch.ones(2, 2, dtype: .bool).tril()
        XCTAssertEqual(b.dtype, .bool)
        XCTAssertEqual(b.toArray(as: Bool.self), [true, false, true, true])
        XCTAssertEqual(torch.ones(2, 0, 3).tril().shape, [2, 0, 3])
        // Transposed input: the result is laid out contiguously but computed on the logical matrix.
        let m = torch.arange(6.0).view(2, 3).t()
        assertClose(m.tril(), [0, 0, 1, 4, 2, 5])
    }

    func testDiagonalFamily() {
        let m = torch.arange(12.0).view(3, 4)
        let d = m.diagonal(offset: 1)
        assertClose(d, [1, 6, 11])
        XCTAssertTrue(d.storage === m.storage)
        assertClose(m.diagonal(offset: -1), [4, 9])
        XCTAssertEqual(m.diagonal(offset: 7).shape, [0])
        assertClose(torch.diagonal(m, offset: 0, dim1: 1, dim2: 0), [0, 5, 10])
        assertClose(m.diag(), [0, 5, 10])
        assertClose(torch.diag(m, 2), [2, 7])
        XCTAssertEqual(m.diag().storage === m.storage, false)
        let v = torch.tensor([1.0, 2])
        assertClose(v.diag(), [1, 0, 0, 2])
        assertClose(torch.diag(v, -1), [0, 0, 0, 1, 0, 0, 0, 2, 0])
        XCTAssertEqual(torch.ones(2, 3).diagEmbed().shape, [2, 3, 3])
        XCTAssertEqual(torch.diagEmbed(torch.ones(2, 3), offset: 1, dim1: 0, dim2: 2).shape, [4, 2, 4])
        XCTAssertEqual(torch.eye(3).trace().item(), 3)
        let ti = torch.arange(9, dtype: .int32).view(3, 3).trace()
        XCTAssertEqual(ti.dtype, .int64)
        XCTAssertEqual(ti.item(as: Int.self), 12)
        XCTAssertEqual(torch.trace(m).item(), 15)
        XCTAssertEqual(torch.empty(0, 0).trace().item(), 0)
    }

    func testMeshgrid() {
        let a = torch.tensor([1, 2, 3]), b = torch.tensor([4, 5])
        let ij = torch.meshgrid(a, b, indexing: "ij")
        XCTAssertEqual(ij.map(\.shape), [[3, 2], [3, 2]])
        XCTAssertEqual(ij[0].toArray(as: Int.self), [1, 1, 2, 2, 3, 3])
        XCTAssertEqual(ij[1].toArray(as: Int.self), [4, 5, 4, 5, 4, 5])
        let xy = torch.meshgrid([a, b], indexing: "xy")
        XCTAssertEqual(xy.map(\.shape), [[2, 3], [2, 3]])
        XCTAssertEqual(xy[0].toArray(as: Int.self), [1, 2, 3, 1, 2, 3])
        XCTAssertEqual(xy[1].toArray(as: Int.self), [4, 4, 4, 5, 5, 5])
        // Grids are broadcast views.
        XCTAssertTrue(ij[0].storage === a.storage)
        let three = torch.meshgrid([torch.ones(2), torch.tensor(3.0), torch.ones(4)], indexing: "xy")
        XCTAssertEqual(three[0].shape, [1, 2, 4])
    }

    func testRepeatInterleave() {
        let x = torch.tensor([[1, 2], [3, 4]])
        XCTAssertEqual(x.repeatInterleave(2).toArray(as: Int.self), [1, 1, 2, 2, 3, 3, 4, 4])
        XCTAssertEqual(x.repeatInterleave(2, dim: 0).toArray(as: Int.self), [1, 2, 1, 2, 3, 4, 3, 4])
        XCTAssertEqual(torch.repeatInterleave(x, 3, dim: 1).shape, [2, 6])
        XCTAssertEqual(x.repeatInterleave(0, dim: 1).shape, [2, 0])
    }

    func testGradFnNames() {
        let x = torch.randn(3, 3).requiresGrad_()
        XCTAssertEqual(x.repeat(2, 1).gradFn?.name, "RepeatBackward0")
        XCTAssertEqual(x.tile(2).gradFn?.name, "RepeatBackward0")
        XCTAssertEqual(x.flip(0).gradFn?.name, "FlipBackward0")
        XCTAssertEqual(x.roll(shifts: 1).gradFn?.name, "RollBackward0")
        XCTAssertEqual(x.tril().gradFn?.name, "TrilBackward0")
        XCTAssertEqual(x.triu().gradFn?.name, "TriuBackward0")
        XCTAssertEqual(x.diagonal().gradFn?.name, "DiagonalBackward0")
        XCTAssertEqual(x.diag().gradFn?.name, "DiagonalBackward0")
        XCTAssertEqual(x.select(0, 0).diag().gradFn?.name, "DiagEmbedBackward0")
        XCTAssertEqual(x.diagEmbed().gradFn?.name, "DiagEmbedBackward0")
        XCTAssertEqual(x.trace().gradFn?.name, "TraceBackward0")
        XCTAssertEqual(x.repeatInterleave(2).gradFn?.name, "ViewBackward0")
        XCTAssertEqual(torch.meshgrid([x.select(0, 0), torch.ones(2)])[0].gradFn?.name, "ExpandBackward0")
    }

    func testGradcheck() {
        let x = torch.randn(3, 4), v = torch.randn(3)
        gradcheck([x]) { $0[0].repeat(2, 1, 3) }
        gradcheck([x]) { $0[0].t().repeat(1, 2) }
        gradcheck([x]) { $0[0].tile(2) }
        gradcheck([x]) { $0[0].flip(0, 1) }
        gradcheck([x]) { $0[0].roll(shifts: [1, -3], dims: [0, 1]) }
        gradcheck([x]) { $0[0].roll(shifts: 5) }
        gradcheck([x]) { $0[0].tril(diagonal: 1) }
        gradcheck([x]) { $0[0].triu(diagonal: -1) }
        gradcheck([x]) { $0[0].diag(diagonal: 1) }
        gradcheck([v]) { $0[0].diag(diagonal: -1) }
        gradcheck([x]) { $0[0].diagonal(offset: -1, dim1: 1, dim2: 0) }
        gradcheck([x]) { $0[0].diagEmbed(offset: 1, dim1: 0, dim2: 2) }
        gradcheck([x]) { $0[0].trace() }
        gradcheck([x]) { $0[0].repeatInterleave(2, dim: 1) }
        gradcheck([v, torch.randn(2)]) { xs in
            let g = torch.meshgrid(xs, indexing: "xy")
            return g[0] * g[1]
        }
    }

    func testSecondDerivatives() {
        // Backward formulas are themselves differentiable (create_graph).
        gradcheck([torch.randn(3, 3)]) { xs in
            torch.enableGrad {
                let x = xs[0]
                let y = (x.flip(0).tril(diagonal: -1).repeat(2, 1).pow(2).sum() + x.trace().pow(2)
                         + x.diagEmbed().pow(3).sum() + x.roll(shifts: 1).diag().pow(2).sum())
                return torch.autograd.grad([y], [x], createGraph: true)[0]!
            }
        }
    }

    func testErrorMessages() {
        XCTAssertEqual(repeatErrorMessage(shape: [5, 4], repeats: [2]),
                       "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
        XCTAssertEqual(repeatErrorMessage(shape: [5, 4], repeats: [2, -1]),
                       "Trying to create tensor with negative dimension -4: [10, -4]")
        XCTAssertNil(repeatErrorMessage(shape: [5, 4], repeats: [1, 2, 0]))
        XCTAssertEqual(duplicateDimErrorMessage([0, 1, 0]), "dim 0 appears multiple times in the list of dims")
        XCTAssertNil(duplicateDimErrorMessage([1, 0]))
        XCTAssertEqual(rollErrorMessage(shifts: [1, 2], dims: [0]), "shifts and dimensions must align. shifts: 2, dims:1")
        XCTAssertEqual(rollErrorMessage(shifts: [], dims: []), "`shifts` required")
        XCTAssertNil(rollErrorMessage(shifts: [3], dims: []))
        XCTAssertEqual(diagonalLength(rows: 3, cols: 4, offset: 1), 3)
        XCTAssertEqual(diagonalLength(rows: 3, cols: 4, offset: -2), 1)
        XCTAssertEqual(diagonalLength(rows: 3, cols: 4, offset: 4), 0)
        XCTAssertEqual(diagonalLength(rows: 3, cols: 4, offset: -4), 0)
    }
}
