extension optim {
    /// RMSprop with PyTorch's update (alpha, eps, centered, momentum, weight decay).
    public final class RMSprop: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-2, alpha: Double = 0.99, eps: Double = 1e-8, weightDecay: Double = 0,
                    momentum: Double = 0, centered: Bool = false, maximize: Bool = false) {
            precondition(lr >= 0 && eps >= 0 && alpha >= 0 && momentum >= 0 && weightDecay >= 0, "RMSprop: invalid hyper-parameter (lr=\(lr), alpha=\(alpha), eps=\(eps), momentum=\(momentum), weight_decay=\(weightDecay))")
            super.init(params, defaults: [("lr", .double(lr)), ("momentum", .double(momentum)), ("alpha", .double(alpha)),
                                          ("eps", .double(eps)), ("centered", .bool(centered)), ("weight_decay", .double(weightDecay)),
                                          ("capturable", .bool(false)), ("foreach", .none), ("maximize", .bool(maximize)),
                                          ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, alpha = group.double("alpha"), eps = group.double("eps"), wd = group.double("weight_decay")
                let momentum = group.double("momentum"), centered = group.bool("centered"), maximize = group.bool("maximize")
                _ = st.incrementStep()
                let sq = st.buffer("square_avg") { torch.zerosLike(p) }
                let buf: Tensor? = momentum > 0 ? st.buffer("momentum_buffer") { torch.zerosLike(p) } : nil
                let gavg: Tensor? = centered ? st.buffer("grad_avg") { torch.zerosLike(p) } : nil
                var flags = OptimizerKernelFlags(maximize: maximize, weightDecay: wd)
                if buf != nil { flags.insert(.momentum) }
                if gavg != nil { flags.insert(.centered) }
                updates.append(.rmsprop, tensors: [p, g, sq, buf, gavg], flags: flags,
                               scalars: [alpha, 1 - alpha, eps, wd, momentum, lr])
            }
        }
    }
}
