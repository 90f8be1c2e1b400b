import CMPIShim

// The collectives of `torch.distributed` on CPU and CUDA tensors of every dtype. Each works in place on
// the tensors given (non-contiguous and CUDA ones through a host staging copy, `StagedBuffer`) and, with
// `async: true`, returns a `Work` to `wait()` on; otherwise nil after the call has completed on this rank.
// In a `.nccl` group, all-reduce and broadcast of CUDA tensors go to NCCL on the device instead; they return
// once enqueued on the device's stream, where every later kernel sees their result.

extension dist {
    /// Reduces `tensor` over all ranks in place (PyTorch's `all_reduce`).
    ///
    /// ```swift
    /// let t = torch.tensor([Float(dist.getRank())])
    /// try dist.allReduce(t, op: .max)
    /// ```
    @discardableResult
    public static func allReduce(_ tensor: Tensor, op: ReduceOp = .sum, group: ProcessGroup? = nil,
                                 async: Bool = false) throws -> Work? {
        let g = resolve(group, "allReduce")
        checkAvg(op, tensor, "allReduce")
        if let nccl = try g.ncclCommunicator(for: tensor) {
            try nccl.allReduce(tensor, op: op, name: "allReduce")
            return async ? Work.completed(op: "allReduce") : nil   // ordered on the device's stream
        }
        let b = StagedBuffer(tensor, op: "allReduce", reducing: true)
        let mpiOp = op.mpiOp(for: tensor.dtype)
        let wantsShm = AllReduceAlgorithm.forAllReduce == .shm
            && AllReduceAlgorithm.eligible(type: b.mpiType, op: mpiOp, bytes: Int(b.count) * MPIWait.byteSize(b.mpiType),
                                           minBytes: AllReduceAlgorithm.minBytesForAllReduce)
        return try g.run("allReduce", async: async, {
            if wantsShm, try g.allReduceAlgorithm(.shm) == .shm, let shm = g.sharedMemory {
                try shm.allReduce(b.pointer, count: Int(b.count), type: b.mpiType, polling: MPIWait.polling(overlapping: false),
                                  name: "allReduce")
            } else {
                try MPIWait.allReduce(b.pointer, count: b.count, type: b.mpiType, op: mpiOp, comm: g.comm, name: "allReduce")
            }
        }, finish: {
            if op == .avg { b.divide(by: g.size) }
            b.writeBack()
        })
    }

    /// The algorithm `allReduce` uses for `tensor` with `op` on `group` (a SwiftTorch addition, for
    /// benchmarks and diagnostics): `.shm` for float32/float64 sums and averages of at least
    /// SWIFTTORCH_SHM_MIN_KB (default 1024) when every rank shares this host and SWIFTTORCH_ALLREDUCE is not
    /// `mpi`; else `.mpi`. The first call that could use `.shm` on a group is collective (it looks at the
    /// ranks' hosts), like `allReduce` itself.
    public static func allReduceAlgorithm(for tensor: Tensor, op: ReduceOp = .sum, group: ProcessGroup? = nil) throws -> AllReduceAlgorithm {
        let g = resolve(group, "allReduceAlgorithm")
        let b = StagedBuffer(tensor, op: "allReduceAlgorithm", reducing: true)
        let mpiOp = op.mpiOp(for: tensor.dtype)
        guard AllReduceAlgorithm.forAllReduce == .shm,
              AllReduceAlgorithm.eligible(type: b.mpiType, op: mpiOp, bytes: Int(b.count) * MPIWait.byteSize(b.mpiType),
                                          minBytes: AllReduceAlgorithm.minBytesForAllReduce) else { return .mpi }
        var algorithm = AllReduceAlgorithm.mpi
        _ = try g.run("allReduceAlgorithm", async: false) { algorithm = try g.allReduceAlgorithm(.shm) }
        return algorithm
    }

