/// Classification losses: CrossEntropyLoss and NLLLoss with their `F` twins.
///
/// Class-index targets without label smoothing run one fused log-softmax + NLL kernel forward and
/// one fused backward (`softmax − one-hot`, scaled); label smoothing and class-probability targets
/// are composed from log-softmax and NLL exactly as PyTorch composes them.

extension nn.functional {
    /// Cross-entropy between logits `input` and `target` (PyTorch's `F.cross_entropy`).
    ///
    /// `input` is `[N, C]`, `[C]` (unbatched) or `[N, C, d1, d2, ...]`; `target` holds class
    /// indices (int64 or uint8, shape `[N]`, `[]` or `[N, d1, d2, ...]`) or class probabilities
    /// (floating, the input's shape).
    ///
    /// ```swift
    /// let loss = F.crossEntropy(logits, labels)                                  // mean over the batch
    /// let smoothed = F.crossEntropy(logits, labels, labelSmoothing: 0.1)
    /// let weighted = F.crossEntropy(logits, labels, weight: classWeights, ignoreIndex: 0)
    /// ```
    ///
    /// - Parameters:
    ///   - input: unnormalised scores (logits), `[N, C]`, `[C]` or `[N, C, d1, …]`.
    ///   - target: class indices (int64) or class probabilities shaped like `input`.
    ///   - weight: `[C]` class weights (same dtype as the input), or nil. With `.mean` the result is
    ///     the weighted mean: Σ wᵢ·lossᵢ / Σ wᵢ over the non-ignored targets.
    ///   - ignoreIndex: a class index that contributes neither loss nor gradient (class-index
    ///     targets only).
    ///   - labelSmoothing: ε in [0, 1]: the target becomes (1 − ε)·one-hot + ε/C.
    ///   - reduction: `.mean` (default), `.sum` or `.none`.
    public static func crossEntropy(_ input: Tensor, _ target: Tensor, weight: Tensor? = nil,
                                    ignoreIndex: Int = -100, reduction: nn.Reduction = .mean,
                                    labelSmoothing: Double = 0) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.cross_entropy_loss, [input, target, weight], {
            crossEntropy($0[0]!, $0[1]!, weight: $0[2], ignoreIndex: ignoreIndex, reduction: reduction, labelSmoothing: labelSmoothing)
        }) { return r }
        checkBasicReduction(reduction)
        precondition(input.dtype.isFloatingPoint, lossDTypeMessage(op: "log_softmax_lastdim_kernel_impl", input.dtype))
        if input.shape == target.shape {
            precondition(target.dtype.isFloatingPoint, probabilityTargetDTypeMessage(target.dtype))
            precondition(ignoreIndex < 0, probabilityTargetIgnoreMessage)
            return crossEntropyWithProbabilities(input, target, weight: weight, reduction: reduction,
                                                 labelSmoothing: labelSmoothing)
        }
        if let weight { precondition(weight.dtype == input.dtype, weightDTypeMessage(input: input.dtype, weight: weight.dtype)) }
        if labelSmoothing > 0 {
            precondition(labelSmoothing <= 1, labelSmoothingMessage(labelSmoothing))
            return crossEntropyWithLabelSmoothing(input, target, weight: weight, ignoreIndex: ignoreIndex,
                                                  reduction: reduction, labelSmoothing: labelSmoothing)
        }
        let geo = checkedClassLossGeometry(input, target, weight)
        checkSameDevice(input, [target, weight])
        switch input.device {
        case .cpu: return fusedCrossEntropyOp(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction, geometry: geo)
        case .cuda: return deviceCrossEntropyOp(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction, geometry: geo)
        }
    }

    /// Negative log-likelihood of log-probabilities `input` at class indices `target`
    /// (PyTorch's `F.nll_loss`): −weight[t]·input[t], reduced (`.mean` is the weighted mean).
    /// Shapes as in `crossEntropy` with class-index targets.
    public static func nllLoss(_ input: Tensor, _ target: Tensor, weight: Tensor? = nil,
                               ignoreIndex: Int = -100, reduction: nn.Reduction = .mean) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.nll_loss, [input, target, weight], {
            nllLoss($0[0]!, $0[1]!, weight: $0[2], ignoreIndex: ignoreIndex, reduction: reduction)
        }) { return r }
        checkBasicReduction(reduction)
        let geo = checkedClassLossGeometry(input, target, weight)
        precondition(input.dtype.isFloatingPoint, lossDTypeMessage(op: "nll_loss_out_frame", input.dtype))
        if let weight { precondition(weight.dtype == input.dtype, weightDTypeMessage(input: input.dtype, weight: weight.dtype)) }
        checkSameDevice(input, [target, weight])
        switch input.device {
        case .cpu: return nllLossOp(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction, geometry: geo)
        case .cuda: return deviceClassLoss(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction)
        }
    }

    /// PyTorch's `cross_entropy_loss_prob_target`.
    private static func crossEntropyWithProbabilities(_ input: Tensor, _ target: Tensor, weight: Tensor?,
                                                      reduction: nn.Reduction, labelSmoothing: Double) -> Tensor {
        let classDim = input.dim == 1 ? 0 : 1
        let nClasses = input.size(classDim)
        if let weight {
            precondition(weight.dim == 1 && weight.numel == nClasses, probabilityWeightMessage(nClasses: nClasses, weight: weight.shape))
        }
        let logp = logSoftmax(input, dim: classDim)
        var t = target
        if labelSmoothing > 0 {
            precondition(labelSmoothing <= 1, labelSmoothingMessage(labelSmoothing))
            t = target * (1 - labelSmoothing) + labelSmoothing / Double(nClasses)
        }
        var prod = logp * t
        if let weight { prod = prod * classWeightView(weight, rank: input.dim, classDim: 1) }
        switch reduction {
        case .mean:
            if input.numel == 0 { return torch.full([], .nan, dtype: prod.dtype) }
            return lossDivScalar(-prod.sum(), Double(input.numel / nClasses))
        case .sum: return -prod.sum()
        default: return -prod.sum(dim: classDim)
        }
    }

    /// PyTorch's `cross_entropy_loss_label_smoothing`: (1 − ε)·NLL + ε/C · smooth term.
    private static func crossEntropyWithLabelSmoothing(_ input: Tensor, _ target: Tensor, weight: Tensor?,
                                                       ignoreIndex: Int, reduction: nn.Reduction,
                                                       labelSmoothing: Double) -> Tensor {
        let classDim = input.dim == 1 ? 0 : 1
        let logp = logSoftmax(input, dim: classDim)
        let nll = nllLoss(logp, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction)
        let nClasses = logp.size(classDim)
        let ignoreMask = target .== Double(ignoreIndex)
        var smooth: Tensor
        if let weight {
            smooth = -(logp * classWeightView(weight, rank: logp.dim, classDim: classDim)).sum(dim: classDim)
        } else {
            smooth = -logp.sum(dim: classDim)
        }
        smooth = torch.where(ignoreMask, 0.0, smooth)
        var ret: Tensor
        switch reduction {
        case .mean:
            let targets = lossContiguous(target.to(.int64)).toArray(as: Int64.self)
            var denominator = 0.0
            let w = weight.map { $0.toArray(as: Double.self) }
            for t in targets where t != Int64(ignoreIndex) { denominator += w.map { $0[Int(t)] } ?? 1 }
            ret = smooth.sum() / denominator
        case .sum: ret = smooth.sum()
        default: ret = smooth
        }
        return (1 - labelSmoothing) * nll + ret * (labelSmoothing / Double(nClasses))
    }

    /// `weight` viewed as `[1, C, 1, ...]` (C at `classDim`) to broadcast against a rank-`rank` input.
    private static func classWeightView(_ weight: Tensor, rank: Int, classDim: Int) -> Tensor {
        if rank <= 1 { return weight }
        var shape = [Int](repeating: 1, count: rank)
        shape[classDim] = weight.size(0)
        return weight.view(shape)
    }
}

