extension nn {
    /// Batch normalisation whose training-mode statistics span the whole distributed batch: the
    /// per-channel mean and variance are computed over the inputs of every rank of the process
    /// group, not just this rank's share (PyTorch's `nn.SyncBatchNorm`).
    ///
    /// It has BatchNorm's parameters, buffers and state-dict keys (`weight`, `bias`,
    /// `running_mean`, `running_var`, `num_batches_tracked`) and accepts any `(N, C, *)` input with
    /// at least 2 dims. Statistics are synchronised in training mode once a process group of more
    /// than one rank exists (`processGroup`, else the default group from `dist.initProcessGroup`);
    /// otherwise — eval mode, a single process, or no process group — it is exactly a BatchNorm.
    /// Ranks may hold batches of different sizes, including empty ones; every rank must run each
    /// forward and backward (they communicate). Runs on the CPU over MPI, where PyTorch's
    /// SyncBatchNorm needs CUDA.
    ///
    /// The weight and bias gradients it produces are this rank's own; `DistributedDataParallel`
    /// averages them like every other gradient. Its gradient is not itself differentiable (no
    /// double backward, as in PyTorch).
    ///
    /// ```swift
    /// try dist.initProcessGroup(backend: .mpi)                  // under mpirun -np 4
    /// let net = nn.SyncBatchNorm.convertSyncBatchnorm(Net())    // Net's BatchNorms become SyncBatchNorms
    /// let model = try DistributedDataParallel(net)
    /// print(nn.SyncBatchNorm(64))
    /// // SyncBatchNorm(64, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    /// ```
    public final class SyncBatchNorm: BatchNormBase {
        /// The ranks whose batches are normalised together; nil: the default group.
        public var processGroup: dist.ProcessGroup?

        /// - Parameters:
        ///   - numFeatures: C, the number of channels.
        ///   - eps: added to the variance.
        ///   - momentum: weight of the batch statistics in the running update; nil: cumulative average.
        ///   - affine: learn per-channel `weight` and `bias`.
        ///   - trackRunningStats: keep running statistics (and use them in eval mode).
        ///   - processGroup: the ranks to synchronise over (default: the default group).
        ///   - bias: learn a `bias` (with `affine`).
        ///   - dtype: parameter and buffer dtype (default: `torch.defaultDType`).
        public init(_ numFeatures: Int, eps: Double = 1e-5, momentum: Double? = 0.1, affine: Bool = true,
                    trackRunningStats: Bool = true, processGroup: dist.ProcessGroup? = nil, bias: Bool = true,
                    dtype: DType? = nil) {
            self.processGroup = processGroup
            super.init(numFeatures, eps: eps, momentum: momentum, affine: affine, trackRunningStats: trackRunningStats,
                       bias: bias, dtype: dtype)
        }

        /// A SyncBatchNorm holding `bn`'s parameters and buffers themselves, with its settings and mode.
        init(adopting bn: BatchNormBase, processGroup: dist.ProcessGroup?) {
            self.processGroup = processGroup
            super.init(adopting: bn)
        }

        override func inputDimMessage(_ rank: Int) -> String? {
            rank >= 2 ? nil : "expected at least 2D input (got \(rank)D input)"
        }

        public override func forward(_ input: Tensor) -> Tensor {
            checkInputDim(input)
            precondition(input.shape[1] != 0, "SyncBatchNorm number of input channels should be non-zero (input of shape \(shapeString(input.shape)))")
            let step = beginForward()
            if training, let group = synchronisingGroup, group.size > 1 {
                return syncBatchNorm(input, weight: weight, bias: bias, runningMean: step.runningMean,
                                     runningVar: step.runningVar, momentum: step.momentum, eps: eps, group: group)
            }
            return F.batchNorm(input, step.runningMean, step.runningVar, weight: weight, bias: bias,
                               training: step.useBatchStats, momentum: step.momentum, eps: eps)
        }

        /// `processGroup`, else the default group once `dist.initProcessGroup` has run.
        private var synchronisingGroup: dist.ProcessGroup? { processGroup ?? dist.defaultGroup }

        /// Replaces every batch-norm layer (`BatchNorm1d`, `BatchNorm2d`, `BatchNorm3d`, and
        /// `SyncBatchNorm`) in `module`'s tree by a `SyncBatchNorm` under the same name, holding the
        /// layer's own parameter and buffer tensors (so values, `requiresGrad` and state-dict keys
        /// stay), its settings and its training mode (PyTorch's `convert_sync_batchnorm`).
        ///
        /// Returns `module`, changed in place, or the new layer when `module` itself is a batch
        /// norm. A layer shared by several parents becomes one SyncBatchNorm. Children held by
        /// `nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict` or `addModule`, and stored properties
        /// declared as `var name: nn.Module` (as torchvision's models do), `var name: nn.Module?` or
        /// `var name: [nn.Module]` can be replaced; a `let` property, or one declared with a
        /// batch-norm type (`let bn = nn.BatchNorm2d(8)`), cannot hold the new layer and stops the
        /// conversion with a message naming it. Convert before creating the optimizer and before
        /// wrapping the model in `DistributedDataParallel`.
        ///
        /// ```swift
        /// let model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
        /// _ = nn.SyncBatchNorm.convertSyncBatchnorm(model)   // returns model, converted in place
        /// print(model[1])   // SyncBatchNorm(16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        /// let ddp = try DistributedDataParallel(model)
        /// ```
        public static func convertSyncBatchnorm(_ module: nn.Module, processGroup: dist.ProcessGroup? = nil) -> nn.Module {
            // Each module once, keyed while it is kept alive.
            var converted: [ObjectIdentifier: (original: nn.Module, result: nn.Module)] = [:]
            func convert(_ m: nn.Module) -> nn.Module {
                if let done = converted[ObjectIdentifier(m)] { return done.result }
                let result: nn.Module = (m as? BatchNormBase).map { SyncBatchNorm(adopting: $0, processGroup: processGroup) } ?? m
                converted[ObjectIdentifier(m)] = (m, result)
                result.replaceChildren("SyncBatchNorm.convertSyncBatchnorm", convert)
                return result
            }
            return convert(module)
        }
    }
}
