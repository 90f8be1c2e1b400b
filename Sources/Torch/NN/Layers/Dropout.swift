/// Dropout layers (`nn.Dropout`, `nn.AlphaDropout`, `nn.Dropout1d/2d/3d`) and their `F` twins.
///
/// Masks are drawn from the default generator exactly as PyTorch's CPU kernels draw them, so a
/// seeded program zeroes the same elements: `noise = empty_like(x).bernoulli_(1 − p)` takes
/// one 53-bit uniform double per element (in the memory order of `x` when x is dense, as
/// `empty_like` keeps its layout) and keeps the element when it is < 1 − p; the output is
/// `x * (noise / (1 − p))`, so its grad_fn is `MulBackward0` (PyTorch uses its fused
/// `native_dropout` only on GPUs).

/// Whether `x` covers one dense block of memory, in any dim order (PyTorch's
/// `is_non_overlapping_and_dense`).
func isNonOverlappingAndDense(_ x: Tensor) -> Bool {
    let dims = (0..<x.dim).filter { x.shape[$0] >= 2 }.sorted { x.strides[$0] < x.strides[$1] }
    var expected = 1
    for d in dims {
        if x.strides[d] != expected { return false }
        expected *= x.shape[d]
    }
    return true
}

/// An uninitialised tensor shaped like `x`, with x's strides when x is non-overlapping and
/// dense (PyTorch's `empty_like`), contiguous otherwise.
private func emptyLikePreservingLayout(_ x: Tensor, dtype: DType) -> Tensor {
    if x.isContiguous || !isNonOverlappingAndDense(x) { return Tensor(uninitializedShape: x.shape, dtype: dtype) }
    return Tensor(storage: Storage(byteCount: x.numel * dtype.itemSize), shape: x.shape, strides: x.strides,
                  offset: 0, dtype: dtype)
}

/// Fills the `count` elements of `noise`'s storage, in memory order, like PyTorch's CPU
/// `bernoulli_(keep)` followed by a multiplication: `one` where the next uniform double from
/// `generator` is < keep, `zero` elsewhere.
private func fillBernoulli(_ noise: Tensor, keep: Double, one: Double, zero: Double = 0, generator: Generator) {
    func run<T: FloatElement>(_: T.Type) {
        let p = noise.storage.data.assumingMemoryBound(to: T.self)
        let on = T(one), off = T(zero)
        generator.withUniformDoubles(noise.numel) { i, u in p[i] = u < keep ? on : off }
    }
    switch noise.dtype {
    case .float32: run(Float.self)
    case .float64: run(Double.self)
    default: preconditionFailure("bernoulli_: unsupported dtype \(noise.dtype)")
    }
}

/// The scale PyTorch gives kept elements: `1 / (1 − p)` computed in the element type.
private func keepScale(_ p: Double, _ dtype: DType) -> Double {
    dtype == .float32 ? Double(Float(1) / Float(1 - p)) : 1 / (1 - p)
}

/// PyTorch's message for a dropout probability outside [0, 1], or nil.
func dropoutProbabilityMessage(_ p: Double) -> String? {
    p >= 0 && p <= 1 ? nil : "dropout probability has to be between 0 and 1, but got \(pyFloat(p))"
}

