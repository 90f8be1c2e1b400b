import CCUDAShim

/// Sorting on CUDA (the `sort` kernel family, `SortKernelSource`): a stable sort of each row, the base of
/// `sort`, `argsort`, `msort`, `topk` and `kthvalue` on the device.
enum CUDASorting {
    /// Sorts each of the `rows` contiguous rows of `length` elements of `x` (contiguous, on a CUDA device):
    /// the values (x's dtype) and their int64 positions within the row, both shaped like `x`. Stable; NaN
    /// after every number (first when `descending`).
    static func sortRows(_ x: Tensor, rows: Int, length: Int, descending: Bool) -> (values: Tensor, indices: Tensor) {
        guard case .cuda(let index) = x.device else { preconditionFailure("CUDASorting: input on \(x.device)") }
        precondition(x.isContiguous && rows * length == x.numel, "CUDASorting: expected \(rows) contiguous rows of \(length)")
        let values = Tensor(uninitializedShape: x.shape, dtype: x.dtype, device: x.device)
        let indices = Tensor(uninitializedShape: x.shape, dtype: .int64, device: x.device)
        if x.numel == 0 { return (values, indices) }
        let ctx = CUDARuntime.device(index)
        var args = stcu_red_args()
        args.outer = Int64(rows); args.length = Int64(length)
        args.in = x.deviceAddress; args.out = values.deviceAddress; args.index_out = indices.deviceAddress
        let chunk = SortKernelSource.chunk
        let chunks = rows * ((length + chunk - 1) / chunk)
        // One block per chunk, grid-stride beyond 16 per SM (a block holds 32 KiB of shared memory, so a few
        // blocks per SM already fill it).
        let chunkGrid = (UInt32(Swift.max(1, Swift.min(chunks, ctx.multiprocessorCount * 16))), UInt32(1))
        ctx.launch(.sort(.op(.chunk, descending: descending), x.dtype), grid: chunkGrid, block: SortKernelSource.blockSize,
                   args: &args, "sort_chunk")
        // Stages past the chunk, while the row (rounded up to a power of two) is longer than half the stage.
        let padded = 1 << (Int.bitWidth - (length - 1).leadingZeroBitCount)
        let comparators = rows * (padded / 2)
        var stage = 2 * chunk
        while stage <= padded {
            var distance = stage / 2
            while distance >= chunk {
                args.inner = Int64(stage); args.partials = Int64(distance)
                ctx.launch(.sort(.op(.merge, descending: descending), x.dtype), items: comparators, block: SortKernelSource.blockSize,
                           args: &args, "sort_merge")
                distance /= 2
            }
            ctx.launch(.sort(.op(.mergeChunk, descending: descending), x.dtype), grid: chunkGrid, block: SortKernelSource.blockSize,
                       args: &args, "sort_merge_chunk")
            stage *= 2
        }
        return (values, indices)
    }
}
