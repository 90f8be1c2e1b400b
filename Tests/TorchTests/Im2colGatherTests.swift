import XCTest
@testable import Torch

/// The im2col gather for short output rows (Im2colPlan in Im2col.swift) against the row walk (itself checked against
/// PyTorch's fixtures and numerical gradients in ConvolutionTests): values and the input, weight and bias gradients
/// of ResNet's small-plane geometries (3×3 on 2×2, 3×3 stride 2, 1×1 stride 2), 3-D with stride and dilation, groups,
/// ConvTranspose, float64, several images per GEMM with a shorter last block, and two threads.
final class Im2colGatherTests: XCTestCase {
    /// The gather must give the row walk's results exactly: both copy the same elements into the same GEMM.
    private func compare(_ x: Tensor, _ w: Tensor, _ b: Tensor, file: StaticString = #filePath, line: UInt = #line,
                         _ body: (Tensor, Tensor, Tensor) -> Tensor) {
        assertKernelPathMatches({ Im2colPlan.gatherEnabled = $0 }, x, w, b, tolerance: 0, file: file, line: line, body)
    }

    private func geometry(_ size: [Int], out: [Int], kernel: [Int], stride: [Int], padding: [Int]) -> ConvGeometry {
        ConvGeometry(big: size, small: out, kernel: kernel, stride: stride, padding: padding, dilation: [1, 1, 1], groups: 1,
                     bigChannels: 8, smallChannels: 8)
    }

    func testWhichGeometriesGather() {
        XCTAssertTrue(Im2colPlan(geometry([1, 2, 2], out: [1, 2, 2], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1])).gathers)
        XCTAssertTrue(Im2colPlan(geometry([1, 8, 8], out: [1, 4, 4], kernel: [1, 1, 1], stride: [1, 2, 2], padding: [0, 0, 0])).gathers,
                      "1×1 stride 2: im2col subsamples")
        XCTAssertFalse(Im2colPlan(geometry([1, 4, 4], out: [1, 4, 4], kernel: [1, 1, 1], stride: [1, 1, 1], padding: [0, 0, 0])).gathers,
                       "pointwise: no im2col at all")
        XCTAssertFalse(Im2colPlan(geometry([1, 32, 32], out: [1, 16, 16], kernel: [1, 7, 7], stride: [1, 2, 2], padding: [0, 3, 3])).gathers,
                       "16-wide rows: the row walk copies vectors")
        XCTAssertFalse(Im2colPlan(geometry([1, 200, 7], out: [1, 200, 7], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1])).gathers,
                       "a table of 9 × 1400 entries is too big")
    }

    func testResNetSmallPlanes() {
        torch.manualSeed(1)
        let x2 = torch.randn([5, 16, 2, 2]), w3 = torch.randn([12, 16, 3, 3]) * 0.2, b = torch.randn([12])
        compare(x2, w3, b) { F.conv2d($0, $1, $2, padding: 1) }
        let x8 = torch.randn([3, 16, 8, 8]), x7 = torch.randn([3, 16, 7, 7])
        compare(x8, w3, b) { F.conv2d($0, $1, $2, stride: 2, padding: 1) }
        compare(x7, w3, b) { F.conv2d($0, $1, $2, stride: 2, padding: 1) }
        let w1 = torch.randn([12, 16, 1, 1]) * 0.2
        compare(x8, w1, b) { F.conv2d($0, $1, $2, stride: 2) }
        compare(x7, w1, b) { F.conv2d($0, $1, $2, stride: 3) }
    }

    /// 40 images of a 2×2 plane: 64 per GEMM would be wanted, so the batch is one block; 300 images of 1×2 make blocks
    /// of 128 and a shorter last one.
    func testSeveralImagesPerGEMMOnTwoThreads() {
        let threads = torch.getNumThreads()
        defer { torch.setNumThreads(threads) }
        torch.manualSeed(2)
        let w = torch.randn([6, 4, 3, 3]) * 0.3, b = torch.randn([6])
        for t in [1, 2] {
            torch.setNumThreads(t)
            compare(torch.randn([40, 4, 2, 2]), w, b) { F.conv2d($0, $1, $2, padding: 1) }
            compare(torch.randn([300, 4, 1, 2]), w, b) { F.conv2d($0, $1, $2, padding: 1) }
        }
    }

    func testConv3dStrideDilationGroupsAndDouble() {
        torch.manualSeed(3)
        let x = torch.randn([2, 6, 4, 5, 6]), w = torch.randn([4, 3, 2, 3, 2]) * 0.3, b = torch.randn([4])
        compare(x, w, b) { F.conv3d($0, $1, $2, stride: [1, 2, 2], padding: [1, 1, 0], dilation: [2, 1, 2], groups: 2) }
        let xd = torch.randn([3, 4, 5, 3], dtype: .float64), wd = torch.randn([5, 4, 2, 3], dtype: .float64), bd = torch.randn([5], dtype: .float64)
        compare(xd, wd, bd) { F.conv2d($0, $1, $2, stride: [2, 1], padding: [1, 2]) }
    }

    /// ConvTranspose's forward is the col2im side; its input gradient the im2col side.
    func testConvTranspose() {
        torch.manualSeed(4)
        let x = torch.randn([3, 6, 3, 2]), w = torch.randn([6, 4, 3, 3]) * 0.3, b = torch.randn([4])
        compare(x, w, b) { F.convTranspose2d($0, $1, $2, stride: 2, padding: 1, outputPadding: 1) }
    }
}
