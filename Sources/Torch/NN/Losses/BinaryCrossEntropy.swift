/// Binary cross-entropy: BCELoss on probabilities (log terms clamped to ≥ −100 like PyTorch) and
/// BCEWithLogitsLoss on logits in the stable log-sigmoid form, with `posWeight`. Each is one
/// fused kernel forward and one backward (`BinaryCrossEntropyBackward0`,
/// `BinaryCrossEntropyWithLogitsBackward0`).

extension nn.functional {
    /// Binary cross-entropy of probabilities `input` ∈ [0, 1] against `target` ∈ [0, 1] (same shape):
    /// `−weight · (t · log(x) + (1 − t) · log(1 − x))`, each log clamped to ≥ −100.
    ///
    /// - Parameters:
    ///   - input: probabilities in [0, 1].
    ///   - target: the same shape as `input`, values in [0, 1].
    ///   - weight: rescaling broadcast to the input's shape, or nil.
    ///   - reduction: `.mean` (default), `.sum` or `.none`.
    public static func binaryCrossEntropy(_ input: Tensor, _ target: Tensor, weight: Tensor? = nil,
                                          reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.binary_cross_entropy, [input, target, weight], {
            binaryCrossEntropy($0[0]!, $0[1]!, weight: $0[2], reduction: reduction)
        }) { return r }
        precondition(input.shape == target.shape, bceTargetSizeMessage(input: input.shape, target: target.shape))
        return pointwiseLoss(.binaryCrossEntropy, input, target, weight: weight, reduction: reduction)
    }

    /// Binary cross-entropy on logits, computed stably as
    /// `(1 − t) · x − (1 + (posWeight − 1) · t) · logσ(x)`, times `weight`.
    ///
    /// ```swift
    /// let loss = F.binaryCrossEntropyWithLogits(logits, labels, posWeight: torch.full([3], 2.0))
    /// ```
    ///
    /// - Parameters:
    ///   - input: logits, any shape.
    ///   - target: the same shape as `input`, values in [0, 1].
    ///   - weight: rescaling broadcast to the input's shape, or nil.
    ///   - posWeight: weight of positive examples, broadcast along the last (class) dim, or nil.
    ///   - reduction: `.mean` (default), `.sum` or `.none`.
    public static func binaryCrossEntropyWithLogits(_ input: Tensor, _ target: Tensor, weight: Tensor? = nil,
                                                    reduction: nn.Reduction = .mean,
                                                    posWeight: Tensor? = nil) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.binary_cross_entropy_with_logits, [input, target, weight, posWeight], {
            binaryCrossEntropyWithLogits($0[0]!, $0[1]!, weight: $0[2], reduction: reduction, posWeight: $0[3])
        }) { return r }
        precondition(input.shape == target.shape, bceWithLogitsTargetSizeMessage(input: input.shape, target: target.shape))
        return pointwiseLoss(.binaryCrossEntropyWithLogits, input, target, weight: weight, posWeight: posWeight,
                             reduction: reduction)
    }
}

/// PyTorch's message for a BCE target whose size differs from the input's.
func bceTargetSizeMessage(input: [Int], target: [Int]) -> String {
    "Using a target size (\(torchSizeString(target))) that is different to the input size (\(torchSizeString(input))) is deprecated. Please ensure they have the same size."
}

/// PyTorch's message for a BCE-with-logits target whose size differs from the input's.
func bceWithLogitsTargetSizeMessage(input: [Int], target: [Int]) -> String {
    "Target size (\(torchSizeString(target))) must be the same as input size (\(torchSizeString(input)))"
}

extension nn {
    /// Binary cross-entropy on probabilities (PyTorch's `nn.BCELoss`).
    ///
    /// ```swift
    /// let criterion = nn.BCELoss()
    /// let loss = criterion(model(x).sigmoid(), y)
    /// ```
    public final class BCELoss: WeightedLoss {
        public override init(weight: Tensor? = nil, reduction: Reduction = .mean) {
            super.init(weight: weight, reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.binaryCrossEntropy(input, target, weight: weight, reduction: reduction)
        }
    }

    /// Sigmoid + binary cross-entropy in one stable op (PyTorch's `nn.BCEWithLogitsLoss`).
    /// `weight` and `posWeight` are buffers (`weight`, `pos_weight` in the state dict).
    public final class BCEWithLogitsLoss: Loss {
        /// Per-element rescaling, or nil.
        public var weight: Tensor? {
            get { registeredBuffers["weight"] }
            set { registerBuffer("weight", newValue) }
        }
        /// Weight of positive examples per class, or nil.
        public var posWeight: Tensor? {
            get { registeredBuffers["pos_weight"] }
            set { registerBuffer("pos_weight", newValue) }
        }

        public init(weight: Tensor? = nil, reduction: Reduction = .mean, posWeight: Tensor? = nil) {
            super.init(reduction: reduction)
            registerBuffer("weight", weight)
            registerBuffer("pos_weight", posWeight)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.binaryCrossEntropyWithLogits(input, target, weight: weight, reduction: reduction, posWeight: posWeight)
        }
    }
}