    /// Copies `tensor` from rank `src` to every rank (PyTorch's `broadcast`).
    @discardableResult
    public static func broadcast(_ tensor: Tensor, src: Int, group: ProcessGroup? = nil,
                                 async: Bool = false) throws -> Work? {
        let g = resolve(group, "broadcast")
        checkRank(src, g, "broadcast", "src")
        if let nccl = try g.ncclCommunicator(for: tensor) {
            try nccl.broadcast(tensor, root: src, name: "broadcast")
            return async ? Work.completed(op: "broadcast") : nil
        }
        let b = StagedBuffer(tensor, op: "broadcast", reducing: false, copyIn: g.rank == src)
        return try g.run("broadcast", async: async, {
            try MPIWait.broadcast(b.pointer, count: b.count, type: b.mpiType, root: Int32(src), comm: g.comm, name: "broadcast")
        }, finish: { if g.rank != src { b.writeBack() } })
    }

    /// Reduces `tensor` over all ranks into rank `dst`'s `tensor` (the others' are left as they were).
    @discardableResult
    public static func reduce(_ tensor: Tensor, dst: Int, op: ReduceOp = .sum, group: ProcessGroup? = nil,
                              async: Bool = false) throws -> Work? {
        let g = resolve(group, "reduce")
        checkRank(dst, g, "reduce", "dst")
        checkAvg(op, tensor, "reduce")
        let b = StagedBuffer(tensor, op: "reduce", reducing: true)
        let mpiOp = op.mpiOp(for: tensor.dtype)
        let isRoot = g.rank == dst
        return try g.run("reduce", async: async, {
            try MPIRuntime.check(stmpi_reduce(isRoot ? nil : b.pointer, b.pointer, b.count, Int32(b.mpiType.rawValue),
                                              Int32(mpiOp.rawValue), Int32(dst), g.comm), "reduce")
        }, finish: {
            guard isRoot else { return }
            if op == .avg { b.divide(by: g.size) }
            b.writeBack()
        })
    }

    /// Gathers every rank's `tensor` into `tensorList` (one entry per rank, each of `tensor`'s
    /// shape and dtype; PyTorch's `all_gather`).
    @discardableResult
    public static func allGather(_ tensorList: [Tensor], _ tensor: Tensor, group: ProcessGroup? = nil,
                                 async: Bool = false) throws -> Work? {
        let g = resolve(group, "allGather")
        checkList(tensorList, like: tensor, g, "allGather", "tensorList")
        let input = StagedBuffer(tensor, op: "allGather", reducing: false)
        let output = Tensor(uninitializedShape: [g.size] + tensor.shape, dtype: tensor.dtype)
        return try g.run("allGather", async: async, {
            try MPIRuntime.check(stmpi_allgather(input.pointer, input.count, output.rawPointer,
                                                 Int32(input.mpiType.rawValue), g.comm), "allGather")
        }, finish: { unstack(output, into: tensorList) })
    }

    /// Gathers every rank's `input` into `output`, concatenated along dimension 0 or stacked
    /// (`output` has `worldSize × input.numel` elements; PyTorch's `all_gather_into_tensor`).
    @discardableResult
    public static func allGatherIntoTensor(_ output: Tensor, _ input: Tensor, group: ProcessGroup? = nil,
                                           async: Bool = false) throws -> Work? {
        let g = resolve(group, "allGatherIntoTensor")
        precondition(output.dtype == input.dtype, "dist.allGatherIntoTensor: output dtype \(output.dtype) must match input dtype \(input.dtype)")
        precondition(output.numel == input.numel * g.size,
                     "dist.allGatherIntoTensor: output tensor size must be equal to world_size times input tensor size (output \(output.shape), input \(input.shape), world size \(g.size))")
        let inBuf = StagedBuffer(input, op: "allGatherIntoTensor", reducing: false)
        let outBuf = StagedBuffer(output, op: "allGatherIntoTensor", reducing: false, copyIn: false)
        return try g.run("allGatherIntoTensor", async: async, {
            try MPIRuntime.check(stmpi_allgather(inBuf.pointer, inBuf.count, outBuf.pointer,
                                                 Int32(inBuf.mpiType.rawValue), g.comm), "allGatherIntoTensor")
        }, finish: { outBuf.writeBack() })
    }

