#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// Adam (and, with decoupled weight decay, AdamW) with PyTorch's exact update and `amsgrad`
    /// (`OptimizerKernelOp.adam`).
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
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), amsgrad = group.bool("amsgrad"), maximize = group.bool("maximize")
                let decoupled = group.bool("decoupled_weight_decay")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let maxSq: Tensor? = amsgrad ? st.buffer("max_exp_avg_sq") { torch.zerosLike(p) } : nil
                let bc1 = 1 - Glibc.pow(beta1, step), bc2 = 1 - Glibc.pow(beta2, step)
                let stepSize = lr / bc1, bc2Sqrt = bc2.squareRoot()
                updates.adam(p: p, grad: g, expAvg: expAvg, expAvgSq: expAvgSq, maxExpAvgSq: maxSq, stepSize: stepSize,
                             beta1: beta1, beta2: beta2, eps: eps, weightDecay: wd, bc2Sqrt: bc2Sqrt, lr: lr,
                             maximize: maximize, decoupled: decoupled)
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
