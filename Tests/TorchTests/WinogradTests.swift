import XCTest
@testable import Torch

/// The Winograd F(2×2, 3×3) path of 3×3 stride-1 convolutions against the im2col path (itself checked against
/// PyTorch and by numerical gradients in ConvolutionTests): forward with and without bias, every padding it
/// takes, odd sizes that clip the last tiles, the input and weight gradients, ConvTranspose's forward (the
/// transposed kernel, with flipped filters); float64 stays on im2col.
final class WinogradTests: XCTestCase {
    override func tearDown() {
        winogradEnabled = true
        super.tearDown()
    }

    /// y, x.grad, w.grad and b.grad of `F.conv2d(x, w, b, padding:)` weighted by a fixed random `r`.
    private func convAndGradients(_ x: Tensor, _ w: Tensor, _ b: Tensor?, padding: Int, winograd: Bool) -> [Tensor] {
        winogradEnabled = winograd
        let xs = x.detach().requiresGrad_(), ws = w.detach().requiresGrad_(), bs = b?.detach().requiresGrad_()
        let y = F.conv2d(xs, ws, bs, padding: padding)
        torch.manualSeed(7)
        let r = torch.randn(y.shape, dtype: y.dtype)
        (y * r).sum().backward()
        return [y.detach(), xs.grad!, ws.grad!] + (bs.map { [$0.grad!] } ?? [])
    }

    private func compare(batch: Int, cin: Int, cout: Int, height: Int, width: Int, padding: Int, bias: Bool,
                         dtype: DType, tolerance: Double, file: StaticString = #filePath, line: UInt = #line) {
        torch.manualSeed(0)
        let x = torch.randn([batch, cin, height, width], dtype: dtype)
        let w = torch.randn([cout, cin, 3, 3], dtype: dtype) * 0.2
        let b = bias ? torch.randn([cout], dtype: dtype) : nil
        let outH = height + 2 * padding - 2, outW = width + 2 * padding - 2
        let geometry = ConvGeometry(big: [1, height, width], small: [1, outH, outW], kernel: [1, 3, 3], stride: [1, 1, 1],
                                    padding: [0, padding, padding], dilation: [1, 1, 1], groups: 1, bigChannels: cin, smallChannels: cout)
        winogradEnabled = true
        XCTAssertNotNil(WinogradProblem(forward: geometry, batch: batch), "Winograd should run this forward", file: file, line: line)
        let fast = convAndGradients(x, w, b, padding: padding, winograd: true)
        let reference = convAndGradients(x, w, b, padding: padding, winograd: false)
        for (name, (f, r)) in zip(["output", "input grad", "weight grad", "bias grad"], zip(fast, reference)) {
            XCTAssertEqual(f.shape, r.shape, name, file: file, line: line)
            let scale = r.abs().max().item()
            let err = (f - r).abs().max().item()
            XCTAssertLessThanOrEqual(err, tolerance * scale, "\(name): max error \(err) at scale \(scale)", file: file, line: line)
        }
    }

    func testFloat32MatchesIm2colWithPaddingOne() {
        compare(batch: 2, cin: 32, cout: 24, height: 13, width: 11, padding: 1, bias: true, dtype: .float32, tolerance: 1e-5)
    }

    func testFloat32OddSizesWithoutPadding() {
        compare(batch: 3, cin: 16, cout: 20, height: 17, width: 10, padding: 0, bias: false, dtype: .float32, tolerance: 1e-5)
    }

    func testFloat32PaddingTwo() {
        compare(batch: 1, cin: 17, cout: 16, height: 16, width: 19, padding: 2, bias: true, dtype: .float32, tolerance: 1e-5)
    }

    /// The transforms walk a plane in bands of about 64 tiles: a 131-wide output (66 tiles a row) makes one tile
    /// row a band, a 38 × 21 output (11 tiles a row) 5 rows a band with a shorter last band.
    func testFloat32PlaneBands() {
        compare(batch: 1, cin: 16, cout: 16, height: 5, width: 131, padding: 1, bias: true, dtype: .float32, tolerance: 1e-5)
        compare(batch: 1, cin: 16, cout: 17, height: 40, width: 23, padding: 0, bias: false, dtype: .float32, tolerance: 1e-5)
    }

    /// The weight gradient sums ∂L/∂U over blocks of ≤ 512 tiles (here 40 images of 16 tiles: 3 blocks per
    /// thread) and over the pool's image chunks; odd output sizes clip the last tile row and column.
    func testWeightGradientOverSeveralBlocksAndTwoThreads() {
        let threads = torch.getNumThreads()
        torch.setNumThreads(2)
        defer { torch.setNumThreads(threads) }
        compare(batch: 40, cin: 16, cout: 24, height: 7, width: 8, padding: 1, bias: false, dtype: .float32, tolerance: 1e-5)
        compare(batch: 5, cin: 20, cout: 16, height: 9, width: 9, padding: 0, bias: true, dtype: .float32, tolerance: 1e-5)
    }

    /// float64 stays on im2col: both settings give identical results.
    func testFloat64IsUnchanged() {
        torch.manualSeed(2)
        let x = torch.randn([2, 16, 12, 12], dtype: .float64), w = torch.randn([16, 16, 3, 3], dtype: .float64)
        winogradEnabled = true
        let a = F.conv2d(x, w, padding: 1)
        winogradEnabled = false
        let b = F.conv2d(x, w, padding: 1)
        XCTAssertEqual((a - b).abs().max().item(), 0)
    }

    func testSmallProblemsStayOnIm2col() {
        let few = ConvGeometry(big: [1, 32, 32], small: [1, 32, 32], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1],
                               dilation: [1, 1, 1], groups: 1, bigChannels: 3, smallChannels: 64)
        XCTAssertNil(WinogradProblem(forward: few, batch: 8), "3 input channels: im2col")
        let strided = ConvGeometry(big: [1, 32, 32], small: [1, 16, 16], kernel: [1, 3, 3], stride: [1, 2, 2], padding: [0, 1, 1],
                                   dilation: [1, 1, 1], groups: 1, bigChannels: 64, smallChannels: 64)
        XCTAssertNil(WinogradProblem(forward: strided, batch: 8), "stride 2: im2col")
        let tiny = ConvGeometry(big: [1, 4, 4], small: [1, 4, 4], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1],
                                dilation: [1, 1, 1], groups: 1, bigChannels: 64, smallChannels: 64)
        XCTAssertNil(WinogradProblem(forward: tiny, batch: 1), "4 tiles: im2col")
    }

    /// ConvTranspose2d(3×3, stride 1) runs the transposed kernel, whose Winograd form flips the filters.
    func testConvTransposeForwardMatchesIm2col() {
        torch.manualSeed(1)
        let x = torch.randn([2, 32, 12, 11]), w = torch.randn([32, 16, 3, 3]) * 0.2, b = torch.randn([16])
        let geometry = ConvGeometry(big: [1, 12, 11], small: [1, 12, 11], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 1, 1],
                                    dilation: [1, 1, 1], groups: 1, bigChannels: 16, smallChannels: 32)
        XCTAssertNotNil(WinogradProblem(transposed: geometry, batch: 2), "Winograd should run this transposed convolution")
        winogradEnabled = true
        let fast = F.convTranspose2d(x, w, b, padding: 1)
        winogradEnabled = false
        let reference = F.convTranspose2d(x, w, b, padding: 1)
        XCTAssertEqual(fast.shape, [2, 16, 12, 11])
        XCTAssertLessThanOrEqual((fast - reference).abs().max().item(), 1e-5 * reference.abs().max().item())
    }
}
