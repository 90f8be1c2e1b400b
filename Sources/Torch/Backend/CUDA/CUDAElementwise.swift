import CCUDAShim

/// Launching the elementwise families on CUDA, and moving bytes between host and device.
///
/// Operand 0 is the output; inputs are CUDA tensors on the output's device (broadcast to its shape), or
/// one-element CPU tensors, which travel as scalars in the launch arguments (as PyTorch lets a CPU scalar
/// tensor meet CUDA tensors).
enum CUDAElementwise {
    /// Launches `id` writing `out` from up to three inputs; `f2`/`f3` are op parameters (`F0`/`F1`), and `f1` one
    /// more for kernels whose second operand is never a scalar (the activations' `P2`).
    static func launch(_ id: KernelID, out: Tensor, _ x: Tensor, _ y: Tensor? = nil, _ z: Tensor? = nil,
                       f1: Double = 0, f2: Double = 0, f3: Double = 0) {
        let n = out.numel
        if n == 0 { return }
        guard case .cuda(let index) = out.device else { preconditionFailure("CUDAElementwise: output on \(out.device)") }
        var args = stcu_ew_args()
        args.n = Int64(n)
        args.f.1 = f1
        args.f.2 = f2
        args.f.3 = f3
        args.ptr.0 = out.deviceAddress
        // First pass, allocation-free (the hot path of small ops): addresses and scalars into the arguments,
        // and whether every operand walks like a contiguous output.
        var contiguous = out.isContiguous
        func operand(_ t: Tensor?, _ k: Int) {
            guard let t else { return }
            if t.storage.isHost {
                precondition(t.numel == 1, "\(id.family.name): expected a CUDA tensor or a CPU scalar, got a CPU tensor of shape \(shapeString(t.shape))")
                let v = t.item()
                let iv: Int64 = t.dtype.isFloatingPoint ? Int64(exactly: v.rounded(.towardZero)) ?? 0 : Int64(t.item(as: Int64.self))
                switch k {
                case 0: args.f.0 = v; args.i.0 = iv
                case 1: args.f.1 = v; args.i.1 = iv
                default: args.f.2 = v; args.i.2 = iv
                }
                return
            }
            precondition(t.device == out.device, sameDeviceMessage(t.device, out.device))
            let address = t.deviceAddress
            switch k {
            case 0: args.ptr.1 = address
            case 1: args.ptr.2 = address
            default: args.ptr.3 = address
            }
            if t.shape != out.shape || !t.isContiguous { contiguous = false }
        }
        operand(x, 0)
        operand(y, 1)
        operand(z, 2)
        if contiguous {
            args.rank = 0
        } else {
            // Scalars and absent operands walk with zero strides.
            func strides(_ t: Tensor?) -> [Int] {
                guard let t, !t.storage.isHost else { return [Int](repeating: 0, count: out.dim) }
                return t.broadcastStrides(to: out.shape)
            }
            let (shape, strides) = coalesce(out.shape, [out.strides, strides(x), strides(y), strides(z)])
            precondition(shape.count <= Int(STCU_MAX_DIMS),
                         "\(id.family.name): CUDA kernels take at most \(STCU_MAX_DIMS) non-mergeable dims (got shape \(shapeString(out.shape)))")
            setGeometry(&args, shape: shape, strides: strides)
        }
        let threads = contiguous ? (n + ElementwiseKernelSource.vectorWidth - 1) / ElementwiseKernelSource.vectorWidth : n
        launch(id, device: index, args: &args, threads: threads)
    }

    /// Writes a (coalesced) launch shape and its per-operand strides into `args`; `args.rank` becomes the rank.
    static func setGeometry(_ args: inout stcu_ew_args, shape: [Int], strides: [[Int]]) {
        args.rank = Int32(shape.count)
        withUnsafeMutableBytes(of: &args.shape) { raw in
            let p = raw.bindMemory(to: Int64.self)
            for (d, s) in shape.enumerated() { p[d] = Int64(s) }
        }
        withUnsafeMutableBytes(of: &args.strides) { raw in
            let p = raw.bindMemory(to: Int64.self)
            for (k, s) in strides.enumerated() {
                for (d, v) in s.enumerated() { p[k * Int(STCU_MAX_DIMS) + d] = Int64(v) }
            }
        }
    }

    /// Launches an `stcu_ew_args` kernel with one thread per work item (`threads`), in blocks of
    /// `ElementwiseKernelSource.blockSize`.
    static func launch(_ id: KernelID, device index: Int, args: inout stcu_ew_args, threads: Int) {
        CUDARuntime.device(index).launch(id, items: threads, args: &args, id.family.name)
    }

    /// Merges neighbouring dims that every operand walks as one (and drops size-1 dims), so most broadcast
    /// and transposed layouts need only a few dims in the launch arguments.
    static func coalesce(_ shape: [Int], _ strides: [[Int]]) -> ([Int], [[Int]]) {
        var outShape: [Int] = []
        var outStrides: [[Int]] = Array(repeating: [], count: strides.count)
        for d in shape.indices where shape[d] != 1 {
            if let last = outShape.last,
               strides.indices.allSatisfy({ strides[$0][d] * shape[d] == outStrides[$0].last! }) {
                // Row-major: the previous (outer) dim's stride equals this one's stride × size.
                outShape[outShape.count - 1] = last * shape[d]
                for k in strides.indices { outStrides[k][outStrides[k].count - 1] = strides[k][d] }
            } else {
                outShape.append(shape[d])
                for k in strides.indices { outStrides[k].append(strides[k][d]) }
            }
        }
        if outShape.isEmpty { return ([1], strides.map { _ in [0] }) }
        return (outShape, outStrides)
    }

