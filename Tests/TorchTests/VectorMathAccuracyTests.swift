import Foundation
import XCTest
@testable import Torch
import CTorchKernels

/// The vectorised float32 kernels (exp, tanh, sigmoid, sum) against double-precision math, in
/// ulps, on a sweep of every 4099th float bit pattern, for the ISA this machine runs
/// (`CTORCH_ISA=avx2|baseline swift test ...` checks the others); and the streaming (prefetching)
/// paths of large elementwise loops against the small-array paths, element for element.
final class VectorMathAccuracyTests: XCTestCase {
    /// Every 4099th float bit pattern (about one million values, all exponents, both signs)
    /// plus the special values.
    private func sweep() -> [Float] {
        var xs: [Float] = []
        xs.reserveCapacity(1_048_600)
        var bits: UInt64 = 0
        while bits < 0x1_0000_0000 {
            xs.append(Float(bitPattern: UInt32(bits)))
            bits += 4099
        }
        xs += [0, -0, .infinity, -.infinity, .nan, 88.72, 88.73, -87.3, -103.9, -104, -1e30, 1e30]
        return xs
    }

    /// Error of `y` in units of the last place of the float nearest `exact` (subnormal results in
    /// units of the smallest subnormal); infinite when an infinity or NaN is not matched.
    private func ulps(_ y: Float, _ exact: Double) -> Double {
        if exact.isNaN { return y.isNaN ? 0 : .infinity }
        let rounded = Float(exact)
        if rounded.isInfinite { return y == rounded ? 0 : .infinity }
        let ulp = Swift.max(Double(rounded.magnitude.ulp), Double(Float.leastNonzeroMagnitude))
        return Swift.abs(Double(y) - exact) / ulp
    }

    private func maxUlps(_ op: (Tensor) -> Tensor, _ exact: (Double) -> Double) -> (Double, Float) {
        let xs = sweep()
        let ys = op(Tensor(xs, shape: [xs.count])).toArray(as: Float.self)
        var worst = (0.0, Float(0))
        for (x, y) in zip(xs, ys) {
            let e = ulps(y, exact(Double(x)))
            if e > worst.0 { worst = (e, x) }
        }
        return worst
    }

    func testExpIsWithinOneUlp() {
        let (err, at) = maxUlps({ $0.exp() }, { Foundation.exp($0) })
        XCTAssertLessThanOrEqual(err, 1.2, "exp (\(String(cString: ct_isa_name()))): \(err) ulp at \(at)")
    }

    func testTanhIsWithinTwoUlps() {
        let (err, at) = maxUlps({ $0.tanh() }, { Foundation.tanh($0) })
        XCTAssertLessThanOrEqual(err, 2, "tanh (\(String(cString: ct_isa_name()))): \(err) ulp at \(at)")
    }

    func testSigmoidIsWithinThreeUlps() {
        let (err, at) = maxUlps({ $0.sigmoid() }, { 1 / (1 + Foundation.exp(-$0)) })
        XCTAssertLessThanOrEqual(err, 3, "sigmoid (\(String(cString: ct_isa_name()))): \(err) ulp at \(at)")
    }

    func testExpSpecialValues() {
        let y = Tensor([0, -0, Float.infinity, -Float.infinity, .nan, 89, -104, -1e30, 1e30], shape: [9]).exp()
            .toArray(as: Float.self)
        XCTAssertEqual(Array(y[0..<4]), [1, 1, .infinity, 0])
        XCTAssertTrue(y[4].isNaN)
        XCTAssertEqual(Array(y[5...]), [.infinity, 0, 0, .infinity])
    }

    /// The prefetch threshold forced to 1 MB (whatever this CPU's policy says) for the streaming tests.
    private let forcedPrefetchBytes = 1 << 20
    /// Sizes either side of the forced threshold, with odd lengths so tails are exercised.
    private var largeCount: Int { forcedPrefetchBytes / 4 * 3 + 37 }

    override func setUp() {
        super.setUp()
        savedPrefetchBytes = ct_set_prefetch_min_bytes(forcedPrefetchBytes)
    }

    override func tearDown() {
        ct_set_prefetch_min_bytes(savedPrefetchBytes)
        super.tearDown()
    }

    private var savedPrefetchBytes = 0

    /// A large exp / tanh / sigmoid (prefetching, chunked) gives the same bits as the same values
    /// computed in small pieces (the plain loop).
    func testStreamingVectorMathMatchesSmallArrays() {
        torch.manualSeed(7)
        let x = torch.randn(largeCount) * 10
        for (name, op) in [("exp", { (t: Tensor) in t.exp() }), ("tanh", { $0.tanh() }), ("sigmoid", { $0.sigmoid() })] {
            let big = op(x).toArray(as: Float.self)
            var pieces: [Float] = []
            for start in stride(from: 0, to: largeCount, by: 1000) {
                pieces += op(x.narrow(0, start, Swift.min(1000, largeCount - start)).contiguous())
                    .toArray(as: Float.self)
            }
            XCTAssertEqual(big, pieces, name)
        }
        let xs = x.toArray(as: Float.self)
        XCTAssertEqual(x.sum().item(), Double(ct_vsum_f32(xs, Int64(xs.count))))
        var exact = 0.0
        for v in xs { exact += Double(v) }
        XCTAssertEqual(x.sum().item(), exact, accuracy: 1e-6 * Double(xs.count).squareRoot() * 10)
    }

    /// The prefetching chunked loops of binary/unary ops (all three broadcast forms, mixed
    /// element sizes) agree with a plain loop.
    func testStreamingElementwiseLoopsMatchPlainLoops() {
        torch.manualSeed(8)
        let a = torch.randn(largeCount), b = torch.randn(largeCount)
        let av = a.toArray(as: Float.self), bv = b.toArray(as: Float.self)
        XCTAssertEqual((a + b).toArray(as: Float.self), zip(av, bv).map { $0 + $1 })
        XCTAssertEqual((a * 3).toArray(as: Float.self), av.map { $0 * 3 })
        XCTAssertEqual((2 - b).toArray(as: Float.self), bv.map { 2 - $0 })
        XCTAssertEqual((a .< b).toArray(as: Bool.self), zip(av, bv).map { $0 < $1 })
        XCTAssertEqual(a.neg().toArray(as: Float.self), av.map { -$0 })
        let d = a.double()
        XCTAssertEqual((d + d).toArray(as: Double.self), av.map { Double($0) * 2 })
        let i = torch.arange(largeCount)
        XCTAssertEqual((i * 2).toArray(as: Int64.self), (0..<Int64(largeCount)).map { $0 * 2 })
    }
}
