/// Fused pointwise activation kernels with their autograd nodes: one pass forward, one pass
/// backward (g · f'(x)); when the backward itself is recorded (create_graph) the derivative is
/// built from differentiable tensor ops instead.

/// The activations that have a fused kernel.
enum ActivationKind {
    case leakyRelu(slope: Double)
    /// scale · (x > 0 ? x : alpha · (exp(x · inputScale) − 1)); ELU and SELU.
    case elu(alpha: Double, scale: Double, inputScale: Double)
    /// CELU: elu with inputScale 1/alpha (its own node name).
    case celu(alpha: Double)
    case gelu
    case geluTanh
    case silu
    case mish
    case hardtanh(min: Double, max: Double)
    case hardsigmoid
    case hardswish
    case softplus(beta: Double, threshold: Double)

    /// PyTorch's backward node name.
    var nodeName: String {
        switch self {
        case .leakyRelu: return "LeakyReluBackward0"
        case .elu: return "EluBackward0"
        case .celu: return "CeluBackward0"
        case .gelu, .geluTanh: return "GeluBackward0"
        case .silu: return "SiluBackward0"
        case .mish: return "MishBackward0"
        case .hardtanh: return "HardtanhBackward0"
        case .hardsigmoid: return "HardsigmoidBackward0"
        case .hardswish: return "HardswishBackward0"
        case .softplus: return "SoftplusBackward0"
        }
    }

    /// PyTorch's `_saved_` attributes of the node, with the saved input `x` as `self`.
    /// Scalars follow `SavedAttribute.scalar`, except those that are Python floats by default
    /// (ELU's `alpha`, hardtanh's bounds).
    func savedAttributes(_ x: Tensor?) -> [SavedAttribute] {
        let input = SavedAttribute.tensor("self", x)
        switch self {
        case .leakyRelu(let slope): return [.scalar("negative_slope", slope), input]
        case .elu(let alpha, let scale, let inputScale):
            return [.float("alpha", alpha), .scalar("input_scale", inputScale), .scalar("scale", scale), input]
        case .celu(let alpha): return [.float("alpha", alpha), input]
        case .gelu: return [SavedAttribute(name: "approximate", value: .text("none")), input]
        case .geluTanh: return [SavedAttribute(name: "approximate", value: .text("tanh")), input]
        case .hardtanh(0, 6):   // relu6 passes ints; F.hardtanh(x, 0.0, 6.0) would show 0.0 and 6.0 in PyTorch
            return [.scalar("max_val", 6), .scalar("min_val", 0), input]
        case .hardtanh(let lo, let hi): return [.float("max_val", hi), .float("min_val", lo), input]
        case .softplus(let beta, let threshold): return [.scalar("beta", beta), input, .scalar("threshold", threshold)]
        case .silu, .mish, .hardsigmoid, .hardswish: return [input]
        }
    }

    /// PyTorch's op name, for messages.
    var opName: String {
        switch self {
        case .leakyRelu: return "leaky_relu"
        case .elu: return "elu"
        case .celu: return "celu"
        case .gelu, .geluTanh: return "gelu"
        case .silu: return "silu"
        case .mish: return "mish"
        case .hardtanh: return "hardtanh"
        case .hardsigmoid: return "hardsigmoid"
        case .hardswish: return "hardswish"
        case .softplus: return "softplus"
        }
    }
}

private let sqrt1_2 = 0.70710678118654752440   // 1/√2
private let invSqrt2Pi = 0.39894228040143267794 // 1/√(2π)
private let geluBeta = 0.79788456080286535588   // √(2/π)
private let geluKappa = 0.044715

