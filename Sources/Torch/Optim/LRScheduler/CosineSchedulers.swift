#if canImport(Glibc)
import Glibc
#endif

extension optim.lrScheduler {
    /// Cosine annealing from the initial learning rate to `etaMin` over `tMax` epochs (PyTorch's
    /// recursive form, which keeps following the cosine after `tMax`).
    public final class CosineAnnealingLR: LRScheduler {
        public let tMax: Int
        public let etaMin: Double

        public init(_ optimizer: optim.Optimizer, tMax: Int, etaMin: Double = 0, lastEpoch: Int = -1) {
            self.tMax = tMax
            self.etaMin = etaMin
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            let groups = optimizer.paramGroups
            if lastEpoch == 0 { return groups.map(\.lr) }
            let T = Double(tMax), e = Double(lastEpoch)
            if stepCount == 1 && lastEpoch > 0 {
                return baseLrs.map { etaMin + ($0 - etaMin) * (1 + Glibc.cos(e * .pi / T)) / 2 }
            }
            if (lastEpoch - 1 - tMax) % (2 * tMax) == 0 {
                return zip(groups, baseLrs).map { g, base in g.lr + (base - etaMin) * (1 - Glibc.cos(.pi / T)) / 2 }
            }
            return groups.map { g in
                (1 + Glibc.cos(.pi * e / T)) / (1 + Glibc.cos(.pi * (e - 1) / T)) * (g.lr - etaMin) + etaMin
            }
        }

        public override func extraState() -> [(key: String, value: StateValue)] {
            [("T_max", .int(tMax)), ("eta_min", .double(etaMin))]
        }
    }

    /// Cosine annealing with warm restarts every `t0 · tMult^k` epochs (SGDR).
    public final class CosineAnnealingWarmRestarts: LRScheduler {
        public let t0: Int, tMult: Int
        public let etaMin: Double
        private var tI: Int
        private var tCur: Double

        public init(_ optimizer: optim.Optimizer, t0: Int, tMult: Int = 1, etaMin: Double = 0, lastEpoch: Int = -1) {
            precondition(t0 > 0, "Expected positive integer T_0, but got \(t0)")
            precondition(tMult >= 1, "Expected integer T_mult >= 1, but got \(tMult)")
            self.t0 = t0
            self.tMult = tMult
            self.etaMin = etaMin
            tI = t0
            tCur = Double(max(lastEpoch, 0))
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        public override func getLr() -> [Double] {
            baseLrs.map { etaMin + ($0 - etaMin) * (1 + Glibc.cos(.pi * tCur / Double(tI))) / 2 }
        }

        public override func step() {
            if lastEpoch < 0 {
                tCur = 0
            } else {
                tCur += 1
                if tCur >= Double(tI) {
                    tCur -= Double(tI)
                    tI *= tMult
                }
            }
            super.step()
        }

        public override func extraState() -> [(key: String, value: StateValue)] {
            [("T_0", .int(t0)), ("T_i", .int(tI)), ("T_mult", .int(tMult)), ("eta_min", .double(etaMin)), ("T_cur", .double(tCur))]
        }

        public override func loadExtraState(_ sd: StateValue) {
            tI = sd["T_i"]?.intValue ?? tI
            tCur = sd["T_cur"]?.doubleValue ?? tCur
        }
    }

    /// The 1cycle policy: warm up to `maxLr`, then anneal far below the initial rate, cycling momentum
    /// (or Adam's beta1) inversely.
    public final class OneCycleLR: LRScheduler {
        public enum AnnealStrategy { case cos, linear }
        private struct Phase { let endStep: Double; let startLr: String; let endLr: String; let startM: String; let endM: String }
        public let totalSteps: Int
        private let phases: [Phase]
        private let anneal: AnnealStrategy
        private let cycleMomentum: Bool
        private let useBeta1: Bool

