import XCTest
@testable import Torch

final class EinsumTests: XCTestCase {
    func testFixtures() throws {
        let cases = try loadFixtureCases("linalg").filter { ($0["op"] as! String) == "einsum" }
        XCTAssertGreaterThan(cases.count, 20)
        for c in cases {
            for layout in ["contiguous", "transposed", "sliced"] { checkLinalgFixtureCase(c, layout: layout) }
        }
    }

    private func r(_ shape: Int..., seed: UInt64) -> Tensor {
        torch.randn(shape, dtype: .float64, generator: Generator().manualSeed(seed))
    }

    func testMatchesComposedOps() {
        let a = r(3, 4, seed: 1), b = r(4, 5, seed: 2), m = r(4, 4, seed: 3)
        assertClose(torch.einsum("ij,jk->ik", a, b), a.mm(b), atol: 1e-12)
        assertClose(torch.einsum("ii", m), [m.toArray(as: Double.self).enumerated().filter { $0.offset % 5 == 0 }.map(\.element).reduce(0, +)], atol: 1e-12)
        assertClose(torch.einsum("ij->ji", a), a.t())
        assertClose(torch.einsum("ij->", a), a.sum().reshape([]), atol: 1e-12)
        let x = r(2, 3, 4, seed: 4), y = r(2, 4, 5, seed: 5)
        assertClose(torch.einsum("bij,bjk->bik", [x, y]), x.bmm(y), atol: 1e-12)
        let u = r(3, seed: 6), v = r(4, seed: 7)
        assertClose(torch.einsum("i,j->ij", u, v), u.outer(v), atol: 1e-12)
        // "ii->i" is the diagonal (a view, as in PyTorch).
        let d = torch.einsum("ii->i", m)
        XCTAssertTrue(d.storage === m.storage)
        assertClose(d, [0, 5, 10, 15].map { m.toArray(as: Double.self)[$0] })
    }

    func testGradcheck() {
        let cases: [(String, [Tensor])] = [
            ("ij,jk->ik", [r(3, 4, seed: 1), r(4, 2, seed: 2)]),
            ("bij,bjk->bik", [r(2, 3, 4, seed: 3), r(2, 4, 2, seed: 4)]),
            ("ii", [r(3, 3, seed: 5)]),
            ("ii->i", [r(3, 3, seed: 6)]),
            ("i,j->ij", [r(3, seed: 7), r(2, seed: 8)]),
            ("ij->ji", [r(2, 3, seed: 9)]),
            ("ij->", [r(2, 3, seed: 10)]),
            ("bn,anm,bm->ba", [r(2, 3, seed: 11), r(4, 3, 2, seed: 12), r(2, 2, seed: 13)]),
            ("...ij,...jk->...ik", [r(2, 1, 2, 3, seed: 14), r(3, 3, 2, seed: 15)]),
            ("iij->j", [r(2, 2, 3, seed: 16)]),
            ("i,i,i->i", [r(3, seed: 17), r(3, seed: 18), r(1, seed: 19)]),
        ]
        for (eq, xs) in cases {
            gradcheck(xs) { torch.einsum(eq, $0) }
        }
    }

    private func message(_ eq: String, _ shapes: [Int]...) -> String? {
        do { _ = try EinsumPlan.make(eq, shapes: shapes); return nil } catch { return "\(error)" }
    }

    func testMessages() {
        XCTAssertEqual(message("ij,jk", [2, 3]), "einsum(): fewer operands were provided than specified in the equation")
        XCTAssertEqual(message("ij", [2, 3], [2, 3]), "einsum(): more operands were provided than specified in the equation")
        XCTAssertEqual(message("i...j...->i", [2, 3]), "einsum(): found '.' for operand 0 for which an ellipsis was already found")
        XCTAssertEqual(message("i..j.->i", [2, 3]), "einsum(): found '.' for operand 0 that is not part of any ellipsis")
        XCTAssertEqual(message("ij->i.", [2, 3]), "einsum(): found '.' for output that is not part of any ellipsis (...)")
        XCTAssertEqual(message("ijk", [2, 3]), "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given")
        XCTAssertEqual(message("...ij->...", [2]), "einsum(): the number of subscripts in the equation (2) is more than the number of dimensions (1) for operand 0")
        XCTAssertEqual(message("ij-i", [2, 3]), "einsum(): invalid subscript given at index 2 in the equation string, subscripts must be in [a-zA-Z]")
        XCTAssertEqual(message("ij->i,j", [2, 3]), "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]")
        XCTAssertEqual(message("i$->i", [2, 3]), "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]")
        XCTAssertEqual(message("ij->ik", [2, 3]), "einsum(): output subscript k does not appear in the equation for any input operand")
        XCTAssertEqual(message("ij->ii", [2, 3]), "einsum(): output subscript i appears more than once in the output")
        XCTAssertEqual(message("ii->i", [2, 3]), "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2")
        XCTAssertEqual(message("ij,jk->ik", [2, 3], [4, 2]), "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3")
        XCTAssertEqual(message("i,i->", [2], [3]), "einsum(): subscript i has size 3 for operand 1 which does not broadcast with previously seen size 2")
        XCTAssertEqual(message("ij"), "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list")
        XCTAssertNil(message("i,i->", [1], [3]))
        XCTAssertNil(message("ij->...", [2, 3]))
    }

    func testImplicitOutputOrder() {
        // Upper-case subscripts sort before lower-case ones (PyTorch's label order).
        let a = r(2, 3, seed: 1), b = r(3, 2, seed: 2)
        let out = torch.einsum("bA,Ab", a, b)
        XCTAssertEqual(out.shape, [])
        let out2 = torch.einsum("Ab,ba", a, b)
        XCTAssertEqual(out2.shape, [2, 2])
        assertClose(out2, a.mm(b), atol: 1e-12)
    }
}
