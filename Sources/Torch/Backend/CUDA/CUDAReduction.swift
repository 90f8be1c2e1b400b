import CCUDAShim

/// Reductions on CUDA (the `reduce` kernel family): sum, prod, max/min with or without indices, all/any.
///
/// The reduced dims, when they are one run of a contiguous tensor, are the middle axis of an
/// `[outer, length, inner]` view and need no copy; otherwise the kept dims are permuted to the front and the
/// tensor made contiguous, so the reduced elements of each output are adjacent.
enum CUDAReduction {
    /// The reduced values in `x`'s dtype, shaped `plan.outShape`.
    static func values(_ op: CUDAReduceOp, _ x: Tensor, _ plan: ReductionPlan) -> Tensor {
        run(op, x, plan, withIndices: false).values
    }

    /// Values and int64 positions along the reduced dims (max/min/argmax/argmin over one dim).
    static func withIndices(_ op: CUDAReduceOp, _ x: Tensor, _ plan: ReductionPlan) -> (values: Tensor, indices: Tensor) {
        let r = run(op, x, plan, withIndices: true)
        return (r.values, r.indices!)
    }

    private static func run(_ op: CUDAReduceOp, _ x: Tensor, _ plan: ReductionPlan, withIndices: Bool) -> (values: Tensor, indices: Tensor?) {
        guard case .cuda(let index) = x.device else { preconditionFailure("CUDAReduction: input on \(x.device)") }
        let ctx = CUDARuntime.device(index)
        var src = x
        var outer: Int, length: Int, inner: Int
        let red = plan.reduced
        if red.isEmpty {
            outer = x.numel; length = 1; inner = 1
            src = x.contiguous()
        } else if x.isContiguous && red == Array(red.first!...red.last!) {
            outer = x.shape[..<red.first!].reduce(1, *)
            length = plan.count
            inner = x.shape[(red.last! + 1)...].reduce(1, *)
        } else {
            src = x.permute(plan.kept + plan.reduced).contiguous()
            outer = shapeNumel(plan.keptShape); length = plan.count; inner = 1
        }
        let out = Tensor(uninitializedShape: plan.outShape, dtype: x.dtype, device: x.device)
        let indices = withIndices ? Tensor(uninitializedShape: plan.outShape, dtype: .int64, device: x.device) : nil
        if outer * inner == 0 { return (out, indices) }
        func launch(in input: UInt64, out output: UInt64, indexOut: UInt64, outer: Int, length: Int, inner: Int, partials: Int) {
            var args = stcu_red_args()
            args.outer = Int64(outer); args.length = Int64(length); args.inner = Int64(inner); args.partials = Int64(partials)
            args.in = input; args.out = output; args.index_out = indexOut
            let grid = inner == 1 ? (UInt32(outer), UInt32(partials)) : (threadGrid(outer * inner, ctx), 1)
            CUDAReduction.launch(op, x.dtype, ctx, &args, grid: grid)
        }
        // Few long rows: split each over several blocks (a second pass combines), so all SMs take part.
        // 4096 elements per block is where one block's loop outweighs a second launch.
        var partials = 1
        if inner == 1 && !withIndices && outer < 2 * ctx.multiprocessorCount && length >= 8192 {
            partials = Swift.min(65535, Swift.max(1, Swift.min(4 * ctx.multiprocessorCount / outer, length / 4096)))
        }
        if partials > 1 {
            let partial = Tensor(uninitializedShape: [outer, partials], dtype: x.dtype, device: x.device)
            launch(in: src.deviceAddress, out: partial.deviceAddress, indexOut: 0, outer: outer, length: length, inner: 1, partials: partials)
            launch(in: partial.deviceAddress, out: out.deviceAddress, indexOut: 0, outer: outer, length: partials, inner: 1, partials: 1)
        } else {
            launch(in: src.deviceAddress, out: out.deviceAddress, indexOut: indices?.deviceAddress ?? 0,
                   outer: outer, length: length, inner: inner, partials: 1)
        }
        return (out, indices)
    }

    /// The running sum or product of `x` along `dim`, in x's dtype (cast first for another result dtype).
    static func scan(_ op: CUDAReduceOp, _ x: Tensor, dim: Int) -> Tensor {
        precondition(op.isScan, "CUDAReduction.scan: \(op.name) is not a scan")
        guard case .cuda(let index) = x.device else { preconditionFailure("CUDAReduction: input on \(x.device)") }
        precondition(x.dtype != .bool, "\(op.name): bool input must be cast first")
        let src = x.contiguous()
        let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        if x.numel == 0 { return out }
        let length = x.dim == 0 ? 1 : x.shape[dim]
        let inner = x.dim == 0 ? 1 : x.shape[(dim + 1)...].reduce(1, *)
        let outer = x.numel / (length * inner)
        let ctx = CUDARuntime.device(index)
        var args = stcu_red_args()
        args.outer = Int64(outer); args.length = Int64(length); args.inner = Int64(inner); args.partials = 1
        args.in = src.deviceAddress; args.out = out.deviceAddress
        // Rows: one block each (grid-stride beyond 32 per SM); lines: one thread each.
        let grid = inner == 1 ? UInt32(Swift.max(1, Swift.min(outer, ctx.multiprocessorCount * 32))) : threadGrid(outer * inner, ctx)
        launch(op, x.dtype, ctx, &args, grid: (grid, 1))
        return out
    }

    /// Blocks for `threads` one-per-item threads: enough to fill every SM several times over (grid-stride beyond).
    private static func threadGrid(_ threads: Int, _ ctx: CUDADeviceContext) -> UInt32 {
        ctx.gridSize(items: threads, block: ReductionKernelSource.blockSize)
    }

    /// Launches the reduce-family kernel `op` for `dtype` with `args`, in blocks of `ReductionKernelSource.blockSize`.
    private static func launch(_ op: CUDAReduceOp, _ dtype: DType, _ ctx: CUDADeviceContext, _ args: inout stcu_red_args,
                               grid: (UInt32, UInt32)) {
        ctx.launch(.reduce(op, dtype), grid: grid, block: ReductionKernelSource.blockSize, args: &args, "reduce_\(op.name)")
    }
}
