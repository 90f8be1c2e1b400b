import CCUDAShim

/// Index-based ops on CUDA, all built on the index kernel family (`IndexKernelSource`): index tensors
/// become int64 element offsets on the device (bounds-checked there, so no synchronisation), then one
/// gather or put walks the result.
///
/// Ops whose result size depends on the data (`nonzero`, boolean-mask indexing, `maskedSelect`) must learn
/// that size on the host, as in PyTorch (whose `nonzero` synchronises too): the mask is copied to the host as
/// bools, its coordinates found there and sent back as an index tensor.
enum CUDAIndexing {
    /// An operand of a strided index launch: a device address and its element strides over the launch shape.
    typealias Operand = (address: UInt64, strides: [Int])

    /// Launches index kernel `op` for values of `dtype` over `shape` (operands: output/destination, source/
    /// values/accumulator, offsets/indices). `size`/`stride` are the `offset` kernel's dim size and stride.
    static func launch(_ op: IndexKernelOp, dtype: DType, device: Device, shape: [Int], _ operands: [Operand],
                       size: Int = 0, stride: Int = 0) {
        let n = shapeNumel(shape)
        if n == 0 { return }
        guard case .cuda(let index) = device else { preconditionFailure("CUDAIndexing: \(device) is not a CUDA device") }
        let (coalescedShape, strides) = CUDAElementwise.coalesce(shape, operands.map(\.strides))
        precondition(coalescedShape.count <= Int(STCU_MAX_DIMS),
                     "index: CUDA kernels take at most \(STCU_MAX_DIMS) non-mergeable dims (got shape \(shapeString(shape)))")
        var args = stcu_ew_args()
        args.n = Int64(n)
        args.rank = Int32(coalescedShape.count)
        args.i.2 = Int64(size)
        args.i.3 = Int64(stride)
        args.ptr.0 = operands[0].address
        args.ptr.1 = operands[1].address
        args.ptr.2 = operands[2].address
        CUDAElementwise.setGeometry(&args, shape: coalescedShape, strides: strides)
        CUDAElementwise.launch(.index(op, dtype), device: index, args: &args, threads: n)
    }

    /// Element offsets (int64, contiguous, shaped `shape`) selected by `indices` (int64 or int32 tensors
    /// broadcastable to `shape`) into dims of sizes `sizes` and strides `strides`: Σ wrap(index_j) × stride_j.
    /// CPU index tensors are moved to `device` first, as PyTorch does for a CUDA tensor's indices.
    static func offsets(_ indices: [Tensor], sizes: [Int], strides: [Int], shape: [Int], device: Device) -> Tensor {
        let out = Tensor(uninitializedShape: shape, dtype: .int64, device: device)
        for (j, raw) in indices.enumerated() {
            precondition(raw.dtype == .int64 || raw.dtype == .int32, indexDTypeMessage)
            precondition(raw.storage.isHost || raw.device == device,
                         "indices should be either on cpu or on the same device as the indexed tensor (\(device))")
            var idx = raw.device == device ? raw : raw.to(device)
            if idx.dtype != .int64 { idx = idx.to(.int64) }
            let acc: Operand = j == 0 ? (0, contiguousStrides(shape)) : (out.deviceAddress, out.strides)
            launch(.offset, dtype: .int64, device: device, shape: shape,
                   [(out.deviceAddress, out.strides), acc, (idx.deviceAddress, idx.broadcastStrides(to: shape))],
                   size: sizes[j], stride: strides[j])
        }
        if indices.isEmpty { CUDAElementwise.fill(out, 0) }
        return out
    }

    /// The launch geometry of an `AdvancedIndexPlan` over its result shape `pre + B + post`: the indexed
    /// tensor's strides (zero across B, whose offsets come from the offsets tensor) and the offsets' strides.
    private static func planStrides(_ plan: AdvancedIndexPlan) -> (indexed: [Int], offsets: [Int]) {
        let zerosB = [Int](repeating: 0, count: plan.bShape.count)
        let indexed = plan.preStrides + zerosB + plan.postStrides
        let offsets = [Int](repeating: 0, count: plan.preShape.count) + contiguousStrides(plan.bShape)
            + [Int](repeating: 0, count: plan.postShape.count)
        return (indexed, offsets)
    }

