#if canImport(Glibc)
import Glibc
#endif

extension nn {
    /// PyTorch's `torch.nn.init`: in-place initialisers, run without recording autograd and
    /// drawing from the default generator (or `generator:`) exactly like PyTorch.
    ///
    /// Swift reads `nn.init` as an initializer reference, so write it with backticks or use the
    /// alias `nn.init_`:
    ///
    /// ```swift
    /// nn.`init`.kaimingUniform_(layer.weight, a: 5.0.squareRoot())
    /// nn.init_.zeros_(layer.bias!)
    /// nn.init_.xavierUniform_(w, gain: nn.init_.calculateGain("relu"))
    /// ```
    public enum `init` {
        /// Which fan `kaimingUniform_`/`kaimingNormal_` preserve: `.fanIn` (default) or `.fanOut`
        /// (also written as PyTorch's strings `"fan_in"`, `"fan_out"`).
        public struct FanMode: ExpressibleByStringLiteral, Equatable, CustomStringConvertible {
            public let name: String
            public init(_ name: String) { self.name = name }
            public init(stringLiteral value: String) { name = value }
            public static let fanIn = FanMode("fan_in")
            public static let fanOut = FanMode("fan_out")
            public var description: String { name }
        }

        /// A nonlinearity for `calculateGain`: `.relu`, `.leakyRelu`, `.tanh`, ... or PyTorch's
        /// strings (`"relu"`, `"leaky_relu"`, `"conv2d"`).
        public struct Nonlinearity: ExpressibleByStringLiteral, Equatable, CustomStringConvertible {
            public let name: String
            public init(_ name: String) { self.name = name }
            public init(stringLiteral value: String) { name = value }
            public static let linear = Nonlinearity("linear")
            public static let conv1d = Nonlinearity("conv1d")
            public static let conv2d = Nonlinearity("conv2d")
            public static let conv3d = Nonlinearity("conv3d")
            public static let convTranspose1d = Nonlinearity("conv_transpose1d")
            public static let convTranspose2d = Nonlinearity("conv_transpose2d")
            public static let convTranspose3d = Nonlinearity("conv_transpose3d")
            public static let sigmoid = Nonlinearity("sigmoid")
            public static let tanh = Nonlinearity("tanh")
            public static let relu = Nonlinearity("relu")
            public static let leakyRelu = Nonlinearity("leaky_relu")
            public static let selu = Nonlinearity("selu")
            public var description: String { name }
        }

        /// The recommended gain for a nonlinearity (PyTorch's `calculate_gain`): 1 for linear,
        /// conv and sigmoid, 5/3 for tanh, √2 for relu, √(2/(1+slope²)) for leaky_relu (slope
        /// `param`, default 0.01), 3/4 for selu.
        public static func calculateGain(_ nonlinearity: Nonlinearity, param: Double? = nil) -> Double {
            switch nonlinearity.name {
            case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
                return 1
            case "tanh": return 5.0 / 3
            case "relu": return 2.0.squareRoot()
            case "leaky_relu":
                let slope = param ?? 0.01
                return (2.0 / (1 + slope * slope)).squareRoot()
            case "selu": return 3.0 / 4
            default: preconditionFailure("Unsupported nonlinearity \(nonlinearity.name)")
            }
        }

