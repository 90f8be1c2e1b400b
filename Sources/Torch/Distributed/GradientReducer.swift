import CMPIShim

/// DDP's gradient averaging: the parameters' gradients are laid out in buckets (reverse parameter
/// order, ~`bucketCap` bytes each, the first one small so communication starts early, one dtype
/// per bucket). A post-accumulate-grad hook copies each gradient, pre-divided by the world size,
/// into its bucket; a complete bucket is all-reduced on the group's communication thread while
/// backward goes on; when the last bucket is out, the hook waits for all of them and copies the
/// averages back into `.grad`, so `backward()` returns with averaged gradients as in PyTorch (or, with
/// `gradientAsBucketView`, makes each `.grad` a view of its bucket slot, which skips that copy).
///
/// A model on a GPU keeps its buckets on that GPU: the hook scales and copies on the device, and a full
/// bucket is downloaded into pinned host memory on backward's thread (the download waits for the kernels
/// that wrote it), all-reduced by MPI on the communication thread while backward goes on, and uploaded back
/// by `finish` on backward's thread again, because the communication thread never touches the device.
///
/// Does the all-reduce of an early bucket progress while backward computes? (Issue 27; see
/// `CommunicationTimeline`, printed by `ddp-worker bench-ddp ... trace`.) With `shm` (the default on one
/// host), yes by construction: the communication thread itself copies and sums the bucket between barriers,
/// so the work happens when that thread runs, during backward. With `mpi`, the early buckets go out as
/// MPI_Iallreduce, which Open MPI's libnbc advances only inside MPI calls: the communication thread polls
/// MPI_Test (MPIWait.wait), so it does progress during backward, one schedule round per test, but (Open MPI
/// 4.1's nbc_iallreduce.c) an in-place MPI_Iallreduce always takes the binomial tree, reduce to rank 0 then
/// broadcast, every level moving the whole bucket through one rank, whatever the bucket size; and once the
/// poll loop has waited 1 ms it sleeps 50 µs between tests, which a many-round schedule pays at every round.
/// Open MPI's tuned settings (`--mca coll_tuned_allreduce_algorithm`) change only the blocking MPI_Allreduce,
/// i.e. the last bucket, or every bucket with SWIFTTORCH_MPI_WAIT=block.
final class GradientReducer {
    final class Bucket {
        let flat: Tensor
        /// Parameter indices in this bucket, with their element offsets in `flat`.
        var members: [(param: Int, offset: Int)] = []
        var pending = 0
        var work: dist.Work?
        /// The host copy of a device bucket while its all-reduce runs (copied back in `finish`).
        var hostStaging: StagedBuffer?
        /// When its all-reduce began and returned (absolute; traced runs only).
        var reduceStart = 0.0, reduceEnd = 0.0
        init(numel: Int, dtype: DType, device: Device) { flat = torch.zeros([numel], dtype: dtype, device: device) }
    }

    let params: [nn.Parameter]
    let group: dist.ProcessGroup
    /// How the buckets are summed: decided once at construction (every rank decides alike).
    let algorithm: AllReduceAlgorithm
    /// The communication timeline (SWIFTTORCH_DDP_TRACE=1).
    private(set) var trace: ReducerTrace?
    private(set) var buckets: [Bucket] = []
    /// Bucket and offset of each parameter.
    private var location: [(bucket: Int, offset: Int)] = []
    private var marked: [Bool]
    private var nextToLaunch = 0
    private var markedCount = 0
    private let scale: Double
    let gradientAsBucketView: Bool
    private var handles: [TensorHookHandle] = []
    /// Whether the current iteration's forward ran with synchronisation on (not inside `noSync`).
    var syncThisIteration = true

    init(params: [nn.Parameter], group: dist.ProcessGroup, algorithm: AllReduceAlgorithm, bucketCapBytes: Int,
         firstBucketBytes: Int, gradientAsBucketView: Bool = false) {
        let device = params[0].device
        for p in params {
            precondition(p.device == device, """
                DistributedDataParallel: every parameter of the module must be on one device (a module on several \
                devices is not supported); found \(device) and \(p.device), a parameter of shape \(p.shape)
                """)
        }
        self.params = params
        self.algorithm = algorithm
        self.gradientAsBucketView = gradientAsBucketView
        self.group = group
        self.scale = 1.0 / Double(group.size)
        marked = [Bool](repeating: false, count: params.count)
        location = [(bucket: Int, offset: Int)](repeating: (0, 0), count: params.count)
        assignBuckets(capBytes: bucketCapBytes, firstBytes: firstBucketBytes)
        if ReducerTrace.enabled { trace = ReducerTrace(bucketBytes: buckets.map { $0.flat.numel * $0.flat.dtype.itemSize }) }
        for (i, p) in params.enumerated() {
            handles.append(p.registerPostAccumulateGradHook { [unowned self] _ in self.markReady(i) })
        }
    }

