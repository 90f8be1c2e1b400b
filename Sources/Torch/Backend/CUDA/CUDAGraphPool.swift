import CCUDAShim

/// A CUDA graph's private memory (PyTorch's graph memory pool): the blocks its captured kernels read and write.
///
/// A replay writes to the addresses the capture saw, so those blocks must never be handed to anything outside
/// the graph while it may replay. The caching allocator therefore routes, while a capture is underway on a
/// device:
/// - every allocation on that device to the capture's pool: a free block of the pool, else a block of the
///   device's cache (taken over by the pool: nothing queued before the capture can still use a cached block
///   after its stream-ordered kernels, and the capture itself runs nothing), else `cuMemAlloc`;
/// - every block freed on that device, whoever allocated it, into the pool (a tensor made before the capture
///   and dropped inside it may be what the graph writes to).
///
/// Later, blocks the pool owns go back to it when freed, so tensors allocated outside any capture never see
/// them. When the last graph using the pool is reset or deinitialised, its free blocks are given back to the
/// driver (`torch.cuda.memoryReserved()` drops) and blocks still held by live tensors (a graph's static outputs)
/// become ordinary cache blocks when those tensors go.
///
/// Why blocks may come from the driver during a capture: `cuMemAlloc` is not stream-ordered, so it is not
/// recorded, and SwiftTorch relaxes the calling thread's capture mode around it (stcu_dev_alloc) so a "global"
/// capture does not refuse it. PyTorch's native caching allocator likewise calls `cudaMalloc` for a private pool
/// during capture. What never happens during a capture is `cuMemFree` or a stream wait (`emptyCache` does
/// nothing then, and an out-of-memory failure does not retry after emptying the cache): both would invalidate
/// it. After a warm-up iteration the cache usually holds every size the capture asks for, so no driver call is
/// made at all.
final class CUDAGraphPool {
    let id: Int
    let device: Int
    /// Free blocks by size (counted in the device's `cached` figure, like the cache's own).
    var free: [Int: [UInt64]] = [:]
    /// Graphs holding the pool: those captured into it and not reset, and a capture underway.
    var users = 0
    /// Set when the last user let go: its blocks are no longer routed back to it.
    var released = false

    init(id: Int, device: Int) {
        self.id = id
        self.device = device
    }
}

extension CUDAAllocator {
    /// Graph pools by `torch.cuda.GraphPoolHandle` id, while some graph holds them.
    nonisolated(unsafe) static var graphPools: [Int: CUDAGraphPool] = [:]
    /// The pool owning each block a graph pool took (allocated or taken over), live or free.
    nonisolated(unsafe) static var privateOwner: [UInt64: CUDAGraphPool] = [:]
    /// The pool of the capture underway on each device (indexed by device; nil: none).
    nonisolated(unsafe) static var capturePools: [CUDAGraphPool?] = []
    /// Captures underway, all devices: the one test the allocation hot path makes.
    nonisolated(unsafe) static var capturesUnderway = 0

    /// Whether a capture is underway on `device` (under the lock).
    private static func capturePool(_ device: Int) -> CUDAGraphPool? {
        device < capturePools.count ? capturePools[device] : nil
    }

    static func isCapturing(device: Int) -> Bool { withPool(device) { _ in capturePool(device) != nil } }

    /// Routes `device`'s allocations and frees to pool `id` (made when no graph holds it) until `endCapture`;
    /// the capture counts as one user of the pool.
    static func beginCapture(pool id: Int, device: Int) -> CUDAGraphPool {
        withPool(device) { _ in
            precondition(capturePool(device) == nil, "CUDAGraph.captureBegin: cuda:\(device) is already capturing a graph")
            let pool = graphPools[id] ?? CUDAGraphPool(id: id, device: device)
            precondition(pool.device == device,
                         "CUDAGraph.captureBegin: the memory pool \(id) belongs to cuda:\(pool.device), not cuda:\(device)")
            graphPools[id] = pool
            pool.users += 1
            while capturePools.count <= device { capturePools.append(nil) }
            capturePools[device] = pool
            capturesUnderway += 1
            return pool
        }
    }

