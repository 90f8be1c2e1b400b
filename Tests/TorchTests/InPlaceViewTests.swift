import XCTest
@testable import Torch

/// In-place ops on views of tensors that take part in autograd (PyTorch's CopySlices).
final class InPlaceViewTests: XCTestCase {
    func testInPlaceOnViewRebasesBaseAsCopySlices() {
        let x = torch.randn(3, 4, dtype: .float64, requiresGrad: true)
        let y = x * 1
        let v = y.select(0, 0)
        v.mul_(2)
        XCTAssertEqual(y.gradFn?.name, "CopySlices")
        XCTAssertEqual(v.gradFn?.name, "AsStridedBackward0")
        (y * y).sum().backward()
        // y = x except row 0 = 2x, so d(Σy²)/dx is 8x on row 0 and 2x elsewhere.
        let scale = torch.tensor([[8.0], [2.0], [2.0]], dtype: .float64)
        assertClose(x.grad!, x.detach() * scale, atol: 1e-12)
    }

    func testCopyIntoViewOfTensorWithoutGradMakesItRequireGrad() {
        let src = torch.tensor([1.0, 2.0, 3.0], requiresGrad: true)
        let b = torch.zeros(2, 3)
        b.select(0, 1).copy_(src * 2)
        XCTAssertTrue(b.requiresGrad)
        XCTAssertEqual(b.gradFn?.name, "CopySlices")
        (b * torch.tensor([[1.0, 1, 1], [1, 2, 3]])).sum().backward()
        assertClose(src.grad!, [2, 4, 6])
    }

    func testNestedViewsAndIndexAssignmentMatchOutOfPlaceMath() {
        // Element-wise in-place ops on a view of a view, on a strided slice and through x[i][j] = value.
        gradcheck([torch.randn(3, 5, dtype: .float64)]) { xs in
            let y = xs[0] * 1
            y.slice(1, start: 0, end: 5, step: 2).mul_(torch.tensor([1.5, -2.0, 0.5], dtype: .float64))
            y[0][1] = torch.tensor(5.0, dtype: .float64)
            // Last: ExpBackward saves its result, which a later in-place op on y would invalidate (as in PyTorch).
            y.narrow(1, 1, 3).select(0, 2).exp_()
            return y * y
        }
        gradcheck([torch.randn(4, 3, dtype: .float64), torch.randn(3, dtype: .float64)]) { xs in
            let y = xs[0] * 2  // (tanh here would fail as in PyTorch: TanhBackward saved y)
            y.select(0, 2).add_(xs[1] * xs[1])
            y.transpose(0, 1).select(0, 0).sigmoid_()
            return y.sum(dim: 0)
        }
    }

    func testViewRegeneratesItsHistoryAfterTheBaseChanged() {
        let x = torch.randn(3, 2, dtype: .float64, requiresGrad: true)
        let y = x * 1
        let v = y.select(0, 1)
        y.mul_(3)
        v.sum().backward()
        assertClose(x.grad!, [0, 0, 3, 3, 0, 0], atol: 1e-12)
    }

    func testSecondDerivativeThroughCopySlices() {
        let x = torch.randn(2, 3, dtype: .float64, requiresGrad: true)
        let y = x * x
        y.select(0, 0).mul_(x.select(0, 1).detach())
        let (g) = torch.autograd.grad([y.sum()], [x], createGraph: true)[0]!
        // Row 0: y = x²·c → dy/dx = 2c·x, d²/dx² = 2c; row 1: y = x² → 2x, 2.
        let c = x.detach().select(0, 1)
        assertClose(g.select(0, 0), 2 * c * x.detach().select(0, 0), atol: 1e-12)
        let gg = torch.autograd.grad([g.sum()], [x])[0]!
        assertClose(gg, torch.stack([2 * c, torch.full([3], 2.0, dtype: .float64)]), atol: 1e-12)
    }
}
