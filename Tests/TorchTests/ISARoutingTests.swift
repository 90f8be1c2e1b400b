import CTorchKernels
import XCTest
@testable import Torch

/// The per-ISA instantiations of the C kernels agree with each other: every level this CPU supports (AVX-512,
/// AVX2+FMA, baseline; `ct_set_isa_level` clamps to the CPU's) against the baseline, on the shapes where AVX-512
/// used to lose to AVX2 (issue 27: LeNet-5's 5×5 convolutions on 3, 6 and 16 channels, short rows) and on channel
/// counts around each ISA's forward block (1…16, 28, 30: one block, even blocks, a short last block); and the
/// vector math's routing of small calls to the AVX2 code (`ct_avx512_min_bytes`, isa.c) with both of its paths.
final class ISARoutingTests: XCTestCase {
    private var savedLevel: Int32 = 0
    private var savedMinBytes = 0

    override func setUp() {
        super.setUp()
        savedLevel = ct_isa_level()
        savedMinBytes = ct_avx512_min_bytes()
    }

    override func tearDown() {
        ct_set_isa_level(savedLevel)
        ct_set_avx512_min_bytes(savedMinBytes)
        DirectConvolution.enabled = true
        super.tearDown()
    }

    /// The levels to compare: the CPU's own and every one below it.
    private var levels: [Int32] {
        let top = ct_set_isa_level(2)
        let hw = ct_isa_level()
        ct_set_isa_level(top)
        return Array(0...hw)
    }

    /// Values and input, weight and bias gradients of `body` with the direct kernels at each level against the
    /// baseline's im2col path (float32 sums in other orders: relative tolerance 5e-6 of the largest value).
    private func compareLevels(_ x: Tensor, _ w: Tensor, _ b: Tensor, file: StaticString = #filePath, line: UInt = #line,
                               _ body: (Tensor, Tensor, Tensor) -> Tensor) {
        ct_set_isa_level(0)
        DirectConvolution.enabled = false
        let reference = convolutionResults(x, w, b, body)
        DirectConvolution.enabled = true
        for level in levels {
            ct_set_isa_level(level)
            XCTAssertEqual(ct_isa_level(), level, file: file, line: line)
            let results = convolutionResults(x, w, b, body)
            assertConvolutionResults(results, match: reference, tolerance: 5e-6, file: file, line: line)
        }
        ct_set_isa_level(savedLevel)
    }

    private func conv2dCase(batch: Int, _ cin: Int, _ cout: Int, _ h: Int, _ w: Int, kernel: Int, padding: Int = 0,
                            file: StaticString = #filePath, line: UInt = #line) {
        torch.manualSeed(UInt64(cin * 100 + cout))
        let x = torch.randn([batch, cin, h, w]), wt = torch.randn([cout, cin, kernel, kernel]) * 0.2
        let b = torch.randn([cout])
        compareLevels(x, wt, b, file: file, line: line) { F.conv2d($0, $1, $2, padding: padding) }
    }

    /// LeNet-5's two convolutions (the second's input gradient is the 16 → 6 transposed direct kernel).
    func testLeNetConvolutionsAgreeAcrossISAs() {
        conv2dCase(batch: 5, 3, 6, 32, 32, kernel: 5)
        conv2dCase(batch: 5, 6, 16, 14, 14, kernel: 5)
    }

    /// Output-channel counts that give every forward block size of both register tiles, and an input-gradient
    /// side (the transposed kernel's outputs are the input channels) of 1…7 channels.
    func testForwardBlocksAgreeAcrossISAs() {
        for cout in [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 28, 30] {
            conv2dCase(batch: 2, 1 + cout % 7, cout, 9, 11, kernel: 3, padding: 1)
        }
    }

