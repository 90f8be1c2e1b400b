#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// NAdam (Adam with Nesterov momentum) with PyTorch's momentum-decay schedule.
    public final class NAdam: Optimizer {
        public init(_ params: [Tensor], lr: Double = 2e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, momentumDecay: Double = 4e-3, decoupledWeightDecay: Bool = false,
                    maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])),
                                          ("eps", .double(eps)), ("weight_decay", .double(weightDecay)),
                                          ("momentum_decay", .double(momentumDecay)),
                                          ("decoupled_weight_decay", .bool(decoupledWeightDecay)), ("maximize", .bool(maximize)),
                                          ("foreach", .none), ("capturable", .bool(false)), ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), psi = group.double("momentum_decay")
                let decoupled = group.bool("decoupled_weight_decay"), maximize = group.bool("maximize")
                let step = st.incrementStep()
                let muProductT = st.buffer("mu_product") { torch.ones([], dtype: .float32) }
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let bc2 = 1 - Glibc.pow(beta2, step)
                let mu = beta1 * (1 - 0.5 * Glibc.pow(0.96, step * psi))
                let muNext = beta1 * (1 - 0.5 * Glibc.pow(0.96, (step + 1) * psi))
                let muProduct = Double(Float(muProductT.item() * mu))
                fillKernel(muProductT, muProduct)
                let c1 = -lr * (1 - mu) / (1 - muProduct)
                let c2 = -lr * muNext / (1 - muProduct * muNext)
                updates.append(.nadam, tensors: [p, g, expAvg, expAvgSq],
                               flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd, decoupled: decoupled),
                               scalars: [1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr * wd], tensorScalars: [bc2, c1, c2])
            }
        }
    }
}