    deinit { for h in handles { h.remove() } }

    /// PyTorch's bucket assignment: walk the parameters backwards (the order gradients arrive in),
    /// close a dtype's bucket once it reaches the limit (`firstBytes` for the first bucket).
    private func assignBuckets(capBytes: Int, firstBytes: Int) {
        var open: [DType: [Int]] = [:]
        var openBytes: [DType: Int] = [:]
        var groups: [[Int]] = []
        for i in params.indices.reversed() {
            let p = params[i]
            open[p.dtype, default: []].append(i)
            openBytes[p.dtype, default: 0] += p.numel * p.dtype.itemSize
            let limit = groups.isEmpty ? firstBytes : capBytes
            if openBytes[p.dtype]! >= limit {
                groups.append(open[p.dtype]!)
                open[p.dtype] = nil
                openBytes[p.dtype] = nil
            }
        }
        // Still-open buckets in order of their first parameter's arrival.
        groups += open.values.sorted { $0[0] > $1[0] }
        for members in groups {
            let numel = members.reduce(0) { $0 + params[$1].numel }
            let first = params[members[0]]
            let b = Bucket(numel: numel, dtype: first.dtype, device: first.device)
            var offset = 0
            for i in members {
                b.members.append((i, offset))
                location[i] = (buckets.count, offset)
                offset += params[i].numel
            }
            b.pending = members.count
            buckets.append(b)
        }
    }

    /// Called by `forward`: checks the previous iteration's reduction finished.
    func prepareForForward(sync: Bool) {
        precondition(markedCount == 0, """
            DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a new one. \
            This error indicates that your module has parameters that were not used in producing loss. You can enable \
            unused parameter detection by passing `findUnusedParameters: true` to DistributedDataParallel, and by making \
            sure all `forward` function outputs participate in calculating loss.
            """)
        syncThisIteration = sync
    }

    /// Marks the parameters the autograd graph of `output` does not reach as ready (their
    /// bucket slots hold zeros), so their buckets still complete (`findUnusedParameters`).
    func markUnused(reachableFrom output: Tensor) {
        guard syncThisIteration else { return }
        var reached = Set<ObjectIdentifier>()
        var seen = Set<ObjectIdentifier>()
        var stack: [Node] = output.gradFn.map { [$0] } ?? []
        if output.gradFn == nil { reached.insert(ObjectIdentifier(output)) }
        while let n = stack.popLast() {
            guard seen.insert(ObjectIdentifier(n)).inserted else { continue }
            if let acc = n as? AccumulateGrad { reached.insert(ObjectIdentifier(acc.variable)) }
            for e in n.nextEdges { if let c = e.node { stack.append(c) } }
        }
        for (i, p) in params.enumerated() where !reached.contains(ObjectIdentifier(p)) {
            let (b, offset) = location[i]
            torch.noGrad { _ = buckets[b].flat.narrow(0, offset, p.numel).zero_() }
            markSlot(i)
        }
    }

    /// The post-accumulate-grad hook of parameter `i`.
    private func markReady(_ i: Int) {
        guard syncThisIteration else { return }
        trace?.gradientArrived()
        let p = params[i]
        let (b, offset) = location[i]
        copyScaled(p.grad!, into: buckets[b].flat, at: offset)
        markSlot(i)
    }

    private func markSlot(_ i: Int) {
        precondition(!marked[i], """
            DistributedDataParallel: Expected to mark a variable ready only once. This error is caused by a parameter \
            used twice in backward (reentrant backward, a parameter shared by several DDP models, or backward run \
            twice on one forward's graph); parameter index \(i), shape \(params[i].shape).
            """)
        marked[i] = true
        markedCount += 1
        let b = location[i].bucket
        buckets[b].pending -= 1
        if markedCount == params.count { trace?.backwardFinished() }   // before the last bucket's synchronous all-reduce
        // Buckets go out strictly in order so every rank issues the same sequence of all-reduces.
        while nextToLaunch < buckets.count && buckets[nextToLaunch].pending == 0 {
            launch(buckets[nextToLaunch], index: nextToLaunch)
            nextToLaunch += 1
        }
        if nextToLaunch == buckets.count { finish() }
    }

