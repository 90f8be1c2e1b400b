import CCUDAShim
/// PyTorch's caching allocator for device memory, simplified: requests are rounded to size classes, freed
/// blocks wait in per-size free lists, and `cuMemFree` runs only when the cache is emptied or an allocation
/// fails. So a training step that repeats the same shapes allocates nothing from the driver after its first
/// iteration (cuMemAlloc/cuMemFree synchronise the device and cost tens of microseconds each).
///
/// Blocks are reused in stream order: the backend has one stream per device, so a block freed by the host
/// while kernels that use it are still queued is only reused by kernels queued after them.
///
/// While a CUDA graph is being captured, allocations on its device come from the graph's private pool, and
/// blocks go back to that pool when freed (CUDAGraphPool.swift).
enum CUDAAllocator {
    /// Size classes: multiples of 512 B up to 1 MiB (PyTorch's small-block rounding), then quarter powers of
    /// two (at most 25 % slack, as the CPU cache does).
    @inline(__always) static func roundedSize(_ bytes: Int) -> Int {
        let b = Swift.max(bytes, 512)
        if b <= 1 << 20 { return (b + 511) & ~511 }
        let p = Int.bitWidth - (b - 1).leadingZeroBitCount
        let quarter = 1 << (p - 3)
        return (b + quarter - 1) / quarter * quarter
    }

    /// Per-device bookkeeping (`torch.cuda.memory_allocated` and friends read it).
    struct Pool {
        var free: [Int: [UInt64]] = [:]
        var allocated = 0
        var peakAllocated = 0
        var cached = 0
        var reserved: Int { allocated + cached }
    }

    nonisolated(unsafe) static var pools: [Pool] = []
    nonisolated(unsafe) static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    @inline(__always) static func withPool<R>(_ device: Int, _ body: (inout Pool) -> R) -> R {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        while pools.count <= device { pools.append(Pool()) }
        return body(&pools[device])
    }

    /// A block of at least `bytes` on `device` (uninitialised), and its capacity.
    static func allocate(_ bytes: Int, device: Int) -> (UnsafeMutableRawPointer, Int) {
        let size = roundedSize(bytes)
        if _slowPath(capturesUnderway != 0), let block = allocateDuringCapture(size, device: device) { return block }
        let cached: UInt64? = withPool(device) { pool in
            guard let p = pool.free[size]?.popLast() else { return nil }
            pool.cached -= size
            pool.allocated += size
            pool.peakAllocated = Swift.max(pool.peakAllocated, pool.allocated)
            return p
        }
        if let p = cached { return (UnsafeMutableRawPointer(bitPattern: UInt(p))!, size) }
        let ctx = CUDARuntime.device(device)
        ctx.bind()
        var p: CUdeviceptr = 0
        var r = stcu_dev_alloc(&p, size)
        if r == Int32(CUDA_ERROR_OUT_OF_MEMORY) {
            // Like PyTorch: give the cache back to the driver and try once more.
            emptyCache(device: device)
            r = stcu_dev_alloc(&p, size)
        }
        if r == Int32(CUDA_ERROR_OUT_OF_MEMORY) { outOfMemory(requested: size, device: device) }
        CUDARuntime.check(r, "cuMemAlloc(\(size) bytes on cuda:\(device))")
        withPool(device) { pool in
            pool.allocated += size
            pool.peakAllocated = Swift.max(pool.peakAllocated, pool.allocated)
        }
        return (UnsafeMutableRawPointer(bitPattern: UInt(p))!, size)
    }

    /// Returns a block to its device's cache (or to the graph pool that owns it).
    static func free(_ p: UnsafeMutableRawPointer, size: Int, device: Int) {
        withPool(device) { pool in
            let block = UInt64(UInt(bitPattern: p))
            if _slowPath(!privateOwner.isEmpty || capturesUnderway != 0),
               returnToGraphPool(block, size: size, device: device, stats: &pool) { return }
            pool.free[size, default: []].append(block)
            pool.allocated -= size
            pool.cached += size
        }
    }

    /// Frees every cached block of `device` to the driver (waits for the device first, since queued kernels
    /// may still use blocks the host already freed). Blocks of graph pools stay: their graphs replay into them.
    /// Does nothing while `device` captures a graph (the wait and cuMemFree would break the capture).
    static func emptyCache(device: Int) {
        if _slowPath(capturesUnderway != 0) && isCapturing(device: device) { return }
        let blocks: [UInt64] = withPool(device) { pool in
            let all = pool.free.values.flatMap { $0 }
            pool.free = [:]
            pool.cached = 0
            return all
        }
        guard !blocks.isEmpty else { return }
        let ctx = CUDARuntime.device(device)
        ctx.bind()
        CUDARuntime.check(stcu_dev_sync(ctx.stream), "torch.cuda.empty_cache")
        for b in blocks { _ = stcu_dev_free(b) }
    }

    static func stats(device: Int) -> Pool { withPool(device) { $0 } }

    static func resetPeak(device: Int) { withPool(device) { $0.peakAllocated = $0.allocated } }

    /// PyTorch's `torch.OutOfMemoryError` text, with this allocator's figures.
    @inline(never) static func outOfMemory(requested: Int, device: Int) -> Never {
        var freeBytes = 0, total = 0
        _ = stcu_dev_mem_info(&freeBytes, &total)
        let pool = stats(device: device)
        preconditionFailure("CUDA out of memory. Tried to allocate \(formatMemory(requested)). GPU \(device) has a total capacity of "
            + "\(formatMemory(total)) of which \(formatMemory(freeBytes)) is free. Of the allocated memory "
            + "\(formatMemory(pool.allocated)) is allocated by SwiftTorch, and \(formatMemory(pool.cached)) is reserved by "
            + "SwiftTorch but unallocated.")
    }
}

/// PyTorch's memory figures in messages: `20.00 MiB`, `1.50 GiB`.
func formatMemory(_ bytes: Int) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
    var v = Double(bytes)
    var u = 0
    while v >= 1024 && u < units.count - 1 { v /= 1024; u += 1 }
    if u == 0 { return "\(bytes) bytes" }
    let hundredths = Int((v * 100).rounded())
    let frac = hundredths % 100
    return "\(hundredths / 100).\(frac < 10 ? "0" : "")\(frac) \(units[u])"
}