/// The shared body of every dropout variant (PyTorch's `_dropout_impl`): `feature` drops
/// whole channels (noise of shape `[N, C, 1, …]`), `alpha` keeps the mean and variance of
/// SELU activations.
private func dropoutImpl(_ x: Tensor, p: Double, training: Bool, inplace: Bool, feature: Bool, alpha: Bool) -> Tensor {
    if let msg = dropoutProbabilityMessage(p) { preconditionFailure(msg) }
    if !training || p == 0 || x.numel == 0 { return x }
    precondition(x.dtype.isFloatingPoint, "result type Float can't be cast to the desired output type \(x.dtype.name.capitalized)")
    if p == 1 {
        let zero = torch.zeros([], dtype: x.dtype)
        return inplace ? x.mul_(zero) : x * zero
    }
    precondition(!feature || x.dim >= 2, "Feature dropout requires at least 2 dimensions in the input")
    switch x.device {
    case .cpu: break
    case .cuda: return dropoutOnDevice(x, p: p, inplace: inplace, feature: feature, alpha: alpha)
    }
    let ct = x.dtype.computeType
    let noise: Tensor
    if feature {
        noise = Tensor(uninitializedShape: [x.shape[0], x.shape[1]] + [Int](repeating: 1, count: x.dim - 2), dtype: ct)
    } else {
        noise = emptyLikePreservingLayout(x, dtype: ct)
    }
    let gen = torch.defaultGenerator
    if !alpha {
        fillBernoulli(noise, keep: 1 - p, one: keepScale(p, ct), generator: gen)
        let mask = ct == x.dtype ? noise : noise.to(x.dtype)
        return inplace ? x.mul_(mask) : x * mask
    }
    // Alpha dropout: noise = m · a, b = (m − 1) · α a + α a p, y = x · noise + b.
    let selfAlpha = 1.7580993408473766
    let a = 1 / ((selfAlpha * selfAlpha * p + 1) * (1 - p)).squareRoot()
    fillBernoulli(noise, keep: 1 - p, one: 1, generator: gen)
    let b = Tensor(storage: Storage(byteCount: noise.numel * ct.itemSize), shape: noise.shape, strides: noise.strides,
                   offset: 0, dtype: ct)
    func run<T: FloatElement>(_: T.Type) {
        let m = noise.storage.data.assumingMemoryBound(to: T.self), bp = b.storage.data.assumingMemoryBound(to: T.self)
        let scaleB = T(selfAlpha * a), shift = T(selfAlpha * a * p), scaleN = T(a)
        for i in 0..<noise.numel {
            bp[i] = (m[i] + (-1)) * scaleB + shift
            m[i] = m[i] * scaleN
        }
    }
    if ct == .float32 { run(Float.self) } else { run(Double.self) }
    let (mask, shift) = ct == x.dtype ? (noise, b) : (noise.to(x.dtype), b.to(x.dtype))
    return (inplace ? x.mul_(mask) : x * mask).add_(shift)
}

/// Dropout of a GPU tensor: the mask comes from one launch of the device's Philox generator (Bernoulli
/// with the 1/(1 − p) scale folded in), then one multiplication (two more for alpha dropout's affine part).
private func dropoutOnDevice(_ x: Tensor, p: Double, inplace: Bool, feature: Bool, alpha: Bool) -> Tensor {
    let shape = feature ? [x.shape[0], x.shape[1]] + [Int](repeating: 1, count: x.dim - 2) : x.shape
    let noise = Tensor(uninitializedShape: shape, dtype: x.dtype, device: x.device)
    if !alpha {
        CUDARandom.fill(.bernoulli, noise, 1 - p, keepScale(p, x.dtype == .float64 ? .float64 : .float32))
        return inplace ? x.mul_(noise) : x * noise
    }
    let selfAlpha = 1.7580993408473766
    let a = 1 / ((selfAlpha * selfAlpha * p + 1) * (1 - p)).squareRoot()
    CUDARandom.fill(.bernoulli, noise, 1 - p, 1)
    let (mask, shift) = torch.noGrad { (noise * a, (noise - 1) * (selfAlpha * a) + selfAlpha * a * p) }
    return (inplace ? x.mul_(mask) : x * mask).add_(shift)
}

extension nn.functional {
    /// Zeroes each element with probability `p` and scales the others by 1/(1 − p) when
    /// `training`; returns `x` itself otherwise (PyTorch's `F.dropout`). The mask comes from the
    /// default generator, drawn as PyTorch's CPU kernel draws it.
    ///
    /// ```swift
    /// torch.manualSeed(0)
    /// let y = F.dropout(x, p: 0.2)                    // PyTorch's mask for seed 0
    /// let z = F.dropout(x, p: 0.2, training: false)   // x
    /// ```
    public static func dropout(_ x: Tensor, p: Double = 0.5, training: Bool = true, inplace: Bool = false) -> Tensor {
        dropoutImpl(x, p: p, training: training, inplace: inplace, feature: false, alpha: false)
    }

    /// Alpha dropout (PyTorch's `F.alpha_dropout`): drops to SELU's negative saturation value
    /// and applies an affine map that keeps zero mean and unit variance. Note PyTorch's default
    /// `training: false`.
    public static func alphaDropout(_ x: Tensor, p: Double = 0.5, training: Bool = false, inplace: Bool = false) -> Tensor {
        dropoutImpl(x, p: p, training: training, inplace: inplace, feature: false, alpha: true)
    }