    /// Short rows: outputs narrower than one AVX-512 vector (rows of 4 and 6 positions), several images per chunk on
    /// two threads (the lane-wise weight-gradient sums are reduced once per chunk).
    func testShortRowsAndTwoThreadsAgreeAcrossISAs() {
        let threads = torch.getNumThreads()
        torch.setNumThreads(2)
        defer { torch.setNumThreads(threads) }
        conv2dCase(batch: 9, 6, 16, 8, 8, kernel: 5)
        conv2dCase(batch: 7, 2, 6, 10, 6, kernel: 5, padding: 2)
    }

    /// exp, log, tanh, sigmoid and sum of `n` floats at the current level and threshold.
    private func vectorMath(_ x: [Float]) -> [[Float]] {
        let n = x.count
        var out: [[Float]] = []
        let positive = x.map { abs($0) + 1e-3 }
        for (input, f) in [(x, ct_vexp_f32), (positive, ct_vlog_f32), (x, ct_vtanh_f32), (x, ct_vsigmoid_f32)] as [([Float], (UnsafePointer<Float>?, UnsafeMutablePointer<Float>?, Int64) -> Void)] {
            var y = [Float](repeating: .nan, count: n)
            input.withUnsafeBufferPointer { xp in y.withUnsafeMutableBufferPointer { f(xp.baseAddress, $0.baseAddress, Int64(n)) } }
            out.append(y)
        }
        out.append([x.withUnsafeBufferPointer { ct_vsum_f32($0.baseAddress, Int64(n)) }])
        return out
    }

    /// Below the threshold the AVX-512 level runs the AVX2 code (bit for bit the AVX2 level's results); with the
    /// threshold at 0 its own 512-bit code, which agrees with AVX2 and the baseline within 8 ulp (sigmoid is within 3 of the exact value on each; sums: 1e-5 of
    /// the sum of magnitudes). Lengths leave partial vectors of every width (masked tails).
    func testVectorMathRoutingAndPathsAgree() {
        for n in [1, 7, 10, 15, 16, 17, 33, 100, 1000, 4099] {
            torch.manualSeed(UInt64(n))
            let x = torch.randn([n]).mul(4.0).toArray(as: Float.self)
            ct_set_isa_level(1)
            let avx2 = vectorMath(x)
            ct_set_avx512_min_bytes(Int.max - 1)
            ct_set_isa_level(2)
            let routed = vectorMath(x)
            if ct_isa_level() == 2 {
                XCTAssertEqual(routed, avx2, "n \(n): small calls at the AVX-512 level run the AVX2 code")
            }
            ct_set_avx512_min_bytes(0)
            let wide = vectorMath(x)
            ct_set_isa_level(0)
            let base = vectorMath(x)
            let magnitude = x.reduce(0) { $0 + abs($1) }
            for (name, (a, (b, c))) in zip(["exp", "log", "tanh", "sigmoid", "sum"], zip(wide, zip(avx2, base))) {
                for i in 0..<a.count {
                    let tol = name == "sum" ? 1e-5 * magnitude : 8 * Swift.max(abs(b[i]), 1e-30).ulp
                    XCTAssertEqual(a[i], b[i], accuracy: tol, "\(name) n \(n) [\(i)]: AVX-512 against AVX2")
                    XCTAssertEqual(c[i], b[i], accuracy: tol, "\(name) n \(n) [\(i)]: baseline against AVX2")
                }
            }
        }
    }

    /// The threshold is the CPU's (isa.c): 1 MB on Intel Skylake-SP/Cascade Lake/Cooper Lake, 0 elsewhere; the
    /// setter returns the value it replaces.
    func testThresholdSetterRoundTrips() {
        let old = ct_set_avx512_min_bytes(12345)
        XCTAssertEqual(ct_avx512_min_bytes(), 12345)
        XCTAssertEqual(ct_set_avx512_min_bytes(old), 12345)
        if getenv("CTORCH_AVX512_MIN_BYTES") == nil {
            XCTAssertTrue(old == 0 || old == 1 << 20, "unexpected threshold \(old)")
        }
    }
}
