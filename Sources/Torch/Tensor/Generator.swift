#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-random generator with PyTorch's CPU algorithm (MT19937) and sampling formulas, so
/// `torch.manualSeed(0); torch.rand(3)` gives PyTorch's numbers.
///
/// ```swift
/// let g = Generator().manualSeed(42)
/// let x = torch.rand(2, 2, generator: g)
/// ```
public final class Generator {
    @exclusivity(unchecked) private var mt = [UInt32](repeating: 0, count: 624)
    @exclusivity(unchecked) private var index = 624
    private(set) var seedValue: UInt64 = 67280421310721
    /// Cached second Box–Muller sample for scalar normal draws (PyTorch keeps one too).
    var nextDoubleNormal: Double?
    var nextFloatNormal: Float?

    /// Creates a generator with PyTorch's default seed.
    public init() { seed(67280421310721) }

    /// Reseeds; returns self for chaining.
    @discardableResult
    public func manualSeed(_ seed: UInt64) -> Generator {
        self.seed(seed)
        return self
    }

    /// The current seed.
    public func initialSeed() -> UInt64 { seedValue }

    private func seed(_ s: UInt64) {
        seedValue = s
        mt[0] = UInt32(truncatingIfNeeded: s)
        for i in 1..<624 {
            mt[i] = 1812433253 &* (mt[i - 1] ^ (mt[i - 1] >> 30)) &+ UInt32(i)
        }
        index = 624
        nextDoubleNormal = nil
        nextFloatNormal = nil
    }

    private func twist() {
        for i in 0..<624 {
            let y = (mt[i] & 0x8000_0000) | (mt[(i + 1) % 624] & 0x7FFF_FFFF)
            var v = mt[(i + 397) % 624] ^ (y >> 1)
            if y & 1 != 0 { v ^= 0x9908_B0DF }
            mt[i] = v
        }
        index = 0
    }

    /// The next 32 random bits.
    @inline(__always)
    public func random() -> UInt32 {
        if index >= 624 { twist() }
        var y = mt[index]
        index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C_5680
        y ^= (y << 15) & 0xEFC6_0000
        y ^= y >> 18
        return y
    }

    /// The next 64 random bits (two draws, high word first as in PyTorch).
    public func random64() -> UInt64 {
        let hi = UInt64(random()), lo = UInt64(random())
        return (hi << 32) | lo
    }

    /// Uniform float in [from, to) from 24 random bits. `u * (to - from) + from` is rounded once
    /// (a fused multiply-add), as in PyTorch's CPU kernel built for AVX2.
    @inline(__always) func uniformFloat(_ from: Float, _ to: Float) -> Float {
        let u = Float(random() & ((1 << 24) - 1)) * (1.0 / 16_777_216.0)
        if from == 0 && to == 1 { return u }
        return from.addingProduct(u, to - from)
    }

    /// Uniform double in [from, to) from 53 random bits (one rounding, like `uniformFloat`).
    @inline(__always) func uniformDouble(_ from: Double, _ to: Double) -> Double {
        let u = Double(random64() & ((1 << 53) - 1)) * (1.0 / 9_007_199_254_740_992.0)
        if from == 0 && to == 1 { return u }
        return from.addingProduct(u, to - from)
    }

    /// One standard normal sample as PyTorch's scalar `normal_distribution<double>` draws it.
    func normalDouble() -> Double {
        if let n = nextDoubleNormal { nextDoubleNormal = nil; return n }
        let u1 = uniformDouble(0, 1), u2 = uniformDouble(0, 1)
        let r = (-2.0 * Glibc.log1p(-u2)).squareRoot()
        let theta = 2.0 * Double.pi * u1
        nextDoubleNormal = r * Glibc.sin(theta)
        return r * Glibc.cos(theta)
    }

    /// Fills `n` floats with uniform [from, to) samples, element by element.
    func fillUniform<T: BinaryFloatingPoint>(_ p: UnsafeMutablePointer<T>, _ n: Int, _ from: Double, _ to: Double) {
        if T.self == Float.self {
            let f = Float(from), t = Float(to)
            for i in 0..<n { p[i] = T(uniformFloat(f, t)) }
        } else {
            for i in 0..<n { p[i] = T(uniformDouble(from, to)) }
        }
    }

    /// Fills `n` values with normal samples using PyTorch's CPU scheme: for n ≥ 16, uniforms for
    /// the whole buffer then Box–Muller over blocks of 16 (the last block recomputed to cover the
    /// tail); for fewer, scalar draws.
    func fillNormal<T: BinaryFloatingPoint>(_ p: UnsafeMutablePointer<T>, _ n: Int, mean: Double, std: Double) {
        if n >= 16 {
            fillUniform(p, n, 0, 1)
            func block(_ q: UnsafeMutablePointer<T>) {
                for j in 0..<8 {
                    let u1 = 1 - Double(q[j])
                    let u2 = Double(q[j + 8])
                    let radius = (-2 * Glibc.log(u1)).squareRoot()
                    let theta = 2 * Double.pi * u2
                    q[j] = T(radius * Glibc.cos(theta) * std + mean)
                    q[j + 8] = T(radius * Glibc.sin(theta) * std + mean)
                }
            }
            var i = 0
            while i + 16 <= n { block(p + i); i += 16 }
            if n % 16 != 0 {
                let tail = p + (n - 16)
                fillUniform(tail, 16, 0, 1)
                block(tail)
            }
        } else {
            for i in 0..<n { p[i] = T(normalDouble() * std + mean) }
        }
    }
}

extension torch {
    /// The generator used when none is passed.
    nonisolated(unsafe) public static let defaultGenerator = Generator()

    /// Seeds the default generator (`torch.manual_seed`).
    @discardableResult
    public static func manualSeed(_ seed: UInt64) -> Generator { defaultGenerator.manualSeed(seed) }

    /// The default generator's seed.
    public static func initialSeed() -> UInt64 { defaultGenerator.initialSeed() }
}
