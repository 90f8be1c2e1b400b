extension optim {
    /// Adadelta with PyTorch's update.
    public final class Adadelta: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1.0, rho: Double = 0.9, eps: Double = 1e-6, weightDecay: Double = 0,
                    maximize: Bool = false) {
            precondition(lr >= 0 && rho >= 0 && rho <= 1 && eps >= 0 && weightDecay >= 0, "Adadelta: invalid hyper-parameter")
            super.init(params, defaults: [("lr", .double(lr)), ("rho", .double(rho)), ("eps", .double(eps)),
                                          ("weight_decay", .double(weightDecay)), ("maximize", .bool(maximize)),
                                          ("capturable", .bool(false)), ("foreach", .none), ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, rho = group.double("rho"), eps = group.double("eps")
                let wd = group.double("weight_decay"), maximize = group.bool("maximize")
                _ = st.incrementStep()
                let sq = st.buffer("square_avg") { torch.zerosLike(p) }
                let acc = st.buffer("acc_delta") { torch.zerosLike(p) }
                updates.append(.adadelta, tensors: [p, g, sq, acc], flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd),
                               scalars: [rho, 1 - rho, eps, wd, lr])
            }
        }
    }
}
