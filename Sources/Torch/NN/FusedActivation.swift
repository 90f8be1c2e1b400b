/// The fused pointwise activations with their autograd nodes: one kernel pass forward, one pass
/// backward (g · f'(x)); when the backward itself is recorded (create_graph) the derivative is
/// built from differentiable tensor ops instead. The kernels are `CPUActivation` and
/// `CUDAActivation`, reached through `activationKernel`/`activationBackwardKernel`, the family's one
/// device check and dispatch (docs/architecture.md §7).

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

extension ActivationKind {
    static let sqrt1_2 = 0.70710678118654752440   // 1/√2
    static let invSqrt2Pi = 0.39894228040143267794 // 1/√(2π)
    static let geluBeta = 0.79788456080286535588   // √(2/π)
    static let geluKappa = 0.044715
}

/// Writes `kind(x)` into `out` (same shape, both of dtype float32 or float64; may alias).
func activationKernel(_ kind: ActivationKind, _ x: Tensor, into out: Tensor) {
    checkSameDevice(out, x)
    switch out.device {
    case .cpu: CPUActivation.forward(kind, x, into: out)
    case .cuda: CUDAActivation.forward(kind, x, into: out)
    }
}

/// g · kind'(x) in one pass, as a new tensor shaped like `x` (`g` broadcast to it).
func activationBackwardKernel(_ kind: ActivationKind, _ g: Tensor, _ x: Tensor) -> Tensor {
    checkSameDevice(g, x)
    switch x.device {
    case .cpu: return CPUActivation.backward(kind, g, x)
    case .cuda: return CUDAActivation.backward(kind, g, x)
    }
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
        return (1 + (x * ActivationKind.sqrt1_2).erf()) * 0.5 + x * (x * x * -0.5).exp() * ActivationKind.invSqrt2Pi
    case .geluTanh:
        let x2 = x * x
        let t = ((x + x2 * x * ActivationKind.geluKappa) * ActivationKind.geluBeta).tanh()
        return (1 + t) * 0.5 + x * 0.5 * (1 - t * t) * ((1 + x2 * (3 * ActivationKind.geluKappa)) * ActivationKind.geluBeta)
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
    if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.activation(kind), [x], { activation(kind, x) }) { return r }
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
    if _slowPath(ONNXTrace.isOn), ONNXTrace.inPlace(.activation(kind), [x], { activationInPlace(kind, x) }) { return }
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
