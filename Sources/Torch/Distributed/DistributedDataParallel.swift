extension nn {
    /// PyTorch's `torch.nn.parallel`.
    public enum parallel {}
}

extension nn.parallel {
    /// Data-parallel training across processes (PyTorch's `DistributedDataParallel`): each rank
    /// runs the model on its share of the batch, and backward averages the gradients over all
    /// ranks, so every rank's optimizer takes the same step.
    ///
    /// At construction, rank 0's parameters and buffers are broadcast to every rank. Gradients
    /// are averaged in buckets (25 MB, reverse parameter order) that start their all-reduce from
    /// autograd hooks as soon as they fill, overlapping communication with the rest of backward.
    /// When every rank runs on one host the buckets are summed through an MPI-3 shared-memory window
    /// (`allReduceAlgorithm` `.shm`; SWIFTTORCH_DDP_ALLREDUCE=mpi asks for MPI's all-reduce instead), and
    /// SWIFTTORCH_DDP_TRACE=1 records when each bucket was reduced (`communicationTimeline`).
    /// State-dict keys carry the `module.` prefix, as in PyTorch.
    ///
    /// ```swift
    /// try dist.initProcessGroup(backend: .mpi)
    /// let model = try DistributedDataParallel(Net())
    /// let opt = optim.SGD(model.parameters(), lr: 0.01)
    /// for (x, y) in loader {                         // loader with a DistributedSampler
    ///     opt.zeroGrad()
    ///     F.crossEntropy(model(x), y).backward()     // gradients averaged over the ranks
    ///     opt.step()
    /// }
    /// if dist.getRank() == 0 { try torch.save(model.module.stateDict(), "net.pth") }
    /// ```
    public final class DistributedDataParallel: nn.Module {
        /// The wrapped model.
        public let module: nn.Module
        /// Whether `forward` broadcasts rank 0's buffers (BatchNorm statistics) first, in training mode.
        public let broadcastBuffers: Bool
        /// Whether `forward` looks for parameters the output does not depend on.
        public let findUnusedParameters: Bool
        /// Whether the parameters' `.grad` are views into the gradient buckets (PyTorch's `gradient_as_bucket_view`).
        public var gradientAsBucketView: Bool { reducer.gradientAsBucketView }
        /// The group the gradients are averaged over (the default group unless one was given).
        public let processGroup: dist.ProcessGroup
        let reducer: GradientReducer
        /// Number of gradient buckets, and the elements in each, in launch order (diagnostics; PyTorch
        /// logs these as `num_buckets` / `bucket_sizes`).
        public var bucketSizes: [Int] { reducer.buckets.map { $0.flat.numel } }
        /// How the gradient buckets are summed (a SwiftTorch addition): `.shm`, a shared-memory reduction,
        /// when every rank runs on this host and SWIFTTORCH_DDP_ALLREDUCE is not `mpi`; else `.mpi`
        /// (MPI_Allreduce / MPI_Iallreduce).
        public var allReduceAlgorithm: AllReduceAlgorithm { reducer.algorithm }
        /// A private copy of `processGroup`'s communicator for the buffers and buckets, so they never
        /// mix with collectives the program itself issues.
        private let ownGroup: dist.ProcessGroup
        private var requireSync = true
        /// False after a forward inside `noSync` (the next forward then skips the buffer broadcast, as in PyTorch).
        private var requireForwardParamSync = true

