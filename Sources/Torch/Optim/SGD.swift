extension optim {
    /// Stochastic gradient descent with optional momentum, dampening, Nesterov momentum, weight decay
    /// and maximisation — PyTorch's update (`OptimizerKernelOp.sgd`), one fused pass per parameter on the CPU
    /// and multi-tensor launches (up to `CUDAOptimizer.tensorsPerLaunch` parameters each) on CUDA.
    ///
    /// ```swift
    /// let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)
    /// opt.zeroGrad(); loss.backward(); opt.step()
    /// ```
    public final class SGD: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-3, momentum: Double = 0, dampening: Double = 0,
                    weightDecay: Double = 0, nesterov: Bool = false, maximize: Bool = false) {
            precondition(lr >= 0, "Invalid learning rate: \(lr)")
            precondition(momentum >= 0, "Invalid momentum value: \(momentum)")
            precondition(weightDecay >= 0, "Invalid weight_decay value: \(weightDecay)")
            precondition(!nesterov || (momentum > 0 && dampening == 0), "Nesterov momentum requires a momentum and zero dampening")
            super.init(params, defaults: SGD.defaults(lr, momentum, dampening, weightDecay, nesterov, maximize))
        }

        public init(groups: [ParamGroup], lr: Double = 1e-3, momentum: Double = 0, dampening: Double = 0,
                    weightDecay: Double = 0, nesterov: Bool = false, maximize: Bool = false) {
            super.init(groups: groups, defaults: SGD.defaults(lr, momentum, dampening, weightDecay, nesterov, maximize))
        }

        private static func defaults(_ lr: Double, _ momentum: Double, _ dampening: Double, _ wd: Double,
                                     _ nesterov: Bool, _ maximize: Bool) -> [(key: String, value: StateValue)] {
            [("lr", .double(lr)), ("momentum", .double(momentum)), ("dampening", .double(dampening)),
             ("weight_decay", .double(wd)), ("nesterov", .bool(nesterov)), ("maximize", .bool(maximize)),
             ("foreach", .none), ("differentiable", .bool(false)), ("fused", .none)]
        }

        /// SGD's kernels take only hyper-parameters by value; a capture must not make momentum buffers (see
        /// `step()`).
        override var isGraphCapturable: Bool { true }

        public override func step() {
            forEachParameter { group, p, g, st, updates in
                let lr = group.lr, momentum = group.double("momentum"), dampening = group.double("dampening")
                let wd = group.double("weight_decay"), nesterov = group.bool("nesterov"), maximize = group.bool("maximize")
                var buf: Tensor? = nil
                var firstStep = false
                if momentum != 0 {
                    if let b = st["momentum_buffer"]?.tensorValue { buf = b } else {
                        buf = Tensor(uninitializedShape: p.shape, dtype: p.dtype, device: p.device)
                        st["momentum_buffer"] = .tensor(buf!)
                        firstStep = true
                        if CUDAGraphCapture.isUnderway && p.device != .cpu {
                            // A graph would replay the first step's "buffer = gradient" every time.
                            CUDAGraphCapture.refuse("SGD.step: the momentum buffers are made at the first step; run "
                                + "step() once before capturing it in a CUDA graph")
                        }
                    }
                }
                updates.sgd(p: p, grad: g, buffer: buf, lr: lr, momentum: momentum, dampening: dampening, weightDecay: wd,
                            nesterov: nesterov, maximize: maximize, firstStep: firstStep)
            }
        }
    }
}
