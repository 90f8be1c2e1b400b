#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `nn.SyncBatchNorm` across the ranks against one BatchNorm on the whole batch, which every rank
/// computes itself: each rank takes an unequal slice of a seeded global batch (rank r gets r + 1
/// shares; one case leaves rank 0 empty), runs SyncBatchNorm in training mode for a few steps and
/// compares its output, its input gradient for the loss (y · r).sum(), the running statistics and
/// the summed weight and bias gradients with the reference; then eval mode. Last, a numerical
/// gradient check of the synchronised op in float64.
func runSyncBatchNormChecks() throws {
    try dist.initProcessGroup(backend: .mpi, timeout: .seconds(120))
    let rank = dist.getRank(), world = dist.getWorldSize()
    let log = CheckLog()

    struct Case {
        let name: String
        let shape: [Int]          // the global batch
        let dtype: DType
        let momentum: Double?
        var affine = true
        var emptyRank = false     // rank 0 gets no rows
    }
    let cases = [
        Case(name: "2d", shape: [13, 5, 3, 2], dtype: .float64, momentum: 0.1),
        Case(name: "1d (N, C)", shape: [17, 3], dtype: .float64, momentum: nil),
        Case(name: "1d (N, C, L)", shape: [12, 7, 4], dtype: .float32, momentum: 0.1),
        Case(name: "3d", shape: [9, 3, 2, 2, 3], dtype: .float32, momentum: 0.3),
        Case(name: "2d no affine", shape: [8, 1, 2, 2], dtype: .float64, momentum: 0.1, affine: false),
        Case(name: "2d empty rank", shape: [7, 3, 2, 2], dtype: .float64, momentum: 0.1, emptyRank: true),
    ]
    for c in cases {
        let tol = c.dtype == .float64 ? 1e-10 : 1e-5
        let (start, size) = slice(c.shape[0], rank: rank, world: world, emptyRankZero: c.emptyRank)
        let channels = c.shape[1]
        let reference: nn.BatchNormBase
        switch c.shape.count {
        case 2, 3: reference = nn.BatchNorm1d(channels, momentum: c.momentum, affine: c.affine, dtype: c.dtype)
        case 4: reference = nn.BatchNorm2d(channels, momentum: c.momentum, affine: c.affine, dtype: c.dtype)
        default: reference = nn.BatchNorm3d(channels, momentum: c.momentum, affine: c.affine, dtype: c.dtype)
        }
        let sbn = nn.SyncBatchNorm(channels, momentum: c.momentum, affine: c.affine, dtype: c.dtype)
        let g = Generator().manualSeed(42)                 // the same numbers on every rank
        if c.affine {
            torch.noGrad {
                _ = reference.weight!.copy_(torch.rand(channels, generator: g) + 0.5)
                _ = reference.bias!.copy_(torch.randn(channels, generator: g))
                _ = sbn.weight!.copy_(reference.weight!)
                _ = sbn.bias!.copy_(reference.bias!)
            }
        }
        for step in 0..<3 {
            let label = "\(c.name) \(c.dtype) step \(step)"
            // Far from zero mean, so a naive Σx² − (Σx)²/n would lose digits.
            let X = (torch.randn(c.shape, generator: g) * 3 + 50).to(c.dtype)
            let R = torch.randn(c.shape, generator: g).to(c.dtype)
            let xr = X.clone().requiresGrad_()
            let yr = reference(xr)
            (yr * R).sum().backward()

            let xs = X.narrow(0, start, size).clone().requiresGrad_()
            let ys = sbn(xs)
            (ys * R.narrow(0, start, size)).sum().backward()
            log.expect(ys.gradFn?.name == "SyncBatchNormBackward", "\(label): grad_fn \(ys.gradFn?.name ?? "nil")")
            log.expectClose(ys, yr.narrow(0, start, size), tol: tol, "\(label) output")
            log.expect(xs.grad != nil, "\(label): the input gets a gradient")
            log.expectClose(xs.grad ?? xs, xr.grad!.narrow(0, start, size), tol: tol, "\(label) input gradient")
            log.expectClose(sbn.runningMean!, reference.runningMean!, tol: tol, "\(label) running_mean")
            log.expectClose(sbn.runningVar!, reference.runningVar!, tol: tol * 10, "\(label) running_var")
            log.expect(sbn.numBatchesTracked!.item() == Double(step + 1), "\(label) num_batches_tracked \(sbn.numBatchesTracked!.item())")
            if c.affine {
                // Each rank's parameter gradients are its own sums; summed over the ranks they are the reference's.
                let gw = sbn.weight!.grad!.clone(), gb = sbn.bias!.grad!.clone()
                try dist.allReduce(gw, op: .sum)
                try dist.allReduce(gb, op: .sum)
                log.expectClose(gw, reference.weight!.grad!, tol: tol * 10, "\(label) summed weight gradient")
                log.expectClose(gb, reference.bias!.grad!, tol: tol * 10, "\(label) summed bias gradient")
                sbn.zeroGrad(); reference.zeroGrad()
            }
        }
        sbn.eval(); reference.eval()
        let X = torch.randn(c.shape, generator: g).to(c.dtype)
        log.expectClose(sbn(X.narrow(0, start, size)), reference(X).narrow(0, start, size), tol: tol, "\(c.name) eval output")
    }

    try syncBatchNormGradcheck(log, rank: rank, world: world)
    try log.finish("syncbn")
}

