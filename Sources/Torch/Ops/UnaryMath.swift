import CTorchKernels

/// Pointwise math of one tensor with autograd: abs sqrt rsqrt exp log log1p expm1 log2 log10 sin cos
/// tan asin acos atan sinh cosh tanh sigmoid relu neg reciprocal sign round floor ceil trunc frac
/// erf square, pow with a number exponent, and clamp.
enum UnaryOp: Int, CaseIterable {
    case abs, neg, sign, relu, round, floor, ceil, trunc, square
    case sqrt, rsqrt, exp, log, log1p, expm1, log2, log10, sin, cos, tan, asin, acos, atan
    case sinh, cosh, tanh, sigmoid, reciprocal, erf, frac

    /// The name autocast's op lists know this op by (float32 on CUDA), or nil when autocast leaves it alone.
    var autocastOp: AutocastOp? {
        switch self {
        case .exp: return .exp
        case .log: return .log
        case .log1p: return .log1p
        case .expm1: return .expm1
        case .log2: return .log2
        case .log10: return .log10
        case .rsqrt: return .rsqrt
        case .reciprocal: return .reciprocal
        case .tan: return .tan
        case .asin: return .asin
        case .acos: return .acos
        case .sinh: return .sinh
        case .cosh: return .cosh
        default: return nil
        }
    }

    /// Ops that keep integer dtypes (others give the default floating type for integer inputs).
    var keepsIntegers: Bool {
        switch self {
        case .abs, .neg, .sign, .relu, .round, .floor, .ceil, .trunc, .square: return true
        default: return false
        }
    }

    var nodeName: String {
        switch self {
        case .abs: return "AbsBackward0"
        case .neg: return "NegBackward0"
        case .sign: return "SignBackward0"
        case .relu: return "ReluBackward0"
        case .round: return "RoundBackward0"
        case .floor: return "FloorBackward0"
        case .ceil: return "CeilBackward0"
        case .trunc: return "TruncBackward0"
        case .square: return "PowBackward0"
        case .sqrt: return "SqrtBackward0"
        case .rsqrt: return "RsqrtBackward0"
        case .exp: return "ExpBackward0"
        case .log: return "LogBackward0"
        case .log1p: return "Log1PBackward0"
        case .expm1: return "Expm1Backward0"
        case .log2: return "Log2Backward0"
        case .log10: return "Log10Backward0"
        case .sin: return "SinBackward0"
        case .cos: return "CosBackward0"
        case .tan: return "TanBackward0"
        case .asin: return "AsinBackward0"
        case .acos: return "AcosBackward0"
        case .atan: return "AtanBackward0"
        case .sinh: return "SinhBackward0"
        case .cosh: return "CoshBackward0"
        case .tanh: return "TanhBackward0"
        case .sigmoid: return "SigmoidBackward0"
        case .reciprocal: return "ReciprocalBackward0"
        case .erf: return "ErfBackward0"
        case .frac: return "FracBackward0"
        }
    }
}