        /// (fan_in, fan_out) of a weight: `size(1)` and `size(0)` times the receptive field.
        public static func calculateFanInAndFanOut(_ tensor: Tensor) -> (fanIn: Int, fanOut: Int) {
            precondition(tensor.dim >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
            var receptive = 1
            for s in tensor.shape.dropFirst(2) { receptive *= s }
            return (tensor.shape[1] * receptive, tensor.shape[0] * receptive)
        }

        private static func correctFan(_ tensor: Tensor, _ mode: FanMode) -> Int {
            precondition(mode == .fanIn || mode == .fanOut, "Mode \(mode.name) not supported, please use one of fan_in, fan_out")
            let (fanIn, fanOut) = calculateFanInAndFanOut(tensor)
            return mode == .fanIn ? fanIn : fanOut
        }

        /// Fills with U(a, b).
        @discardableResult
        public static func uniform_(_ tensor: Tensor, a: Double = 0, b: Double = 1, generator: Generator? = nil) -> Tensor {
            torch.noGrad { tensor.uniform_(a, b, generator: generator) }
        }
        /// Fills with U(a, b) (positional form).
        @discardableResult
        public static func uniform_(_ tensor: Tensor, _ a: Double, _ b: Double, generator: Generator? = nil) -> Tensor {
            uniform_(tensor, a: a, b: b, generator: generator)
        }

        /// Fills with N(mean, std²).
        @discardableResult
        public static func normal_(_ tensor: Tensor, mean: Double = 0, std: Double = 1, generator: Generator? = nil) -> Tensor {
            torch.noGrad { tensor.normal_(mean, std, generator: generator) }
        }
        /// Fills with N(mean, std²) (positional form).
        @discardableResult
        public static func normal_(_ tensor: Tensor, _ mean: Double, _ std: Double, generator: Generator? = nil) -> Tensor {
            normal_(tensor, mean: mean, std: std, generator: generator)
        }

        /// Fills with `val`.
        @discardableResult
        public static func constant_(_ tensor: Tensor, _ val: Double) -> Tensor {
            torch.noGrad { tensor.fill_(val) }
        }

        /// Fills with 1.
        @discardableResult
        public static func ones_(_ tensor: Tensor) -> Tensor { constant_(tensor, 1) }

        /// Fills with 0.
        @discardableResult
        public static func zeros_(_ tensor: Tensor) -> Tensor { constant_(tensor, 0) }

        /// Fills a 2-D tensor with the identity matrix.
        @discardableResult
        public static func eye_(_ tensor: Tensor) -> Tensor {
            precondition(tensor.dim == 2, "Only tensors with 2 dimensions are supported")
            return torch.noGrad { tensor.copy_(torch.eye(tensor.shape[0], tensor.shape[1], dtype: tensor.dtype)) }
        }

        /// Glorot uniform: U(−a, a) with a = gain · √(6 / (fan_in + fan_out)).
        @discardableResult
        public static func xavierUniform_(_ tensor: Tensor, gain: Double = 1, generator: Generator? = nil) -> Tensor {
            let (fanIn, fanOut) = calculateFanInAndFanOut(tensor)
            let std = gain * (2.0 / Double(fanIn + fanOut)).squareRoot()
            let a = 3.0.squareRoot() * std
            return uniform_(tensor, a: -a, b: a, generator: generator)
        }

        /// Glorot normal: N(0, std²) with std = gain · √(2 / (fan_in + fan_out)).
        @discardableResult
        public static func xavierNormal_(_ tensor: Tensor, gain: Double = 1, generator: Generator? = nil) -> Tensor {
            let (fanIn, fanOut) = calculateFanInAndFanOut(tensor)
            let std = gain * (2.0 / Double(fanIn + fanOut)).squareRoot()
            return normal_(tensor, mean: 0, std: std, generator: generator)
        }

        /// He uniform: U(−bound, bound) with bound = gain · √(3 / fan), gain from `nonlinearity` and `a`.
        @discardableResult
        public static func kaimingUniform_(_ tensor: Tensor, a: Double = 0, mode: FanMode = .fanIn,
                                           nonlinearity: Nonlinearity = .leakyRelu, generator: Generator? = nil) -> Tensor {
            if tensor.shape.contains(0) { return tensor }   // PyTorch warns: a no-op
            let fan = correctFan(tensor, mode)
            let gain = calculateGain(nonlinearity, param: a)
            let std = gain / Double(fan).squareRoot()
            let bound = 3.0.squareRoot() * std
            return uniform_(tensor, a: -bound, b: bound, generator: generator)
        }

        /// He normal: N(0, std²) with std = gain / √fan.
        @discardableResult
        public static func kaimingNormal_(_ tensor: Tensor, a: Double = 0, mode: FanMode = .fanIn,
                                          nonlinearity: Nonlinearity = .leakyRelu, generator: Generator? = nil) -> Tensor {
            if tensor.shape.contains(0) { return tensor }
            let fan = correctFan(tensor, mode)
            let gain = calculateGain(nonlinearity, param: a)
            let std = gain / Double(fan).squareRoot()
            return normal_(tensor, mean: 0, std: std, generator: generator)
        }

        /// A (semi-)orthogonal matrix times `gain`, from the QR decomposition of a normal matrix
        /// (tensors of rank > 2 are flattened after the first dim), as PyTorch does.
        @discardableResult
        public static func orthogonal_(_ tensor: Tensor, gain: Double = 1, generator: Generator? = nil) -> Tensor {
            precondition(tensor.dim >= 2, "Only tensors with 2 or more dimensions are supported")
            if tensor.numel == 0 { return tensor }
            let rows = tensor.shape[0], cols = tensor.numel / rows
            let flat = torch.empty([rows, cols], dtype: tensor.dtype.computeType)
            torch.noGrad { _ = flat.normal_(0, 1, generator: generator) }
            let values = flat.toArray(as: Double.self)
            // A is m×n with m ≥ n: the matrix itself, or its transpose when rows < cols.
            let transpose = rows < cols
            let m = transpose ? cols : rows, n = transpose ? rows : cols
            var a = [Double](repeating: 0, count: m * n)
            for i in 0..<rows { for j in 0..<cols {
                if transpose { a[j * n + i] = values[i * cols + j] } else { a[i * n + j] = values[i * cols + j] }
            } }
            let q = householderQ(&a, m, n)
            var out = [Double](repeating: 0, count: rows * cols)
            for i in 0..<m { for j in 0..<n {
                if transpose { out[j * cols + i] = q[i * n + j] } else { out[i * cols + j] = q[i * n + j] }
            } }
            return torch.noGrad {
                tensor.copy_(Tensor(out, shape: tensor.shape))
                return tensor.mul_(gain)
            }
        }

        /// N(mean, std²) truncated to [a, b], by PyTorch's rejection sampling: when [a, b] holds
        /// more than 30% of the mass, normal draws with rejected entries redrawn; otherwise uniform
        /// proposals on [a, b] accepted with probability pdf/peak. Same generator draws as PyTorch.
        @discardableResult
        public static func truncNormal_(_ tensor: Tensor, mean: Double = 0, std: Double = 1, a: Double = -2, b: Double = 2,
                                        generator: Generator? = nil) -> Tensor {
            func normCdf(_ x: Double) -> Double { (1 + Glibc.erf(x / 2.0.squareRoot())) / 2 }
            let p = normCdf((b - mean) / std) - normCdf((a - mean) / std)
            func anyTrue(_ m: Tensor) -> Bool { m.any().item() != 0 }
            return torch.noGrad {
                if p > 0.3 {
                    // Bounds as the tensor's dtype represents them.
                    let lo = torch.tensor(a, dtype: tensor.dtype).item(), hi = torch.tensor(b, dtype: tensor.dtype).item()
                    var result = tensor.normal_(mean, std, generator: generator)
                    while true {
                        let mask = (result .< lo) | (result .> hi)
                        if !anyTrue(mask) { break }
                        result = torch.where(mask, torch.emptyLike(result).normal_(mean, std, generator: generator), result)
                    }
                    if result !== tensor { tensor.copy_(result) }
                    return tensor
                }
                let mode = Swift.max(a, Swift.min(mean, b))
                let z = (mode - mean) / std
                let logPeak = -0.5 * z * z
                let candidates = torch.emptyLike(tensor), accept = torch.emptyLike(tensor)
                func logPdf(_ c: Tensor) { c.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(logPeak) }
                tensor.uniform_(a, b, generator: generator)
                candidates.copy_(tensor)
                logPdf(candidates)
                var pending = accept.uniform_(generator: generator).log_() .> candidates
                if !anyTrue(pending) { return tensor }
                var result = tensor
                while true {
                    candidates.uniform_(a, b, generator: generator)
                    result = torch.where(pending, candidates, result)
                    logPdf(candidates)
                    pending = torch.where(pending, accept.uniform_(generator: generator).log_() .> candidates, pending)
                    if !anyTrue(pending) { break }
                }
                tensor.copy_(result)
                return tensor
            }
        }
    }