    /// Reduces `inputList[r]` over all ranks into rank `r`'s `output` (PyTorch's `reduce_scatter`).
    @discardableResult
    public static func reduceScatter(_ output: Tensor, _ inputList: [Tensor], op: ReduceOp = .sum,
                                     group: ProcessGroup? = nil, async: Bool = false) throws -> Work? {
        let g = resolve(group, "reduceScatter")
        checkList(inputList, like: output, g, "reduceScatter", "inputList")
        let stacked = torch.noGrad { torch.stack(inputList.map { $0.detach() }) }
        return try reduceScatterTensor(output, stacked, op: op, group: g, async: async, name: "reduceScatter")
    }

    /// Reduces `input` (`worldSize` blocks of `output`'s size, concatenated or stacked) over all
    /// ranks, leaving block `r` of the result in rank `r`'s `output` (PyTorch's `reduce_scatter_tensor`).
    @discardableResult
    public static func reduceScatterTensor(_ output: Tensor, _ input: Tensor, op: ReduceOp = .sum,
                                           group: ProcessGroup? = nil, async: Bool = false) throws -> Work? {
        try reduceScatterTensor(output, input, op: op, group: group, async: async, name: "reduceScatterTensor")
    }

    private static func reduceScatterTensor(_ output: Tensor, _ input: Tensor, op: ReduceOp, group: ProcessGroup?,
                                            async: Bool, name: String) throws -> Work? {
        let g = resolve(group, name)
        precondition(output.dtype == input.dtype, "dist.\(name): output dtype \(output.dtype) must match input dtype \(input.dtype)")
        precondition(input.numel == output.numel * g.size,
                     "dist.\(name): input tensor must be the same size as output size times world size (input \(input.shape), output \(output.shape), world size \(g.size))")
        checkAvg(op, output, name)
        let inBuf = StagedBuffer(input, op: name, reducing: true)
        let outBuf = StagedBuffer(output, op: name, reducing: true, copyIn: false)
        let mpiOp = op.mpiOp(for: output.dtype)
        return try g.run(name, async: async, {
            try MPIRuntime.check(stmpi_reduce_scatter_block(inBuf.pointer, outBuf.pointer, outBuf.count,
                                                            Int32(outBuf.mpiType.rawValue), Int32(mpiOp.rawValue), g.comm), name)
        }, finish: {
            if op == .avg { outBuf.divide(by: g.size) }
            outBuf.writeBack()
        })
    }

    /// Gathers every rank's `tensor` into `gatherList` on rank `dst` (the other ranks pass nil;
    /// PyTorch's `gather`).
    @discardableResult
    public static func gather(_ tensor: Tensor, gatherList: [Tensor]? = nil, dst: Int = 0,
                              group: ProcessGroup? = nil, async: Bool = false) throws -> Work? {
        let g = resolve(group, "gather")
        checkRank(dst, g, "gather", "dst")
        let isRoot = g.rank == dst
        if isRoot {
            precondition(gatherList != nil, "dist.gather: Argument ``gather_list`` must be specified on destination rank.")
            checkList(gatherList!, like: tensor, g, "gather", "gatherList")
        } else {
            precondition(gatherList == nil || gatherList!.isEmpty, "dist.gather: Argument ``gather_list`` must NOT be specified on non-destination ranks.")
        }
        let input = StagedBuffer(tensor, op: "gather", reducing: false)
        let output = isRoot ? Tensor(uninitializedShape: [g.size] + tensor.shape, dtype: tensor.dtype) : nil
        return try g.run("gather", async: async, {
            try MPIRuntime.check(stmpi_gather(input.pointer, input.count, output?.rawPointer, Int32(input.mpiType.rawValue),
                                              Int32(dst), g.comm), "gather")
        }, finish: { if let output { unstack(output, into: gatherList!) } })
    }

