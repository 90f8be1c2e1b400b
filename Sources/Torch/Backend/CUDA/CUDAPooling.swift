import CCUDAShim

/// Pooling on CUDA (the `pooling` kernel family, `PoolingKernelSource`). The window tables of a
/// `PoolGeometry` (3 × the output sizes of int64) go to the device once per geometry (`CUDAConstantTables`),
/// so every kind of window the CPU supports runs the same way, and a CUDA graph can capture pooling. Max pooling's backward and its adjoint are index ops on the saved
/// indices (`indexAdd_` / `take` over flat offsets), already on the device.
enum CUDAPooling {
    /// Max pooling of contiguous `x` into `out` (planes × output plane), indices into `indices` when given.
    static func maxForward(_ x: Tensor, into out: Tensor, indices: Tensor?, planes: Int, _ g: PoolGeometry) {
        launch(.maxForward, x, out, indices: indices, planes: planes, g, countIncludePad: false, divisor: nil)
    }

    /// Average pooling of contiguous `x` into `out`.
    static func averageForward(_ x: Tensor, into out: Tensor, planes: Int, _ g: PoolGeometry, countIncludePad: Bool,
                               divisorOverride: Int?) {
        launch(.averageForward, x, out, indices: nil, planes: planes, g, countIncludePad: countIncludePad, divisor: divisorOverride)
    }

    /// The gradient of average pooling: `gy` (contiguous, output-shaped) spread into `gx` (input-shaped, zeroed here).
    static func averageBackward(_ gy: Tensor, into gx: Tensor, planes: Int, _ g: PoolGeometry, countIncludePad: Bool,
                                divisorOverride: Int?) {
        CUDAElementwise.fill(gx, 0)
        launch(.averageBackward, gy, gx, indices: nil, planes: planes, g, countIncludePad: countIncludePad, divisor: divisorOverride)
    }

    /// Flat element offsets of max-pooling `indices` (in-plane, [planes, out plane]) into their planes of
    /// `inPlane` elements: index + plane · inPlane, int64 on the indices' device.
    static func flatOffsets(_ indices: Tensor, planes: Int, inPlane: Int, outPlane: Int) -> Tensor {
        let base = CUDAConstantTables.tensor((0..<planes).map { Int64($0 * inPlane) }, on: indices.device).view([planes, 1])
        return (indices.reshape([planes, outPlane]) + base).reshape([-1])
    }

    private static func launch(_ op: PoolingKernelOp, _ input: Tensor, _ output: Tensor, indices: Tensor?, planes: Int,
                               _ g: PoolGeometry, countIncludePad: Bool, divisor: Int?) {
        precondition(PoolingKernelSource.supports(input.dtype),
                     "\"\(op.name)_cuda\" not implemented for '\(input.dtype.name.capitalized)' (SwiftTorch's CUDA pooling takes float32 and float64)")
        let n = planes * g.outPlane
        if n == 0 { return }
        guard case .cuda(let index) = output.device else { preconditionFailure("CUDAPooling: output on \(output.device)") }
        // The window tables as the CPU kernels lay them out: per axis first[], count[], padded[].
        var table: [Int64] = []
        for (axis, size) in zip(g.axes, g.output) {
            table += (0..<size).map { Int64(axis.start[$0] + axis.valid[$0].lowerBound * axis.step) }
            table += (0..<size).map { Int64(axis.valid[$0].count) }
            table += (0..<size).map { Int64(axis.paddedCount[$0]) }
        }
        let tableTensor = CUDAConstantTables.tensor(table, on: output.device)
        var args = stcu_pool_args()
        args.n = Int64(n)
        func triple(_ v: [Int]) -> (Int64, Int64, Int64) { (Int64(v[0]), Int64(v[1]), Int64(v[2])) }
        args.in_size = triple(g.input); args.out_size = triple(g.output); args.step = triple(g.axes.map(\.step))
        args.count_include_pad = countIncludePad ? 1 : 0
        args.divisor = Int64(divisor ?? 0)
        args.table = tableTensor.deviceAddress
        args.in = input.deviceAddress; args.out = output.deviceAddress; args.indices = indices?.deviceAddress ?? 0
        CUDARuntime.device(index).launch(.pooling(op, input.dtype), items: n, args: &args, "pool_\(op.name)")
        // A table that was not kept must outlive the launch: the allocator reuses its block only for work queued after this.
        _ = tableTensor
    }
}
