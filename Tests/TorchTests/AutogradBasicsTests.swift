import XCTest
@testable import Torch

final class AutogradBasicsTests: XCTestCase {
    func testSumGradientIsOnes() {
        let x = torch.tensor([[1.0, 2], [2, 4]], dtype: .float64, requiresGrad: true)
        let y = x.sum()
        XCTAssertEqual(y.gradFn?.name, "SumBackward0")
        y.backward()
        assertClose(x.grad!, [1, 1, 1, 1])
    }

    func testSquareTimesExp() {
        let x = torch.rand(3, 3, requiresGrad: true)
        let y = x.pow(2) * torch.exp(x)
        y.backward(torch.onesLike(y))
        let expected = torch.noGrad { 2 * x * x.exp() + x * x * x.exp() }
        assertClose(x.grad!, expected, atol: 1e-5)
    }

    func testDeepChainDoesNotOverflowStack() {
        let x = torch.tensor([1.0], requiresGrad: true)
        var y = x
        for _ in 0..<100_000 { y = y * 1.0 }
        y.sum().backward()
        assertClose(x.grad!, [1])
    }

    func testBroadcastGradients() {
        gradcheck([torch.randn(3, 1), torch.randn(1, 4)]) { $0[0] * $0[1] + $0[0] / ($0[1].abs() + 1) }
    }

    func testSecondDerivative() {
        let x = torch.tensor([2.0], dtype: .float64, requiresGrad: true)
        let y = x.pow(3)
        let (g) = torch.autograd.grad([y], [x], createGraph: true)[0]!
        assertClose(g, [12])
        let g2 = torch.autograd.grad([g], [x])[0]!
        assertClose(g2, [12])
    }
}
