extension nn {
    /// What the batch and instance normalisations share (PyTorch's `_NormBase`): per-channel learnable `weight`
    /// (ones) and `bias` (zeros) when `affine`, and the buffers `running_mean` (zeros), `running_var` (ones) and
    /// `num_batches_tracked` (int64 0-d) when `trackRunningStats`, registered under PyTorch's names.
    public class NormBase: Module {
        /// C, the number of channels.
        public let numFeatures: Int
        /// Added to the variance for numerical stability.
        public var eps: Double
        /// Weight of the new batch statistics in the running update; nil: cumulative average (batch norm) or 0
        /// (instance norm), as in PyTorch.
        public var momentum: Double?
        /// Whether there are learnable `weight` and `bias`.
        public let affine: Bool
        /// Whether running statistics are kept (and used in eval mode).
        public let trackRunningStats: Bool
        /// `[C]`, ones at first; nil unless `affine`.
        public var weight: Parameter?
        /// `[C]`, zeros at first; nil unless `affine` (and `bias`).
        public var bias: Parameter?
        /// The `running_mean` buffer `[C]` (nil unless `trackRunningStats`).
        public let runningMean: Tensor?
        /// The `running_var` buffer `[C]` (nil unless `trackRunningStats`).
        public let runningVar: Tensor?
        /// The `num_batches_tracked` buffer, an int64 0-d tensor (nil unless `trackRunningStats`).
        public let numBatchesTracked: Tensor?

        /// - Parameters:
        ///   - numFeatures: C, the number of channels.
        ///   - eps: added to the variance.
        ///   - momentum: weight of the batch statistics in the running update.
        ///   - affine: learn per-channel `weight` and `bias`.
        ///   - trackRunningStats: keep running statistics (and use them in eval mode).
        ///   - bias: learn a `bias` (with `affine`).
        ///   - dtype: parameter and buffer dtype (default: `torch.defaultDType`).
        ///   - layer: the layer family named in the argument check's message (`BatchNorm`, `InstanceNorm`).
        init(_ numFeatures: Int, eps: Double, momentum: Double?, affine: Bool, trackRunningStats: Bool, bias: Bool,
             dtype: DType?, layer: String) {
            precondition(numFeatures >= 0, "\(layer): num_features must be non-negative, got \(numFeatures)")
            self.numFeatures = numFeatures
            self.eps = eps
            self.momentum = momentum
            self.affine = affine
            self.trackRunningStats = trackRunningStats
            weight = affine ? Parameter(torch.ones(numFeatures, dtype: dtype)) : nil
            self.bias = affine && bias ? Parameter(torch.zeros(numFeatures, dtype: dtype)) : nil
            runningMean = trackRunningStats ? torch.zeros(numFeatures, dtype: dtype) : nil
            runningVar = trackRunningStats ? torch.ones(numFeatures, dtype: dtype) : nil
            numBatchesTracked = trackRunningStats ? torch.zeros([], dtype: .int64) : nil
            super.init()
            if trackRunningStats {
                registerBuffer("running_mean", runningMean)
                registerBuffer("running_var", runningVar)
                registerBuffer("num_batches_tracked", numBatchesTracked)
            }
        }

        /// A layer of `other`'s settings holding `other`'s parameter and buffer objects themselves
        /// (weights, gradients and running statistics are shared, not copied).
        init(adopting other: NormBase, layer: String) {
            numFeatures = other.numFeatures
            eps = other.eps
            momentum = other.momentum
            affine = other.affine
            trackRunningStats = other.trackRunningStats
            weight = other.weight
            bias = other.bias
            runningMean = other.runningMean
            runningVar = other.runningVar
            numBatchesTracked = other.numBatchesTracked
            super.init()
            training = other.training
            if trackRunningStats {
                registerBuffer("running_mean", runningMean)
                registerBuffer("running_var", runningVar)
                registerBuffer("num_batches_tracked", numBatchesTracked)
            }
        }

        /// Running mean to zeros, running variance to ones, `num_batches_tracked` to 0.
        public func resetRunningStats() {
            guard trackRunningStats else { return }
            torch.noGrad {
                runningMean!.zero_()
                runningVar!.fill_(1)
                numBatchesTracked!.zero_()
            }
        }

        /// Resets the running statistics, the weight to ones and the bias to zeros.
        public func resetParameters() {
            resetRunningStats()
            if let weight { nn.`init`.ones_(weight) }
            if let bias { nn.`init`.zeros_(bias) }
        }
    }
}