/// Runs `op` from `x` into `out` (same shape; both of the compute dtype).
func unaryKernel(_ op: UnaryOp, _ x: Tensor, into out: Tensor) {
    if out.dtype == .bool {
        precondition(op != .neg, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        copyKernel(from: x, into: out)
        return
    }
    checkSameDevice(out, x)
    switch out.device {
    case .cpu: CPUElementwise.unary(op, x, into: out)
    case .cuda: CUDAElementwise.launch(.unary(op, out.dtype), out: out, x)
    }
}

/// `op(x)` with dtype rules, without autograd.
func unaryForward(_ op: UnaryOp, _ x: Tensor) -> Tensor {
    let dt = (op.keepsIntegers && x.dtype.isIntegral) ? x.dtype : x.dtype.floatingResult
    let compute = dt.computeType
    let src = x.to(compute)
    let out = Tensor(uninitializedShape: x.shape, dtype: compute, device: x.device)
    unaryKernel(op, src, into: out)
    return compute == dt ? out : out.to(dt)
}

/// The derivative of `op` given the input `x`, output `y` and incoming gradient `g`.
private func unaryBackward(_ op: UnaryOp, _ g: Tensor, _ x: () -> Tensor, _ y: () -> Tensor) -> Tensor {
    switch op {
    case .abs: return g * x().sign()
    case .neg: return -g
    case .sign, .round, .floor, .ceil, .trunc: return torch.zerosLike(g)
    case .frac: return g
    case .relu: return thresholdBackward(g, y(), threshold: 0)
    case .square: return g * x() * 2
    case .sqrt: return g / (y() * 2)
    case .rsqrt: let o = y(); return g * o * o * o * -0.5
    case .exp: return g * y()
    case .log: return g / x()
    case .log1p: return g / (x() + 1)
    case .expm1: return g * (y() + 1)
    case .log2: return g / (x() * 0.6931471805599453)
    case .log10: return g / (x() * 2.302585092994046)
    case .sin: return g * x().cos()
    case .cos: return -g * x().sin()
    case .tan: let o = y(); return g * (o * o + 1)
    case .asin: let a = x(); return g / (1 - a * a).sqrt()
    case .acos: let a = x(); return -g / (1 - a * a).sqrt()
    case .atan: let a = x(); return g / (a * a + 1)
    case .sinh: return g * x().cosh()
    case .cosh: return g * x().sinh()
    case .tanh:
        let o = y()
        if !GradMode.isEnabled { return fusedFloatBinary(g, o, TanhBackwardFormula.self) }
        return g * (1 - o * o)
    case .sigmoid:
        let o = y()
        if !GradMode.isEnabled { return fusedFloatBinary(g, o, SigmoidBackwardFormula.self) }
        return g * o * (1 - o)
    case .reciprocal: let o = y(); return -g * o * o
    case .erf: let a = x(); return g * (-(a * a)).exp() * 1.1283791670955126
    }
}

/// Which of (input, output) the backward formula of `op` needs.
private func savesInput(_ op: UnaryOp) -> Bool {
    switch op {
    case .neg, .sign, .round, .floor, .ceil, .trunc, .frac, .relu, .sqrt, .rsqrt, .exp, .expm1, .tan, .tanh, .sigmoid, .reciprocal:
        return false
    default: return true
    }
}
private func savesOutput(_ op: UnaryOp) -> Bool {
    switch op {
    case .relu, .sqrt, .rsqrt, .exp, .expm1, .tan, .tanh, .sigmoid, .reciprocal: return true
    default: return false
    }
}

/// `op(x)` with autograd.
func unary(_ op: UnaryOp, _ x: Tensor) -> Tensor {
    if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.unary(op), [x], { unary(op, x) }) { return r }
    if _slowPath(Autocast.isActive), let a = op.autocastOp, let r = Autocast.run(a, [x], { unary(op, $0[0]!) }) { return r }
    let out = unaryForward(op, x)
    if x.needsGrad {
        let sx = savesInput(op) ? SavedTensor(x) : nil
        let so = savesOutput(op) ? SavedTensor(output: out) : nil
        record(op.nodeName, out, inputs: [x], saved: unarySavedAttributes(op, sx, so)) { node, g in
            [unaryBackward(op, g, { sx!.unpack(node) }, { so!.unpack(node) })]
        }
    }
    return out
}

/// PyTorch's `_saved_` attributes for `op`: the input as `self`, the output as `result`
/// (`square` is `PowBackward0` with `exponent` 2).
private func unarySavedAttributes(_ op: UnaryOp, _ sx: SavedTensor?, _ so: SavedTensor?) -> (() -> [SavedAttribute])? {
    if op == .square { return { [.int("exponent", 2), .tensor("self", sx)] } }
    switch (sx, so) {
    case (nil, nil): return nil
    case (let sx?, nil): return { [.tensor("self", sx)] }
    case (nil, let so?): return { [.tensor("result", so)] }
    case (let sx?, let so?): return { [.tensor("result", so), .tensor("self", sx)] }
    }
}

/// `op(x)` written back into x.
func unaryInPlace(_ op: UnaryOp, _ x: Tensor) {
    if _slowPath(ONNXTrace.isOn), ONNXTrace.inPlace(.unary(op), [x], { unaryInPlace(op, x) }) { return }
    x.checkInPlace("\(op)_")
    precondition(op.keepsIntegers || x.dtype.isFloatingPoint,
                 "\(op)_: result type Float can't be cast to the desired output type \(x.dtype.name.capitalized)")
    let needs = x.needsGrad
    let sx: SavedTensor? = needs && savesInput(op) ? SavedTensor(x.contiguousCopy()) : nil
    if x.dtype.computeType == x.dtype {
        unaryKernel(op, x, into: x)
    } else {
        copyKernel(from: unaryForward(op, x), into: x)
    }
    x.storage.bumpVersion()
    if needs {
        // The result is x itself, saved as PyTorch saves it: later in-place changes to x stop its backward
        // with the "modified by an inplace operation" message instead of being copied away.
        let so: SavedTensor? = savesOutput(op) ? SavedTensor(output: x) : nil
        x.rebaseHistory(op.nodeName, inputs: [], saved: unarySavedAttributes(op, sx, so)) { node, g in
            [unaryBackward(op, g, { sx!.unpack(node) }, { so!.unpack(node) })]
        }
    }
}

