#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// RAdam (rectified Adam) with PyTorch's update.
    public final class RAdam: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, decoupledWeightDecay: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])),
                                          ("eps", .double(eps)), ("weight_decay", .double(weightDecay)), ("maximize", .bool(maximize)),
                                          ("foreach", .none), ("capturable", .bool(false)),
                                          ("decoupled_weight_decay", .bool(decoupledWeightDecay)), ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), decoupled = group.bool("decoupled_weight_decay")
                let maximize = group.bool("maximize")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let bc1 = 1 - Glibc.pow(beta1, step), bc2 = 1 - Glibc.pow(beta2, step)
                let rhoInf = 2 / (1 - beta2) - 1
                let rhoT = rhoInf - 2 * step * Glibc.pow(beta2, step) / bc2
                let rect = rhoT > 5 ? ((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT)).squareRoot() : 0
                updates.append(.radam, tensors: [p, g, expAvg, expAvgSq],
                               flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd, decoupled: decoupled),
                               scalars: [1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr * wd, lr],
                               tensorFlags: rhoT > 5 ? .rectified : [], tensorScalars: [bc1, bc2.squareRoot(), rect])
            }
        }
    }
}
