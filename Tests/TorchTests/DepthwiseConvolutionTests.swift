import XCTest
@testable import Torch

/// The depthwise loops (DepthwiseConvolution.swift) against grouped im2col (itself checked against PyTorch's fixtures
/// and numerical gradients in ConvolutionTests): values and the input, weight and bias gradients for stride 1 and 2,
/// paddings from 0 to past the kernel, asymmetric padding, dilation, a channel multiplier of 2, 1-D, 5×5, batch 1,
/// float64, two threads, planes too large for the C kernel's padded scratch, and ConvTranspose (whose forward is the
/// transposed loop).
final class DepthwiseConvolutionTests: XCTestCase {
    /// The depthwise loops' results against grouped im2col's (values and the three gradients).
    private func compare(_ x: Tensor, _ w: Tensor, _ b: Tensor, file: StaticString = #filePath, line: UInt = #line,
                         _ body: (Tensor, Tensor, Tensor) -> Tensor) {
        assertKernelPathMatches({ DepthwiseConvolution.enabled = $0 }, x, w, b, tolerance: x.dtype == .float64 ? 1e-12 : 2e-6, file: file, line: line, body)
    }

    private func conv2dCase(batch: Int = 2, channels: Int = 6, multiplier: Int = 1, _ h: Int, _ w: Int, kernel: [Int],
                            stride: [Int] = [1, 1], padding: [Int] = [1, 1], dilation: [Int] = [1, 1], dtype: DType = .float32,
                            file: StaticString = #filePath, line: UInt = #line) {
        torch.manualSeed(UInt64(h * 31 + w))
        let x = torch.randn([batch, channels, h, w], dtype: dtype)
        let wt = torch.randn([channels * multiplier, 1] + kernel, dtype: dtype) * 0.3, b = torch.randn([channels * multiplier], dtype: dtype)
        compare(x, wt, b, file: file, line: line) {
            F.conv2d($0, $1, $2, stride: stride, padding: padding, dilation: dilation, groups: channels)
        }
    }

    func testAppliesToDepthwiseOnly() {
        func geometry(groups: Int, bigChannels: Int, smallChannels: Int, depth: Int = 1) -> ConvGeometry {
            ConvGeometry(big: [depth, 8, 8], small: [depth, 8, 8], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1],
                         dilation: [1, 1, 1], groups: groups, bigChannels: bigChannels, smallChannels: smallChannels)
        }
        XCTAssertTrue(DepthwiseConvolution.applies(geometry(groups: 32, bigChannels: 32, smallChannels: 32)))
        XCTAssertTrue(DepthwiseConvolution.applies(geometry(groups: 32, bigChannels: 32, smallChannels: 64)), "multiplier 2")
        XCTAssertFalse(DepthwiseConvolution.applies(geometry(groups: 16, bigChannels: 32, smallChannels: 32)), "2 channels per group")
        XCTAssertFalse(DepthwiseConvolution.applies(geometry(groups: 1, bigChannels: 1, smallChannels: 8)), "one group: a plain convolution")
        XCTAssertFalse(DepthwiseConvolution.applies(geometry(groups: 32, bigChannels: 32, smallChannels: 32, depth: 4)), "3-D")
    }

    func testStrideAndPadding() {
        conv2dCase(13, 11, kernel: [3, 3])
        conv2dCase(14, 9, kernel: [3, 3], stride: [2, 2])
        conv2dCase(batch: 1, 37, 41, kernel: [3, 3], stride: [2, 2])   // 21-wide rows: the C kernel's stride-2 vectors and its tail
        conv2dCase(7, 10, kernel: [3, 3], stride: [2, 3], padding: [0, 2])
        conv2dCase(5, 6, kernel: [5, 5], padding: [2, 2])
        conv2dCase(4, 4, kernel: [3, 3], padding: [4, 5])
        conv2dCase(batch: 1, 9, 12, kernel: [5, 3], stride: [3, 1], padding: [1, 0])
    }

    /// Planes too large for the C kernel's padded scratch (4096 floats) take its edge and interior loops: 3×3 at
    /// stride 1 and 2 (the register-resident 3×3 loop and its one-vector and scalar tails), 5×3 with dilation, and a
    /// kernel taller than the plane's padding.
    func testLargePlanes() {
        conv2dCase(batch: 1, channels: 2, 70, 75, kernel: [3, 3])
        conv2dCase(batch: 1, channels: 2, 131, 77, kernel: [3, 3], stride: [2, 2])
        conv2dCase(batch: 1, channels: 2, 66, 71, kernel: [5, 3], padding: [2, 2], dilation: [1, 2])
        conv2dCase(batch: 1, channels: 2, 90, 67, kernel: [3, 3], stride: [1, 2], padding: [0, 1])
    }

    func testDilationMultiplierAndDouble() {
        conv2dCase(12, 12, kernel: [3, 3], padding: [2, 2], dilation: [2, 2])
        conv2dCase(channels: 4, multiplier: 2, 9, 8, kernel: [3, 3], stride: [2, 2])
        conv2dCase(8, 7, kernel: [3, 3], stride: [2, 2], dtype: .float64)
    }

    func testConv1dAndTwoThreads() {
        torch.manualSeed(3)
        let x = torch.randn([3, 5, 40]), w = torch.randn([10, 1, 5]) * 0.3, b = torch.randn([10])
        compare(x, w, b) { F.conv1d($0, $1, $2, stride: 2, padding: 2, groups: 5) }
        let threads = torch.getNumThreads()
        defer { torch.setNumThreads(threads) }
        torch.setNumThreads(2)
        conv2dCase(batch: 4, channels: 64, 30, 30, kernel: [3, 3])
    }

    /// ConvTranspose2d with groups = input = output channels: its forward is the transposed loop, its input gradient
    /// the forward one. (With more output channels than groups the transposed problem is not depthwise.)
    func testConvTranspose() {
        torch.manualSeed(4)
        let g = ConvGeometry(big: [1, 14, 18], small: [1, 7, 9], kernel: [1, 3, 3], stride: [1, 2, 2], padding: [0, 1, 1],
                             dilation: [1, 1, 1], groups: 6, bigChannels: 6, smallChannels: 6)
        XCTAssertTrue(DepthwiseConvolution.applies(g))
        let x = torch.randn([2, 6, 7, 9]), w = torch.randn([6, 1, 3, 3]) * 0.3, b = torch.randn([6])
        compare(x, w, b) { F.convTranspose2d($0, $1, $2, stride: 2, padding: 1, outputPadding: 1, groups: 6) }
        // Stride 1: the transposed loop is the flipped-kernel correlation (the C kernel), here with dilation 2 and a
        // 19-wide output, and an output padding.
        let wide = torch.randn([2, 6, 9, 15]), w5 = torch.randn([6, 1, 3, 5]) * 0.3
        compare(wide, w5, b) { F.convTranspose2d($0, $1, $2, padding: [1, 2], groups: 6, dilation: 2) }
        compare(wide, w5, b) { F.convTranspose2d($0, $1, $2, padding: 1, outputPadding: 1, groups: 6, dilation: 2) }
    }
}