/// Writes `kind(x)` into `out` (same shape, both of dtype float32 or float64; may alias).
func activationKernel(_ kind: ActivationKind, _ x: Tensor, into out: Tensor) {
    if _slowPath(out.isCuda) { return CUDAActivation.forward(kind, x, into: out) }
    if case .celu(let alpha) = kind { return activationKernel(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), x, into: out) }
    let plan = StridedPlan(shape: out.shape, out.strides, x.strides, [Int](repeating: 0, count: x.dim))
    func run<T: FloatElement>(_: T.Type) {
        let o = out.pointer(T.self), a = UnsafePointer(x.pointer(T.self))
        switch kind {
        case .leakyRelu(let s):
            let slope = T(s)
            unaryLoop(plan, o, a, with: slope) { x, slope in x > 0 ? x : x * slope }
        case .celu: preconditionFailure("celu runs as elu")
        case .elu(let alpha, let scale, let inputScale):
            let negcoef = T(alpha * scale), poscoef = T(scale), negiptcoef = T(inputScale)
            unaryLoop(plan, o, a, with: (negcoef, poscoef, negiptcoef)) { x, c in
                x <= 0 ? T.expm1(x * c.2) * c.0 : x * c.1
            }
        case .gelu:
            let c = T(sqrt1_2)
            unaryLoop(plan, o, a, with: c) { x, c in 0.5 * x * (1 + T.erf(x * c)) }
        case .geluTanh:
            let beta = T(geluBeta), kappa = T(geluKappa)
            unaryLoop(plan, o, a, with: (beta, kappa)) { x, c in 0.5 * x * (1 + T.tanh(c.0 * (x + c.1 * x * x * x))) }
        case .silu:
            unaryLoop(plan, o, a) { $0 / (1 + T.exp(-$0)) }
        case .mish:
            unaryLoop(plan, o, a) { $0 * T.tanh(softplusElement($0, 1, 20)) }
        case .hardtanh(let lo, let hi):
            let l = T(lo), h = T(hi)
            // `clampElement`'s two selects; the isNaN test before made ReLU6 18 % of MobileNetV2's eval forward (perf).
            if out.isContiguous && x.isContiguous && UnsafeRawPointer(o) == UnsafeRawPointer(a) {
                clampInPlace(o, out.numel, l, h)
            } else {
                unaryLoop(plan, o, a, with: (l, h)) { x, c in clampElement(x, c.0, c.1) }
            }
        case .hardsigmoid:
            unaryLoop(plan, o, a) { Swift.min(Swift.max($0 + 3, 0), 6) / 6 }
        case .hardswish:
            unaryLoop(plan, o, a) { $0 * Swift.min(Swift.max($0 + 3, 0), 6) / 6 }
        case .softplus(let beta, let threshold):
            let b = T(beta), t = T(threshold)
            unaryLoop(plan, o, a, with: (b, t)) { x, c in softplusElement(x, c.0, c.1) }
        }
    }
    switch out.dtype {
    case .float32: run(Float.self)
    case .float64: run(Double.self)
    default: preconditionFailure("\(kind.opName): expected a floating point tensor (got \(out.dtype))")
    }
}

/// Hardtanh (ReLU6) in place over `n` contiguous elements, vectorised.
///
/// Through `unaryLoop` the in-place call (the ReLU6 after each of MobileNetV2's folded convolutions) ran scalar: the
/// vectoriser guards a loop that writes one pointer and reads another with a run-time overlap check, which an in-place
/// call fails every time (13 % of MobileNetV2's eval forward, one maxss/minss per element). One pointer for both has
/// dependence distance 0 and vectorises with no check. (Done for the clamps only: for ReLU's one-sided select, whose
/// other arm is the loaded value itself, the same loop compiled to a conditional store and a branch per element.)
private func clampInPlace<T: FloatElement>(_ p: UnsafeMutablePointer<T>, _ n: Int, _ lo: T, _ hi: T) {
    parallelFor(n, grain: elementwiseGrain, context: (p, lo, hi)) { c, begin, end in
        let (p, lo, hi) = c
        for i in begin..<end { p[i] = clampElement(p[i], lo, hi) }
    }
}

@inline(__always) private func softplusElement<T: FloatElement>(_ x: T, _ beta: T, _ threshold: T) -> T {
    x * beta > threshold ? x : T.log1p(T.exp(x * beta)) / beta
}

