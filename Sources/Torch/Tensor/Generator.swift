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
    private var mt = [UInt32](repeating: 0, count: 624)
    private var index = 624
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

    /// The generator's whole state as a uint8 tensor (`get_state()`), for checkpoints that resume
    /// bit for bit: `g.setState(g.getState())` continues the same sequence. The layout is
    /// SwiftTorch's own (the 624 MT19937 words, the position, the seed and the cached normal
    /// samples, little-endian), not PyTorch's 5056-byte one.
    public func getState() -> Tensor {
        var words: [UInt64] = mt.map(UInt64.init) + [UInt64(index), seedValue]
        words.append(nextDoubleNormal == nil ? 0 : 1)
        words.append(nextDoubleNormal.map { $0.bitPattern } ?? 0)
        words.append(nextFloatNormal == nil ? 0 : 1)
        words.append(UInt64(nextFloatNormal.map { $0.bitPattern } ?? 0))
        let bytes = words.flatMap { w in (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * UInt64($0))) } }
        return torch.tensor(bytes.map(Int.init), dtype: .uint8)
    }

    /// Restores a state from ``getState()`` (`set_state`).
    /// - Throws: ``SerializationError`` when `state` is not such a state (wrong dtype or size).
    public func setState(_ state: Tensor) throws {
        let count = (624 + 6) * 8
        guard state.dtype == .uint8, state.numel == count else {
            throw SerializationError.invalidArgument("a generator state is a uint8 tensor of \(count) bytes, got \(state.dtype) with \(state.numel) elements")
        }
        let bytes = state.contiguous().toArray(as: UInt8.self)
        let words = (0..<(count / 8)).map { i -> UInt64 in
            var word: UInt64 = 0
            for b in 0..<8 { word |= UInt64(bytes[i * 8 + b]) << UInt64(8 * b) }
            return word
        }
        guard words[624] <= 624, words[..<624].allSatisfy({ $0 <= UInt64(UInt32.max) }) else {
            throw SerializationError.invalidArgument("the generator state's MT19937 words are out of range")
        }
        mt = words[..<624].map { UInt32($0) }
        index = Int(words[624])
        seedValue = words[625]
        nextDoubleNormal = words[626] != 0 ? Double(bitPattern: words[627]) : nil
        nextFloatNormal = words[628] != 0 ? Float(bitPattern: UInt32(truncatingIfNeeded: words[629])) : nil
    }

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
        mt.withUnsafeMutableBufferPointer { Generator.twist($0) }
        index = 0
    }

    /// The MT19937 state transition over the 624 words of `mt`.
    private static func twist(_ mt: UnsafeMutableBufferPointer<UInt32>) {
        for i in 0..<624 {
            let y = (mt[i] & 0x8000_0000) | (mt[(i + 1) % 624] & 0x7FFF_FFFF)
            var v = mt[(i + 397) % 624] ^ (y >> 1)
            if y & 1 != 0 { v ^= 0x9908_B0DF }
            mt[i] = v
        }
    }

    /// Calls `body(k, u)` for k in 0..<n with the next n uniform doubles in [0, 1): the same
    /// values as n calls of `uniformDouble(0, 1)` (53 bits of `random64()` each), drawn with the
    /// state held in a buffer — the fast path for per-element draws such as dropout masks.
    @inline(__always)
    func withUniformDoubles(_ n: Int, _ body: (Int, Double) -> Void) {
        var i = index
        mt.withUnsafeMutableBufferPointer { state in
            @inline(__always) func next() -> UInt32 {
                if i >= 624 { Generator.twist(state); i = 0 }
                var y = state[i]
                i += 1
                y ^= y >> 11
                y ^= (y << 7) & 0x9D2C_5680
                y ^= (y << 15) & 0xEFC6_0000
                y ^= y >> 18
                return y
            }
            for k in 0..<n {
                let hi = UInt64(next()), lo = UInt64(next())
                body(k, Double(((hi << 32) | lo) & ((1 << 53) - 1)) * (1.0 / 9_007_199_254_740_992.0))
            }
        }
        index = i
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

    /// Uniform float in [from, to) from 24 random bits. PyTorch's x86 build computes
    /// `u * (to - from) + from` as one fused multiply-add, and so does this.
    @inline(__always) func uniformFloat(_ from: Float, _ to: Float) -> Float {
        let u = Float(random() & ((1 << 24) - 1)) * (1.0 / 16_777_216.0)
        return from.addingProduct(u, to - from)
    }

    /// Uniform double in [from, to) from 53 random bits (fused multiply-add, as in PyTorch).
    @inline(__always) func uniformDouble(_ from: Double, _ to: Double) -> Double {
        let u = Double(random64() & ((1 << 53) - 1)) * (1.0 / 9_007_199_254_740_992.0)
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
    /// tail); for fewer, scalar draws. float32 blocks reproduce PyTorch's AVX2 kernel bit for bit
    /// (its cephes log/sincos in float arithmetic with the compiler's fused multiply-adds); float64
    /// blocks use libm in double with a fused final multiply-add, as PyTorch's build does.
    func fillNormal<T: BinaryFloatingPoint>(_ p: UnsafeMutablePointer<T>, _ n: Int, mean: Double, std: Double) {
        if n >= 16 {
            fillUniform(p, n, 0, 1)
            func block(_ q: UnsafeMutablePointer<T>) {
                if T.self == Float.self {
                    let f = UnsafeMutableRawPointer(q).assumingMemoryBound(to: Float.self)
                    let m = Float(mean), s = Float(std), twoPi = Float(2 * Double.pi)
                    for j in 0..<8 {
                        let u1 = 1 - f[j]
                        let u2 = f[j + 8]
                        let radius = (-2 * avxLogf(u1)).squareRoot()
                        let (sinT, cosT) = avxSinCosf(twoPi * u2)
                        f[j] = m.addingProduct(radius * cosT, s)
                        f[j + 8] = m.addingProduct(radius * sinT, s)
                    }
                    return
                }
                for j in 0..<8 {
                    let u1 = 1 - Double(q[j])
                    let u2 = Double(q[j + 8])
                    let radius = (-2 * Glibc.log(u1)).squareRoot()
                    let theta = 2 * Double.pi * u2
                    q[j] = T(mean.addingProduct(radius * Glibc.cos(theta), std))
                    q[j + 8] = T(mean.addingProduct(radius * Glibc.sin(theta), std))
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
            for i in 0..<n { p[i] = T(mean.addingProduct(normalDouble(), std)) }
        }
    }
}

// MARK: - PyTorch's AVX2 float math for normal_

/// log(x) for x > 0 as PyTorch's AVX2 `normal_` kernel computes it: the cephes polynomial in
/// float arithmetic, with the multiply-adds GCC fuses in that build.
@inline(__always) private func avxLogf(_ v: Float) -> Float {
    if !(v > 0) { return .nan }
    var x = Swift.max(v, Float(bitPattern: 0x0080_0000))
    let exponent = Int32(bitPattern: x.bitPattern >> 23)
    x = Float(bitPattern: (x.bitPattern & ~0x7F80_0000) | Float(0.5).bitPattern)
    var e = Float(exponent - 0x7F) + 1
    let below = x < 0.707106781186547524 as Float
    let tmp: Float = below ? x : 0
    x = x - 1
    if below { e = e - 1 }
    x = x + tmp
    let z = x * x
    var y: Float = 7.0376836292E-2
    y = Float(-1.1514610310E-1).addingProduct(y, x)
    y = Float(1.1676998740E-1).addingProduct(y, x)
    y = Float(-1.2420140846E-1).addingProduct(y, x)
    y = Float(1.4249322787E-1).addingProduct(y, x)
    y = Float(-1.6668057665E-1).addingProduct(y, x)
    y = Float(2.0000714765E-1).addingProduct(y, x)
    y = Float(-2.4999993993E-1).addingProduct(y, x)
    y = Float(3.3333331174E-1).addingProduct(y, x)
    y = y * x
    y = (e * -2.12194440e-4).addingProduct(y, z)
    y = y.addingProduct(z, -0.5)
    x = x + y
    return x.addingProduct(e, 0.693359375)
}

/// (sin x, cos x) for x ≥ 0 as PyTorch's AVX2 `normal_` kernel computes them (cephes, float
/// arithmetic, GCC's fused multiply-adds).
@inline(__always) private func avxSinCosf(_ xx: Float) -> (Float, Float) {
    var x = Swift.abs(xx)
    var j = Int32(x * 1.27323954473516)
    j = (j &+ 1) & ~1
    let y = Float(j)
    let swapSin = (j & 4) != 0
    let sinPoly = (j & 2) == 0
    x = x.addingProduct(y, -0.78515625)
    x = x.addingProduct(y, -2.4187564849853515625e-4)
    x = x.addingProduct(y, -3.77489497744594108e-8)
    let negCos = (~(j &- 2) & 4) != 0
    let negSin = (xx < 0) != swapSin
    let z = x * x
    var c: Float = 2.443315711809948E-005
    c = Float(-1.388731625493765E-003).addingProduct(c, z)
    c = Float(4.166664568298827E-002).addingProduct(c, z)
    c = c * z
    c = (-(z * 0.5)).addingProduct(c, z)
    c = c + 1
    var s: Float = -1.9515295891E-4
    s = Float(8.3321608736E-3).addingProduct(s, z)
    s = Float(-1.6666654611E-1).addingProduct(s, z)
    s = s * z
    s = x.addingProduct(s, x)
    var sinV = sinPoly ? s : c, cosV = sinPoly ? c : s
    if negSin { sinV = -sinV }
    if negCos { cosV = -cosV }
    return (sinV, cosV)
}

extension torch {
    /// The process-wide default generator (what `defaultGenerator` is on threads without their own).
    nonisolated(unsafe) static let processDefaultGenerator = Generator()

    /// The generator used when none is passed: the process-wide one, or on a thread that runs
    /// `withThreadDefaultGenerator` (a `DataLoader` worker), that thread's own, as each PyTorch worker
    /// process has its own seeded default generator.
    public static var defaultGenerator: Generator {
        guard let raw = threadGeneratorSlot.pointer else { return processDefaultGenerator }
        return Unmanaged<Generator>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Runs `body` with `generator` as this thread's `torch.defaultGenerator` (restoring the previous
    /// one afterwards). `DataLoader` workers run with a generator seeded `baseSeed + workerID`, like
    /// PyTorch's worker processes, so random transforms draw reproducibly and without races.
    ///
    /// ```swift
    /// let g = Generator().manualSeed(7)
    /// torch.withThreadDefaultGenerator(g) { torch.rand(2) }   // draws from g
    /// ```
    public static func withThreadDefaultGenerator<R>(_ generator: Generator, _ body: () throws -> R) rethrows -> R {
        let previous = threadGeneratorSlot.pointer
        let retained = Unmanaged.passRetained(generator)
        threadGeneratorSlot.pointer = retained.toOpaque()
        defer {
            threadGeneratorSlot.pointer = previous
            retained.release()
        }
        return try body()
    }

    /// Seeds the default generator (`torch.manual_seed`).
    @discardableResult
    public static func manualSeed(_ seed: UInt64) -> Generator {
        CUDARandom.manualSeed(seed)   // PyTorch's manual_seed seeds every GPU too
        return defaultGenerator.manualSeed(seed)
    }

    /// The default generator's seed.
    public static func initialSeed() -> UInt64 { defaultGenerator.initialSeed() }

    /// The default generator's state (`torch.get_rng_state()`), see ``Generator/getState()``.
    public static func getRNGState() -> Tensor { defaultGenerator.getState() }

    /// Restores the default generator's state (`torch.set_rng_state`).
    /// - Throws: ``SerializationError`` when `state` did not come from ``getRNGState()``.
    public static func setRNGState(_ state: Tensor) throws { try defaultGenerator.setState(state) }
}

/// The thread-specific slot behind `torch.withThreadDefaultGenerator`.
private let threadGeneratorSlot = ThreadLocalSlot("torch.defaultGenerator")
