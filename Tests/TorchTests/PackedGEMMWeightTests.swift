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
        // 3×3 stride 2 on 28×28 (the im2col GEMM path: Winograd takes stride 1 only), the shape of ResNet-18's first
        // layer3 convolution at batch 1.
        let conv = nn.Conv2d(32, 48, 3, stride: 2, padding: 1)
        let x = torch.randn(1, 32, 28, 28)
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
        let expected = F.conv2d(x, conv.weight.detach(), conv.bias!.detach(), stride: 2, padding: 1)
        XCTAssertEqual(halved.toArray(as: Float.self), expected.toArray(as: Float.self))
    }

    /// 3×3 stride-1 convolutions on the small planes of ResNet's deep stages at batch 1 (7×7: 16 tiles, 14×14: 49)
    /// take Winograd only with the filters transformed and packed ahead; the result matches im2col's to Winograd's
    /// rounding, is the same on 1 and 2 threads (the GEMMs split by position), and the packing is reused until the
    /// weight changes.
    func testWinogradUsesFiltersPackedOnceOnSmallPlanes() {
        let saved = torch.getNumThreads()
        defer {
            torch.setNumThreads(saved)
            winogradEnabled = true
        }
        for size in [7, 14] {
            torch.manualSeed(UInt64(size))
            let conv = nn.Conv2d(32, 48, 3, padding: 1)
            let x = torch.randn(1, 32, size, size)
            let geometry = ConvGeometry(big: [1, size, size], small: [1, size, size], kernel: [1, 3, 3], stride: [1, 1, 1],
                                        padding: [0, 1, 1], dilation: [1, 1, 1], groups: 1, bigChannels: 32, smallChannels: 48)
            XCTAssertNil(WinogradProblem(forward: geometry, batch: 1), "\(size)²: too few tiles to transform U per call")
            XCTAssertNotNil(WinogradProblem(forward: geometry, batch: 1, packedFilters: true), "\(size)²")

            func reference() -> Tensor {
                winogradEnabled = false
                defer { winogradEnabled = true }
                return F.conv2d(x, conv.weight.detach(), conv.bias!.detach(), padding: 1)
            }
            func assertClose(_ y: Tensor, _ r: Tensor, _ what: String) {
                let scale = r.abs().max().item(), err = (y - r).abs().max().item()
                XCTAssertLessThanOrEqual(err, 1e-5 * scale, "\(size)², \(what): max error \(err) at scale \(scale)")
            }
            // The references first: im2col packs the same storage as a matrix, and the cache holds one form.
            let expected = reference()
            torch.setNumThreads(1)
            let y1 = torch.noGrad { conv(x) }
            let packed = conv.weight.storage.preparedOperand as? PackedGEMMWeight
            XCTAssertEqual(packed?.form, .winogradFilters(outChannels: 48, inChannels: 32), "\(size)²")
            assertClose(y1, expected, "packed Winograd vs im2col")
            torch.setNumThreads(2)
            let y2 = torch.noGrad { conv(x) }
            XCTAssertTrue(conv.weight.storage.preparedOperand === packed, "\(size)²: reused")
            XCTAssertEqual(y2.toArray(as: Float.self), y1.toArray(as: Float.self), "\(size)²: 2 threads = 1 thread")

            torch.noGrad { _ = conv.weight.mul_(-0.5) }
            let changedExpected = reference()
            let changed = torch.noGrad { conv(x) }
            XCTAssertFalse(conv.weight.storage.preparedOperand === packed, "\(size)²: repacked after the change")
            assertClose(changed, changedExpected, "after the weight changed")
        }
    }
}