/// g · kind'(x) in one pass (g and x have the same shape and dtype).
func activationBackwardKernel(_ kind: ActivationKind, _ g: Tensor, _ x: Tensor) -> Tensor {
    if _slowPath(x.isCuda) { return CUDAActivation.backward(kind, g, x) }
    if case .celu(let alpha) = kind { return activationBackwardKernel(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), g, x) }
    let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype)
    let gg = g.dtype == x.dtype ? g : g.to(x.dtype)
    let plan = StridedPlan(shape: x.shape, out.strides, gg.broadcastStrides(to: x.shape), x.strides)
    func run<T: FloatElement>(_: T.Type) {
        let o = out.pointer(T.self), gp = UnsafePointer(gg.pointer(T.self)), a = UnsafePointer(x.pointer(T.self))
        switch kind {
        case .leakyRelu(let s):
            let slope = T(s)
            binaryLoop(plan, o, gp, a, with: slope) { g, x, slope in x > 0 ? g : g * slope }
        case .celu: preconditionFailure("celu runs as elu")
        case .elu(let alpha, let scale, let inputScale):
            let negcoef = T(alpha * scale), poscoef = T(scale), negiptcoef = T(inputScale)
            binaryLoop(plan, o, gp, a, with: (negcoef, poscoef, negiptcoef)) { g, x, c in
                x <= 0 ? g * c.2 * c.0 * T.exp(x * c.2) : g * c.1
            }
        case .gelu:
            let c = T(sqrt1_2), k = T(invSqrt2Pi)
            binaryLoop(plan, o, gp, a, with: (c, k)) { g, x, ck in
                let cdf = 0.5 * (1 + T.erf(x * ck.0))
                let pdf = T.exp(-0.5 * x * x) * ck.1
                return g * (cdf + x * pdf)
            }
        case .geluTanh:
            let beta = T(geluBeta), kappa = T(geluKappa)
            binaryLoop(plan, o, gp, a, with: (beta, kappa)) { g, x, c in
                let (beta, kappa) = c
                let x2 = x * x
                let t = T.tanh(beta * (x + kappa * x2 * x))
                let left = 0.5 * x
                let dInner = beta * (1 + 3 * kappa * x2)
                return g * (0.5 * (1 + t) + left * (1 - t * t) * dInner)
            }
        case .silu:
            binaryLoop(plan, o, gp, a) { g, x in
                let s = 1 / (1 + T.exp(-x))
                return g * s * (1 + x * (1 - s))
            }
        case .mish:
            binaryLoop(plan, o, gp, a) { g, x in
                let s = 1 / (1 + T.exp(-x))
                let t = T.tanh(softplusElement(x, 1, 20))
                return g * (t + x * s * (1 - t * t))
            }
        case .hardtanh(let lo, let hi):
            let l = T(lo), h = T(hi)
            binaryLoop(plan, o, gp, a, with: (l, h)) { g, x, c in (x <= c.0 || x >= c.1) ? 0 : g }
        case .hardsigmoid:
            let sixth = T(Float(1) / Float(6))   // PyTorch multiplies by the float constant 1/6
            binaryLoop(plan, o, gp, a, with: sixth) { g, x, sixth in (x > -3 && x < 3) ? g * sixth : 0 }
        case .hardswish:
            binaryLoop(plan, o, gp, a) { g, x in x <= -3 ? 0 : (x < 3 ? g * (x / 3 + 0.5) : g) }
        case .softplus(let beta, let threshold):
            let b = T(beta), th = T(threshold)
            binaryLoop(plan, o, gp, a, with: (b, th)) { g, x, c in
                let z = T.exp(x * c.0)
                return x * c.0 > c.1 ? g : g * z / (z + 1)
            }
        }
    }
    switch x.dtype {
    case .float32: run(Float.self)
    case .float64: run(Double.self)
    default: preconditionFailure("\(kind.opName)_backward: expected a floating point tensor (got \(x.dtype))")
    }
    return out
}

