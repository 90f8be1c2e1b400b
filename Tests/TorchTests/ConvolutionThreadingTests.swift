import XCTest
@testable import Torch

/// The convolution passes split over the pool (the cropped-tap weight copies, the per-chunk weight-gradient sums of
/// im2col and Winograd, Winograd's filter transforms, the whole-batch GEMMs with their layout copies split over
/// images, Winograd's weight gradient split over its 16 positions) give one thread's values on two threads (and on
/// eight, the schedules many-core machines take), for shapes large enough that every one of those passes is split
/// (ResNet's last stage on 1×1 planes; 48 → 48 Winograd).
final class ConvolutionThreadingTests: XCTestCase {
    /// y, x.grad, w.grad of `body(x, w)` weighted by a fixed random tensor, on `threads` threads.
    private func run(_ x: Tensor, _ w: Tensor, threads: Int, _ body: (Tensor, Tensor) -> Tensor) -> [Tensor] {
        let saved = torch.getNumThreads()
        torch.setNumThreads(threads)
        defer { torch.setNumThreads(saved) }
        let xs = x.detach().requiresGrad_(), ws = w.detach().requiresGrad_()
        let y = body(xs, ws)
        torch.manualSeed(5)
        (y * torch.randn(y.shape)).sum().backward()
        return [y.detach(), xs.grad!, ws.grad!]
    }

    /// `gemmImageChunks(g, batch:)` with `threads` threads set.
    private func chunks(_ g: ConvGeometry, batch: Int, threads: Int) -> Int {
        let saved = torch.getNumThreads()
        torch.setNumThreads(threads)
        defer { torch.setNumThreads(saved) }
        return gemmImageChunks(g, batch: batch)
    }

    private func compare(_ x: Tensor, _ w: Tensor, threads: Int = 2, file: StaticString = #filePath, line: UInt = #line,
                         _ body: (Tensor, Tensor) -> Tensor) {
        let one = run(x, w, threads: 1, body), two = run(x, w, threads: threads, body)
        for (name, (a, b)) in zip(["output", "input grad", "weight grad"], zip(one, two)) {
            let scale = Swift.max(a.abs().max().item(), 1)
            // Two threads sum the weight gradient's per-image terms in two partial sums: rounding differs.
            XCTAssertLessThanOrEqual((a - b).abs().max().item(), 1e-5 * scale, name, file: file, line: line)
        }
    }

    /// 64 → 64 3×3 on a 1×1 plane: 4096 weight rows cropped to their centre tap (more than one grain of rows).
    func testCroppedTapsOnTwoThreads() {
        torch.manualSeed(1)
        let w = torch.randn([64, 64, 3, 3]) * 0.1
        compare(torch.randn([8, 64, 1, 1]), w) { F.conv2d($0, $1, padding: 1) }
        compare(torch.randn([8, 64, 2, 2]), w) { F.conv2d($0, $1, stride: 2, padding: 1) }
    }

    /// 256 → 256 3×3 on a 1×1 plane, batch 8: the whole batch is one GEMM that splits the weight's rows over the
    /// threads (`gemmImageChunks` gives one chunk) instead of one chunk of images per thread.
    func testWholeBatchGEMMOnTwoThreads() {
        torch.manualSeed(3)
        let g = ConvGeometry(big: [1, 1, 1], small: [1, 1, 1], kernel: [1, 1, 1], stride: [1, 1, 1], padding: [0, 0, 0],
                             dilation: [1, 1, 1], groups: 1, bigChannels: 256, smallChannels: 256)
        XCTAssertEqual(chunks(g, batch: 8, threads: 2), 1)
        XCTAssertEqual(chunks(g, batch: 2, threads: 2), 2, "too small a product for the GEMM to split: image chunks")
        compare(torch.randn([8, 256, 1, 1]), torch.randn([256, 256, 3, 3]) * 0.05) { F.conv2d($0, $1, padding: 1) }
    }

    /// 48 → 48 on 6×6, batch 8: 72 Winograd tiles; 16·48·48 transformed-filter gradients summed over two chunks.
    func testWinogradOnTwoThreads() {
        torch.manualSeed(2)
        let p = WinogradProblem(forward: ConvGeometry(big: [1, 6, 6], small: [1, 6, 6], kernel: [1, 3, 3], stride: [1, 1, 1],
                                                      padding: [0, 1, 1], dilation: [1, 1, 1], groups: 1,
                                                      bigChannels: 48, smallChannels: 48), batch: 8)
        XCTAssertNotNil(p, "this convolution should run as Winograd")
        compare(torch.randn([8, 48, 6, 6]), torch.randn([48, 48, 3, 3]) * 0.1) { F.conv2d($0, $1, padding: 1) }
    }

    /// ResNet-18's layer-3 stride-2 convolution at batch 32 (128 → 256 on 4×4 → 2×2 planes, 128 GEMM columns): image
    /// chunks on 2 threads, but on 8 threads a thread would get 16 columns, so the whole batch is one GEMM with its
    /// im2col, gathers and col2im split over the images.
    func testFewColumnsPerThreadIsOneGEMM() {
        torch.manualSeed(4)
        let g = ConvGeometry(big: [1, 4, 4], small: [1, 2, 2], kernel: [1, 3, 3], stride: [1, 2, 2], padding: [0, 1, 1],
                             dilation: [1, 1, 1], groups: 1, bigChannels: 128, smallChannels: 256)
        XCTAssertEqual(chunks(g, batch: 32, threads: 2), 2)
        XCTAssertEqual(chunks(g, batch: 32, threads: 8), 1)
        compare(torch.randn([32, 128, 4, 4]), torch.randn([256, 128, 3, 3]) * 0.05, threads: 8) {
            F.conv2d($0, $1, stride: 2, padding: 1)
        }
    }

    /// 48 → 48 on 6×6, batch 8, on 8 threads: 9 tiles a chunk, so the weight gradient splits its 16 transform
    /// positions over the pool instead of summing eight partial gradients.
    func testWinogradWeightGradientByPosition() {
        torch.manualSeed(6)
        compare(torch.randn([8, 48, 6, 6]), torch.randn([48, 48, 3, 3]) * 0.1, threads: 8) { F.conv2d($0, $1, padding: 1) }
    }
}