/// PyTorch's message for integer targets of the input's shape (taken as probabilities).
func probabilityTargetDTypeMessage(_ d: DType) -> String {
    "Expected floating point type for target with class probabilities, got \(scalarTypeName(d))"
}

/// PyTorch's message for `ignoreIndex` with probability targets.
let probabilityTargetIgnoreMessage = "ignore_index is not supported for floating point target"

/// PyTorch's message for a bad weight with probability targets.
func probabilityWeightMessage(nClasses: Int, weight: [Int]) -> String {
    "cross_entropy: weight tensor should be defined either for all \(nClasses) classes or no classes but got weight tensor of shape: \(shapeString(weight))"
}

/// PyTorch's message for a label smoothing above 1.
func labelSmoothingMessage(_ v: Double) -> String {
    "label_smoothing must be between 0.0 and 1.0. Got: \(pyFloat(v))"
}

extension nn {
    /// Cross-entropy on logits (PyTorch's `nn.CrossEntropyLoss`): log-softmax and NLL in one.
    ///
    /// ```swift
    /// let criterion = nn.CrossEntropyLoss()
    /// let loss = criterion(model(images), labels)     // logits [64, 10], labels [64] int64
    /// loss.backward()
    /// ```
    public final class CrossEntropyLoss: WeightedLoss {
        /// A target class that contributes neither loss nor gradient.
        public var ignoreIndex: Int
        /// ε: the target becomes (1 − ε)·one-hot + ε/C.
        public var labelSmoothing: Double

