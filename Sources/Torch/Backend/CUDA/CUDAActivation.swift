/// The `nn` activations on CUDA (`ActivationKernelOp`): one launch forward, one backward, for float32/float64
/// tensors (the callers widen half types, as on the CPU). CELU arrives as ELU with its input scale.
enum CUDAActivation {
    /// The kernel and its parameters (`P2`, `F0`, `F1`) for `kind`.
    private static func plan(_ kind: ActivationKind, backward: Bool) -> (ActivationKernelOp, p2: Double, f0: Double, f1: Double) {
        func op(_ forward: ActivationKernelOp, _ back: ActivationKernelOp) -> ActivationKernelOp { backward ? back : forward }
        switch kind {
        case .leakyRelu(let slope): return (op(.leakyRelu, .leakyReluBackward), 0, slope, 0)
        case .elu(let alpha, let scale, let inputScale): return (op(.elu, .eluBackward), inputScale, alpha * scale, scale)
        case .celu(let alpha): return plan(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), backward: backward)
        case .gelu: return (op(.gelu, .geluBackward), 0, 0, 0)
        case .geluTanh: return (op(.geluTanh, .geluTanhBackward), 0, 0, 0)
        case .silu: return (op(.silu, .siluBackward), 0, 0, 0)
        case .mish: return (op(.mish, .mishBackward), 0, 0, 0)
        case .hardtanh(let lo, let hi): return (op(.hardtanh, .hardtanhBackward), 0, lo, hi)
        case .hardsigmoid: return (op(.hardsigmoid, .hardsigmoidBackward), 0, 0, 0)
        case .hardswish: return (op(.hardswish, .hardswishBackward), 0, 0, 0)
        case .softplus(let beta, let threshold): return (op(.softplus, .softplusBackward), 0, beta, threshold)
        }
    }

    private static func checkType(_ dtype: DType, _ kind: ActivationKind) {
        precondition(dtype == .float32 || dtype == .float64,
                     "\"\(kind.opName)_cuda\" not implemented for '\(dtype.name.capitalized)' (the CUDA activations take float32 and float64)")
    }

    /// `out = kind(x)` (`out` may be `x`).
    static func forward(_ kind: ActivationKind, _ x: Tensor, into out: Tensor) {
        checkType(out.dtype, kind)
        let p = plan(kind, backward: false)
        CUDAElementwise.launch(.activation(p.0, out.dtype), out: out, x, f1: p.p2, f2: p.f0, f3: p.f1)
    }

    /// `g · kind'(x)` as a new tensor shaped like `x` (`g` broadcast to it).
    static func backward(_ kind: ActivationKind, _ g: Tensor, _ x: Tensor) -> Tensor {
        checkType(x.dtype, kind)
        let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        let p = plan(kind, backward: true)
        CUDAElementwise.launch(.activation(p.0, x.dtype), out: out, g.dtype == x.dtype ? g : g.to(x.dtype), x,
                               f1: p.p2, f2: p.f0, f3: p.f1)
        return out
    }
}
