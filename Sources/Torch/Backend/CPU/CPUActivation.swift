/// The `nn` activations on the CPU (twin of `CUDAActivation`): one strided pass forward, one backward
/// (g · f'(x)), for float32/float64 tensors (the callers widen half types). `activationKernel` and
/// `activationBackwardKernel` (NN/FusedActivation.swift) check devices and dispatch here or to CUDA.
enum CPUActivation {
    /// Writes `kind(x)` into `out` (same shape, both of dtype float32 or float64; may alias).
    static func forward(_ kind: ActivationKind, _ x: Tensor, into out: Tensor) {
        if case .celu(let alpha) = kind { return forward(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), x, into: out) }
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
                let c = T(ActivationKind.sqrt1_2)
                unaryLoop(plan, o, a, with: c) { x, c in 0.5 * x * (1 + T.erf(x * c)) }
            case .geluTanh:
                let beta = T(ActivationKind.geluBeta), kappa = T(ActivationKind.geluKappa)
                unaryLoop(plan, o, a, with: (beta, kappa)) { x, c in 0.5 * x * (1 + T.tanh(c.0 * (x + c.1 * x * x * x))) }
            case .silu:
                unaryLoop(plan, o, a) { $0 / (1 + T.exp(-$0)) }
            case .mish:
                unaryLoop(plan, o, a) { $0 * T.tanh(softplusElement($0, 1, 20)) }
            case .hardtanh(let lo, let hi):
                let l = T(lo), h = T(hi)
                // `clampElement`'s two selects, no isNaN test; in place through one pointer (see `clampInPlace`).
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

    /// g · kind'(x) in one pass (g and x have the same shape and dtype).
    static func backward(_ kind: ActivationKind, _ g: Tensor, _ x: Tensor) -> Tensor {
        if case .celu(let alpha) = kind { return backward(.elu(alpha: alpha, scale: 1, inputScale: 1 / alpha), g, x) }
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
                let c = T(ActivationKind.sqrt1_2), k = T(ActivationKind.invSqrt2Pi)
                binaryLoop(plan, o, gp, a, with: (c, k)) { g, x, ck in
                    let cdf = 0.5 * (1 + T.erf(x * ck.0))
                    let pdf = T.exp(-0.5 * x * x) * ck.1
                    return g * (cdf + x * pdf)
                }
            case .geluTanh:
                let beta = T(ActivationKind.geluBeta), kappa = T(ActivationKind.geluKappa)
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
}

/// Hardtanh (ReLU6) in place over `n` contiguous elements, vectorised.
///
/// The vectoriser guards a loop that writes one pointer and reads another with a run-time overlap check, which an
/// in-place call always fails, so through `unaryLoop` it would run scalar. One pointer for both has dependence
/// distance 0 and vectorises with no check. (Clamps only: ReLU's one-sided select compiles to a conditional store.)
private func clampInPlace<T: FloatElement>(_ p: UnsafeMutablePointer<T>, _ n: Int, _ lo: T, _ hi: T) {
    parallelFor(n, grain: elementwiseGrain, context: (p, lo, hi)) { c, begin, end in
        let (p, lo, hi) = c
        for i in begin..<end { p[i] = clampElement(p[i], lo, hi) }
    }
}

@inline(__always) private func softplusElement<T: FloatElement>(_ x: T, _ beta: T, _ threshold: T) -> T {
    x * beta > threshold ? x : T.log1p(T.exp(x * beta)) / beta
}
