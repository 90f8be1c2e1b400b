#if canImport(Glibc)
import Glibc
#endif

/// Tensor creation: `torch.tensor` from Swift values and nested arrays, `zeros ones full empty eye
/// arange linspace logspace` (+ `…Like`), random `rand randn randint normal randperm` (+ `…Like`).

/// Swift values `torch.tensor` accepts: numbers, Bools and nested arrays of them.
public protocol TensorLiteral {
    /// Appends this value's elements (row-major) and, at the first element of each depth, its shape.
    func collect(into c: inout TensorLiteralCollector, depth: Int)
}

/// Accumulates the elements and shape of a nested literal.
public struct TensorLiteralCollector {
    var doubles: [Double] = []
    var ints: [Int64] = []
    var isFloating = false
    var isBool = false
    var shape: [Int] = []
    var shapeFixed: [Bool] = []

    mutating func noteCount(_ n: Int, depth: Int) {
        if depth == shape.count { shape.append(n); shapeFixed.append(true) } else {
            precondition(shape[depth] == n, "tensor: expected sequence of length \(shape[depth]) at dim \(depth) (got \(n))")
        }
    }
}

extension Int: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.ints.append(Int64(self)); c.doubles.append(Double(self)) }
}
extension Int64: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.ints.append(self); c.doubles.append(Double(self)) }
}
extension Int32: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.ints.append(Int64(self)); c.doubles.append(Double(self)) }
}
extension UInt8: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.ints.append(Int64(self)); c.doubles.append(Double(self)) }
}
extension Double: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.isFloating = true; c.doubles.append(self); c.ints.append(0) }
}
extension Float: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.isFloating = true; c.doubles.append(Double(self)); c.ints.append(0) }
}
extension Bool: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) { c.isBool = true; c.doubles.append(self ? 1 : 0); c.ints.append(self ? 1 : 0) }
}
extension Array: TensorLiteral where Element: TensorLiteral {
    public func collect(into c: inout TensorLiteralCollector, depth: Int) {
        c.noteCount(count, depth: depth)
        for e in self { e.collect(into: &c, depth: depth + 1) }
    }
}

extension torch {
    /// A tensor from a Swift number, Bool, or nested array (integers → int64, floating → the
    /// default float type, Bool → bool), like `torch.tensor`.
    ///
    /// ```swift
    /// let a = torch.tensor([[1, 2], [3, 4]])                 // int64
    /// let b = torch.tensor([0.5, 1.5], requiresGrad: true)     // float32
    /// let c = torch.tensor([1, 2], dtype: .float64)
    /// ```
    public static func tensor<L: TensorLiteral>(_ data: L, dtype: DType? = nil, device: Device = .cpu,
                                                requiresGrad: Bool = false) -> Tensor {
        var c = TensorLiteralCollector()
        data.collect(into: &c, depth: 0)
        let shape = c.shape
        let n = shapeNumel(shape)
        precondition(c.doubles.count == n, "tensor: ragged nested sequence (expected \(n) elements, got \(c.doubles.count))")
        // An empty literal carries no element type: PyTorch's `torch.tensor([])` is the default float type.
        let inferred: DType = (c.isFloating || n == 0) ? torch.defaultDType : (c.isBool ? .bool : .int64)
        let t: Tensor
        if !c.isFloating && !c.isBool {
            t = Tensor(c.ints, shape: shape)
        } else if c.isBool && !c.isFloating {
            t = Tensor(c.ints.map { $0 != 0 }, shape: shape)
        } else {
            t = Tensor(c.doubles, shape: shape)
        }
        let out = t.to(dtype ?? inferred)
        if requiresGrad { out.requiresGrad = true }
        return placed(out, on: device)
    }

    /// A tensor filled with `value` (the default float type unless `dtype` is given).
    public static func full(_ shape: [Int], _ value: Double, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        let t = Tensor(uninitializedShape: shape, dtype: dtype ?? torch.defaultDType, device: device)
        fillKernel(t, value)
        if requiresGrad { t.requiresGrad = true }
        return t
    }