    /// Ends the routing `beginCapture` started (the pool keeps the capture's use until `releaseGraphPool`).
    static func endCapture(device: Int) {
        withPool(device) { _ in
            guard capturePool(device) != nil else { return }
            capturePools[device] = nil
            capturesUnderway -= 1
        }
    }

    /// Drops one use of `pool`; the last one gives its free blocks back to the driver (or, while another capture
    /// runs on the device, to the cache) and lets its live blocks become cache blocks when freed.
    static func releaseGraphPool(_ pool: CUDAGraphPool) {
        let device = pool.device
        let blocks: [UInt64] = withPool(device) { stats in
            pool.users -= 1
            guard pool.users == 0, !pool.released else { return [] }
            pool.released = true
            if graphPools[pool.id] === pool { graphPools[pool.id] = nil }
            let free = pool.free
            pool.free = [:]
            for list in free.values { for b in list { privateOwner[b] = nil } }
            if capturePool(device) != nil {
                // Another capture runs on the device, which neither a stream wait nor cuMemFree may interrupt:
                // the blocks join the cache instead (safe in stream order, like any freed block).
                for (size, list) in free { stats.free[size, default: []] += list }
                return []
            }
            for (size, list) in free { stats.cached -= size * list.count }
            return free.values.flatMap { $0 }
        }
        guard !blocks.isEmpty else { return }
        let ctx = CUDARuntime.device(device)
        ctx.bind()
        CUDARuntime.check(stcu_dev_sync(ctx.stream), "CUDAGraph.reset (waiting before freeing the graph's memory)")
        for b in blocks { _ = stcu_dev_free(b) }
    }

    /// A block for a capture underway on `device`, or nil when `device` is not capturing.
    static func allocateDuringCapture(_ size: Int, device: Int) -> (UnsafeMutableRawPointer, Int)? {
        enum Source { case notCapturing, block(UInt64), driver(CUDAGraphPool) }
        let source: Source = withPool(device) { stats in
            guard let pool = capturePool(device) else { return .notCapturing }
            var block = pool.free[size]?.popLast()
            if block == nil, let cached = stats.free[size]?.popLast() {
                privateOwner[cached] = pool   // taken over from the cache
                block = cached
            }
            guard let block else { return .driver(pool) }
            stats.cached -= size
            stats.allocated += size
            stats.peakAllocated = Swift.max(stats.peakAllocated, stats.allocated)
            return .block(block)
        }
        switch source {
        case .notCapturing: return nil
        case .block(let b): return (UnsafeMutableRawPointer(bitPattern: UInt(b))!, size)
        case .driver(let pool):
            let ctx = CUDARuntime.device(device)
            ctx.bind()
            var p: CUdeviceptr = 0
            let r = stcu_dev_alloc(&p, size)
            // No retry after emptying the cache: that waits on the stream and frees, which a capture forbids.
            if r == Int32(CUDA_ERROR_OUT_OF_MEMORY) { outOfMemory(requested: size, device: device) }
            CUDARuntime.check(r, "cuMemAlloc(\(size) bytes on cuda:\(device), during CUDA graph capture)")
            withPool(device) { stats in
                privateOwner[p] = pool
                stats.allocated += size
                stats.peakAllocated = Swift.max(stats.peakAllocated, stats.allocated)
            }
            return (UnsafeMutableRawPointer(bitPattern: UInt(p))!, size)
        }
    }

    /// Puts a freed `block` where it belongs when that is a graph pool (under the lock, from `free`): its
    /// owner's free list, or the pool of a capture underway on `device` (which takes it over). Returns false
    /// for a block the device's cache should take (including those of a released pool).
    static func returnToGraphPool(_ block: UInt64, size: Int, device: Int, stats: inout Pool) -> Bool {
        var pool = privateOwner[block]
        if let owner = pool, owner.released {
            privateOwner[block] = nil
            pool = nil
        }
        if pool == nil, let capturing = capturePool(device) {
            privateOwner[block] = capturing
            pool = capturing
        }
        guard let pool else { return false }
        pool.free[size, default: []].append(block)
        stats.allocated -= size
        stats.cached += size
        return true
    }
}