        /// Wraps `module` (collective: every rank constructs it at the same point).
        ///
        /// - Parameters:
        ///   - processGroup: the ranks to average over (default: the default group).
        ///   - bucketCapMB: bucket size in MiB (PyTorch's default 25; the first bucket is 1 MiB).
        ///   - broadcastBuffers: broadcast buffers from rank 0 at every training-mode forward.
        ///   - findUnusedParameters: mark parameters the output does not use as ready after forward.
        ///   - gradientAsBucketView: after backward, each parameter's `.grad` is a view into its bucket
        ///     instead of a copy of the averaged values (PyTorch's `gradient_as_bucket_view`). It saves the
        ///     copy back and one gradient's worth of memory; with `zeroGrad(setToNone: false)` the next backward
        ///     also accumulates straight into the bucket. The views are overwritten by the next synchronised
        ///     backward, so keep a `clone()` of a gradient you want to hold on to.
        public init(_ module: nn.Module, processGroup: dist.ProcessGroup? = nil, bucketCapMB: Double = 25,
                    broadcastBuffers: Bool = true, findUnusedParameters: Bool = false,
                    gradientAsBucketView: Bool = false) throws {
            precondition(bucketCapMB > 0, "DistributedDataParallel: bucketCapMB must be positive, got \(bucketCapMB)")
            let group = dist.resolve(processGroup, "DistributedDataParallel")
            self.module = module
            self.processGroup = group
            self.broadcastBuffers = broadcastBuffers
            self.findUnusedParameters = findUnusedParameters
            ownGroup = try group.duplicate()
            let params = module.parameters().filter { $0.requiresGrad }
            precondition(!params.isEmpty, "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.")
            let cap = Int(bucketCapMB * 1_048_576)
            let algorithm = try ownGroup.allReduceAlgorithm(AllReduceAlgorithm.forDDP)
            reducer = GradientReducer(params: params, group: ownGroup, algorithm: algorithm, bucketCapBytes: cap,
                                      firstBucketBytes: Swift.min(cap, 1_048_576),
                                      gradientAsBucketView: gradientAsBucketView)
            super.init()
            training = module.training
            try broadcastCoalesced(module.parameters() as [Tensor] + module.buffers(), group: ownGroup)
        }

        /// Runs the wrapped module. With grad mode on (and outside `noSync`), first broadcasts rank 0's
        /// buffers (when `broadcastBuffers`) and arms the gradient hooks for the coming backward, as
        /// PyTorch's DDP does (in training and eval mode alike).
        public override func forward(_ x: Tensor) -> Tensor {
            let gradEnabled = torch.isGradEnabled()
            if gradEnabled {
                reducer.prepareForForward(sync: requireSync)
            } else {
                reducer.syncThisIteration = false
            }
            if broadcastBuffers && requireForwardParamSync {
                do {
                    try broadcastCoalesced(module.buffers(), group: ownGroup)
                } catch {
                    MPIRuntime.abortJob("[rank \(ownGroup.rank)] DistributedDataParallel: broadcasting buffers failed: \(error)")
                }
            }
            let output = module(x)
            if gradEnabled && requireSync && findUnusedParameters { reducer.markUnused(reachableFrom: output) }
            requireForwardParamSync = gradEnabled && requireSync
            return output
        }

        /// Runs `body` without averaging gradients (PyTorch's `no_sync()` context): backward passes
        /// of forwards inside it only accumulate locally; the first backward after it averages the
        /// accumulated gradients.
        ///
        /// ```swift
        /// try model.noSync { for (x, y) in microBatches.dropLast() { loss(model(x), y).backward() } }
        /// loss(model(xLast), yLast).backward()            // averages the sum of all micro-batches
        /// ```
        public func noSync<R>(_ body: () throws -> R) rethrows -> R {
            let old = requireSync
            requireSync = false
            defer { requireSync = old }
            return try body()
        }
    }
}

/// Broadcasts `tensors` from rank 0 with one call per dtype and device (PyTorch's `_broadcast_coalesced`):
/// the tensors are packed into a flat buffer, broadcast, and unpacked on the other ranks.
func broadcastCoalesced(_ tensors: [Tensor], group: dist.ProcessGroup) throws {
    struct Kind: Hashable { let dtype: DType, device: Device }
    var byKind: [Kind: [Tensor]] = [:]
    var order: [Kind] = []
    for t in tensors where t.numel > 0 {
        let kind = Kind(dtype: t.dtype, device: t.device)
        if byKind[kind] == nil { order.append(kind) }
        byKind[kind, default: []].append(t)
    }
    for kind in order {
        let ts = byKind[kind]!
        let flat = torch.noGrad { torch.cat(ts.map { $0.detach().reshape([-1]) }) }
        try dist.broadcast(flat, src: 0, group: group)
        guard group.rank != 0 else { continue }
        var offset = 0
        for t in ts {
            copyKernel(from: flat.narrow(0, offset, t.numel).view(t.shape), into: t)
            t.storage.bumpVersion()
            offset += t.numel
        }
    }
}

/// `torch.nn.parallel.DistributedDataParallel`, importable bare (`from torch.nn.parallel import DistributedDataParallel`).
public typealias DistributedDataParallel = nn.parallel.DistributedDataParallel
