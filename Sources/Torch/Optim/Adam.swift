#if canImport(Glibc)
import Glibc
#endif

/// PyTorch's `lerp` for a scalar weight: `a + w * (b - a)` for w < 0.5, else `b - (b - a) * (1 - w)`.
@inline(__always) func lerp<T: FloatElement>(_ a: T, _ b: T, _ w: T) -> T {
    w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)
}

extension optim {
    /// Adam (and, with decoupled weight decay, AdamW) with PyTorch's exact update and `amsgrad`.
    ///
    /// ```swift
    /// let opt = optim.Adam(model.parameters(), lr: 1e-3)
    /// ```
    public class Adam: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, amsgrad: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: false))
        }

        public init(groups: [ParamGroup], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, amsgrad: Bool = false, maximize: Bool = false) {
            super.init(groups: groups, defaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: false))
        }

        init(params: [Tensor], adamDefaults: [(key: String, value: StateValue)]) { super.init(params, defaults: adamDefaults) }
        init(groups: [ParamGroup], adamDefaults: [(key: String, value: StateValue)]) { super.init(groups: groups, defaults: adamDefaults) }

        static func check(_ lr: Double, _ betas: (Double, Double), _ eps: Double, _ wd: Double) {
            precondition(lr >= 0, "Invalid learning rate: \(lr)")
            precondition(eps >= 0, "Invalid epsilon value: \(eps)")
            precondition(betas.0 >= 0 && betas.0 < 1, "Invalid beta parameter at index 0: \(betas.0)")
            precondition(betas.1 >= 0 && betas.1 < 1, "Invalid beta parameter at index 1: \(betas.1)")
            precondition(wd >= 0, "Invalid weight_decay value: \(wd)")
        }

        static func defaults(_ lr: Double, _ betas: (Double, Double), _ eps: Double, _ wd: Double, _ amsgrad: Bool,
                             _ maximize: Bool, decoupled: Bool) -> [(key: String, value: StateValue)] {
            [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])), ("eps", .double(eps)),
             ("weight_decay", .double(wd)), ("amsgrad", .bool(amsgrad)), ("maximize", .bool(maximize)),
             ("foreach", .none), ("capturable", .bool(false)), ("differentiable", .bool(false)), ("fused", .none),
             ("decoupled_weight_decay", .bool(decoupled))]
        }

        public override func step() {
            forEachParameter { group, p, g, st in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), amsgrad = group.bool("amsgrad"), maximize = group.bool("maximize")
                let decoupled = group.bool("decoupled_weight_decay")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let maxSq: Tensor? = amsgrad ? st.buffer("max_exp_avg_sq") { torch.zerosLike(p) } : nil
                let bc1 = 1 - Glibc.pow(beta1, step), bc2 = 1 - Glibc.pow(beta2, step)
                let stepSize = lr / bc1, bc2Sqrt = bc2.squareRoot()
                let n = p.numel
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self)
                    let m = expAvg.pointer(T.self), v = expAvgSq.pointer(T.self), vmax = maxSq?.pointer(T.self)
                    let w1 = T(1 - beta1), tb2 = T(beta2), w2 = T(1 - beta2), teps = T(eps)
                    let twd = T(wd), decay = T(1 - lr * wd), tStep = T(stepSize), tbc2 = T(bc2Sqrt)
                    if !maximize && wd == 0 && vmax == nil {
                        // The common case as a branch-free loop the compiler vectorises (same arithmetic as below).
                        fusedUpdate(n) { r in
                            for i in r {
                                let grad = gp[i]
                                let mi = lerp(m[i], grad, w1)
                                m[i] = mi
                                let vi = v[i] * tb2 + grad * grad * w2
                                v[i] = vi
                                let denom = vi.squareRoot() / tbc2 + teps
                                pp[i] = pp[i] + (mi / denom) * -tStep
                            }
                        }
                        return
                    }
                    fusedUpdate(n) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 {
                                if decoupled { pp[i] = pp[i] * decay } else { grad = grad + pp[i] * twd }
                            }
                            m[i] = lerp(m[i], grad, w1)
                            v[i] = v[i] * tb2 + grad * grad * w2
                            var second = v[i]
                            if let vmax { vmax[i] = Swift.max(vmax[i], v[i]); second = vmax[i] }
                            let denom = second.squareRoot() / tbc2 + teps
                            pp[i] = pp[i] + (m[i] / denom) * -tStep
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }

    /// AdamW: Adam with decoupled weight decay (default 0.01).
    public final class AdamW: Adam {
        public override init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 1e-2, amsgrad: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params: params, adamDefaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: true))
        }

        public override init(groups: [ParamGroup], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 1e-2, amsgrad: Bool = false, maximize: Bool = false) {
            super.init(groups: groups, adamDefaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: true))
        }
    }
}