/// kind'(x) from differentiable tensor ops (used when the backward pass is itself recorded).
func activationDerivative(_ kind: ActivationKind, _ x: Tensor) -> Tensor {
    switch kind {
    case .celu(let alpha):
        return activationDerivative(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), x)
    case .leakyRelu(let s):
        return torch.where(x .> 0, torch.onesLike(x), torch.fullLike(x, s))
    case .elu(let alpha, let scale, let inputScale):
        return torch.where(x .<= 0, (x * inputScale).exp() * (inputScale * alpha * scale), torch.fullLike(x, scale))
    case .gelu:
        return (1 + (x * sqrt1_2).erf()) * 0.5 + x * (x * x * -0.5).exp() * invSqrt2Pi
    case .geluTanh:
        let x2 = x * x
        let t = ((x + x2 * x * geluKappa) * geluBeta).tanh()
        return (1 + t) * 0.5 + x * 0.5 * (1 - t * t) * ((1 + x2 * (3 * geluKappa)) * geluBeta)
    case .silu:
        let s = x.sigmoid()
        return s * (1 + x * (1 - s))
    case .mish:
        let t = softplusComposite(x, beta: 1, threshold: 20).tanh()
        return t + x * x.sigmoid() * (1 - t * t)
    case .hardtanh(let lo, let hi):
        return ((x .> lo) & (x .< hi)).to(x.dtype)
    case .hardsigmoid:
        return ((x .> -3) & (x .< 3)).to(x.dtype) * Double(Float(1) / Float(6))
    case .hardswish:
        return torch.where(x .<= -3, torch.zerosLike(x), torch.where(x .< 3, x / 3 + 0.5, torch.onesLike(x)))
    case .softplus(let beta, let threshold):
        return torch.where(x * beta .> threshold, torch.onesLike(x), (x * beta).sigmoid())
    }
}

/// Softplus from tensor ops (differentiable).
private func softplusComposite(_ x: Tensor, beta: Double, threshold: Double) -> Tensor {
    let bx = x * beta
    return torch.where(bx .> threshold, x, bx.exp().log1p() / beta)
}

/// g · kind'(x): fused when the backward is not recorded, composite otherwise. Half types are
/// computed in float32.
func activationBackward(_ kind: ActivationKind, _ g: Tensor, _ x: Tensor) -> Tensor {
    let compute = x.dtype.computeType
    if compute != x.dtype {
        return activationBackward(kind, g.to(compute), x.to(compute)).to(x.dtype)
    }
    if GradMode.isEnabled { return g * activationDerivative(kind, x) }
    return activationBackwardKernel(kind, g, x)
}

/// `kind(x)` with autograd (out of place).
func activation(_ kind: ActivationKind, _ x: Tensor) -> Tensor {
    precondition(x.dtype.isFloatingPoint, "\"\(kind.opName)\" not implemented for '\(x.dtype.name.capitalized)'")
    let compute = x.dtype.computeType
    let src = x.to(compute)
    let out = Tensor(uninitializedShape: x.shape, dtype: compute, device: x.device)
    activationKernel(kind, src, into: out)
    let result = compute == x.dtype ? out : out.to(x.dtype)
    if x.needsGrad {
        let sx = SavedTensor(x)
        record(kind.nodeName, result, inputs: [x], saved: { kind.savedAttributes(sx.tensor) }) { node, g in
            [activationBackward(kind, g, sx.unpack(node))]
        }
    }
    return result
}

/// `kind(x)` written back into x.
func activationInPlace(_ kind: ActivationKind, _ x: Tensor) {
    precondition(x.dtype.isFloatingPoint, "\"\(kind.opName)\" not implemented for '\(x.dtype.name.capitalized)'")
    x.checkInPlace(kind.opName + "_")
    let needs = x.needsGrad
    let saved: SavedTensor? = needs ? SavedTensor(x.contiguousCopy()) : nil
    if x.dtype.computeType == x.dtype {
        activationKernel(kind, x, into: x)
    } else {
        let tmp = x.to(x.dtype.computeType)
        activationKernel(kind, tmp, into: tmp)
        copyKernel(from: tmp, into: x)
    }
    x.storage.bumpVersion()
    if needs {
        x.rebaseHistory(kind.nodeName, inputs: []) { node, g in
            [activationBackward(kind, g, saved!.unpack(node))]
        }
    }
}
