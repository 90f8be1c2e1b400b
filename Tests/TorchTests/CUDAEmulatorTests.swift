import XCTest
@testable import Torch

/// The CUDA backend's logic on the host emulator (no GPU needed): the generated kernels, compiled for the
/// host, run through the same allocator, dispatch and launch code as on a GPU, and must match the CPU.
/// `cuda-check` runs the same comparisons on a real GPU.
final class CUDAEmulatorTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        CUDARuntime.useEmulator()
    }

    private let cuda = Device.cuda(0)

    private func assertClose(_ a: Tensor, _ b: Tensor, tol: Double = 1e-6, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.shape, b.shape, "shape", file: file, line: line)
        XCTAssertEqual(a.dtype, b.dtype, "dtype", file: file, line: line)
        let x = a.cpu().toArray(as: Double.self), y = b.cpu().toArray(as: Double.self)
        for (i, (p, q)) in zip(x, y).enumerated() {
            if p.isNaN && q.isNaN { continue }
            if p == q { continue }
            XCTAssertLessThanOrEqual(abs(p - q), tol * max(1, abs(q)), "element \(i): \(p) vs \(q)", file: file, line: line)
        }
    }

    func testRoundTripEveryDType() {
        for dt in DType.allCases {
            let x = torch.arange(0, 24).reshape(2, 3, 4).to(dt)
            let d = x.to(cuda)
            XCTAssertEqual(d.device, cuda)
            XCTAssertTrue(d.isCuda)
            assertClose(d.cpu(), x)
            // Strided views of device memory, and conversions on the device.
            assertClose(d.transpose(0, 2).contiguous().cpu(), x.transpose(0, 2).contiguous())
            assertClose(d.to(.float64).cpu(), x.to(.float64))
        }
    }

    func testBinaryOpsMatchTheCPU() {
        torch.manualSeed(0)
        let a = torch.randn(5, 1, 7), b = torch.randn(3, 7) + 2
        let da = a.to(cuda), db = b.to(cuda)
        for op in BinaryOp.allCases {
            assertClose(binary(op, da, db).cpu(), binary(op, a, b), tol: 1e-5)
        }
        assertClose((da * 3 + 1).cpu(), a * 3 + 1)
        assertClose((2.5 - db).cpu(), 2.5 - b)
        let ia = torch.randint(-20, 20, [4, 6]), ib = torch.randint(1, 9, [6])
        for op in BinaryOp.allCases where op.integerExpression != nil {
            assertClose(binary(op, ia.to(cuda), ib.to(cuda)).cpu(), binary(op, ia, ib))
        }
        // A transposed (non-contiguous) operand.
        let m = torch.randn(6, 4)
        let md = m.to(cuda)
        assertClose((md.t() + md.t().contiguous()).cpu(), m.t() + m.t())
    }

    func testUnaryOpsMatchTheCPU() {
        torch.manualSeed(1)
        let x = torch.rand(4, 9) * 1.8 - 0.9
        for op in UnaryOp.allCases {
            assertClose(unary(op, x.to(cuda)).cpu(), unary(op, x), tol: 1e-5)
        }
        let h = x.to(.float16)
        assertClose(h.to(cuda).exp().cpu(), h.exp(), tol: 2e-3)
        let bf = x.to(.bfloat16)
        assertClose(bf.to(cuda).cpu(), bf)
    }

    func testComparisonsAndCreation() {
        let a = torch.tensor([1.0, 2.0, .nan, 4.0]), b = torch.tensor([1.0, 3.0, 3.0, 0.0])
        for op in CompareOp.allCases {
            assertClose(compare(op, a.to(cuda), b.to(cuda)).cpu(), compare(op, a, b))
        }
        assertClose(torch.zeros(3, 5, device: cuda).cpu(), torch.zeros(3, 5))
        assertClose(torch.full([2, 2], 7.5, device: cuda).cpu(), torch.full([2, 2], 7.5))
        assertClose(torch.onesLike(a.to(cuda)).cpu(), torch.onesLike(a))
        XCTAssertEqual(torch.onesLike(a.to(cuda)).device, cuda)
        XCTAssertEqual(torch.arange(0, 5, device: cuda).cpu().toArray(as: Int.self), [0, 1, 2, 3, 4])
        XCTAssertEqual(torch.tensor([3.5], device: cuda).item(), 3.5)
    }
}
