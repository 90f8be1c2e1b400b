import XCTest
@testable import Torch

/// In-place elementwise ops (ReLU6/Hardtanh in place run their own one-pointer loop, `clampInPlace`, so that they
/// vectorise): the same values, bit for bit, as the out-of-place ops, for lengths that cover the scalar loop, vector
/// loops with tails, and the prefetching chunked loop; NaN and infinities included.
final class InPlaceKernelTests: XCTestCase {
    private func input(_ n: Int, _ dtype: DType) -> Tensor {
        let x = torch.randn([n], dtype: dtype) * 4
        if n > 5 { torch.noGrad { _ = x[3].fill_(.nan); _ = x[n - 2].fill_(.infinity); _ = x[n - 1].fill_(-.infinity) } }
        return x
    }

    func testInPlaceMatchesOutOfPlace() {
        torch.manualSeed(0)
        for dtype in [DType.float32, .float64] {
            for n in [1, 7, 33, 1025, 70_001] {
                let x = input(n, dtype), other = torch.randn([n], dtype: dtype)
                let cases: [(String, (Tensor) -> Tensor, (Tensor) -> Void)] = [
                    ("relu", { $0.relu() }, { $0.relu_() }),
                    ("relu6", { F.relu6($0) }, { _ = F.relu6($0, inplace: true) }),
                    ("hardtanh", { F.hardtanh($0, minVal: -0.5, maxVal: 2) }, { _ = F.hardtanh($0, minVal: -0.5, maxVal: 2, inplace: true) }),
                    ("leaky_relu", { F.leakyRelu($0, negativeSlope: 0.1) }, { _ = F.leakyRelu($0, negativeSlope: 0.1, inplace: true) }),
                    ("add tensor", { $0 + other }, { $0.add_(other) }),
                    ("mul scalar", { $0 * 1.5 }, { $0.mul_(1.5) }),
                    ("clamp", { $0.clamp(min: -1, max: 1) }, { $0.clamp_(min: -1, max: 1) }),
                ]
                for (name, outOfPlace, inPlace) in cases {
                    let expected = outOfPlace(x)
                    let y = x.clone()
                    inPlace(y)
                    assertClose(y, expected, atol: 0, rtol: 0, "\(name), \(n) × \(dtype)")
                }
            }
        }
    }
}
