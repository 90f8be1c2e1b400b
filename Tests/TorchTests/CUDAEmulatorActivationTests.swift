import XCTest
@testable import Torch

/// The `nn` activations on the CUDA emulator against the CPU: forward, the fused backward (and the composite
/// one under `createGraph`), in-place forms, float32 and float64, a strided input, half types widened.
final class CUDAEmulatorActivationTests: CUDAEmulatorTestCase {
    private let activations: [(String, (Tensor) -> Tensor)] = [
        ("leakyRelu", { F.leakyRelu($0, negativeSlope: 0.2) }), ("elu", { F.elu($0, alpha: 1.3) }),
        ("selu", { F.selu($0) }), ("celu", { F.celu($0, alpha: 0.7) }), ("gelu", { F.gelu($0) }),
        ("gelu tanh", { F.gelu($0, approximate: "tanh") }), ("silu", { F.silu($0) }), ("mish", { F.mish($0) }),
        ("hardtanh", { F.hardtanh($0, minVal: -0.5, maxVal: 0.8) }), ("relu6", { F.relu6($0) }),
        ("hardsigmoid", { F.hardsigmoid($0) }), ("hardswish", { F.hardswish($0) }),
        ("softplus", { F.softplus($0, beta: 2, threshold: 3) }), ("logsigmoid", { F.logsigmoid($0) }),
    ]

    func testEveryActivationAndItsGradientMatchTheCPU() {
        for dtype in [DType.float32, .float64] {
            for (name, f) in activations {
                assertSameOnBothDevices("\(name) \(dtype)", tol: dtype == .float64 ? 1e-12 : 2e-6) { dev in
                    // Values spread over every branch (±4, the kinks at ±3, 0), transposed so the input is strided.
                    let x = (data([7, 5], seed: 21, on: dev) * 3).to(dtype).t().requiresGrad_()
                    let y = f(x)
                    (y * data([5, 7], seed: 22, on: dev).to(dtype)).sum().backward()
                    return [y, x.grad!]
                }
            }
        }
    }

    func testInPlaceFormsSecondDerivativesAndHalfTypes() {
        assertSameOnBothDevices("in-place activations", tol: 2e-6) { dev in
            let x = data([4, 6], seed: 23, on: dev) * 3
            return [F.hardswish(x.clone(), inplace: true), F.silu(x.clone(), inplace: true), F.relu6(x.clone(), inplace: true),
                    F.leakyRelu(x.clone(), negativeSlope: 0.1, inplace: true), F.elu(x.clone(), inplace: true)]
        }
        assertSameOnBothDevices("gelu's second derivative", tol: 1e-5) { dev in
            let x = data([9], seed: 24, on: dev).requiresGrad_()
            let g = torch.autograd.grad([F.gelu(x).sum()], [x], createGraph: true)[0]!
            g.sum().backward()
            return [g.detach(), x.grad!]
        }
        assertSameOnBothDevices("bfloat16 hardswish", tol: 1e-2) { dev in
            [F.hardswish((data([16], seed: 25, on: dev) * 3).to(.bfloat16))]
        }
    }
}
