import XCTest
@testable import Torch

/// The direct kernels of convolutions with short im2col matrices (DirectConvolution.swift) against the im2col
/// path (itself checked against PyTorch's fixtures and numerical gradients in ConvolutionTests): values and the
/// input, weight and bias gradients for LeNet-5's geometries, paddings up to kernel − 1, 1-D, odd widths that
/// leave partial vectors, output-channel counts that leave partial tiles, batch 1, two threads, and
/// ConvTranspose (whose forward is the transposed kernel, with bias).
final class DirectConvolutionTests: XCTestCase {
    private func geometry(_ cin: Int, _ cout: Int, _ size: [Int], kernel: [Int], padding: [Int]) -> ConvGeometry {
        let out = zip(zip(size, kernel), padding).map { $0.0 + 2 * $1 - $0.1 + 1 }
        return ConvGeometry(big: [1] + size, small: [1] + out, kernel: [1] + kernel, stride: [1, 1, 1], padding: [0] + padding,
                            dilation: [1, 1, 1], groups: 1, bigChannels: cin, smallChannels: cout)
    }

    /// The direct kernels' results against im2col's (values and the three gradients).
    private func compare(_ x: Tensor, _ w: Tensor, _ b: Tensor, file: StaticString = #filePath, line: UInt = #line,
                         _ body: (Tensor, Tensor, Tensor) -> Tensor) {
        assertKernelPathMatches({ DirectConvolution.enabled = $0 }, x, w, b, tolerance: 2e-6, file: file, line: line, body)
    }

    private func conv2dCase(batch: Int, _ cin: Int, _ cout: Int, _ h: Int, _ w: Int, kernel: Int, padding: Int,
                            file: StaticString = #filePath, line: UInt = #line) {
        DirectConvolution.enabled = true
        XCTAssertTrue(DirectConvolution.applies(geometry(cin, cout, [h, w], kernel: [kernel, kernel], padding: [padding, padding]), Float.self),
                      "the direct kernels should take this convolution", file: file, line: line)
        torch.manualSeed(UInt64(cin * 100 + cout))
        let x = torch.randn([batch, cin, h, w]), wt = torch.randn([cout, cin, kernel, kernel]) * 0.2, b = torch.randn([cout])
        compare(x, wt, b, file: file, line: line) { F.conv2d($0, $1, $2, padding: padding) }
    }

    func testLeNetGeometries() {
        conv2dCase(batch: 4, 3, 6, 32, 32, kernel: 5, padding: 0)
        conv2dCase(batch: 4, 6, 16, 14, 14, kernel: 5, padding: 0)
    }

    /// Padding 1 and 2 (up to kernel − 1), odd sizes, channel counts that leave partial tiles (7, 13), batch 1.
    func testPaddingOddSizesAndPartialTiles() {
        conv2dCase(batch: 3, 1, 32, 28, 28, kernel: 3, padding: 1)
        conv2dCase(batch: 1, 2, 7, 9, 13, kernel: 3, padding: 2)
        conv2dCase(batch: 2, 5, 13, 11, 6, kernel: 4, padding: 1)
        conv2dCase(batch: 2, 3, 1, 7, 17, kernel: 2, padding: 0)
    }

    /// Several images per chunk on two threads (the weight gradient's per-chunk partial sums).
    func testTwoThreads() {
        let threads = torch.getNumThreads()
        torch.setNumThreads(2)
        defer { torch.setNumThreads(threads) }
        conv2dCase(batch: 9, 3, 6, 16, 15, kernel: 5, padding: 2)
    }

    func testConv1d() {
        torch.manualSeed(3)
        let x = torch.randn([3, 4, 37]), w = torch.randn([10, 4, 5]) * 0.3, b = torch.randn([10])
        DirectConvolution.enabled = true
        XCTAssertTrue(DirectConvolution.applies(geometry(4, 10, [1, 37], kernel: [1, 5], padding: [0, 2]), Float.self))
        compare(x, w, b) { F.conv1d($0, $1, $2, padding: 2) }
    }

    /// ConvTranspose2d runs the transposed kernel forward (with its bias) and the forward kernel for its input gradient.
    func testConvTranspose() {
        torch.manualSeed(4)
        let x = torch.randn([2, 6, 10, 9]), w = torch.randn([6, 3, 5, 5]) * 0.2, b = torch.randn([3])
        compare(x, w, b) { F.convTranspose2d($0, $1, $2, padding: 1) }
    }

    func testWhatStaysOnIm2col() {
        XCTAssertFalse(DirectConvolution.applies(geometry(64, 64, [8, 8], kernel: [3, 3], padding: [1, 1]), Float.self),
                       "576 im2col rows: the GEMM's K is long enough")
        XCTAssertFalse(DirectConvolution.applies(geometry(3, 6, [8, 8], kernel: [3, 3], padding: [1, 1]), Double.self), "float64")
        XCTAssertFalse(DirectConvolution.applies(geometry(3, 6, [8, 8], kernel: [1, 1], padding: [0, 0]), Float.self), "1×1: plain GEMM")
        XCTAssertFalse(DirectConvolution.applies(geometry(3, 6, [8, 8], kernel: [3, 3], padding: [3, 3]), Float.self), "padding ≥ kernel")
        var strided = geometry(3, 6, [8, 8], kernel: [3, 3], padding: [1, 1])
        strided.stride = [1, 2, 2]
        strided.small = [1, 4, 4]
        XCTAssertFalse(DirectConvolution.applies(strided, Float.self), "stride 2")
    }
}
