/// Regression losses: MSELoss, L1Loss, SmoothL1Loss, HuberLoss and their `F` twins. MSE,
/// SmoothL1 and Huber are one fused kernel forward and one backward (`MseLossBackward0`,
/// `SmoothL1LossBackward0`, `HuberLossBackward0`); L1 is `|x − y|` reduced, as in PyTorch.
/// Input and target broadcast together.

extension nn.functional {
    /// Mean squared error: `(input − target)²`, reduced.
    ///
    /// ```swift
    /// let loss = F.mseLoss(prediction, target)            // scalar
    /// let each = F.mseLoss(prediction, target, reduction: .none)
    /// ```
    public static func mseLoss(_ input: Tensor, _ target: Tensor, reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.mse_loss, [input, target], { mseLoss($0[0]!, $0[1]!, reduction: reduction) }) { return r }
        return pointwiseLoss(.mse, input, target, reduction: reduction)
    }

    /// Mean absolute error: `|input − target|`, reduced.
    public static func l1Loss(_ input: Tensor, _ target: Tensor, reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.l1_loss, [input, target], { l1Loss($0[0]!, $0[1]!, reduction: reduction) }) { return r }
        checkBasicReduction(reduction)
        return applyLossReduction((input - target).abs(), reduction)
    }

    /// Smooth L1: `0.5 · d² / beta` where `|d| < beta`, else `|d| − 0.5 · beta` (d = input − target);
    /// `beta: 0` is the L1 loss.
    public static func smoothL1Loss(_ input: Tensor, _ target: Tensor, reduction: nn.Reduction = .mean,
                                    beta: Double = 1.0) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.smooth_l1_loss, [input, target], { smoothL1Loss($0[0]!, $0[1]!, reduction: reduction, beta: beta) }) { return r }
        precondition(beta >= 0, smoothL1BetaMessage)
        if beta == 0 { return l1Loss(input, target, reduction: reduction) }
        return pointwiseLoss(.smoothL1(beta: beta), input, target, reduction: reduction)
    }

    /// Huber: `0.5 · d²` where `|d| < delta`, else `delta · (|d| − 0.5 · delta)` (d = input − target).
    public static func huberLoss(_ input: Tensor, _ target: Tensor, reduction: nn.Reduction = .mean,
                                 delta: Double = 1.0) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.huber_loss, [input, target], { huberLoss($0[0]!, $0[1]!, reduction: reduction, delta: delta) }) { return r }
        precondition(delta > 0, huberDeltaMessage)
        return pointwiseLoss(.huber(delta: delta), input, target, reduction: reduction)
    }
}

let smoothL1BetaMessage = "smooth_l1_loss does not support negative values for beta."
let huberDeltaMessage = "huber_loss does not support non-positive values for delta."

extension nn {
    /// Mean squared error (PyTorch's `nn.MSELoss`).
    ///
    /// ```swift
    /// let lossFunc = nn.MSELoss()
    /// let loss = lossFunc(model(x), y)
    /// loss.backward()
    /// ```
    public final class MSELoss: Loss {
        public override init(reduction: Reduction = .mean) { super.init(reduction: reduction) }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.mseLoss(input, target, reduction: reduction)
        }
    }

    /// Mean absolute error (PyTorch's `nn.L1Loss`).
    public final class L1Loss: Loss {
        public override init(reduction: Reduction = .mean) { super.init(reduction: reduction) }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.l1Loss(input, target, reduction: reduction)
        }
    }

    /// Smooth L1 loss with threshold `beta` (PyTorch's `nn.SmoothL1Loss`).
    public final class SmoothL1Loss: Loss {
        /// Where the loss switches from quadratic to linear.
        public let beta: Double
        public init(reduction: Reduction = .mean, beta: Double = 1.0) {
            precondition(beta >= 0, smoothL1BetaMessage)
            self.beta = beta
            super.init(reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.smoothL1Loss(input, target, reduction: reduction, beta: beta)
        }
    }

    /// Huber loss with threshold `delta` (PyTorch's `nn.HuberLoss`).
    public final class HuberLoss: Loss {
        /// Where the loss switches from quadratic to linear.
        public let delta: Double
        public init(reduction: Reduction = .mean, delta: Double = 1.0) {
            precondition(delta > 0, huberDeltaMessage)
            self.delta = delta
            super.init(reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.huberLoss(input, target, reduction: reduction, delta: delta)
        }
    }
}
