import CTorchKernels
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

    /// The output and gradient transforms walk a plane in bands of about 64 tiles: a 131-wide output (66 tiles a
    /// row) makes one tile row a band, a 38 × 21 output (11 tiles a row) 5 rows a band with a shorter last band.
    /// The input transform's bands hold 8 KB of zero-padded rows: 5 tile rows of 66 tiles (the 14 × 131 output's
    /// 7 tile rows take a band of 5 and one of 2), 41 tile rows of up to 8 tiles (the 100 × 9 output's 50 take
    /// 41 and 9). Its steps of eight tiles end short in rows of 66 and 5 tiles.
    func testFloat32PlaneBands() {
        compare(batch: 1, cin: 16, cout: 16, height: 5, width: 131, padding: 1, bias: true, dtype: .float32, tolerance: 1e-5)
        compare(batch: 1, cin: 16, cout: 16, height: 14, width: 131, padding: 1, bias: false, dtype: .float32, tolerance: 1e-5)
        compare(batch: 1, cin: 16, cout: 16, height: 100, width: 9, padding: 1, bias: true, dtype: .float32, tolerance: 1e-5)
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

    /// The input transform on its own, against Bᵀ·d·B written out per tile: every plane size up to 20 × 20 (tile
    /// rows of 1 to 11 tiles, so its eight-tile steps end short in every way), paddings 0 to 2, and a sentinel
    /// around each of the 16 planes it writes. A step of eight tiles stores whole only while those eight places
    /// lie inside the plane; one float past it would overwrite the next channel's tiles in the block.
    func testInputTransformWritesExactlyEachTile() {
        let bt: [[Float]] = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
        let sentinel: Float = 12345, margin = 24
        torch.manualSeed(3)
        for height in 1...20 {
            for width in 1...20 {
                for pad in 0...2 {
                    let outH = height + 2 * pad - 2, outW = width + 2 * pad - 2
                    guard outH > 0, outW > 0 else { continue }
                    let th = (outH + 1) / 2, tw = (outW + 1) / 2, tiles = th * tw, stride = tiles + 2 * margin
                    let plane = (torch.rand([height * width]) - 0.5).toArray(as: Float.self)
                    var v = [Float](repeating: sentinel, count: 16 * stride)
                    var scratch = [Float](repeating: .nan, count: Int(ct_winograd_scratch_f32(Int64(tw))))
                    v.withUnsafeMutableBufferPointer { vb in
                        ct_winograd_input_plane_f32(plane, Int64(height), Int64(width), Int64(pad), Int64(pad), Int64(th),
                                                    Int64(tw), vb.baseAddress! + margin, Int64(stride), &scratch)
                    }
                    func d(_ ty: Int, _ t: Int, _ a: Int, _ b: Int) -> Float {
                        let y = 2 * ty - pad + a, x = 2 * t - pad + b
                        return y >= 0 && y < height && x >= 0 && x < width ? plane[y * width + x] : 0
                    }
                    for xi in 0..<16 {
                        let (i, j) = (xi / 4, xi % 4)
                        for k in 0..<stride {
                            let got = v[xi * stride + k], tile = k - margin
                            guard (0..<tiles).contains(tile) else {
                                XCTAssertEqual(got, sentinel, "\(height)×\(width) pad \(pad): plane \(xi) written at \(tile)")
                                continue
                            }
                            var want: Float = 0
                            for a in 0..<4 {
                                for b in 0..<4 { want += bt[i][a] * d(tile / tw, tile % tw, a, b) * bt[j][b] }
                            }
                            XCTAssertEqual(got, want, accuracy: 1e-5, "\(height)×\(width) pad \(pad): plane \(xi) tile \(tile)")
                        }
                    }
                }
            }
        }
    }
}
