import CTorchKernels
import XCTest
@testable import Torch

/// Weights packed once for the GEMM (`ct_sgemm_pack_a`, `PackedGEMMWeight`): the same results as packing per call,
/// bit for bit, reused only while the weight is unchanged, and never while autograd records through the weight.
final class PackedGEMMWeightTests: XCTestCase {
    func testPrepackedGEMMMatchesTheGEMMBitForBit() {
        let saved = torch.getNumThreads()
        defer { torch.setNumThreads(saved) }
        // M off the micro-tile rows, K over one and several K blocks, N from one vector pair to several N blocks.
        for threads in [1, 2] {
            torch.setNumThreads(threads)
            for (m, n, k) in [(64, 16, 27), (7, 49, 300), (130, 200, 576), (512, 49, 4608), (3, 600, 9)] {
                torch.manualSeed(UInt64(m * n + k))
                let a = torch.randn(m, k).contiguous(), b = torch.randn(k, n).contiguous()
                let cRef = torch.randn(m, n).contiguous(), c = cRef.clone()
                let packed = UnsafeMutablePointer<Float>.allocate(capacity: m * k)
                defer { packed.deallocate() }
                ct_sgemm_pack_a(Int64(m), Int64(k), a.pointer(Float.self), Int64(k), 1, packed)
                ct_sgemm(Int64(m), Int64(n), Int64(k), 1, a.pointer(Float.self), Int64(k), 1, b.pointer(Float.self),
                         Int64(n), 1, 0.5, cRef.pointer(Float.self), Int64(n))
                ct_sgemm_prepacked(Int64(m), Int64(n), Int64(k), 1, packed, b.pointer(Float.self), Int64(n), 1, 0.5,
                                   c.pointer(Float.self), Int64(n))
                XCTAssertEqual(c.toArray(as: Float.self), cRef.toArray(as: Float.self), "M \(m) N \(n) K \(k), \(threads) threads")
            }
        }
    }

    func testConvolutionReusesThePackedWeightUntilTheWeightChanges() {
        torch.manualSeed(7)
        // 3×3 on 14×14 (49 Winograd tiles: the im2col GEMM path), the shape of ResNet-18's layer3 at batch 1.
        let conv = nn.Conv2d(32, 48, 3, padding: 1)
        let x = torch.randn(1, 32, 14, 14)
        let recorded = conv(x)                                   // grad mode on, weight requires grad: no packing
        XCTAssertNil(conv.weight.storage.preparedOperand)
        let first = torch.noGrad { conv(x) }
        let packed = conv.weight.storage.preparedOperand
        XCTAssertNotNil(packed)
        XCTAssertEqual(first.toArray(as: Float.self), recorded.detach().toArray(as: Float.self), "packed once = packed per call")
        let second = torch.noGrad { conv(x) }
        XCTAssertTrue(conv.weight.storage.preparedOperand === packed, "reused")
        XCTAssertEqual(second.toArray(as: Float.self), first.toArray(as: Float.self))

        torch.noGrad { _ = conv.weight.mul_(0.5) }               // an in-place change bumps the version: repacked
        let halved = torch.noGrad { conv(x) }
        XCTAssertFalse(conv.weight.storage.preparedOperand === packed)
        let expected = F.conv2d(x, conv.weight.detach(), conv.bias!.detach(), padding: 1)
        XCTAssertEqual(halved.toArray(as: Float.self), expected.toArray(as: Float.self))
    }
}
