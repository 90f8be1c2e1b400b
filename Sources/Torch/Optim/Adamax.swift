#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// Adamax (Adam with the infinity norm) with PyTorch's update.
    public final class Adamax: Optimizer {
        public init(_ params: [Tensor], lr: Double = 2e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])),
                                          ("eps", .double(eps)), ("weight_decay", .double(weightDecay)), ("foreach", .none),
                                          ("maximize", .bool(maximize)), ("differentiable", .bool(false)), ("capturable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), maximize = group.bool("maximize")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expInf = st.buffer("exp_inf") { torch.zerosLike(p) }
                let clr = lr / (1 - Glibc.pow(beta1, step))
                updates.append(.adamax, tensors: [p, g, expAvg, expInf], flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd),
                               scalars: [1 - beta1, beta2, eps, wd], tensorScalars: [clr])
            }
        }
    }
}
