import XCTest
@testable import Torch

final class SoftmaxTests: XCTestCase {
    func testFixtures() throws {
        try runShapeOpFixtures(["softmax", "log_softmax", "softmin"])
    }

    func testBasicsAndStability() {
        let x = torch.tensor([[1.0, 2, 3], [1000, 1001, 1002]])
        let p = x.softmax(dim: 1)
        let e = [exp(-2.0), exp(-1.0), 1]
        let s = e.reduce(0, +)
        assertClose(p, (e + e).map { $0 / s })
        assertClose(x.logSoftmax(dim: -1), (e + e).map { Foundation.log($0 / s) }, atol: 1e-5)
        assertClose(torch.softmax(x, dim: 0).sum(dim: 0), [1, 1, 1])
        assertClose(torch.softmin(x, dim: 1), (e.reversed() + e.reversed()).map { $0 / s })
        XCTAssertEqual(torch.tensor(3.0).softmax(dim: 0).item(), 1)
        XCTAssertEqual(torch.empty(0, 3).softmax(dim: 0).shape, [0, 3])
        XCTAssertEqual(torch.empty(2, 0).logSoftmax(dim: 1).shape, [2, 0])
        let h = torch.tensor([1.0, 2.0], dtype: .float16).softmax(dim: 0)
        XCTAssertEqual(h.dtype, .float16)
        assertClose(h, [1 / (1 + exp(1.0)), 1 / (1 + exp(-1.0))], atol: 1e-3)
        let d = torch.ones(2, 3).softmax(dim: 1, dtype: .float64)
        XCTAssertEqual(d.dtype, .float64)
        XCTAssertEqual(torch.tensor([1, 2]).softmax(dim: 0, dtype: .float32).dtype, .float32)
    }

    /// The strided (non-last dim) kernel, column blocks, the parallel paths and the fused backward
    /// agree with the composite formulas computed from the last-dim kernel.
    func testAllPathsAgree() {
        for dtype in [DType.float32, .float64] {
            let atol = dtype == .float32 ? 2e-6 : 1e-13
            for shape in [[8, 3, 600], [64, 1000], [2, 3]] {
                for d in 0..<shape.count {
                    let x = (torch.randn(shape, dtype: dtype, generator: Generator().manualSeed(3)) * 5).requiresGrad_()
                    let g = torch.randn(shape, dtype: dtype, generator: Generator().manualSeed(4))
                    for log in [false, true] {
                        let y = log ? x.logSoftmax(dim: d) : x.softmax(dim: d)
                        // Reference: move the dim last (last-dim kernel), then back.
                        let ref = torch.noGrad { () -> Tensor in
                            let m = x.movedim(d, -1).contiguous()
                            return (log ? m.logSoftmax(dim: -1) : m.softmax(dim: -1)).movedim(-1, d)
                        }
                        assertClose(y, ref, atol: log ? atol * 100 : atol, rtol: 1e-5, "forward \(shape) dim \(d) log \(log)")
                        // Fused backward (no graph) vs the differentiable formula (createGraph).
                        let fused = torch.autograd.grad([y], [x], gradOutputs: [g], retainGraph: true)[0]!
                        let composite = torch.autograd.grad([y], [x], gradOutputs: [g], createGraph: true)[0]!
                        assertClose(fused, composite.detach(), atol: atol * 10, rtol: 1e-5, "backward \(shape) dim \(d) log \(log)")
                    }
                }
            }
        }
    }

    func testNonFiniteInputs() {
        let inf = Double.infinity
        let x = torch.tensor([[-inf, 0, 1], [-inf, -inf, -inf], [inf, 0, 1], [.nan, 0, 1]])
        let p = x.softmax(dim: 1).toArray(as: Double.self)
        XCTAssertEqual(p[0], 0)
        XCTAssertEqual(p[1] + p[2], 1, accuracy: 1e-6)
        XCTAssertTrue(p[3...].allSatisfy(\.isNaN))
        let l = x.logSoftmax(dim: 1).toArray(as: Double.self)
        XCTAssertEqual(l[0], -inf)
        XCTAssertTrue(l[3...].allSatisfy(\.isNaN))
        // Gradients at -inf entries are finite.
        let y = torch.tensor([[-inf, 0, 1]], dtype: .float64).requiresGrad_()
        y.softmax(dim: 1).select(1, 2).sum().backward()
        XCTAssertTrue(y.grad!.isfinite().all().item() != 0)
        XCTAssertEqual(y.grad!.toArray(as: Double.self)[0], 0)
    }

    func testGradFnNames() {
        let x = torch.randn(2, 3).requiresGrad_()
        XCTAssertEqual(x.softmax(dim: 1).gradFn?.name, "SoftmaxBackward0")
        XCTAssertEqual(x.logSoftmax(dim: 0).gradFn?.name, "LogSoftmaxBackward0")
        XCTAssertEqual(x.softmax(dim: 1, dtype: .float64).gradFn?.name, "SoftmaxBackward0")
        XCTAssertEqual(torch.softmin(x, dim: 1).gradFn?.name, "SoftmaxBackward0")
    }

    func testGradcheck() {
        let x = torch.randn(2, 3, 4)
        for d in [0, 1, 2, -1] {
            gradcheck([x]) { $0[0].softmax(dim: d) }
            gradcheck([x]) { $0[0].logSoftmax(dim: d) }
        }
        gradcheck([x]) { $0[0].softmin(dim: 1) }
        gradcheck([x]) { $0[0].transpose(0, 2).softmax(dim: 1) }
        gradcheck([torch.randn(3)]) { $0[0].expand(4, 3).logSoftmax(dim: 0) }
        gradcheck([torch.randn([])]) { $0[0].softmax(dim: 0) * $0[0] }
    }

    func testSecondDerivatives() {
        let x = torch.randn(3, 4)
        let w = torch.randn(3, 4, dtype: .float64)
        for log in [false, true] {
            for d in [0, 1] {
                gradcheck([x]) { xs in
                    torch.enableGrad {
                        let y = log ? xs[0].logSoftmax(dim: d) : xs[0].softmax(dim: d)
                        return torch.autograd.grad([(y * w).sum()], [xs[0]], createGraph: true)[0]!
                    }
                }
            }
        }
    }

    func testErrorMessage() {
        XCTAssertEqual(softmaxDTypeErrorMessage(op: "softmax", dtype: .int64),
                       "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")
        XCTAssertEqual(softmaxDTypeErrorMessage(op: "log_softmax", dtype: .int32),
                       "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Int'")
        XCTAssertEqual(dimErrorMessage(op: "softmax", dim: 1, rank: 0),
                       "softmax: Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    }
}
