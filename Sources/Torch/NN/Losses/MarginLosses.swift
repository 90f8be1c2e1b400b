/// Losses on pairs of inputs with ±1 targets: CosineEmbeddingLoss and MarginRankingLoss, composed
/// from tensor ops exactly as PyTorch composes them. Called as `loss(input1, input2, target)`.

extension nn.functional {
    /// `1 − cos(x1, x2)` where target = 1, `max(0, cos(x1, x2) − margin)` where target = −1
    /// (PyTorch's `F.cosine_embedding_loss`). Inputs are `[N, D]` with target `[N]`, or `[D]`
    /// with a 0-d target.
    public static func cosineEmbeddingLoss(_ input1: Tensor, _ input2: Tensor, _ target: Tensor,
                                           margin: Double = 0, reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.cosine_embedding_loss, [input1, input2, target], {
            cosineEmbeddingLoss($0[0]!, $0[1]!, $0[2]!, margin: margin, reduction: reduction)
        }) { return r }
        checkBasicReduction(reduction)
        if let m = cosineEmbeddingShapeMessage(input1.shape, input2.shape, target.shape) { preconditionFailure(m) }
        let d = target.dim
        let eps = 1e-12
        let prodSum = (input1 * input2).sum(dim: d)
        let mag1 = (input1 * input1).sum(dim: d) + eps
        let mag2 = (input2 * input2).sum(dim: d) + eps
        let cos = prodSum / (mag1 * mag2).sqrt()
        let zeros = torch.zerosLike(cos)
        let pos = 1 - cos
        let neg = (cos - margin).clampMin(0)
        let output = torch.where(target .== 1, pos, zeros) + torch.where(target .== -1, neg, zeros)
        return applyLossReduction(output, reduction)
    }

    /// `max(0, −target·(x1 − x2) + margin)` (PyTorch's `F.margin_ranking_loss`); all three
    /// tensors have the same number of dims.
    public static func marginRankingLoss(_ input1: Tensor, _ input2: Tensor, _ target: Tensor,
                                         margin: Double = 0, reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.margin_ranking_loss, [input1, input2, target], {
            marginRankingLoss($0[0]!, $0[1]!, $0[2]!, margin: margin, reduction: reduction)
        }) { return r }
        checkBasicReduction(reduction)
        precondition(input1.dim == input2.dim && input1.dim == target.dim,
                     marginRankingDimMessage(input1.shape, input2.shape, target.shape))
        return applyLossReduction((-target * (input1 - input2) + margin).clampMin(0), reduction)
    }
}

/// PyTorch's checks of `cosine_embedding_loss`: nil, or the message.
func cosineEmbeddingShapeMessage(_ a: [Int], _ b: [Int], _ target: [Int]) -> String? {
    if target.count > 1 { return "0D or 1D target tensor expected, multi-target not supported" }
    if target.count == 1 && !(a.count == 2 && b.count == 2) {
        return "1D target tensor expects 2D input tensors, but found inputs with sizes \(shapeString(a)) and \(shapeString(b))."
    }
    if target.isEmpty && !(a.count == 1 && b.count == 1) {
        return "0D target tensor expects 1D input tensors, but found inputs with sizes \(shapeString(a)) and \(shapeString(b))."
    }
    return nil
}

/// PyTorch's message for `margin_ranking_loss` inputs of different ranks.
func marginRankingDimMessage(_ a: [Int], _ b: [Int], _ target: [Int]) -> String {
    "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: \(torchSizeString(a)), input2: \(torchSizeString(b)), target: \(torchSizeString(target)) "
}

extension nn {
    /// Cosine-similarity embedding loss on pairs (PyTorch's `nn.CosineEmbeddingLoss`).
    ///
    /// ```swift
    /// let criterion = nn.CosineEmbeddingLoss(margin: 0.5)
    /// let loss = criterion(a, b, torch.tensor([1, -1, 1]))
    /// ```
    public final class CosineEmbeddingLoss: Loss {
        /// Similarity below which dissimilar pairs cost nothing.
        public var margin: Double

        public init(margin: Double = 0, reduction: Reduction = .mean) {
            self.margin = margin
            super.init(reduction: reduction)
        }
        /// The loss of the pairs (input1, input2) labelled `target` (1 similar, −1 dissimilar).
        public func forward(_ input1: Tensor, _ input2: Tensor, _ target: Tensor) -> Tensor {
            F.cosineEmbeddingLoss(input1, input2, target, margin: margin, reduction: reduction)
        }
        /// `loss(input1, input2, target)`.
        public func callAsFunction(_ input1: Tensor, _ input2: Tensor, _ target: Tensor) -> Tensor {
            forward(input1, input2, target)
        }
    }

    /// Ranking loss on pairs of scores (PyTorch's `nn.MarginRankingLoss`).
    ///
    /// ```swift
    /// let criterion = nn.MarginRankingLoss(margin: 1)
    /// let loss = criterion(scoresA, scoresB, torch.tensor([1.0, -1.0]))   // 1: A should rank higher
    /// ```
    public final class MarginRankingLoss: Loss {
        /// Required gap between the scores.
        public var margin: Double

        public init(margin: Double = 0, reduction: Reduction = .mean) {
            self.margin = margin
            super.init(reduction: reduction)
        }
        /// The loss of scores (input1, input2) with desired order `target` (1 or −1).
        public func forward(_ input1: Tensor, _ input2: Tensor, _ target: Tensor) -> Tensor {
            F.marginRankingLoss(input1, input2, target, margin: margin, reduction: reduction)
        }
        /// `loss(input1, input2, target)`.
        public func callAsFunction(_ input1: Tensor, _ input2: Tensor, _ target: Tensor) -> Tensor {
            forward(input1, input2, target)
        }
    }
}
