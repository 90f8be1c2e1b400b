extension optim.lrScheduler {
    /// Reduces the learning rate by `factor` when a metric has stopped improving for `patience` epochs.
    ///
    /// ```swift
    /// let sched = optim.lrScheduler.ReduceLROnPlateau(opt, mode: .min, patience: 2)
    /// sched.step(validationLoss)
    /// ```
    public final class ReduceLROnPlateau {
        public enum Mode: String { case min, max }
        public enum ThresholdMode: String { case rel, abs }
        public let optimizer: optim.Optimizer
        public let mode: Mode, thresholdMode: ThresholdMode
        public let factor: Double, threshold: Double, eps: Double
        public let patience: Int, cooldown: Int
        public let minLrs: [Double]
        public private(set) var best: Double
        public private(set) var numBadEpochs = 0
        public private(set) var cooldownCounter = 0
        public private(set) var lastEpoch = 0
        private var lastLr: [Double]

        public init(_ optimizer: optim.Optimizer, mode: Mode = .min, factor: Double = 0.1, patience: Int = 10,
                    threshold: Double = 1e-4, thresholdMode: ThresholdMode = .rel, cooldown: Int = 0,
                    minLr: Double = 0, eps: Double = 1e-8) {
            precondition(factor < 1, "Factor should be < 1.0.")
            self.optimizer = optimizer
            self.mode = mode
            self.factor = factor
            self.patience = patience
            self.threshold = threshold
            self.thresholdMode = thresholdMode
            self.cooldown = cooldown
            self.eps = eps
            minLrs = Array(repeating: minLr, count: optimizer.paramGroups.count)
            best = mode == .min ? .infinity : -.infinity
            lastLr = optimizer.paramGroups.map(\.lr)
        }

        private func isBetter(_ a: Double, _ best: Double) -> Bool {
            switch (mode, thresholdMode) {
            case (.min, .rel): return a < best * (1 - threshold)
            case (.min, .abs): return a < best - threshold
            case (.max, .rel): return a > best * (threshold + 1)
            case (.max, .abs): return a > best + threshold
            }
        }

        /// Records this epoch's metric and lowers the learning rate when it plateaus.
        public func step(_ metric: Double) {
            lastEpoch += 1
            if isBetter(metric, best) {
                best = metric
                numBadEpochs = 0
            } else {
                numBadEpochs += 1
            }
            if cooldownCounter > 0 {
                cooldownCounter -= 1
                numBadEpochs = 0
            }
            if numBadEpochs > patience {
                for (i, g) in optimizer.paramGroups.enumerated() {
                    let old = g.lr
                    let new = Swift.max(old * factor, minLrs[i])
                    if old - new > eps { g.lr = new }
                }
                cooldownCounter = cooldown
                numBadEpochs = 0
            }
            lastLr = optimizer.paramGroups.map(\.lr)
        }

        public func getLastLr() -> [Double] { lastLr }

        public func stateDict() -> StateValue {
            ["factor": .double(factor), "min_lrs": .list(minLrs.map { .double($0) }), "patience": .int(patience),
             "cooldown": .int(cooldown), "cooldown_counter": .int(cooldownCounter), "mode": .string(mode.rawValue),
             "threshold": .double(threshold), "threshold_mode": .string(thresholdMode.rawValue), "best": .double(best),
             "num_bad_epochs": .int(numBadEpochs), "mode_worse": .double(mode == .min ? .infinity : -.infinity),
             "eps": .double(eps), "last_epoch": .int(lastEpoch), "_last_lr": .list(lastLr.map { .double($0) })]
        }

        public func loadStateDict(_ sd: StateValue) throws {
            guard let b = sd["best"]?.doubleValue else { throw optim.OptimizerError.invalidStateDict("missing 'best'") }
            best = b
            numBadEpochs = sd["num_bad_epochs"]?.intValue ?? 0
            cooldownCounter = sd["cooldown_counter"]?.intValue ?? 0
            lastEpoch = sd["last_epoch"]?.intValue ?? 0
            lastLr = sd["_last_lr"]?.arrayValue?.compactMap(\.doubleValue) ?? lastLr
        }
    }
}