    /// `src[pre, indices, post]` as a new contiguous device tensor.
    static func gather(_ src: Tensor, _ plan: AdvancedIndexPlan) -> Tensor {
        let out = Tensor(uninitializedShape: plan.resultShape, dtype: src.dtype, device: src.device)
        guard let offsets = plan.deviceOffsets else { preconditionFailure("CUDAIndexing.gather: the plan has no device offsets") }
        let (indexed, offsetStrides) = planStrides(plan)
        launch(.gather, dtype: src.dtype, device: src.device, shape: out.shape,
               [(out.deviceAddress, out.strides), (src.deviceAddress, indexed), (offsets.deviceAddress, offsetStrides)])
        return out
    }

    /// Writes (or atomically adds) `values`, broadcast to the plan's result shape, into `dst` at the plan's positions.
    static func put(_ dst: Tensor, _ plan: AdvancedIndexPlan, _ values: Tensor, accumulate: Bool) {
        guard let offsets = plan.deviceOffsets else { preconditionFailure("CUDAIndexing.put: the plan has no device offsets") }
        let v = onDevice(values, dst.device)
        let (indexed, offsetStrides) = planStrides(plan)
        launch(accumulate ? .putAdd : .put, dtype: dst.dtype, device: dst.device, shape: plan.resultShape,
               [(dst.deviceAddress, indexed), (v.deviceAddress, v.broadcastStrides(to: plan.resultShape)),
                (offsets.deviceAddress, offsetStrides)])
    }

    /// `gather(dim, index)`: `out[…, j, …] = src[…, index[…, j, …], …]`, out shaped like `index`.
    static func gather(_ src: Tensor, dim: Int, index: Tensor) -> Tensor {
        let out = Tensor(uninitializedShape: index.shape, dtype: src.dtype, device: src.device)
        let size = src.dim == 0 ? 1 : src.shape[dim], stride = src.dim == 0 ? 0 : src.strides[dim]
        let offsets = self.offsets([index], sizes: [size], strides: [stride], shape: index.shape, device: src.device)
        var srcStrides = src.strides
        if src.dim > 0 { srcStrides[dim] = 0 }
        launch(.gather, dtype: src.dtype, device: src.device, shape: index.shape,
               [(out.deviceAddress, out.strides), (src.deviceAddress, srcStrides), (offsets.deviceAddress, offsets.strides)])
        return out
    }

    /// `scatter(Add)` into `out` (a contiguous device tensor) along `dim`: `out[…, index[p], …] (+)= src[p]`
    /// for every position p of `index`.
    static func scatter(into out: Tensor, dim: Int, index: Tensor, src: Tensor, accumulate: Bool) {
        let s = onDevice(src, out.device)
        let size = out.dim == 0 ? 1 : out.shape[dim], stride = out.dim == 0 ? 0 : out.strides[dim]
        let offsets = self.offsets([index], sizes: [size], strides: [stride], shape: index.shape, device: out.device)
        var outStrides = out.strides
        if out.dim > 0 { outStrides[dim] = 0 }
        launch(accumulate ? .putAdd : .put, dtype: out.dtype, device: out.device, shape: index.shape,
               [(out.deviceAddress, outStrides), (s.deviceAddress, s.dim == 0 ? [Int](repeating: 0, count: index.dim) : s.strides),
                (offsets.deviceAddress, offsets.strides)])
    }

    /// `dst[mask] = value` in place (mask broadcast to dst), one `where` launch.
    static func maskedFill(_ dst: Tensor, _ mask: Tensor, _ value: Double) {
        let scalar = Tensor.wrappedNumber(value, isFloating: dst.dtype.isFloatingPoint)
        CUDAElementwise.launch(.ternary(.where, dst.dtype), out: dst, mask, scalar, dst)
    }

    /// The coordinates of `x`'s nonzero elements (N × rank int64 on x's device); learns N on the host.
    static func nonzero(_ x: Tensor) -> Tensor {
        let truth = x.dtype == .bool ? x : x.to(.bool)
        return nonzeroCoordinates(truth.to(.cpu)).to(x.device)
    }

    /// `t` on `device`: a CPU scalar moves (as PyTorch lets a 0-dim CPU tensor join CUDA ones); other
    /// tensors must already be there.
    private static func onDevice(_ t: Tensor, _ device: Device) -> Tensor {
        if t.device == device { return t }
        precondition(t.storage.isHost && t.dim == 0, sameDeviceMessage(device, t.device))
        return t.to(device)
    }
}