    /// Zeroes whole channels of an `(N, C, L)` or `(C, L)` input with probability `p`.
    public static func dropout1d(_ x: Tensor, p: Double = 0.5, training: Bool = true, inplace: Bool = false) -> Tensor {
        if let msg = dropoutProbabilityMessage(p) { preconditionFailure(msg) }
        precondition(x.dim == 2 || x.dim == 3, "dropout1d: Expected 2D or 3D input, but received a \(x.dim)D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
        if x.dim == 3 || !training || p == 0 { return dropoutImpl(x, p: p, training: training, inplace: inplace, feature: true, alpha: false) }
        if inplace {
            _ = dropoutImpl(x.unsqueeze(0), p: p, training: training, inplace: true, feature: true, alpha: false)
            return x
        }
        return dropoutImpl(x.unsqueeze(0), p: p, training: training, inplace: false, feature: true, alpha: false).squeeze(0)
    }

    /// Zeroes whole channels (dim 1) of an `(N, C, H, W)` input with probability `p`. Like
    /// PyTorch, a 3-D input is treated as `(N, C, L)`.
    public static func dropout2d(_ x: Tensor, p: Double = 0.5, training: Bool = true, inplace: Bool = false) -> Tensor {
        dropoutImpl(x, p: p, training: training, inplace: inplace, feature: true, alpha: false)
    }

    /// Zeroes whole channels (dim 1) of an `(N, C, D, H, W)` input with probability `p`; a 4-D
    /// input is `(C, D, H, W)`.
    public static func dropout3d(_ x: Tensor, p: Double = 0.5, training: Bool = true, inplace: Bool = false) -> Tensor {
        if let msg = dropoutProbabilityMessage(p) { preconditionFailure(msg) }
        if x.dim != 4 || !training || p == 0 { return dropoutImpl(x, p: p, training: training, inplace: inplace, feature: true, alpha: false) }
        if inplace {
            _ = dropoutImpl(x.unsqueeze(0), p: p, training: training, inplace: true, feature: true, alpha: false)
            return x
        }
        return dropoutImpl(x.unsqueeze(0), p: p, training: training, inplace: false, feature: true, alpha: false).squeeze(0)
    }
}

extension nn {
    /// The shared state of the dropout layers (PyTorch's `_DropoutNd`): the probability `p`
    /// and `inplace`; identity in eval mode.
    public class DropoutBase: Module {
        /// Probability of an element (or channel) being zeroed.
        public let p: Double
        /// Whether the input is overwritten.
        public let inplace: Bool

        /// `nn.Dropout(p: 0.2)`.
        public init(p: Double = 0.5, inplace: Bool = false) {
            if let msg = dropoutProbabilityMessage(p) { preconditionFailure(msg) }
            self.p = p
            self.inplace = inplace
            super.init()
        }

        /// The positional form `nn.Dropout(0.2)`.
        public convenience init(_ p: Double, inplace: Bool = false) {
            self.init(p: p, inplace: inplace)
        }

        public override func extraRepr() -> String { "p=\(pyFloat(p)), inplace=\(pyBool(inplace))" }
    }

    /// Zeroes elements with probability `p` and scales the rest by 1/(1 − p) in training mode;
    /// identity in eval mode.
    ///
    /// ```swift
    /// let drop = nn.Dropout(0.2)   // Dropout(p=0.2, inplace=False)
    /// let y = drop(x)              // training: masked; after drop.eval(): y === x
    /// ```
    public final class Dropout: DropoutBase {
        public override func forward(_ x: Tensor) -> Tensor { F.dropout(x, p: p, training: training, inplace: inplace) }
    }

    /// Alpha dropout for self-normalising (SELU) networks; identity in eval mode.
    public final class AlphaDropout: DropoutBase {
        public override func forward(_ x: Tensor) -> Tensor { F.alphaDropout(x, p: p, training: training, inplace: inplace) }
    }

    /// Zeroes whole channels of `(N, C, L)` / `(C, L)` inputs in training mode.
    public final class Dropout1d: DropoutBase {
        public override func forward(_ x: Tensor) -> Tensor { F.dropout1d(x, p: p, training: training, inplace: inplace) }
    }

    /// Zeroes whole channels of `(N, C, H, W)` inputs in training mode.
    public final class Dropout2d: DropoutBase {
        public override func forward(_ x: Tensor) -> Tensor { F.dropout2d(x, p: p, training: training, inplace: inplace) }
    }

    /// Zeroes whole channels of `(N, C, D, H, W)` / `(C, D, H, W)` inputs in training mode.
    public final class Dropout3d: DropoutBase {
        public override func forward(_ x: Tensor) -> Tensor { F.dropout3d(x, p: p, training: training, inplace: inplace) }
    }
}
