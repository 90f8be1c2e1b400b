extension optim {
    /// Adagrad with PyTorch's update (lr decay, weight decay, initial accumulator value).
    public final class Adagrad: Optimizer {
        private let initialAccumulator: Double

        public init(_ params: [Tensor], lr: Double = 1e-2, lrDecay: Double = 0, weightDecay: Double = 0,
                    initialAccumulatorValue: Double = 0, eps: Double = 1e-10, maximize: Bool = false) {
            precondition(lr >= 0 && lrDecay >= 0 && weightDecay >= 0 && initialAccumulatorValue >= 0 && eps >= 0,
                         "Adagrad: invalid hyper-parameter")
            initialAccumulator = initialAccumulatorValue
            super.init(params, defaults: [("lr", .double(lr)), ("lr_decay", .double(lrDecay)), ("eps", .double(eps)),
                                          ("weight_decay", .double(weightDecay)),
                                          ("initial_accumulator_value", .double(initialAccumulatorValue)),
                                          ("foreach", .none), ("maximize", .bool(maximize)), ("differentiable", .bool(false)),
                                          ("fused", .none)])
            // PyTorch creates the state eagerly.
            for group in paramGroups {
                for p in group.params {
                    let s = state(for: p)
                    s["step"] = .tensor(torch.zeros([], dtype: .float32))
                    s["sum"] = .tensor(torch.fullLike(p, initialAccumulatorValue))
                }
            }
        }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, lrDecay = group.double("lr_decay"), eps = group.double("eps")
                let wd = group.double("weight_decay"), maximize = group.bool("maximize")
                let step = st.incrementStep()
                let sum = st.buffer("sum") { torch.fullLike(p, initialAccumulator) }
                let clr = lr / (1 + (step - 1) * lrDecay)
                updates.append(.adagrad, tensors: [p, g, sum], flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd),
                               scalars: [eps, wd], tensorScalars: [clr])
            }
        }
    }
}
