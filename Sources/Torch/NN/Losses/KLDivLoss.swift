/// Kullback–Leibler divergence: KLDivLoss and `F.klDiv`, composed like PyTorch's `kl_div`
/// (`xlogy(t, t) − t·x`, or `exp(t)·(t − x)` with log targets), with the `.batchmean` reduction.

extension nn.functional {
    /// KL divergence of `target` from the distribution whose log-probabilities are `input`
    /// (PyTorch's `F.kl_div`): pointwise `t·(log t − x)` (`exp(t)·(t − x)` when `logTarget`).
    ///
    /// ```swift
    /// let loss = F.klDiv(F.logSoftmax(logits, dim: 1), targetProbs, reduction: .batchmean)
    /// ```
    ///
    /// - Parameters:
    ///   - input: log-probabilities.
    ///   - target: probabilities (log-probabilities with `logTarget`), shaped like `input`.
    ///   - reduction: `.batchmean` (sum / batch size) is the mathematical KL divergence; `.mean`
    ///     divides by the number of elements, as PyTorch does.
    ///   - logTarget: true when `target` holds log-probabilities.
    public static func klDiv(_ input: Tensor, _ target: Tensor, reduction: nn.Reduction = .mean,
                             logTarget: Bool = false) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.kl_div, [input, target], { klDiv($0[0]!, $0[1]!, reduction: reduction, logTarget: logTarget) }) { return r }
        precondition(input.dtype.isFloatingPoint && target.dtype.isFloatingPoint, klDivIntegralMessage)
        let output: Tensor
        if logTarget {
            output = target.exp() * (target - input)
        } else {
            // xlogy(t, t): 0 where t == 0.
            let safe = torch.where(target .== 0, 1.0, target)
            output = target * safe.log() - target * input
        }
        if reduction == .batchmean {
            let s = output.sum()
            return input.dim != 0 ? s / Double(input.size(0)) : s
        }
        return applyLossReduction(output, reduction)
    }
}

/// PyTorch's message for integer KL-divergence inputs.
let klDivIntegralMessage = "kl_div: Integral inputs not supported."

extension nn {
    /// Kullback–Leibler divergence loss (PyTorch's `nn.KLDivLoss`); `input` holds
    /// log-probabilities.
    ///
    /// ```swift
    /// let criterion = nn.KLDivLoss(reduction: .batchmean)
    /// let loss = criterion(F.logSoftmax(logits, dim: 1), targetProbs)
    /// ```
    public final class KLDivLoss: Loss {
        /// True when targets are log-probabilities.
        public var logTarget: Bool

        public init(reduction: Reduction = .mean, logTarget: Bool = false) {
            self.logTarget = logTarget
            super.init(reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.klDiv(input, target, reduction: reduction, logTarget: logTarget)
        }
    }
}
