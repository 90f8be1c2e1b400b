import CCUDAShim

/// `F.interpolate`'s separable resampling on CUDA (the `resample` kernel family, `ResampleKernelSource`): the
/// same taps as the CPU (`ResamplingTaps`, computed on the host), sent to the device with each call, and the
/// same sums in the same order. The adjoint (the backward pass) gathers through the inverted tap table, so it
/// needs no atomics and is deterministic.
enum CUDAResampling {
    /// Resamples contiguous `x` (`[outer, inSize, inner]`, inSize = `x.shape[dim]`) along `dim` with `taps` into
    /// `out` (contiguous, `taps.outSize` along `dim`).
    static func forward(_ x: Tensor, into out: Tensor, dim: Int, taps: ResamplingTaps) {
        let table = taps.index
        launch(.forward, x, out, dim: dim, taps: taps, table: table, weights: weights(taps))
    }

    /// The adjoint of `forward`: `g` (contiguous, `taps.outSize` along `dim`) spread back into `out` (contiguous,
    /// the forward input's length along `dim`).
    static func adjoint(_ g: Tensor, into out: Tensor, dim: Int, taps: ResamplingTaps) {
        // For each input position j, the tap-major positions p = t · outSize + o that read it, in the CPU
        // adjoint's order (o, then t); table = start[inLength + 1] ++ entries.
        let inLength = out.shape[dim], outSize = taps.outSize
        var buckets = [[Int64]](repeating: [], count: inLength)
        for o in 0..<outSize {
            for t in 0..<taps.count {
                let p = t * outSize + o
                if let w = taps.weight, w[p] == 0 { continue }
                buckets[Int(taps.index[p])].append(Int64(p))
            }
        }
        var table: [Int64] = [0]
        table.reserveCapacity(inLength + 1 + taps.count * outSize)
        for bucket in buckets { table.append(table.last! + Int64(bucket.count)) }
        for bucket in buckets { table += bucket }
        launch(.adjoint, g, out, dim: dim, taps: taps, table: table, weights: weights(taps))
    }

    /// The tap weights (ones for the nearest modes), tap-major.
    private static func weights(_ taps: ResamplingTaps) -> [Double] {
        taps.weight ?? [Double](repeating: 1, count: taps.count * taps.outSize)
    }

    private static func launch(_ op: ResampleKernelOp, _ input: Tensor, _ output: Tensor, dim: Int, taps: ResamplingTaps,
                               table: [Int64], weights: [Double]) {
        precondition(ResampleKernelSource.supports(input.dtype) && input.dtype == output.dtype,
                     "\"upsample_\(op.name)_cuda\" not implemented for '\(input.dtype.name.capitalized)' (SwiftTorch's CUDA interpolation takes float32 and float64)")
        precondition(input.isContiguous && output.isContiguous, "CUDAResampling: contiguous operands expected")
        guard case .cuda(let index) = output.device else { preconditionFailure("CUDAResampling: output on \(output.device)") }
        let n = output.numel
        if n == 0 { return }
        let tableTensor = CUDAConstantTables.tensor(table, on: output.device)
        let weightTensor = CUDAConstantTables.tensor(weights, dtype: input.dtype, on: output.device)
        var args = stcu_resample_args()
        args.n = Int64(n)
        args.in_size = Int64(input.shape[dim])
        args.out_size = Int64(output.shape[dim])
        args.inner = Int64(output.shape[(dim + 1)...].reduce(1, *))
        args.taps = Int64(taps.count)
        args.table = tableTensor.deviceAddress
        args.weight = weightTensor.deviceAddress
        args.in = input.deviceAddress
        args.out = output.deviceAddress
        CUDARuntime.device(index).launch(.resample(op, input.dtype), items: n, args: &args, "resample_\(op.name)")
        // The tables must outlive the launch: the allocator reuses their blocks only for work queued after this.
        _ = (tableTensor, weightTensor)
    }
}
