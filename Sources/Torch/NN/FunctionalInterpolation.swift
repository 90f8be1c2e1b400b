/// `F.interpolate` (PyTorch's `torch.nn.functional.interpolate`): nearest, nearest-exact, linear, bilinear,
/// bicubic, trilinear and area resampling of the spatial dims of `(N, C, *)` inputs, with or without
/// `alignCorners`, and antialiased bilinear/bicubic downsampling.
///
/// Every mode except area is separable: along each spatial dim, output position `o` is a weighted sum of a few
/// input positions. The positions and weights are computed exactly as PyTorch's CPU kernels compute them (the
/// scale from `scaleFactor` when given, else from the sizes; the same float rounding). Floating inputs go through
/// `resampleAlongDim` (Ops/InterpolationOps.swift: the CPU kernels or CUDA's `resample` family, the forward and
/// its adjoint each the other's derivative, so gradients of every order exist); integer inputs (nearest modes)
/// through `indexSelect`.

/// A `scale_factor` as PyTorch accepts it: one number, or one per spatial dim (`2`, `0.5`, `[2, 1.5]`).
public protocol ScaleFactorValue {
    /// The values as written: one, or one per dim.
    var scaleFactorValues: [Double] { get }
}

extension Double: ScaleFactorValue { public var scaleFactorValues: [Double] { [self] } }
extension Float: ScaleFactorValue { public var scaleFactorValues: [Double] { [Double(self)] } }
extension Int: ScaleFactorValue { public var scaleFactorValues: [Double] { [Double(self)] } }
extension Array: ScaleFactorValue where Element: ScaleFactorValue {
    public var scaleFactorValues: [Double] { flatMap(\.scaleFactorValues) }
}

extension nn.functional {
    /// How `F.interpolate` and `nn.Upsample` compute output values.
    public enum InterpolationMode: String, Sendable {
        /// The input element at `floor(o · in/out)`.
        case nearest
        /// The input element whose centre is nearest: `floor((o + 0.5) · in/out)` (PIL's and OpenCV's nearest).
        case nearestExact = "nearest-exact"
        /// Linear interpolation of 3-D inputs.
        case linear
        /// Linear interpolation along both spatial dims of 4-D inputs.
        case bilinear
        /// Cubic convolution (A = −0.75, edges clamped) of 4-D inputs.
        case bicubic
        /// Linear interpolation along the three spatial dims of 5-D inputs.
        case trilinear
        /// Adaptive average pooling to the output size.
        case area

        /// The mode in PyTorch's autograd node names (`UpsampleBilinear2DBackward0`).
        var nodeName: String {
            switch self {
            case .nearest: return "Nearest"
            case .nearestExact: return "NearestExact"
            case .linear: return "Linear"
            case .bilinear: return "Bilinear"
            case .bicubic: return "Bicubic"
            case .trilinear: return "Trilinear"
            case .area: return "Area"
            }
        }

        /// The input rank the mode needs (nil: 3, 4 or 5).
        var requiredRank: Int? {
            switch self {
            case .linear: return 3
            case .bilinear, .bicubic: return 4
            case .trilinear: return 5
            default: return nil
            }
        }
    }