/// Rows `[start, start + size)` of a batch of `n` for `rank`: rank r gets r + 1 shares (the last
/// rank the remainder); with `emptyRankZero`, rank 0 gets none.
private func slice(_ n: Int, rank: Int, world: Int, emptyRankZero: Bool) -> (start: Int, size: Int) {
    let weights = (0..<world).map { emptyRankZero && $0 == 0 ? 0 : $0 + 1 }
    let unit = n / weights.reduce(0, +)
    var sizes = weights.map { $0 * unit }
    sizes[world - 1] += n - sizes.reduce(0, +)
    return (sizes[..<rank].reduce(0, +), sizes[rank])
}

/// Central differences of the global loss Σ_ranks (y · r).sum() with respect to every element of
/// the global input, the weight and the bias, against SyncBatchNorm's gradients (float64; every
/// perturbed forward runs on all ranks, each loss is all-reduced).
private func syncBatchNormGradcheck(_ log: CheckLog, rank: Int, world: Int) throws {
    let shape = [world + 3, 3, 2]
    let (start, size) = slice(shape[0], rank: rank, world: world, emptyRankZero: false)
    let g = Generator().manualSeed(7)
    let X = torch.randn(shape, generator: g).to(.float64)
    let R = torch.randn(shape, generator: g).to(.float64).narrow(0, start, size).contiguous()
    let sbn = nn.SyncBatchNorm(3, trackRunningStats: false, dtype: .float64)
    torch.noGrad {
        _ = sbn.weight!.copy_(torch.rand(3, generator: g) + 0.5)
        _ = sbn.bias!.copy_(torch.randn(3, generator: g))
    }
    let x = X.narrow(0, start, size).contiguous().requiresGrad_()
    (sbn(x) * R).sum().backward()
    let gw = sbn.weight!.grad!.clone(), gb = sbn.bias!.grad!.clone()
    try dist.allReduce(gw, op: .sum)
    try dist.allReduce(gb, op: .sum)

    func globalLoss() throws -> Double {
        let l = torch.noGrad { (sbn(x) * R).sum() }.reshape([1])
        try dist.allReduce(l, op: .sum)
        return l.item()
    }
    /// d(global loss)/d(t[i]), perturbing t[i] on `owner` (every rank when nil).
    func numeric(_ t: Tensor, _ i: Int, owner: Int?) throws -> Double {
        let eps = 1e-6
        let p = t.detach().view([-1])
        let mine = owner == nil || owner == rank
        let orig = mine ? p[i].item() : 0
        if mine { torch.noGrad { p[i] = torch.tensor(orig + eps, dtype: .float64) } }
        let plus = try globalLoss()
        if mine { torch.noGrad { p[i] = torch.tensor(orig - eps, dtype: .float64) } }
        let minus = try globalLoss()
        if mine { torch.noGrad { p[i] = torch.tensor(orig, dtype: .float64) } }
        return (plus - minus) / (2 * eps)
    }
    let perRow = shape[1] * shape[2]
    let analyticX = x.grad!.flatten().toArray(as: Double.self)
    var worst = 0.0
    for owner in 0..<world {
        let (_, ownerRows) = slice(shape[0], rank: owner, world: world, emptyRankZero: false)
        for i in 0..<(ownerRows * perRow) {
            let d = try numeric(x, i, owner: owner)
            if owner == rank { worst = max(worst, abs(d - analyticX[i])) }
        }
    }
    log.expect(worst < 1e-7, "gradcheck: input gradient differs from central differences by \(worst)")
    for (name, param, analytic) in [("weight", sbn.weight!, gw), ("bias", sbn.bias!, gb)] {
        let a = analytic.toArray(as: Double.self)
        for i in 0..<3 {
            let d = try numeric(param, i, owner: nil)
            log.expect(abs(d - a[i]) < 1e-7, "gradcheck: \(name)[\(i)] analytic \(a[i]) vs numeric \(d)")
        }
    }
}

extension CheckLog {
    /// Compares shapes and values (absolute plus relative tolerance `tol`).
    func expectClose(_ got: Tensor, _ want: Tensor, tol: Double, _ what: String) {
        count += 1
        guard got.shape == want.shape else {
            failures.append("\(what): shape \(got.shape), expected \(want.shape)")
            return
        }
        let a = got.detach().to(.float64).flatten().toArray(as: Double.self)
        let b = want.detach().to(.float64).flatten().toArray(as: Double.self)
        for (i, (x, y)) in zip(a, b).enumerated() where !(abs(x - y) <= tol * (1 + abs(y))) {
            failures.append("\(what): element \(i) is \(x), expected \(y)")
            return
        }
    }
}