    // MARK: copies

    /// `dst.copy_(src)` where at least one side is on CUDA: dtype conversion, broadcasting and strided views
    /// on the device; host ↔ device transfers move contiguous bytes and convert on the device.
    static func copy(from src: Tensor, into dst: Tensor) {
        switch (src.storage.isHost, dst.storage.isHost) {
        case (false, false):
            if src.device != dst.device {
                CUDAPeerCopy.copy(from: src, into: dst)
                return
            }
            if src.dtype == dst.dtype && src.shape == dst.shape && src.isContiguous && dst.isContiguous {
                guard case .cuda(let i) = dst.device else { return }
                let ctx = CUDARuntime.device(i)
                ctx.bind()
                CUDALaunchCounter.copies &+= 1
                CUDARuntime.check(stcu_dev_dtod(dst.deviceAddress, src.deviceAddress, dst.numel * dst.dtype.itemSize, ctx.stream), "cuMemcpyDtoD")
                return
            }
            launch(.cast(src.dtype, dst.dtype), out: dst, src)
        case (true, false):
            // Host → device: move the bytes as they are (contiguous, source dtype), convert on the device.
            if src.numel == 1 && dst.numel > 1 {
                launch(.cast(src.dtype, dst.dtype), out: dst, src)   // a scalar fills
                return
            }
            let host = src.shape == dst.shape ? src.contiguous() : src.expand(dst.shape).contiguous()
            if host.dtype == dst.dtype && dst.isContiguous {
                upload(host, into: dst)
            } else {
                let staged = Tensor(uninitializedShape: host.shape, dtype: host.dtype, device: dst.device)
                upload(host, into: staged)
                launch(.cast(staged.dtype, dst.dtype), out: dst, staged)
            }
        case (false, true):
            // Device → host: make a contiguous device copy in the target dtype, then one transfer.
            var dev = src
            if src.dtype != dst.dtype || src.shape != dst.shape || !src.isContiguous {
                dev = Tensor(uninitializedShape: dst.shape, dtype: dst.dtype, device: src.device)
                launch(.cast(src.dtype, dst.dtype), out: dev, src)
            }
            if dst.isContiguous {
                download(dev, into: dst.rawPointer)
            } else {
                let host = Tensor(uninitializedShape: dst.shape, dtype: dst.dtype)
                download(dev, into: host.rawPointer)
                copyKernel(from: host, into: dst)
            }
        case (true, true):
            preconditionFailure("CUDAElementwise.copy: both tensors are on the CPU")
        }
    }

    /// Copies a contiguous host tensor's bytes into a contiguous device tensor of the same dtype and size.
    private static func upload(_ host: Tensor, into dev: Tensor) {
        guard case .cuda(let i) = dev.device else { return }
        let ctx = CUDARuntime.device(i)
        ctx.bind()
        let bytes = host.numel * host.dtype.itemSize
        if bytes == 0 { return }
        CUDARuntime.check(stcu_dev_htod(dev.deviceAddress, host.rawPointer, bytes, ctx.stream), "cuMemcpyHtoDAsync")
        // Pageable sources are copied out before the call returns; a pinned one is read later by the DMA engine.
        if host.storage.isPinned { CUDARuntime.keepAliveUntilSync(host.storage, device: i) }
    }

    /// Copies a contiguous device tensor into host memory and waits for it.
    static func download(_ dev: Tensor, into host: UnsafeMutableRawPointer) {
        guard case .cuda(let i) = dev.device else { return }
        let ctx = CUDARuntime.device(i)
        ctx.bind()
        let bytes = dev.numel * dev.dtype.itemSize
        if bytes == 0 { return }
        CUDARuntime.check(stcu_dev_dtoh(host, dev.deviceAddress, bytes, ctx.stream), "cuMemcpyDtoHAsync")
        CUDARuntime.check(stcu_dev_sync(ctx.stream), "cuStreamSynchronize")
        CUDARuntime.releaseHostBuffers(device: i)   // the stream is drained: earlier uploads are done
    }

    /// Fills a device tensor with `value` (converted to its dtype).
    static func fill(_ t: Tensor, _ value: Double) {
        if t.numel == 0 { return }
        if value == 0 && t.isContiguous, case .cuda(let i) = t.device {
            let ctx = CUDARuntime.device(i)
            ctx.bind()
            CUDALaunchCounter.copies &+= 1
            CUDARuntime.check(stcu_dev_memset8(t.deviceAddress, 0, t.numel * t.dtype.itemSize, ctx.stream), "cuMemsetD8Async")
            return
        }
        let scalar = Tensor.wrappedNumber(value, isFloating: t.dtype.isFloatingPoint)
        launch(.cast(scalar.dtype, t.dtype), out: t, scalar)
    }
}

extension Tensor {
    /// A contiguous host copy of a CUDA tensor (same dtype).
    func contiguousCopyToHost() -> Tensor {
        let host = Tensor(uninitializedShape: shape, dtype: dtype)
        CUDAElementwise.copy(from: self, into: host)
        return host
    }
}

