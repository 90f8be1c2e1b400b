import CCUDAShim

/// Fused row-wise ops on CUDA (the `fused` kernel family, `FusedKernelSource`): softmax and log-softmax with
/// their backward passes, cross-entropy on class indices, LayerNorm, BatchNorm and the median/mode picks of
/// sorted rows, each one or two launches. The ops (Softmax.swift, the losses, Normalization.swift,
/// Sorting.swift) keep shapes, dtypes and autograd and call these from the CUDA case of their one device switch;
/// the CPU case calls the twins `CPUSoftmax`, `CPUClassLoss` and `CPUNormalization`.
///
/// Statistics kept between forward and backward (log-sum-exp, mean, rstd, invstd, the total weight) are in the
/// accumulator dtype: float32 for the half types and float32, float64 for float64.
enum CUDAFused {
    /// The dtype the kernels accumulate and keep statistics in for inputs of `d`.
    static func accumulatorDType(_ d: DType) -> DType { d == .float64 ? .float64 : .float32 }

    private static func context(_ t: Tensor, _ op: String) -> CUDADeviceContext {
        guard case .cuda(let index) = t.device else { preconditionFailure("\(op): expected a CUDA tensor, got one on \(t.device)") }
        return CUDARuntime.device(index)
    }

    /// Arguments for a `[outer, length, inner]` problem with up to eight operands.
    private static func arguments(outer: Int, length: Int, inner: Int = 1, flags: Int = 0, index: Int = 0,
                                  _ p: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64),
                                  f: (Double, Double) = (0, 0)) -> stcu_fused_args {
        var a = stcu_fused_args()
        a.outer = Int64(outer); a.length = Int64(length); a.inner = Int64(inner); a.flags = Int64(flags); a.index = Int64(index)
        a.ptr = p
        a.f = (f.0, f.1, 0, 0)
        return a
    }

    /// One block per row (grid-stride beyond 32 blocks per SM), `FusedKernelSource.rowBlock(length)` threads.
    private static func launchRows(_ op: FusedKernelOp, _ d: DType, _ ctx: CUDADeviceContext, rows: Int, length: Int,
                                   _ args: inout stcu_fused_args) {
        let grid = UInt32(Swift.max(1, Swift.min(rows, ctx.multiprocessorCount * 32)))
        ctx.launch(.fused(op, d), grid: (grid, 1), block: FusedKernelSource.rowBlock(length), args: &args, "fused_\(op.name)")
    }

    /// One thread per item (lines, columns or elements), grid-stride.
    private static func launchItems(_ op: FusedKernelOp, _ d: DType, _ ctx: CUDADeviceContext, items: Int,
                                    _ args: inout stcu_fused_args) {
        ctx.launch(.fused(op, d), items: items, block: FusedKernelSource.maxRowBlock, args: &args, "fused_\(op.name)")
    }

    /// `[outer, n, inner]` sizes of `shape` around dim `d` (a 0-d tensor counts as `[1]`).
    static func split(_ shape: [Int], _ d: Int) -> (outer: Int, n: Int, inner: Int) {
        if shape.isEmpty { return (1, 1, 1) }
        return (shape[..<d].reduce(1, *), shape[d], shape[(d + 1)...].reduce(1, *))
    }

    /// Launches a softmax-family row op over `[outer, n, inner]`: whole blocks per row when the dim is the
    /// last one, else one thread per line (neighbouring threads read neighbouring columns).
    private static func softmaxFamily(_ op: FusedKernelOp, _ shape: [Int], dim: Int, dtype: DType, ctx: CUDADeviceContext,
                                      _ p: (UInt64, UInt64, UInt64)) {
        let (outer, n, inner) = split(shape, dim)
        var args = arguments(outer: outer, length: n, inner: inner, (p.0, p.1, p.2, 0, 0, 0, 0, 0))
        if inner == 1 { launchRows(op, dtype, ctx, rows: outer, length: n, &args) }
        else { launchItems(op, dtype, ctx, items: outer * inner, &args) }
    }

    /// softmax (or log_softmax) of `x` along `dim`, one launch, in x's dtype.
    static func softmax(_ x: Tensor, dim: Int, log: Bool) -> Tensor {
        let ctx = context(x, "softmax")
        let src = x.contiguous()
        let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        if x.numel > 0 {
            softmaxFamily(log ? .logSoftmax : .softmax, x.shape, dim: dim, dtype: x.dtype, ctx: ctx,
                          (src.deviceAddress, out.deviceAddress, 0))
        }
        return out
    }

    /// The input gradient of softmax (or log_softmax) from the output gradient `g` and the output `y`, one launch.
    static func softmaxBackward(_ g: Tensor, _ y: Tensor, dim: Int, log: Bool) -> Tensor {
        let ctx = context(y, "softmax_backward")
        let gc = (g.dtype == y.dtype ? g : g.to(y.dtype)).contiguous(), yc = y.contiguous()
        let out = Tensor(uninitializedShape: y.shape, dtype: y.dtype, device: y.device)
        if y.numel > 0 {
            softmaxFamily(log ? .logSoftmaxBackward : .softmaxBackward, y.shape, dim: dim, dtype: y.dtype, ctx: ctx,
                          (gc.deviceAddress, yc.deviceAddress, out.deviceAddress))
        }
        return out
    }

    /// What the cross-entropy forward keeps for its backward.
    struct CrossEntropySaved {
        /// Per-row log Σ exp(x), `[rows]` in the accumulator dtype.
        let logSumExp: Tensor
        /// Σ weight[target] over the counted rows, `[]` in the accumulator dtype (filled for `mean`/`sum`).
        let totalWeight: Tensor
    }

    /// log_softmax + NLL of contiguous logits viewed as `[N, C, S]` (geometry `geo`) at int64 class indices:
    /// two launches (per-row losses, then one block reducing them; one launch for `.none`). Targets outside
    /// `[0, C)` that are not `ignoreIndex` give NaN (PyTorch's GPU asserts instead).
    static func crossEntropy(_ x: Tensor, target: Tensor, weight: Tensor?, ignoreIndex: Int, reduction: nn.Reduction,
                             geometry geo: ClassLossGeometry) -> (loss: Tensor, saved: CrossEntropySaved) {
        let ctx = context(x, "cross_entropy_loss")
        let acc = accumulatorDType(x.dtype)
        let rows = geo.rows
        let rowLoss = Tensor(uninitializedShape: [rows], dtype: acc, device: x.device)
        let rowWeight = Tensor(uninitializedShape: [rows], dtype: acc, device: x.device)
        let lse = Tensor(uninitializedShape: [rows], dtype: acc, device: x.device)
        let total = Tensor(uninitializedShape: [], dtype: acc, device: x.device)
        let out = Tensor(uninitializedShape: reduction == .none ? geo.nodeOutShape : [], dtype: x.dtype, device: x.device)
        var args = arguments(outer: rows, length: geo.c, inner: geo.s, flags: reduction == .none ? 1 : 0, index: ignoreIndex,
                             (x.deviceAddress, target.deviceAddress, weight?.deviceAddress ?? 0, rowLoss.deviceAddress,
                              rowWeight.deviceAddress, lse.deviceAddress, out.deviceAddress, total.deviceAddress))
        if rows > 0 {
            if geo.s == 1 { launchRows(.crossEntropyRows, x.dtype, ctx, rows: rows, length: geo.c, &args) }
            else { launchItems(.crossEntropyRows, x.dtype, ctx, items: rows, &args) }
        }
        if reduction != .none {
            args.flags = reduction == .mean ? 1 : 0
            // One block; its threads stride over the rows (a handful per thread for a classifier's batch).
            ctx.launch(.fused(.crossEntropyReduce, x.dtype), grid: (1, 1), block: FusedKernelSource.maxRowBlock, args: &args,
                       "fused_crossEntropyReduce")
        }
        return (out, CrossEntropySaved(logSumExp: lse, totalWeight: total))
    }

    /// The gradient of `crossEntropy` w.r.t. the logits from the loss gradient `g` (a scalar, or one per row for
    /// `.none`): `k · (softmax − one-hot)`, one launch.
    static func crossEntropyBackward(_ g: Tensor, x: Tensor, target: Tensor, weight: Tensor?, ignoreIndex: Int,
                                     reduction: nn.Reduction, geometry geo: ClassLossGeometry, saved: CrossEntropySaved) -> Tensor {
        let ctx = context(x, "nll_loss_backward")
        let gc = (g.dtype == x.dtype ? g : g.to(x.dtype)).contiguous()
        let grad = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        if x.numel == 0 { return grad }
        var flags = reduction == .mean ? 1 : 0
        if reduction == .none { flags |= 2 }
        var args = arguments(outer: geo.rows, length: geo.c, inner: geo.s, flags: flags, index: ignoreIndex,
                             (x.deviceAddress, target.deviceAddress, weight?.deviceAddress ?? 0, grad.deviceAddress, 0,
                              saved.logSumExp.deviceAddress, gc.deviceAddress, saved.totalWeight.deviceAddress))
        launchItems(.crossEntropyBackward, x.dtype, ctx, items: x.numel, &args)
        return grad
    }

    /// LayerNorm of contiguous `x` as `m` rows of `n`, with contiguous `weight`/`bias` of x's dtype: the output
    /// and the per-row mean and rstd (accumulator dtype). One launch.
    static func layerNorm(_ x: Tensor, rows m: Int, length n: Int, weight: Tensor?, bias: Tensor?, eps: Double)
        -> (out: Tensor, mean: Tensor, rstd: Tensor) {
        let ctx = context(x, "native_layer_norm")
        let acc = accumulatorDType(x.dtype)
        let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        let mean = Tensor(uninitializedShape: [m], dtype: acc, device: x.device)
        let rstd = Tensor(uninitializedShape: [m], dtype: acc, device: x.device)
        if m > 0 && n > 0 {
            var args = arguments(outer: m, length: n, (x.deviceAddress, weight?.deviceAddress ?? 0, bias?.deviceAddress ?? 0,
                                                       out.deviceAddress, mean.deviceAddress, rstd.deviceAddress, 0, 0),
                                 f: (eps, 0))
            launchRows(.layerNorm, x.dtype, ctx, rows: m, length: n, &args)
        }
        return (out, mean, rstd)
    }

    /// LayerNorm's gradients (each only when asked): dx by rows (one launch), dγ and dβ by columns (one launch).
    static func layerNormBackward(_ g: Tensor, _ x: Tensor, rows m: Int, length n: Int, weight: Tensor?, mean: Tensor,
                                  rstd: Tensor, paramShape: [Int], needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
        let ctx = context(x, "native_layer_norm_backward")
        let gc = (g.dtype == x.dtype ? g : g.to(x.dtype)).contiguous()
        let gx = needs.0 ? Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device) : nil
        let gw = needs.1 ? Tensor(uninitializedShape: paramShape, dtype: x.dtype, device: x.device) : nil
        let gb = needs.2 ? Tensor(uninitializedShape: paramShape, dtype: x.dtype, device: x.device) : nil
        if m == 0 || n == 0 {
            for t in [gx, gw, gb] { _ = t?.zero_() }
            return (gx, gw, gb)
        }
        if let gx {
            var args = arguments(outer: m, length: n, (gc.deviceAddress, x.deviceAddress, weight?.deviceAddress ?? 0,
                                                       gx.deviceAddress, mean.deviceAddress, rstd.deviceAddress, 0, 0))
            launchRows(.layerNormBackwardInput, x.dtype, ctx, rows: m, length: n, &args)
        }
        if gw != nil || gb != nil {
            var args = arguments(outer: m, length: n, (gc.deviceAddress, x.deviceAddress, 0, 0, mean.deviceAddress,
                                                       rstd.deviceAddress, gw?.deviceAddress ?? 0, gb?.deviceAddress ?? 0))
            launchItems(.layerNormBackwardParams, x.dtype, ctx, items: n, &args)
        }
        return (gx, gw, gb)
    }

    /// BatchNorm of contiguous `(N, C, *)` `x` with per-channel `weight`/`bias`/running statistics (contiguous, x's
    /// dtype): batch statistics when `training` (running ones updated in place), else the running ones. The
    /// output and the per-channel mean and invstd (accumulator dtype). One launch, one block per channel.
    static func batchNorm(_ x: Tensor, weight: Tensor?, bias: Tensor?, runningMean: Tensor?, runningVar: Tensor?,
                          training: Bool, momentum: Double, eps: Double) -> (out: Tensor, mean: Tensor, invstd: Tensor) {
        let ctx = context(x, "native_batch_norm")
        let n = x.shape[0], c = x.shape[1], l = x.numel / Swift.max(n * c, 1)
        let acc = accumulatorDType(x.dtype)
        let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        let mean = Tensor(uninitializedShape: [c], dtype: acc, device: x.device)
        let invstd = Tensor(uninitializedShape: [c], dtype: acc, device: x.device)
        var args = arguments(outer: c, length: n, inner: l, flags: training ? 1 : 0,
                             (x.deviceAddress, weight?.deviceAddress ?? 0, bias?.deviceAddress ?? 0, out.deviceAddress,
                              mean.deviceAddress, invstd.deviceAddress, runningMean?.deviceAddress ?? 0,
                              runningVar?.deviceAddress ?? 0), f: (eps, momentum))
        launchRows(.batchNorm, x.dtype, ctx, rows: c, length: n * l, &args)
        return (out, mean, invstd)
    }

    /// BatchNorm's gradients (each only when asked), one launch, one block per channel.
    static func batchNormBackward(_ g: Tensor, _ x: Tensor, weight: Tensor?, mean: Tensor, invstd: Tensor, training: Bool,
                                  needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
        let ctx = context(x, "native_batch_norm_backward")
        let xc = x.contiguous(), gc = (g.dtype == x.dtype ? g : g.to(x.dtype)).contiguous()
        let wc = weight.map { w in torch.noGrad { (w.dtype == x.dtype ? w : w.to(x.dtype)).contiguous() } }
        let n = x.shape[0], c = x.shape[1], l = x.numel / Swift.max(n * c, 1)
        let gx = needs.0 ? Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device) : nil
        let gw = needs.1 ? Tensor(uninitializedShape: [c], dtype: x.dtype, device: x.device) : nil
        let gb = needs.2 ? Tensor(uninitializedShape: [c], dtype: x.dtype, device: x.device) : nil
        var args = arguments(outer: c, length: n, inner: l, flags: training ? 1 : 0,
                             (gc.deviceAddress, xc.deviceAddress, wc?.deviceAddress ?? 0, gx?.deviceAddress ?? 0,
                              mean.deviceAddress, invstd.deviceAddress, gw?.deviceAddress ?? 0, gb?.deviceAddress ?? 0))
        launchRows(.batchNormBackward, x.dtype, ctx, rows: c, length: n * l, &args)
        return (gx, gw, gb)
    }

    /// The median (`ignoreNaN` for nanmedian) or mode of each of the `rows` rows of `length` of an ascending
    /// stable sort (`values` and their int64 `positions`): values and positions shaped `[rows, 1]`, one launch.
    static func pickSortedRows(_ op: FusedKernelOp, values: Tensor, positions: Tensor, rows: Int, length: Int,
                               ignoreNaN: Bool) -> (values: Tensor, indices: Tensor) {
        precondition(op == .medianRows || op == .modeRows, "CUDAFused.pickSortedRows: \(op.name) is not a pick")
        let ctx = context(values, op == .medianRows ? "median" : "mode")
        let v = Tensor(uninitializedShape: [rows, 1], dtype: values.dtype, device: values.device)
        let i = Tensor(uninitializedShape: [rows, 1], dtype: .int64, device: values.device)
        if rows * length > 0 {
            var args = arguments(outer: rows, length: length, flags: ignoreNaN ? 1 : 0,
                                 (values.deviceAddress, positions.deviceAddress, v.deviceAddress, i.deviceAddress, 0, 0, 0, 0))
            launchItems(op, values.dtype, ctx, items: rows, &args)
        }
        return (v, i)
    }
}
