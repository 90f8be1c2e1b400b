extension optim {
    /// PyTorch's `torch.optim.lr_scheduler`.
    public enum lrScheduler {}
}

extension optim.lrScheduler {
    /// Base class of epoch/step-based schedulers: at construction it records each group's
    /// `initial_lr` and performs the initial step (epoch 0), exactly like PyTorch.
    ///
    /// ```swift
    /// let sched = optim.lrScheduler.StepLR(opt, stepSize: 5, gamma: 0.1)
    /// for epoch in 0..<20 { train(); sched.step() }
    /// ```
    open class LRScheduler {
        public let optimizer: optim.Optimizer
        /// Each group's learning rate at construction.
        public private(set) var baseLrs: [Double]
        /// Number of `step()` calls so far (0 after construction).
        public internal(set) var lastEpoch: Int
        var stepCount = 0
        private var lastLr: [Double] = []

        public init(_ optimizer: optim.Optimizer, lastEpoch: Int = -1) {
            self.optimizer = optimizer
            for g in optimizer.paramGroups {
                if lastEpoch == -1 && g["initial_lr"] == nil { g["initial_lr"] = .double(g.lr) }
                precondition(g["initial_lr"] != nil, "param 'initial_lr' is not specified in param_groups when resuming an optimizer")
            }
            baseLrs = optimizer.paramGroups.map { $0.double("initial_lr") }
            self.lastEpoch = lastEpoch
        }

        /// Call at the end of subclass initialisers: PyTorch's `_initial_step`.
        public func initialStep() { step() }

        /// The learning rates for `lastEpoch`, from the current ones (PyTorch's chainable `get_lr`).
        open func getLr() -> [Double] { optimizer.paramGroups.map(\.lr) }

        /// Advances one epoch (or step) and updates every group's learning rate.
        open func step() {
            stepCount += 1
            lastEpoch += 1
            let lrs = getLr()
            for (g, lr) in zip(optimizer.paramGroups, lrs) { g.lr = lr }
            lastLr = optimizer.paramGroups.map(\.lr)
        }

        /// The learning rates set by the last `step()`.
        public func getLastLr() -> [Double] { lastLr }

        /// Scheduler-specific fields to save (subclasses add theirs).
        open func extraState() -> [(key: String, value: StateValue)] { [] }
        /// Restores subclass fields.
        open func loadExtraState(_ sd: StateValue) {}

        /// The scheduler's state (PyTorch's `state_dict()`: its fields except the optimizer).
        public func stateDict() -> StateValue {
            var d: [(key: StateValue, value: StateValue)] = extraState().map { (.string($0.key), $0.value) }
            d.append((.string("base_lrs"), .list(baseLrs.map { .double($0) })))
            d.append((.string("last_epoch"), .int(lastEpoch)))
            d.append((.string("_step_count"), .int(stepCount)))
            d.append((.string("_get_lr_called_within_step"), .bool(false)))
            d.append((.string("_last_lr"), .list(lastLr.map { .double($0) })))
            return .dict(d)
        }

        /// Restores a state saved by `stateDict()`.
        public func loadStateDict(_ sd: StateValue) throws {
            guard let epoch = sd["last_epoch"]?.intValue, let bases = sd["base_lrs"]?.arrayValue else {
                throw optim.OptimizerError.invalidStateDict("scheduler state needs 'last_epoch' and 'base_lrs'")
            }
            lastEpoch = epoch
            baseLrs = bases.compactMap(\.doubleValue)
            stepCount = sd["_step_count"]?.intValue ?? stepCount
            lastLr = sd["_last_lr"]?.arrayValue?.compactMap(\.doubleValue) ?? lastLr
            loadExtraState(sd)
        }
    }
}