    /// A tensor filled with an integer: int64 unless `dtype` is given, as `torch.full((2,), 7)` in PyTorch.
    public static func full(_ shape: [Int], _ value: Int, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return full(shape, Double(value), dtype: dtype ?? .int64, device: device, requiresGrad: requiresGrad)
    }
    /// A tensor filled with a Bool: bool unless `dtype` is given.
    public static func full(_ shape: [Int], _ value: Bool, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return full(shape, value ? 1.0 : 0.0, dtype: dtype ?? .bool, device: device, requiresGrad: requiresGrad)
    }

    public static func zeros(_ shape: Int..., dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return zeros(shape, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    public static func zeros(_ shape: [Int], dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        let t = Tensor(uninitializedShape: shape, dtype: dtype ?? torch.defaultDType, device: device)
        switch t.device {
        case .cpu: CPUElementwise.zeroContiguous(t)
        case .cuda: CUDAElementwise.fill(t, 0)
        }
        if requiresGrad { t.requiresGrad = true }
        return t
    }
    public static func ones(_ shape: Int..., dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return full(shape, 1.0, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    public static func ones(_ shape: [Int], dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return full(shape, 1.0, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    /// Uninitialised memory (values are arbitrary).
    public static func empty(_ shape: Int..., dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return empty(shape, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    public static func empty(_ shape: [Int], dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        let t = Tensor(uninitializedShape: shape, dtype: dtype ?? torch.defaultDType, device: device)
        if requiresGrad { t.requiresGrad = true }
        return t
    }
    public static func zerosLike(_ t: Tensor, dtype: DType? = nil, device: Device? = nil, requiresGrad: Bool = false) -> Tensor {
        return zeros(t.shape, dtype: dtype ?? t.dtype, device: device ?? t.device, requiresGrad: requiresGrad)
    }
    public static func onesLike(_ t: Tensor, dtype: DType? = nil, device: Device? = nil, requiresGrad: Bool = false) -> Tensor {
        return full(t.shape, 1.0, dtype: dtype ?? t.dtype, device: device ?? t.device, requiresGrad: requiresGrad)
    }
    public static func fullLike(_ t: Tensor, _ value: Double, dtype: DType? = nil, device: Device? = nil, requiresGrad: Bool = false) -> Tensor {
        return full(t.shape, value, dtype: dtype ?? t.dtype, device: device ?? t.device, requiresGrad: requiresGrad)
    }
    public static func emptyLike(_ t: Tensor, dtype: DType? = nil, device: Device? = nil, requiresGrad: Bool = false) -> Tensor {
        return requiringGrad(empty(t.shape, dtype: dtype ?? t.dtype, device: device ?? t.device), requiresGrad)
    }

    /// Identity matrix n×m (m defaults to n).
    public static func eye(_ n: Int, _ m: Int? = nil, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        let cols = m ?? n
        let t = zeros([n, cols], dtype: dtype)
        fillKernel(t.makeView(shape: [Swift.min(n, cols)], strides: [cols + 1], offset: 0), 1)
        if requiresGrad { t.requiresGrad = true }
        return placed(t, on: device)
    }

    /// Values `start, start+step, ... < end`. Integer arguments give int64, otherwise the default float type.
    public static func arange(_ end: Int, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return placed(requiringGrad(arange(0, end, 1, dtype: dtype), requiresGrad), on: device)
    }
    public static func arange(_ start: Int, _ end: Int, _ step: Int = 1, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        precondition(step != 0, "arange: step must be nonzero")
        precondition((end - start) * step.signum() >= 0, "arange: upper bound and larger bound inconsistent with step sign")
        let n = Swift.max(0, (end - start + step - step.signum()) / step)
        let vals = (0..<n).map { Int64(start + $0 * step) }
        return placed(requiringGrad(Tensor(vals, shape: [n]).to(dtype ?? .int64), requiresGrad), on: device)
    }
    public static func arange(_ end: Double, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return placed(requiringGrad(arange(0, end, 1, dtype: dtype), requiresGrad), on: device)
    }
    public static func arange(_ start: Double, _ end: Double, _ step: Double = 1, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        precondition(step != 0, "arange: step must be nonzero")
        precondition((end - start) * step >= 0, "arange: upper bound and larger bound inconsistent with step sign")
        let n = Swift.max(0, Int(((end - start) / step).rounded(.up)))
        let dt = dtype ?? torch.defaultDType
        // PyTorch's CPU kernel (one chunk): pairs of vectors (8 floats / 4 doubles) each start at
        // start + step*i rounded to the element type and add j*step in double; the tail is scalar.
        let width = dt == .float32 ? 8 : (dt == .float64 ? 4 : n + 1)
        let round: (Double) -> Double = dt == .float32 ? { Double(Float($0)) } : { $0 }
        var vals = [Double](repeating: 0, count: n)
        var i = 0
        while i + 2 * width <= n {
            for _ in 0..<2 {
                let base = round(start.addingProduct(step, Double(i)))
                for j in 0..<width { vals[i + j] = round(base.addingProduct(step, Double(j))) }
                i += width
            }
        }
        while i < n { vals[i] = start.addingProduct(step, Double(i)); i += 1 }
        return placed(requiringGrad(Tensor(vals, shape: [n]).to(dt), requiresGrad), on: device)
    }

    /// `steps` evenly spaced values from `start` to `end` inclusive.
    ///
    /// Computed like PyTorch's CPU kernel, in the output's precision (float32 arithmetic for
    /// float32), the first half counting up from `start` and the second half down from `end`.
    public static func linspace(_ start: Double, _ end: Double, steps: Int, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        precondition(steps >= 0, "linspace: number of steps must be non-negative")
        let dt = dtype ?? torch.defaultDType
        if steps == 1 { return requiringGrad(full([1], start, dtype: dt), requiresGrad) }
        let half = steps / 2
        func values<T: BinaryFloatingPoint>(_ s: T, _ e: T) -> [T] {
            // Fused multiply-adds, as in PyTorch's (AVX2-built) kernel.
            let step = (e - s) / T(steps - 1)
            return (0..<steps).map { i in i < half ? s.addingProduct(step, T(i)) : e.addingProduct(-step, T(steps - i - 1)) }
        }
        switch dt {
        case .float64: return placed(requiringGrad(Tensor(values(start, end), shape: [steps]), requiresGrad), on: device)
        case .float32, .float16, .bfloat16: return placed(requiringGrad(Tensor(values(Float(start), Float(end)), shape: [steps]).to(dt), requiresGrad), on: device)
        default:
            // Integer outputs: integer endpoints, a double step, truncation.
            let v = values(Double(Int64(torchDouble: start)), Double(Int64(torchDouble: end)))
            return requiringGrad(Tensor(v.map { Int64(torchDouble: $0) }, shape: [steps]).to(dt), requiresGrad)
        }
    }
    public static func linspace(_ start: Double, _ end: Double, _ steps: Int, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        return placed(requiringGrad(linspace(start, end, steps: steps, dtype: dtype), requiresGrad), on: device)
    }

    /// `steps` values `base^x` for x evenly spaced from start to end (PyTorch's CPU formula: the
    /// endpoints rounded to the output type, exponents and powers in double).
    public static func logspace(_ start: Double, _ end: Double, steps: Int, base: Double = 10, dtype: DType? = nil, device: Device = .cpu, requiresGrad: Bool = false) -> Tensor {
        precondition(steps >= 0, "logspace: number of steps must be non-negative")
        let dt = dtype ?? torch.defaultDType
        let s: Double, e: Double, span: Double
        if dt == .float64 {
            (s, e, span) = (start, end, end - start)
        } else {
            let fs = Float(start), fe = Float(end)
            (s, e, span) = (Double(fs), Double(fe), Double(fe - fs))
        }
        if steps == 1 { return requiringGrad(Tensor([Glibc.pow(base, s)], shape: [1]).to(dt), requiresGrad) }
        let step = span / Double(steps - 1), half = steps / 2
        let vals = (0..<steps).map { i in
            Glibc.pow(base, i < half ? s + step * Double(i) : e - step * Double(steps - i - 1))
        }
        return placed(requiringGrad(Tensor(vals, shape: [steps]).to(dt), requiresGrad), on: device)
    }

    // MARK: Random

    /// Uniform samples in [0, 1).
    public static func rand(_ shape: Int..., dtype: DType? = nil, device: Device = .cpu, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        return placed(rand(shape, dtype: dtype, generator: generator, requiresGrad: requiresGrad), on: device)
    }
    public static func rand(_ shape: [Int], dtype: DType? = nil, device: Device = .cpu, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        let t = empty(shape, dtype: dtype, device: device)
        t.uniform_(0, 1, generator: generator)
        if requiresGrad { t.requiresGrad = true }
        return t
    }
    /// Standard normal samples.
    public static func randn(_ shape: Int..., dtype: DType? = nil, device: Device = .cpu, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        return placed(randn(shape, dtype: dtype, generator: generator, requiresGrad: requiresGrad), on: device)
    }
    public static func randn(_ shape: [Int], dtype: DType? = nil, device: Device = .cpu, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        let t = empty(shape, dtype: dtype, device: device)
        t.normal_(0, 1, generator: generator)
        if requiresGrad { t.requiresGrad = true }
        return t
    }
    /// Integers uniformly drawn from [low, high).
    public static func randint(_ low: Int, _ high: Int, _ shape: [Int], dtype: DType = .int64, device: Device = .cpu, generator: Generator? = nil) -> Tensor {
        precondition(high > low, "random_ expects 'from' to be less than 'to', but got from=\(low) >= to=\(high)")
        let g = generator ?? defaultGenerator
        let range = UInt64(high - low)
        let n = shapeNumel(shape)
        var vals = [Int64](repeating: 0, count: n)
        for i in 0..<n {
            let r = range >= (1 << 32) ? g.random64() % range : UInt64(g.random()) % range
            vals[i] = Int64(low) + Int64(r)
        }
        return placed(Tensor(vals, shape: shape).to(dtype), on: device)
    }
    public static func randint(_ high: Int, _ shape: [Int], dtype: DType = .int64, device: Device = .cpu, generator: Generator? = nil) -> Tensor {
        return placed(randint(0, high, shape, dtype: dtype, generator: generator), on: device)
    }
    /// Normal samples with the given mean and standard deviation.
    public static func normal(_ mean: Double, _ std: Double, _ shape: [Int], dtype: DType? = nil, device: Device = .cpu, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        let t = empty(shape, dtype: dtype, device: device)
        t.normal_(mean, std, generator: generator)
        return requiringGrad(t, requiresGrad)
    }
    /// Elementwise normal samples: `normal(meanTensor, stdTensor)`.
    public static func normal(_ mean: Tensor, _ std: Tensor, generator: Generator? = nil) -> Tensor {
        let shape = broadcastShapes(mean.shape, std.shape, op: "normal")
        return randn(shape, dtype: mean.dtype.floatingResult, generator: generator) * std + mean
    }
    /// A random permutation of 0..<n (int64), drawn like PyTorch's CPU randperm.
    public static func randperm(_ n: Int, dtype: DType = .int64, device: Device = .cpu, generator: Generator? = nil) -> Tensor {
        let g = generator ?? defaultGenerator
        var r = (0..<n).map { Int64($0) }
        if n > 1 {
            for i in 0..<(n - 1) {
                let z = Int(UInt64(g.random()) % UInt64(n - i))
                r.swapAt(i, z + i)
            }
        }
        return placed(Tensor(r, shape: [n]).to(dtype), on: device)
    }
    public static func randLike(_ t: Tensor, dtype: DType? = nil, device: Device? = nil, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        return rand(t.shape, dtype: dtype ?? t.dtype, device: device ?? t.device, generator: generator, requiresGrad: requiresGrad)
    }
    public static func randnLike(_ t: Tensor, dtype: DType? = nil, device: Device? = nil, generator: Generator? = nil, requiresGrad: Bool = false) -> Tensor {
        return randn(t.shape, dtype: dtype ?? t.dtype, device: device ?? t.device, generator: generator, requiresGrad: requiresGrad)
    }
    public static func randintLike(_ t: Tensor, _ low: Int, _ high: Int, generator: Generator? = nil) -> Tensor {
        randint(low, high, t.shape, dtype: t.dtype, generator: generator)
    }
}

// MARK: - In-place fills

extension Tensor {
    /// Fills with `value`.
    @discardableResult
    public func fill_(_ value: Double) -> Tensor {
        checkInPlace("fill_")
        fillKernel(self, value)
        storage.bumpVersion()
        if needsGrad { rebaseHistory("FillBackward0", inputs: []) { _, g in [torch.zerosLike(g)] } }
        return self
    }

    /// Fills with zeros.
    @discardableResult
    public func zero_() -> Tensor { fill_(0) }

    /// Fills with uniform samples from [from, to).
    @discardableResult
    public func uniform_(_ from: Double = 0, _ to: Double = 1, generator: Generator? = nil) -> Tensor {
        precondition(dtype.isFloatingPoint, "uniform_: expected a floating point tensor (got \(dtype))")
        if case .cuda = device { return fillOnDevice(.uniform, from, to, generator) }
        let g = generator ?? torch.defaultGenerator
        fillRandom { p, n, type in
            switch type {
            case .float64: g.fillUniform(p.assumingMemoryBound(to: Double.self), n, from, to)
            default: g.fillUniform(p.assumingMemoryBound(to: Float.self), n, from, to)
            }
        }
        return self
    }

    /// Fills with normal samples.
    @discardableResult
    public func normal_(_ mean: Double = 0, _ std: Double = 1, generator: Generator? = nil) -> Tensor {
        precondition(dtype.isFloatingPoint, "normal_: expected a floating point tensor (got \(dtype))")
        precondition(std >= 0, "normal expects std >= 0.0, but found std \(std)")
        if case .cuda = device { return fillOnDevice(.normal, mean, std, generator) }
        let g = generator ?? torch.defaultGenerator
        fillRandom { p, n, type in
            switch type {
            case .float64: g.fillNormal(p.assumingMemoryBound(to: Double.self), n, mean: mean, std: std)
            default: g.fillNormal(p.assumingMemoryBound(to: Float.self), n, mean: mean, std: std)
            }
        }
        return self
    }

    /// Fills a GPU tensor from its device's Philox generator (a CPU `Generator` can't drive it, as in PyTorch).
    private func fillOnDevice(_ op: RandomKernelOp, _ a: Double, _ b: Double, _ generator: Generator?) -> Tensor {
        precondition(generator == nil, "Expected a 'cuda' device type for generator but found 'cpu'")
        CUDARandom.fill(op, self, a, b)
        storage.bumpVersion()
        return self
    }

    /// Runs `fill` on a contiguous float32/float64 buffer, then stores it into self.
    private func fillRandom(_ fill: (UnsafeMutableRawPointer, Int, DType) -> Void) {
        torch.noGrad {
            let work = (isContiguous && (dtype == .float32 || dtype == .float64)) ? self
                : Tensor(uninitializedShape: shape, dtype: dtype == .float64 ? .float64 : .float32)
            fill(work.rawPointer, numel, work.dtype)
            if work !== self { copyKernel(from: work, into: self) }
            storage.bumpVersion()
        }
    }
}


/// `t` with `requiresGrad` set when asked (creation functions' `requiresGrad:` argument).
private func requiringGrad(_ t: Tensor, _ on: Bool) -> Tensor {
    if on { t.requiresGrad = true }
    return t
}
/// A tensor made on the host, moved to `device` as a leaf (keeping `requiresGrad`): creation functions whose
/// values come from host code (literals, ranges, the CPU generator) use it.
@inline(__always) func placed(_ t: Tensor, on device: Device) -> Tensor {
    if device == .cpu { return t }
    let wantsGrad = t.requiresGrad
    let out = torch.noGrad { t.to(device) }
    if wantsGrad { out.requiresGrad = true }
    return out
}

/// Writes `value` (converted to the tensor's dtype) into every element of `dst`.
func fillKernel(_ dst: Tensor, _ value: Double) {
    switch dst.device {
    case .cpu: CPUElementwise.fill(dst, value)
    case .cuda: CUDAElementwise.fill(dst, value)
    }
}