/// g where y > threshold, else 0 (ReLU's backward), fused when not building a graph.
func thresholdBackward(_ g: Tensor, _ y: Tensor, threshold: Double) -> Tensor {
    if !GradMode.isEnabled && g.dtype == y.dtype && g.dtype.isFloatingPoint {
        return fusedFloatBinary(g, y, with: threshold, ThresholdBackwardFormula.self)
    }
    return g * (y .> threshold).to(g.dtype)
}

/// The element function of a one-pass backward formula (`fusedFloatBinary`): a static generic function rather than a
/// closure, so that the thread pool's out-of-line loop bodies are specialised for it and vectorise. (A closure passed
/// down stayed an indirect call per element in those bodies: ReLU's backward, 3 % of a 2-thread ResNet-18 step, ran
/// one call and one branch per element.)
protocol FusedBinaryFormula {
    static func apply<T: FloatElement>(_ a: T, _ b: T, _ param: T) -> T
    /// The same formula as a CUDA kernel.
    static var cudaOp: TernaryOp { get }
}

/// ReLU's / `threshold`'s backward: g where y > threshold, else 0.
enum ThresholdBackwardFormula: FusedBinaryFormula {
    @inline(__always) static func apply<T: FloatElement>(_ g: T, _ y: T, _ threshold: T) -> T { y > threshold ? g : 0 }
    static var cudaOp: TernaryOp { .thresholdBackward }
}

/// tanh's backward from its output o: g · (1 − o²).
enum TanhBackwardFormula: FusedBinaryFormula {
    @inline(__always) static func apply<T: FloatElement>(_ g: T, _ o: T, _: T) -> T { g * (1 - o * o) }
    static var cudaOp: TernaryOp { .tanhBackward }
}

/// sigmoid's backward from its output o: g · o · (1 − o).
enum SigmoidBackwardFormula: FusedBinaryFormula {
    @inline(__always) static func apply<T: FloatElement>(_ g: T, _ o: T, _: T) -> T { g * o * (1 - o) }
    static var cudaOp: TernaryOp { .sigmoidBackward }
}

/// A one-pass kernel over two floating tensors of the same dtype for a non-differentiable backward formula, computed
/// in the tensors' dtype as PyTorch does (half types in float32); `param` is a run-time constant of the formula.
@inline(__always)
func fusedFloatBinary<Formula: FusedBinaryFormula>(_ a: Tensor, _ b: Tensor, with param: Double = 0, _: Formula.Type) -> Tensor {
    let dt = a.dtype
    guard dt == .float32 || dt == .float64 else {
        return fusedFloatBinary(a.to(.float32), b.to(.float32), with: param, Formula.self).to(dt)
    }
    let shape = broadcastShapes(a.shape, b.shape, op: "fused")
    let out = Tensor(uninitializedShape: shape, dtype: dt, device: commonDevice(a, b))
    let bb = b.to(dt)
    checkSameDevice(out, a)
    switch out.device {
    case .cpu: CPUElementwise.fusedBinary(a, bb, with: param, into: out, Formula.self)
    case .cuda: CUDAElementwise.launch(.ternary(Formula.cudaOp, dt), out: out, a, bb, f2: param)
    }
    return out
}

// MARK: - Public API

