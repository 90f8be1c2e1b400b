import XCTest
@testable import Torch

/// The one-pass backward formulas of ReLU, tanh and sigmoid (`fusedFloatBinary` with a static formula): gradients in
/// every floating dtype against the same formula in float64, on lengths that run the pool's split (two threads).
final class BackwardFormulaTests: XCTestCase {
    func testReLUTanhSigmoidGradientsInEveryFloatDtype() {
        torch.manualSeed(1)
        let threads = torch.getNumThreads()
        defer { torch.setNumThreads(threads) }
        torch.setNumThreads(2)
        let base = torch.randn([70_001], dtype: .float64) * 3
        // The derivative from the input x and the output o (both as the dtype computed them), in float64.
        let cases: [(String, (Tensor) -> Tensor, (Tensor, Tensor) -> Tensor)] = [
            ("relu", { $0.relu() }, { x, _ in (x .> 0).to(.float64) }),
            ("tanh", { $0.tanh() }, { _, o in 1 - o * o }),
            ("sigmoid", { $0.sigmoid() }, { _, o in o * (1 - o) }),
        ]
        for dtype in [DType.float16, .bfloat16, .float32, .float64] {
            let tolerance = dtype == .float64 ? 1e-12 : dtype == .float32 ? 1e-6 : 1e-2
            for (name, f, derivative) in cases {
                let x = base.to(dtype).clone().requiresGrad_()
                let upstream = torch.randn([70_001], dtype: .float64).to(dtype)
                let y = f(x)
                y.backward(upstream)
                let exact = upstream.to(.float64) * derivative(x.detach().to(.float64), y.detach().to(.float64))
                assertClose(x.grad!.to(.float64), exact, atol: tolerance, rtol: tolerance, "\(name) × \(dtype)")
            }
        }
    }
}
