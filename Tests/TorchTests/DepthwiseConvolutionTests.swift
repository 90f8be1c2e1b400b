import XCTest
@testable import Torch

/// The depthwise loops (DepthwiseConvolution.swift) against grouped im2col (itself checked against PyTorch's fixtures
/// and numerical gradients in ConvolutionTests): values and the input, weight and bias gradients for stride 1 and 2,
/// paddings from 0 to past the kernel, asymmetric padding, dilation, a channel multiplier of 2, 1-D, 5×5, batch 1,
/// float64, two threads, and ConvTranspose (whose forward is the transposed loop).
final class DepthwiseConvolutionTests: XCTestCase {
    override func tearDown() {
        DepthwiseConvolution.enabled = true
        super.tearDown()
    }

    /// y, x.grad, w.grad, b.grad of `body(x, w, b)` weighted by a fixed random tensor, with the depthwise loops on or off.
    private func run(_ x: Tensor, _ w: Tensor, _ b: Tensor, depthwise: Bool, _ body: (Tensor, Tensor, Tensor) -> Tensor) -> [Tensor] {
        DepthwiseConvolution.enabled = depthwise
        let xs = x.detach().requiresGrad_(), ws = w.detach().requiresGrad_(), bs = b.detach().requiresGrad_()
        let y = body(xs, ws, bs)
        torch.manualSeed(11)
        (y * torch.randn(y.shape, dtype: y.dtype)).sum().backward()
        return [y.detach(), xs.grad!, ws.grad!, bs.grad!]
    }

    private func compare(_ x: Tensor, _ w: Tensor, _ b: Tensor, file: StaticString = #filePath, line: UInt = #line,
                         _ body: (Tensor, Tensor, Tensor) -> Tensor) {
        let fast = run(x, w, b, depthwise: true, body)
        let reference = run(x, w, b, depthwise: false, body)
        let tolerance = x.dtype == .float64 ? 1e-12 : 2e-6
        for (name, (f, r)) in zip(["output", "input grad", "weight grad", "bias grad"], zip(fast, reference)) {
            XCTAssertEqual(f.shape, r.shape, name, file: file, line: line)
            let scale = Swift.max(r.abs().max().item(), 1)
            let err = (f - r).abs().max().item()
            XCTAssertLessThanOrEqual(err, tolerance * scale, "\(name): max error \(err) at scale \(scale)", file: file, line: line)
        }
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
        conv2dCase(7, 10, kernel: [3, 3], stride: [2, 3], padding: [0, 2])
        conv2dCase(5, 6, kernel: [5, 5], padding: [2, 2])
        conv2dCase(4, 4, kernel: [3, 3], padding: [4, 5])
        conv2dCase(batch: 1, 9, 12, kernel: [5, 3], stride: [3, 1], padding: [1, 0])
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

    /// ConvTranspose2d with groups = input channels: its forward is the transposed loop, its input gradient the forward one.
    func testConvTranspose() {
        torch.manualSeed(4)
        let x = torch.randn([2, 6, 7, 9]), w = torch.randn([6, 2, 3, 3]) * 0.3, b = torch.randn([12])
        compare(x, w, b) { F.convTranspose2d($0, $1, $2, stride: 2, padding: 1, outputPadding: 1, groups: 6) }
    }
}