extension Tensor {
    public func abs() -> Tensor { unary(.abs, self) }
    public func neg() -> Tensor { unary(.neg, self) }
    public func sign() -> Tensor { unary(.sign, self) }
    public func relu() -> Tensor { unary(.relu, self) }
    public func round() -> Tensor { unary(.round, self) }
    public func floor() -> Tensor { unary(.floor, self) }
    public func ceil() -> Tensor { unary(.ceil, self) }
    public func trunc() -> Tensor { unary(.trunc, self) }
    public func frac() -> Tensor { unary(.frac, self) }
    public func square() -> Tensor { unary(.square, self) }
    public func sqrt() -> Tensor { unary(.sqrt, self) }
    public func rsqrt() -> Tensor { unary(.rsqrt, self) }
    public func exp() -> Tensor { unary(.exp, self) }
    public func log() -> Tensor { unary(.log, self) }
    public func log1p() -> Tensor { unary(.log1p, self) }
    public func expm1() -> Tensor { unary(.expm1, self) }
    public func log2() -> Tensor { unary(.log2, self) }
    public func log10() -> Tensor { unary(.log10, self) }
    public func sin() -> Tensor { unary(.sin, self) }
    public func cos() -> Tensor { unary(.cos, self) }
    public func tan() -> Tensor { unary(.tan, self) }
    public func asin() -> Tensor { unary(.asin, self) }
    public func acos() -> Tensor { unary(.acos, self) }
    public func atan() -> Tensor { unary(.atan, self) }
    public func sinh() -> Tensor { unary(.sinh, self) }
    public func cosh() -> Tensor { unary(.cosh, self) }
    public func tanh() -> Tensor { unary(.tanh, self) }
    public func sigmoid() -> Tensor { unary(.sigmoid, self) }
    public func reciprocal() -> Tensor { unary(.reciprocal, self) }
    public func erf() -> Tensor { unary(.erf, self) }

    @discardableResult public func abs_() -> Tensor { unaryInPlace(.abs, self); return self }
    @discardableResult public func neg_() -> Tensor { unaryInPlace(.neg, self); return self }
    @discardableResult public func relu_() -> Tensor { unaryInPlace(.relu, self); return self }
    @discardableResult public func exp_() -> Tensor { unaryInPlace(.exp, self); return self }
    @discardableResult public func log_() -> Tensor { unaryInPlace(.log, self); return self }
    @discardableResult public func sqrt_() -> Tensor { unaryInPlace(.sqrt, self); return self }
    @discardableResult public func tanh_() -> Tensor { unaryInPlace(.tanh, self); return self }
    @discardableResult public func sigmoid_() -> Tensor { unaryInPlace(.sigmoid, self); return self }
    @discardableResult public func round_() -> Tensor { unaryInPlace(.round, self); return self }
    @discardableResult public func floor_() -> Tensor { unaryInPlace(.floor, self); return self }
    @discardableResult public func ceil_() -> Tensor { unaryInPlace(.ceil, self); return self }

    /// Elementwise power with a number exponent (`x.pow(2)`, `x ** 0.5`).
    public func pow(_ exponent: Double) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.pow, [self], { $0[0]!.pow(exponent) }) { return r }
        if exponent == 2 { return unary(.square, self) }
        let out = binaryForward(.pow, self, Tensor.scalarOperand(exponent))
        if needsGrad {
            let sx = SavedTensor(self)
            record("PowBackward0", out, inputs: [self], saved: { [.scalar("exponent", exponent), .tensor("self", sx)] }) { node, g in
                if exponent == 0 { return [torch.zerosLike(g)] }
                return [g * sx.unpack(node).pow(exponent - 1) * exponent]
            }
        }
        return out
    }

    /// Limits values to [min, max] (either bound optional).
    public func clamp(min lo: Double? = nil, max hi: Double? = nil) -> Tensor {
        precondition(lo != nil || hi != nil, "clamp: At least one of 'min' or 'max' must not be None")
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.clamp(min: lo, max: hi), [self], { clamp(min: lo, max: hi) }) { return r }
        let out = clampForward(lo, hi)
        if needsGrad {
            let sx = SavedTensor(self)
            // PyTorch (2.x): the gradient passes strictly inside the bounds (0 at a bound and for NaN).
            record("ClampBackward1", out, inputs: [self],
                   saved: { [.scalar("max", hi), .scalar("min", lo), .tensor("self", sx)] }) { node, g in
                let x = sx.unpack(node)
                var mask = torch.onesLike(x, dtype: .bool)
                if let lo { mask = mask & (x .> lo) }
                if let hi { mask = mask & (x .< hi) }
                return [g * mask.to(g.dtype)]
            }
        }
        return out
    }

    /// max(self, min) — PyTorch's `clamp_min` (ClampMinBackward0: the gradient passes where x ≥ min).
    public func clampMin(_ lo: Double) -> Tensor { clampOneSided(lo, isMin: true) }

    /// min(self, max) — PyTorch's `clamp_max` (ClampMaxBackward0: the gradient passes where x ≤ max).
    public func clampMax(_ hi: Double) -> Tensor { clampOneSided(hi, isMin: false) }

    private func clampOneSided(_ bound: Double, isMin: Bool) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.clamp(min: isMin ? bound : nil, max: isMin ? nil : bound), [self], { clampOneSided(bound, isMin: isMin) }) { return r }
        let out = isMin ? clampForward(bound, nil) : clampForward(nil, bound)
        if needsGrad {
            let sx = SavedTensor(self)
            record(isMin ? "ClampMinBackward0" : "ClampMaxBackward0", out, inputs: [self],
                   saved: { [.scalar(isMin ? "min" : "max", bound), .tensor("self", sx)] }) { node, g in
                let x = sx.unpack(node)
                return [g * (isMin ? x .>= bound : x .<= bound).to(g.dtype)]
            }
        }
        return out
    }

    /// In-place clamp.
    @discardableResult
    public func clamp_(min lo: Double? = nil, max hi: Double? = nil) -> Tensor {
        precondition(!needsGrad, "clamp_: in-place clamp of a tensor that requires grad is not supported; use clamp")
        copyKernel(from: clampForward(lo, hi), into: self)
        storage.bumpVersion()
        return self
    }

    private func clampForward(_ lo: Double?, _ hi: Double?) -> Tensor {
        var r = self
        if let lo { r = binaryForward(.maximum, r, Tensor.scalarOperand(lo).to(dtype.isFloatingPoint ? dtype : (lo.rounded() == lo ? dtype : torch.defaultDType))) }
        if let hi { r = binaryForward(.minimum, r, Tensor.scalarOperand(hi).to(r.dtype.isFloatingPoint ? r.dtype : (hi.rounded() == hi ? r.dtype : torch.defaultDType))) }
        return r === self ? contiguousCopy() : r
    }

    /// Alias of `clamp`.
    public func clip(min lo: Double? = nil, max hi: Double? = nil) -> Tensor { clamp(min: lo, max: hi) }
}