        public init(weight: Tensor? = nil, ignoreIndex: Int = -100, reduction: Reduction = .mean,
                    labelSmoothing: Double = 0) {
            self.ignoreIndex = ignoreIndex
            self.labelSmoothing = labelSmoothing
            super.init(weight: weight, reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.crossEntropy(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction,
                           labelSmoothing: labelSmoothing)
        }
    }

    /// Negative log-likelihood on log-probabilities (PyTorch's `nn.NLLLoss`); pair it with
    /// `nn.LogSoftmax(dim: 1)`.
    public final class NLLLoss: WeightedLoss {
        /// A target class that contributes neither loss nor gradient.
        public var ignoreIndex: Int

        public init(weight: Tensor? = nil, ignoreIndex: Int = -100, reduction: Reduction = .mean) {
            self.ignoreIndex = ignoreIndex
            super.init(weight: weight, reduction: reduction)
        }
        public override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            F.nllLoss(input, target, weight: weight, ignoreIndex: ignoreIndex, reduction: reduction)
        }
    }
}

/// NLL of class-index targets on a GPU, composed from the device's pointwise ops and reductions (a one-hot mask
/// picks each target's log-probability), so autograd differentiates it like any composition. CrossEntropy on
/// class indices does not come here: it has its fused kernels (`deviceCrossEntropyOp`).
func deviceClassLoss(_ logp: Tensor, _ target: Tensor, weight: Tensor?, ignoreIndex: Int, reduction: nn.Reduction) -> Tensor {
    let classDim = logp.dim == 1 ? 0 : 1
    let classes = logp.size(classDim)
    var viewShape = [Int](repeating: 1, count: logp.dim)
    viewShape[classDim] = classes
    let t = logp.dim == 1 ? target.reshape(1) : target.unsqueeze(1)
    let hot = (torch.arange(0, classes, device: logp.device).reshape(viewShape) .== t).to(logp.dtype)
    var w = (target .!= Double(ignoreIndex)).to(logp.dtype)
    if let weight { w = w * (weight.reshape(viewShape) * hot).sum(dim: classDim) }
    let picked = (logp * hot).sum(dim: classDim)
    let losses = -(picked * w)
    switch reduction {
    case .none: return logp.dim == 1 ? losses.reshape([]) : losses
    case .sum: return losses.sum()
    case .mean, .batchmean: return losses.sum() / w.sum()
    }
}