    /// Starts the all-reduce of `bucket`: on the communication thread, except the last bucket,
    /// which backward would wait for at once anyway and so runs on this thread (no hand-off).
    private func launch(_ bucket: Bucket, index: Int) {
        let flat = bucket.flat, comm = group.comm
        precondition(flat.dtype.isFloatingPoint, "DistributedDataParallel: gradients of dtype \(flat.dtype) cannot be averaged")
        precondition(flat.numel <= Int(Int32.max), "DistributedDataParallel: bucket of \(flat.numel) elements is too large; lower bucketCapMB")
        let name = "allReduce (DistributedDataParallel gradient bucket \(index))"
        let traced = trace != nil
        do {
            // NCCL (a `.nccl` group, a bucket on a GPU): enqueued on the device's stream behind the kernels that
            // filled the bucket, in place; nothing to wait for on the host.
            if let nccl = try group.ncclCommunicator(for: flat) {
                trace?.launched(index)
                if traced { bucket.reduceStart = Watchdog.now() }
                try nccl.allReduce(flat, op: .sum, name: name)
                if traced { bucket.reduceEnd = Watchdog.now() }
                return
            }
        } catch {
            fail(error)
        }
        // float32/float64 buckets are reduced in place; float16/bfloat16 ones through a float32 copy (summed
        // in float32 and rounded once, where PyTorch's backends sum in half precision).
        let buffer = StagedBuffer(flat, op: name, reducing: true)
        let deviceBucket = buffer.writesToDevice
        bucket.hostStaging = deviceBucket ? buffer : nil
        let overlapping = index != buckets.count - 1
        let shm = algorithm == .shm ? group.sharedMemory : nil
        trace?.launched(index)
        do {
            bucket.work = try group.run(name, async: overlapping, {
                if traced { bucket.reduceStart = Watchdog.now() }
                if let shm {
                    try shm.allReduce(buffer.pointer, count: Int(buffer.count), type: buffer.mpiType,
                                      polling: MPIWait.polling(overlapping: overlapping), name: name)
                } else {
                    try MPIWait.allReduce(buffer.pointer, count: buffer.count, type: buffer.mpiType, op: STMPI_SUM, comm: comm,
                                          overlapping: overlapping, name: name)
                }
                if !deviceBucket { buffer.writeBack() }
                if traced { bucket.reduceEnd = Watchdog.now() }
            })
        } catch {
            fail(error)
        }
    }

    /// Waits for every bucket, writes the averages into `.grad`, and resets for the next iteration.
    private func finish() {
        for (index, bucket) in buckets.enumerated() {
            do { try bucket.work?.wait() } catch { fail(error) }
            bucket.work = nil
            bucket.hostStaging?.writeBack()
            bucket.hostStaging = nil
            trace?.reducedBucket(index, start: bucket.reduceStart, end: bucket.reduceEnd)
            for (i, offset) in bucket.members {
                let p = params[i]
                let src = bucket.flat.narrow(0, offset, p.numel)
                if gradientAsBucketView {
                    if let g = p.grad, g.isContiguous, g.storage === src.storage, g.storageOffset == src.storageOffset {
                        g.storage.bumpVersion()   // already this slot's view (accumulated in place)
                    } else {
                        p.grad = src.view(p.shape)
                    }
                } else if let g = p.grad {
                    if g.device == .cpu && g.isContiguous && g.dtype == src.dtype {
                        g.rawPointer.copyMemory(from: src.rawPointer, byteCount: p.numel * p.dtype.itemSize)
                    } else {
                        copyKernel(from: src.view(p.shape), into: g)
                    }
                    g.storage.bumpVersion()
                } else {
                    p.grad = src.view(p.shape).clone()
                }
            }
            bucket.pending = bucket.members.count
        }
        for i in marked.indices { marked[i] = false }
        markedCount = 0
        nextToLaunch = 0
        trace?.iterationFinished()
    }

    private func fail(_ error: Error) -> Never {
        MPIRuntime.abortJob("[rank \(group.rank)] DistributedDataParallel: averaging gradients failed: \(error)")
    }

    /// `dst[offset...] = grad * scale` (flattened; `grad` may be that very slot, with `gradientAsBucketView`).
    private func copyScaled(_ grad: Tensor, into dst: Tensor, at offset: Int) {
        checkSameDevice(grad, dst)
        if case .cpu = dst.device, CPUDistributed.copyScaled(grad, into: dst, at: offset, scale: scale) { return }
        let n = grad.numel
        torch.noGrad { _ = dst.narrow(0, offset, n).copy_((grad.detach() * scale).reshape([n])) }
    }
}
