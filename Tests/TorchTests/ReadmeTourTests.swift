import XCTest
import Torch

/// The README's "Quick tour", line for line, so the README cannot drift from the API.
final class ReadmeTourTests: XCTestCase {
    func testQuickTourRunsAsWritten() {
        let x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requiresGrad: true)
        let y = (x * x).sum()
        y.backward()
        XCTAssertEqual("\(x.grad!)", "tensor([[2., 4.],\n        [6., 8.]])")

        let a = torch.randn(64, 1000), w = torch.randn(1000, 100, requiresGrad: true)
        let h = a.mm(w).clamp(min: 0)                     // grad_fn=<ClampBackward1>
        XCTAssertEqual(h.gradFn?.name, "ClampBackward1")
        let (values, indices) = h.max(dim: 1)
        XCTAssertEqual(values.shape, [64])
        XCTAssertEqual(indices.dtype, .int64)
        let g = h.detach().clone()
        g[h .< 0] = 0                                     // boolean-mask assignment
        XCTAssertFalse((g .< 0).any().item(as: Bool.self))

        let opt = optim.SGD([w], lr: 1e-3, momentum: 0.9)
        let sched = optim.lrScheduler.StepLR(opt, stepSize: 5, gamma: 0.1)
        opt.zeroGrad(); h.sum().backward(); opt.step(); sched.step()
        opt.paramGroups[0].lr *= 0.1
        XCTAssertEqual(opt.paramGroups[0].lr, 1e-4, accuracy: 1e-12)

        let (U, S, Vh) = torch.linalg.svd(torch.randn(4, 3), fullMatrices: false)
        XCTAssertEqual([U.shape, S.shape, Vh.shape], [[4, 3], [3], [3, 3]])
        let z = torch.einsum("bij,bjk->bik", torch.randn(2, 3, 4), torch.randn(2, 4, 5))
        XCTAssertEqual(z.shape, [2, 3, 5])
    }
}