extension torch {
    public static func abs(_ x: Tensor) -> Tensor { x.abs() }
    public static func neg(_ x: Tensor) -> Tensor { x.neg() }
    public static func sign(_ x: Tensor) -> Tensor { x.sign() }
    public static func relu(_ x: Tensor) -> Tensor { x.relu() }
    public static func round(_ x: Tensor) -> Tensor { x.round() }
    public static func floor(_ x: Tensor) -> Tensor { x.floor() }
    public static func ceil(_ x: Tensor) -> Tensor { x.ceil() }
    public static func trunc(_ x: Tensor) -> Tensor { x.trunc() }
    public static func frac(_ x: Tensor) -> Tensor { x.frac() }
    public static func square(_ x: Tensor) -> Tensor { x.square() }
    public static func sqrt(_ x: Tensor) -> Tensor { x.sqrt() }
    public static func rsqrt(_ x: Tensor) -> Tensor { x.rsqrt() }
    public static func exp(_ x: Tensor) -> Tensor { x.exp() }
    public static func log(_ x: Tensor) -> Tensor { x.log() }
    public static func log1p(_ x: Tensor) -> Tensor { x.log1p() }
    public static func expm1(_ x: Tensor) -> Tensor { x.expm1() }
    public static func log2(_ x: Tensor) -> Tensor { x.log2() }
    public static func log10(_ x: Tensor) -> Tensor { x.log10() }
    public static func sin(_ x: Tensor) -> Tensor { x.sin() }
    public static func cos(_ x: Tensor) -> Tensor { x.cos() }
    public static func tan(_ x: Tensor) -> Tensor { x.tan() }
    public static func asin(_ x: Tensor) -> Tensor { x.asin() }
    public static func acos(_ x: Tensor) -> Tensor { x.acos() }
    public static func atan(_ x: Tensor) -> Tensor { x.atan() }
    public static func sinh(_ x: Tensor) -> Tensor { x.sinh() }
    public static func cosh(_ x: Tensor) -> Tensor { x.cosh() }
    public static func tanh(_ x: Tensor) -> Tensor { x.tanh() }
    public static func sigmoid(_ x: Tensor) -> Tensor { x.sigmoid() }
    public static func reciprocal(_ x: Tensor) -> Tensor { x.reciprocal() }
    public static func erf(_ x: Tensor) -> Tensor { x.erf() }
    public static func clamp(_ x: Tensor, min: Double? = nil, max: Double? = nil) -> Tensor { x.clamp(min: min, max: max) }
}