    /// Sends `scatterList[r]` from rank `src` into rank `r`'s `tensor` (the other ranks pass nil;
    /// PyTorch's `scatter`).
    @discardableResult
    public static func scatter(_ tensor: Tensor, scatterList: [Tensor]? = nil, src: Int = 0,
                               group: ProcessGroup? = nil, async: Bool = false) throws -> Work? {
        let g = resolve(group, "scatter")
        checkRank(src, g, "scatter", "src")
        let isRoot = g.rank == src
        var input: Tensor?
        if isRoot {
            precondition(scatterList != nil, "dist.scatter: Argument ``scatter_list`` must be specified on source rank.")
            checkList(scatterList!, like: tensor, g, "scatter", "scatterList")
            input = onHost(torch.noGrad { torch.stack(scatterList!.map { $0.detach() }) })
        } else {
            precondition(scatterList == nil || scatterList!.isEmpty, "dist.scatter: Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        }
        let output = StagedBuffer(tensor, op: "scatter", reducing: false, copyIn: false)
        return try g.run("scatter", async: async, {
            try MPIRuntime.check(stmpi_scatter(input?.rawPointer, output.count, output.pointer, Int32(output.mpiType.rawValue),
                                               Int32(src), g.comm), "scatter")
        }, finish: { output.writeBack() })
    }

    /// Sends `inputList[r]` to rank `r` and receives rank `r`'s into `outputList[r]` (every
    /// tensor of one shape and dtype; PyTorch's `all_to_all`).
    @discardableResult
    public static func allToAll(_ outputList: [Tensor], _ inputList: [Tensor], group: ProcessGroup? = nil,
                                async: Bool = false) throws -> Work? {
        let g = resolve(group, "allToAll")
        precondition(!inputList.isEmpty, "dist.allToAll: inputList must have one tensor per rank (\(g.size)), got 0")
        checkList(inputList, like: inputList[0], g, "allToAll", "inputList")
        checkList(outputList, like: inputList[0], g, "allToAll", "outputList")
        let input = onHost(torch.noGrad { torch.stack(inputList.map { $0.detach() }) })
        let output = Tensor(uninitializedShape: input.shape, dtype: input.dtype)
        let block = StagedBuffer(input.select(0, 0), op: "allToAll", reducing: false)   // host memory: no copy
        let per = block.count, type = Int32(block.mpiType.rawValue)
        return try g.run("allToAll", async: async, {
            try MPIRuntime.check(stmpi_alltoall(input.rawPointer, per, output.rawPointer, type, g.comm), "allToAll")
        }, finish: { unstack(output, into: outputList) })
    }

    // MARK: Argument checks (programmer errors: preconditions with PyTorch's wording)

    static func checkRank(_ r: Int, _ g: ProcessGroup, _ op: String, _ name: String) {
        precondition(r >= 0 && r < g.size, "dist.\(op): invalid \(name) rank \(r) for a group of size \(g.size)")
    }

    static func checkAvg(_ op: ReduceOp, _ t: Tensor, _ name: String) {
        precondition(op != .avg || t.dtype.isFloatingPoint,
                     "dist.\(name): ReduceOp.AVG needs a floating-point tensor, got \(t.dtype)")
    }

    static func checkList(_ list: [Tensor], like t: Tensor, _ g: ProcessGroup, _ op: String, _ name: String) {
        precondition(list.count == g.size, "dist.\(op): \(name) must have one tensor per rank (\(g.size)), got \(list.count)")
        for (i, x) in list.enumerated() {
            precondition(x.shape == t.shape && x.dtype == t.dtype && x.device == t.device,
                         "dist.\(op): \(name)[\(i)] has shape \(x.shape), dtype \(x.dtype) on \(x.device); expected \(t.shape) and \(t.dtype) on \(t.device)")
        }
    }

    /// Copies block `r` of `stacked` (host memory) into `list[r]` (on any device).
    static func unstack(_ stacked: Tensor, into list: [Tensor]) {
        for (r, dst) in list.enumerated() {
            copyAcrossDevices(from: stacked.select(0, r), into: dst)
            dst.storage.bumpVersion()
        }
    }
}