    /// Alias of ``nn/init`` usable without backticks: `nn.init_.zeros_(b)`.
    public typealias init_ = `init`
}

/// Thin Q (m×n, row-major) of the QR decomposition of `a` (m×n, m ≥ n) by Householder
/// reflections, with columns signed so that R has a non-negative diagonal (PyTorch's
/// `q *= sign(diag(r))`).
private func householderQ(_ a: inout [Double], _ m: Int, _ n: Int) -> [Double] {
    var vs: [[Double]] = []
    var rdiag = [Double](repeating: 0, count: n)
    for k in 0..<n {
        var norm = 0.0
        for i in k..<m { norm += a[i * n + k] * a[i * n + k] }
        norm = norm.squareRoot()
        var v = [Double](repeating: 0, count: m - k)
        if norm == 0 { vs.append(v); rdiag[k] = 0; continue }
        let x0 = a[k * n + k]
        let alpha = x0 >= 0 ? -norm : norm
        for i in k..<m { v[i - k] = a[i * n + k] }
        v[0] -= alpha
        var vnorm = 0.0
        for x in v { vnorm += x * x }
        vnorm = vnorm.squareRoot()
        if vnorm > 0 { for i in 0..<v.count { v[i] /= vnorm } }
        // A[k:, k:] -= 2 v (vᵀ A[k:, k:])
        for j in k..<n {
            var dot = 0.0
            for i in k..<m { dot += v[i - k] * a[i * n + j] }
            for i in k..<m { a[i * n + j] -= 2 * v[i - k] * dot }
        }
        rdiag[k] = alpha
        vs.append(v)
    }
    // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
    var q = [Double](repeating: 0, count: m * n)
    for j in 0..<n { q[j * n + j] = 1 }
    for k in stride(from: n - 1, through: 0, by: -1) {
        let v = vs[k]
        for j in 0..<n {
            var dot = 0.0
            for i in k..<m { dot += v[i - k] * q[i * n + j] }
            if dot == 0 { continue }
            for i in k..<m { q[i * n + j] -= 2 * v[i - k] * dot }
        }
    }
    for j in 0..<n {
        let s: Double = rdiag[j] > 0 ? 1 : (rdiag[j] < 0 ? -1 : 0)
        for i in 0..<m { q[i * n + j] *= s }
    }
    return q
}
