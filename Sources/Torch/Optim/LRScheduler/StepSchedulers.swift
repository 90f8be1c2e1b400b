#if canImport(Glibc)
import Glibc
#endif

extension optim.lrScheduler {
    /// Multiplies the learning rate by `gamma` every `stepSize` epochs.
    public final class StepLR: LRScheduler {
        public let stepSize: Int
        public let gamma: Double

        public init(_ optimizer: optim.Optimizer, stepSize: Int, gamma: Double = 0.1, lastEpoch: Int = -1) {
            self.stepSize = stepSize
            self.gamma = gamma
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            let lrs = optimizer.paramGroups.map(\.lr)
            if lastEpoch == 0 || lastEpoch % stepSize != 0 { return lrs }
            return lrs.map { $0 * gamma }
        }

        public override func extraState() -> [(key: String, value: StateValue)] {
            [("step_size", .int(stepSize)), ("gamma", .double(gamma))]
        }
    }

    /// Multiplies the learning rate by `gamma` at each milestone epoch.
    public final class MultiStepLR: LRScheduler {
        public let milestones: [Int]
        public let gamma: Double

        public init(_ optimizer: optim.Optimizer, milestones: [Int], gamma: Double = 0.1, lastEpoch: Int = -1) {
            self.milestones = milestones.sorted()
            self.gamma = gamma
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            let lrs = optimizer.paramGroups.map(\.lr)
            let hits = milestones.filter { $0 == lastEpoch }.count
            if hits == 0 { return lrs }
            return lrs.map { $0 * Glibc.pow(gamma, Double(hits)) }
        }

        public override func extraState() -> [(key: String, value: StateValue)] {
            [("milestones", .dict(Dictionary(grouping: milestones, by: { $0 }).sorted { $0.key < $1.key }
                .map { (.int($0.key), .int($0.value.count)) })), ("gamma", .double(gamma))]
        }
    }

    /// Multiplies the learning rate by `gamma` every epoch.
    public final class ExponentialLR: LRScheduler {
        public let gamma: Double

        public init(_ optimizer: optim.Optimizer, gamma: Double, lastEpoch: Int = -1) {
            self.gamma = gamma
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            let lrs = optimizer.paramGroups.map(\.lr)
            return lastEpoch == 0 ? lrs : lrs.map { $0 * gamma }
        }

        public override func extraState() -> [(key: String, value: StateValue)] { [("gamma", .double(gamma))] }
    }

    /// Scales the learning rate linearly from `startFactor` to `endFactor` over `totalIters` steps.
    public final class LinearLR: LRScheduler {
        public let startFactor: Double, endFactor: Double
        public let totalIters: Int

        public init(_ optimizer: optim.Optimizer, startFactor: Double = 1.0 / 3, endFactor: Double = 1.0,
                    totalIters: Int = 5, lastEpoch: Int = -1) {
            precondition(startFactor > 0 && startFactor <= 1, "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
            precondition(endFactor >= 0 && endFactor <= 1, "Ending multiplicative factor expected to be between 0 and 1.")
            self.startFactor = startFactor
            self.endFactor = endFactor
            self.totalIters = totalIters
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            let lrs = optimizer.paramGroups.map(\.lr)
            if lastEpoch == 0 { return lrs.map { $0 * startFactor } }
            if lastEpoch > totalIters { return lrs }
            let f = 1 + (endFactor - startFactor) / (Double(totalIters) * startFactor + Double(lastEpoch - 1) * (endFactor - startFactor))
            return lrs.map { $0 * f }
        }

        public override func extraState() -> [(key: String, value: StateValue)] {
            [("start_factor", .double(startFactor)), ("end_factor", .double(endFactor)), ("total_iters", .int(totalIters))]
        }
    }

    /// Sets each group's learning rate to `initial_lr * lambda(epoch)`.
    public final class LambdaLR: LRScheduler {
        private let lambdas: [(Int) -> Double]

        public init(_ optimizer: optim.Optimizer, lrLambda: @escaping (Int) -> Double, lastEpoch: Int = -1) {
            lambdas = Array(repeating: lrLambda, count: optimizer.paramGroups.count)
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public init(_ optimizer: optim.Optimizer, lrLambdas: [(Int) -> Double], lastEpoch: Int = -1) {
            precondition(lrLambdas.count == optimizer.paramGroups.count, "Expected \(optimizer.paramGroups.count) lr_lambdas, but got \(lrLambdas.count)")
            lambdas = lrLambdas
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            zip(baseLrs, lambdas).map { $0 * $1(lastEpoch) }
        }
    }
}
