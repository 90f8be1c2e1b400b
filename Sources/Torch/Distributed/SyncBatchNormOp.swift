/// The op behind `nn.SyncBatchNorm` in training mode: batch normalisation whose statistics span the
/// batches of every rank of a process group (PyTorch's `torch.nn.modules._functions.SyncBatchNorm`).
///
/// Forward: each rank computes per-channel count, mean and M2 = Σ (x − mean)² of its own batch in
/// double; one all-gather shares them and every rank merges them in rank order with Chan et al.'s
/// pairwise formula (exact for unequal counts, no cancellation), giving identical global statistics
/// on every rank. The input is normalised with the global mean and biased variance by the batch-norm
/// forward kernel; running statistics take the global mean and unbiased variance.
///
/// Backward: the per-channel Σ dy and Σ (x − mean) · dy of each rank are all-reduced, and the input
/// gradient uses them with the global count. The weight and bias gradients stay local sums:
/// DistributedDataParallel averages them with every other gradient, as in PyTorch.
///
/// A rank whose batch is empty still takes part in both collectives (count 0), so its peers never
/// wait for it.

/// Training-mode batch norm of an `(N, C, *)` input over every rank of `group`, updating the
/// running statistics (when given) with weight `momentum`. Records `SyncBatchNormBackward`.
func syncBatchNorm(_ input: Tensor, weight: Tensor?, bias: Tensor?, runningMean: Tensor?, runningVar: Tensor?,
                   momentum: Double, eps: Double, group: dist.ProcessGroup) -> Tensor {
    precondition(input.dim >= 2, "SyncBatchNorm: expected an input of shape (N, C, *) with at least 2 dims, got a \(input.dim)-D input of shape \(shapeString(input.shape))")
    precondition(input.dtype.isFloatingPoint, "SyncBatchNorm: expected a floating point input, got \(input.dtype)")
    precondition(eps > 0, "SyncBatchNorm: eps must be positive during training, but got \(pyFloat(eps))")
    let c = input.shape[1]
    precondition(c > 0, "SyncBatchNorm: number of input channels should be non-zero, got input of shape \(shapeString(input.shape))")
    for (name, t) in [("running_mean", runningMean), ("running_var", runningVar), ("weight", weight), ("bias", bias)] {
        if let t, t.numel != c { preconditionFailure(batchNormFeatureMismatchMessage(name, expected: c, actual: t.numel)) }
    }
    checkSameDevice(input, [weight, bias, runningMean, runningVar])
    guard case .cpu = input.device else {
        preconditionFailure("SyncBatchNorm: expected CPU tensors (the process groups reduce host memory), got \(input.device)")
    }
    let localCount = input.numel / c

    // This rank's [count, mean (C), M2 (C)], then every rank's.
    let local = CPUNormalization.batchNormMoments(input)
    let gathered = Tensor(uninitializedShape: [group.size, 2 * c + 1], dtype: .float64)
    syncCollective(group, "gathering the batch statistics") {
        try dist.allGatherIntoTensor(gathered, local, group: group)
    }
    let stats = CPUNormalization.mergeMoments(gathered, ranks: group.size, channels: c)

    if stats.count == 0 {
        // Every rank's batch is empty: what BatchNorm does with an empty batch (no statistics).
        return nativeBatchNorm(input, weight: weight, bias: bias, runningMean: nil, runningVar: nil,
                               training: true, momentum: momentum, eps: eps)
    }
    precondition(stats.count > 1, "SyncBatchNorm: Expected more than 1 value per channel when training, got 1 value per channel over all \(group.size) ranks (input size on rank \(group.rank): torch.Size(\(shapeString(input.shape))))")
    let total = Double(stats.count)
    if let runningMean { updateRunningStatistic(runningMean, stats.mean, momentum: momentum) }
    if let runningVar { updateRunningStatistic(runningVar, stats.m2.map { $0 / (total - 1) }, momentum: momentum) }

    // Normalise with the global mean and biased variance: the forward kernel's evaluation path
    // takes them as its "running" statistics and gives the mean and invstd backward needs.
    let ct = input.dtype.computeType
    let result: Tensor, mean: Tensor, invstd: Tensor
    if localCount > 0 {
        let globalMean = Tensor(stats.mean, shape: [c]).to(ct)
        let globalVar = Tensor(stats.m2.map { $0 / total }, shape: [c]).to(ct)
        (result, mean, invstd) = CPUNormalization.batchNorm(input, weight: weight, bias: bias, runningMean: globalMean,
                                                            runningVar: globalVar, training: false, momentum: 0, eps: eps)
    } else {
        // Unused but for the (zero) local weight gradient.
        result = Tensor(uninitializedShape: input.shape, dtype: input.dtype)
        mean = torch.zeros([c], dtype: ct); invstd = torch.zeros([c], dtype: ct)
    }
    let count = stats.count
    recordNormalization("SyncBatchNormBackward", result, input: input, weight: weight, bias: bias, saved: { [] }) { g, xs, ws, needs in
        syncBatchNormBackward(g, xs, ws, mean: mean, invstd: invstd, count: count, needs: needs, group: group)
    }
    return result
}

/// Gradients of `syncBatchNorm`. The input gradient needs the all-reduced per-channel sums, so
/// every rank must run this backward when one does (as every rank must run the forward).
/// The gradients are computed without recording: like PyTorch's, this op has no double backward.
private func syncBatchNormBackward(_ g: Tensor, _ x: Tensor, _ weight: Tensor?, mean: Tensor, invstd: Tensor, count: Int,
                                   needs: (Bool, Bool, Bool), group: dist.ProcessGroup) -> (Tensor?, Tensor?, Tensor?) {
    let c = x.shape[1]
    let pType = weight?.dtype ?? x.dtype
    // [Σ dy (C), Σ (x − mean) · dy (C)] over this rank's batch.
    let sums = CPUNormalization.batchNormGradientSums(g, x, mean: mean)
    // Local sums: DDP averages the parameter gradients later.
    let gw = needs.1 ? (sums.narrow(0, c, c) * invstd).to(pType) : nil
    let gb = needs.2 ? sums.narrow(0, 0, c).clone().to(pType) : nil
    guard needs.0 else { return (nil, gw, gb) }

    syncCollective(group, "reducing the batch-norm gradient sums") {
        try dist.allReduce(sums, op: .sum, group: group)
    }
    let gx = CPUNormalization.batchNormGradientInput(g, x, weight: weight, mean: mean, invstd: invstd, sums: sums, count: count)
    return (gx, gw, gb)
}

/// `stat = (1 − momentum) · stat + momentum · batch`, in double, in place.
private func updateRunningStatistic(_ stat: Tensor, _ batch: [Double], momentum: Double) {
    let old = stat.detach().to(.float64).contiguous().toArray(as: Double.self)
    let updated = zip(old, batch).map { momentum * $1 + (1 - momentum) * $0 }
    copyKernel(from: Tensor(updated, shape: stat.shape), into: stat)
    stat.storage.bumpVersion()
}

/// Runs a collective of the op; a failure ends the job (a forward or backward cannot throw, and
/// the other ranks would otherwise wait for this one), as DistributedDataParallel does.
private func syncCollective(_ group: dist.ProcessGroup, _ what: String, _ body: () throws -> Void) {
    do {
        try body()
    } catch {
        MPIRuntime.abortJob("[rank \(group.rank)] SyncBatchNorm: \(what) failed: \(error)")
    }
}