        public init(_ optimizer: optim.Optimizer, maxLr: Double, totalSteps: Int? = nil, epochs: Int? = nil,
                    stepsPerEpoch: Int? = nil, pctStart: Double = 0.3, annealStrategy: AnnealStrategy = .cos,
                    cycleMomentum: Bool = true, baseMomentum: Double = 0.85, maxMomentum: Double = 0.95,
                    divFactor: Double = 25, finalDivFactor: Double = 1e4, threePhase: Bool = false, lastEpoch: Int = -1) {
            if let totalSteps {
                precondition(totalSteps > 0, "Expected positive integer total_steps, but got \(totalSteps)")
                self.totalSteps = totalSteps
            } else {
                guard let epochs, let stepsPerEpoch else { preconditionFailure("You must define either total_steps OR (epochs AND steps_per_epoch)") }
                self.totalSteps = epochs * stepsPerEpoch
            }
            precondition(pctStart >= 0 && pctStart <= 1, "Expected float between 0 and 1 pct_start, but got \(pctStart)")
            let T = Double(self.totalSteps)
            if threePhase {
                phases = [Phase(endStep: pctStart * T - 1, startLr: "initial_lr", endLr: "max_lr", startM: "max_momentum", endM: "base_momentum"),
                          Phase(endStep: 2 * pctStart * T - 2, startLr: "max_lr", endLr: "initial_lr", startM: "base_momentum", endM: "max_momentum"),
                          Phase(endStep: T - 1, startLr: "initial_lr", endLr: "min_lr", startM: "max_momentum", endM: "max_momentum")]
            } else {
                phases = [Phase(endStep: pctStart * T - 1, startLr: "initial_lr", endLr: "max_lr", startM: "max_momentum", endM: "base_momentum"),
                          Phase(endStep: T - 1, startLr: "max_lr", endLr: "min_lr", startM: "base_momentum", endM: "max_momentum")]
            }
            anneal = annealStrategy
            self.cycleMomentum = cycleMomentum
            useBeta1 = optimizer.paramGroups.first?["betas"] != nil
            if lastEpoch == -1 {
                for g in optimizer.paramGroups {
                    let initial = maxLr / divFactor
                    g["initial_lr"] = .double(initial)
                    g["max_lr"] = .double(maxLr)
                    g["min_lr"] = .double(initial / finalDivFactor)
                }
            }
            if cycleMomentum {
                precondition(useBeta1 || optimizer.paramGroups.first?["momentum"] != nil,
                             "optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
                for g in optimizer.paramGroups {
                    if lastEpoch == -1 {
                        if useBeta1 {
                            let (_, b2) = g.pair("betas")
                            g["betas"] = .tuple([.double(maxMomentum), .double(b2)])
                        } else {
                            g["momentum"] = .double(maxMomentum)
                        }
                        g["max_momentum"] = .double(maxMomentum)
                        g["base_momentum"] = .double(baseMomentum)
                    }
                }
            }
            super.init(optimizer, lastEpoch: lastEpoch)
            initialStep()
        }

        private func annealValue(_ start: Double, _ end: Double, _ pct: Double) -> Double {
            switch anneal {
            case .cos: return end + (start - end) / 2 * (Glibc.cos(.pi * pct) + 1)
            case .linear: return (end - start) * pct + start
            }
        }

        public override func getLr() -> [Double] {
            let stepNum = Double(lastEpoch)
            precondition(lastEpoch <= totalSteps, "Tried to step \(lastEpoch) times. The specified number of total steps is \(totalSteps)")
            var lrs: [Double] = []
            for g in optimizer.paramGroups {
                var start = 0.0
                var lr = 0.0, momentum = 0.0
                for (i, ph) in phases.enumerated() {
                    if stepNum <= ph.endStep || i == phases.count - 1 {
                        let pct = (stepNum - start) / (ph.endStep - start)
                        lr = annealValue(g.double(ph.startLr), g.double(ph.endLr), pct)
                        if cycleMomentum { momentum = annealValue(g.double(ph.startM), g.double(ph.endM), pct) }
                        break
                    }
                    start = ph.endStep
                }
                lrs.append(lr)
                if cycleMomentum {
                    if useBeta1 {
                        let (_, b2) = g.pair("betas")
                        g["betas"] = .tuple([.double(momentum), .double(b2)])
                    } else {
                        g["momentum"] = .double(momentum)
                    }
                }
            }
            return lrs
        }

        public override func extraState() -> [(key: String, value: StateValue)] { [("total_steps", .int(totalSteps))] }
    }
}