    /// Resizes the spatial dims of an `(N, C, d1, …, dK)` input (K = 1, 2, 3) to `size`, or by `scaleFactor`
    /// (output size `floor(d · scale)`), like PyTorch's `F.interpolate`.
    ///
    /// - Parameters:
    ///   - input: `(N, C, d1, …, dK)`, K = 1, 2 or 3.
    ///   - size: the output spatial size: one int for every dim, or one per dim.
    ///   - scaleFactor: the multiplier for the spatial size: one number, or one per dim. Exactly one of `size` and
    ///     `scaleFactor` is given.
    ///   - mode: how output values are computed (default nearest).
    ///   - alignCorners: for the linear modes and bicubic: whether the corner pixels' centres of input and output
    ///     coincide (default false); must be nil for the other modes.
    ///   - recomputeScaleFactor: with `scaleFactor`, compute the sampling scale from the resulting sizes instead
    ///     of using the given factor.
    ///   - antialias: for bilinear/bicubic: widen the filter when downsampling (as PIL and torchvision's `Resize`).
    ///
    /// ```swift
    /// let x = torch.randn(1, 3, 8, 8)
    /// F.interpolate(x, scaleFactor: 2)                                       // nearest, [1, 3, 16, 16]
    /// F.interpolate(x, size: [5, 7], mode: .bilinear, alignCorners: true)    // [1, 3, 5, 7]
    /// F.interpolate(x, size: 4, mode: .bicubic, antialias: true)            // [1, 3, 4, 4]
    /// ```
    public static func interpolate(_ input: Tensor, size: (any IntOrTuple)? = nil, scaleFactor: (any ScaleFactorValue)? = nil,
                                   mode: InterpolationMode = .nearest, alignCorners: Bool? = nil,
                                   recomputeScaleFactor: Bool? = nil, antialias: Bool = false) -> Tensor {
        let inSizes = Array(input.shape.dropFirst(2))
        let (outSizes, scales) = checkedArguments {
            try interpolationPlan(inputShape: input.shape, size: size?.intTupleValues,
                                  scaleFactor: scaleFactor?.scaleFactorValues, mode: mode, alignCorners: alignCorners,
                                  recomputeScaleFactor: recomputeScaleFactor ?? false, antialias: antialias)
        }
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.resize(mode: mode, alignCorners: alignCorners ?? false, sizes: outSizes, scales: scales, antialias: antialias), [input], {
            interpolate(input, size: size, scaleFactor: scaleFactor, mode: mode, alignCorners: alignCorners,
                        recomputeScaleFactor: recomputeScaleFactor, antialias: antialias) }) { return r }
        let k = inSizes.count
        if mode == .area { return adaptiveAvgPool(input, dims: k, outputSize: outSizes) }
        if mode != .nearest && mode != .nearestExact {
            precondition(input.dtype.isFloatingPoint, "interpolate: \(mode.rawValue) mode needs a floating-point input, got \(input.dtype)")
        }
        let name = "Upsample" + mode.nodeName + "\(k)D" + (antialias ? "Aa" : "") + "Backward0"
        var out = input
        for i in 0..<k {
            let taps = resamplingTaps(mode: mode, inSize: inSizes[i], outSize: outSizes[i], scale: scales?[i],
                                      alignCorners: alignCorners ?? false, antialias: antialias)
            out = input.dtype.isFloatingPoint ? resampleAlongDim(out, dim: 2 + i, taps: taps, name: name)
                : resample(out, dim: 2 + i, taps)
        }
        return out
    }

    /// Checks `F.interpolate`'s arguments (PyTorch's messages) and returns the output sizes and the scale factors
    /// the kernels see (nil: computed from the sizes).
    static func interpolationPlan(inputShape: [Int], size: [Int]?, scaleFactor: [Double]?, mode: InterpolationMode,
                                  alignCorners: Bool?, recomputeScaleFactor: Bool, antialias: Bool) throws -> ([Int], [Double]?) {
        let rank = inputShape.count, k = rank - 2
        try requireArgument((1...3).contains(k), "Input Error: Only 3D, 4D and 5D input Tensors supported (got \(rank)D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got \(mode.rawValue))")
        if let r = mode.requiredRank {
            try requireArgument(rank == r, "Got \(rank)D input, but \(mode.rawValue) mode needs \(r)D input")
        }
        if mode == .nearest || mode == .nearestExact || mode == .area {
            try requireArgument(alignCorners == nil, "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
        }
        try requireArgument(!antialias || ((mode == .bilinear || mode == .bicubic) && rank == 4),
                    "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input")
        let inSizes = Array(inputShape.dropFirst(2))
        switch (size, scaleFactor) {
        case (let s?, nil):
            try requireArgument(s.count == 1 || s.count == k, "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of \(shapeString(inSizes)) and output size of \(pyTuple(s)). Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            let out = s.count == 1 ? Array(repeating: s[0], count: k) : s
            try requireArgument(out.allSatisfy { $0 > 0 }, "interpolate: output sizes must be positive, got \(shapeString(out))")
            return (out, nil)
        case (nil, let f?):
            try requireArgument(f.count == 1 || f.count == k, "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of \(shapeString(inSizes)) and scale_factor of shape \(f). Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            let factors = f.count == 1 ? Array(repeating: f[0], count: k) : f
            let out = zip(inSizes, factors).map { Int((Double($0) * $1).rounded(.down)) }
            try requireArgument(out.allSatisfy { $0 > 0 }, "interpolate: scale_factor \(factors) gives an empty output \(shapeString(out)) for input sizes \(shapeString(inSizes))")
            return (out, recomputeScaleFactor ? nil : factors)
        case (nil, nil):
            throw LayerArgumentError(message: "either size or scale_factor should be defined")
        default:
            throw LayerArgumentError(message: "only one of size or scale_factor should be defined")
        }
    }

    /// `sum over taps t of x.indexSelect(dim, index[t]) * weight[t]`, the weights broadcast along `dim` (the
    /// nearest modes of integer inputs, such as uint8 images, go this way).
    private static func resample(_ x: Tensor, dim: Int, _ taps: ResamplingTaps) -> Tensor {
        let n = taps.outSize
        var viewShape = [Int](repeating: 1, count: x.dim)
        viewShape[dim] = n
        var out: Tensor? = nil
        for t in 0..<taps.count {
            let idx = Tensor(Array(taps.index[(t * n)..<((t + 1) * n)]), shape: [n])
            let picked = x.indexSelect(dim, idx)
            guard let w = taps.weight else { return picked }
            let wt = Tensor(Array(w[(t * n)..<((t + 1) * n)]), shape: viewShape, dtype: x.dtype)
            let term = picked * wt
            out = out.map { $0 + term } ?? term
        }
        return out!
    }
}

/// For one spatial dim: `count` taps per output position, tap-major (`index[t · outSize + o]`); `weight` nil for
/// the nearest modes (one tap, weight 1).
struct ResamplingTaps {
    var count: Int
    var outSize: Int
    var index: [Int64]
    var weight: [Double]?
}

/// PyTorch's `area_pixel_compute_scale`: the input step per output step, in the kernel's float type `T`.
private func pixelScale<T: BinaryFloatingPoint>(_ inSize: Int, _ outSize: Int, alignCorners: Bool, scale: Double?) -> T {
    if alignCorners { return outSize > 1 ? T(inSize - 1) / T(outSize - 1) : 0 }
    if let s = scale, s > 0 { return T(1.0 / s) }
    return T(inSize) / T(outSize)
}

/// PyTorch's `area_pixel_compute_source_index`: where output position `o` samples the input.
private func sourceIndex<T: BinaryFloatingPoint>(_ scale: T, _ o: Int, alignCorners: Bool, cubic: Bool) -> T {
    if alignCorners { return scale * T(o) }
    let src = scale * (T(o) + T(0.5)) - T(0.5)
    return !cubic && src < 0 ? 0 : src
}

/// The floor of `real` clamped to the last index, and the fraction past it clamped to [0, 1].
private func guardIndex<T: BinaryFloatingPoint>(_ real: T, _ inSize: Int) -> (Int, T) {
    let i = Swift.min(Int(real.rounded(.down)), inSize - 1)
    return (i, Swift.min(Swift.max(real - T(i), 0), 1))
}

/// Keys' cubic convolution weights for the four taps around a point `t` ∈ [0, 1] past the second tap.
private func cubicWeights<T: BinaryFloatingPoint>(_ t: T, a: T = -0.75) -> [T] {
    func near(_ x: T) -> T { ((a + 2) * x - (a + 3)) * x * x + 1 }
    func far(_ x: T) -> T { ((a * x - 5 * a) * x + 8 * a) * x - 4 * a }
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]
}

/// The taps of one spatial dim for `mode`, computed in Float as PyTorch does for float32 (and for nearest always).
func resamplingTaps(mode: F.InterpolationMode, inSize: Int, outSize: Int, scale: Double?, alignCorners: Bool,
                    antialias: Bool) -> ResamplingTaps {
    switch mode {
    case .nearest, .nearestExact:
        let s: Float = pixelScale(inSize, outSize, alignCorners: false, scale: scale)
        let index = (0..<outSize).map { o -> Int64 in
            if mode == .nearest {
                if outSize == inSize { return Int64(o) }
                if outSize == 2 * inSize { return Int64(o >> 1) }
                return Int64(Swift.min(Int((Float(o) * s).rounded(.down)), inSize - 1))
            }
            return Int64(Swift.min(Int(((Float(o) + 0.5) * s).rounded(.down)), inSize - 1))
        }
        return ResamplingTaps(count: 1, outSize: outSize, index: index, weight: nil)
    case .bilinear where antialias, .bicubic where antialias:
        return antialiasTaps(cubic: mode == .bicubic, inSize: inSize, outSize: outSize, scale: scale, alignCorners: alignCorners)
    case .linear, .bilinear, .trilinear:
        var index = [Int64](repeating: 0, count: 2 * outSize), weight = [Double](repeating: 0, count: 2 * outSize)
        let s: Float = pixelScale(inSize, outSize, alignCorners: alignCorners, scale: scale)
        for o in 0..<outSize {
            if inSize == outSize {
                index[o] = Int64(o); index[outSize + o] = Int64(o); weight[o] = 1
                continue
            }
            let (i0, l1) = guardIndex(sourceIndex(s, o, alignCorners: alignCorners, cubic: false), inSize)
            index[o] = Int64(i0); index[outSize + o] = Int64(i0 < inSize - 1 ? i0 + 1 : i0)
            weight[o] = Double(1 - l1); weight[outSize + o] = Double(l1)
        }
        return ResamplingTaps(count: 2, outSize: outSize, index: index, weight: weight)
    case .bicubic:
        var index = [Int64](repeating: 0, count: 4 * outSize), weight = [Double](repeating: 0, count: 4 * outSize)
        let s: Float = pixelScale(inSize, outSize, alignCorners: alignCorners, scale: scale)
        for o in 0..<outSize {
            let (i0, t) = guardIndex(sourceIndex(s, o, alignCorners: alignCorners, cubic: true), inSize)
            let w = cubicWeights(t)
            for j in 0..<4 {
                index[j * outSize + o] = Int64(Swift.max(Swift.min(i0 - 1 + j, inSize - 1), 0))
                weight[j * outSize + o] = Double(w[j])
            }
        }
        return ResamplingTaps(count: 4, outSize: outSize, index: index, weight: weight)
    case .area:
        preconditionFailure("interpolate: area mode is adaptive average pooling, not a separable resampling")
    }
}

/// Antialiased (PIL-style) taps: a triangle (bilinear) or Keys cubic with a = −0.5 (bicubic) filter, stretched
/// by the scale when downsampling, its weights normalised to sum to 1 per output position.
private func antialiasTaps(cubic: Bool, inSize: Int, outSize: Int, scale: Double?, alignCorners: Bool) -> ResamplingTaps {
    let s: Float = pixelScale(inSize, outSize, alignCorners: alignCorners, scale: scale)
    let interpSize: Float = cubic ? 4 : 2
    let support = s >= 1 ? interpSize * 0.5 * s : interpSize * 0.5
    let invScale: Float = s >= 1 ? 1 / s : 1
    func filter(_ v: Float) -> Float {
        let x = abs(v)
        if !cubic { return x < 1 ? 1 - x : 0 }
        let a: Float = -0.5
        if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
        if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
        return 0
    }
    var rows: [[(Int, Float)]] = []
    for o in 0..<outSize {
        let center = s * (Float(o) + 0.5)
        let lo = Swift.max(Int(center - support + 0.5), 0)
        let hi = Swift.min(Int(center + support + 0.5), inSize)
        var ws = (lo..<hi).map { j in (j, filter((Float(j) - center + 0.5) * invScale)) }
        let total = ws.reduce(Float(0)) { $0 + $1.1 }
        if total != 0 { ws = ws.map { ($0.0, $0.1 / total) } }
        rows.append(ws)
    }
    let count = Swift.max(rows.map(\.count).max() ?? 1, 1)
    var index = [Int64](repeating: 0, count: count * outSize), weight = [Double](repeating: 0, count: count * outSize)
    for (o, ws) in rows.enumerated() {
        for (t, (j, w)) in ws.enumerated() { index[t * outSize + o] = Int64(j); weight[t * outSize + o] = Double(w) }
    }
    return ResamplingTaps(count: count, outSize: outSize, index: index, weight: weight)
}
