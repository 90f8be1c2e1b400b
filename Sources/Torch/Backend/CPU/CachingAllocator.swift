#if canImport(Glibc)
import Glibc
#endif

/// A size-bucketed cache of freed buffers (docs/architecture.md §5, docs/performance.md "free lists").
///
/// Re-using memory skips `posix_memalign` for small blocks and, for large ones, the page faults
/// a fresh mapping pays on first touch (≈ 0.5 ms per 16 MB here). Blocks ≥ 4 MiB are 2 MiB aligned
/// and advised as transparent huge pages. The cache holds at most `limitBytes`.
enum CachingAllocator {
    private static let hugeThreshold = 4 << 20
    nonisolated(unsafe) private static var buckets: [Int: [UnsafeMutableRawPointer]] = [:]
    nonisolated(unsafe) private static var cachedBytes = 0
    nonisolated(unsafe) static var limitBytes = 1 << 30
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    /// The capacity actually reserved for a request: multiples of 64 B below 4 KiB, else steps of
    /// a quarter power of two (≤ 25% slack).
    @inline(__always) static func bucketSize(_ bytes: Int) -> Int {
        let b = Swift.max(bytes, 64)
        if b <= 4096 { return (b + 63) & ~63 }
        let p = Int.bitWidth - (b - 1).leadingZeroBitCount   // 2^p >= b
        let quarter = 1 << (p - 3)
        return (b + quarter - 1) / quarter * quarter
    }

    /// A 64-byte-aligned block of at least `bytes` bytes (uninitialised).
    static func allocate(_ bytes: Int) -> (UnsafeMutableRawPointer, Int) {
        let size = bucketSize(bytes)
        pthread_mutex_lock(lock)
        if let p = buckets[size]?.popLast() {   // in place: no copy of the list
            cachedBytes -= size
            pthread_mutex_unlock(lock)
            return (p, size)
        }
        pthread_mutex_unlock(lock)
        var p: UnsafeMutableRawPointer? = nil
        let align = size >= hugeThreshold ? 2 << 20 : 64
        let rc = posix_memalign(&p, align, size)
        precondition(rc == 0 && p != nil, "CachingAllocator: failed to allocate \(size) bytes")
        if size >= hugeThreshold { _ = madvise(p, size, 14 /* MADV_HUGEPAGE */) }
        return (p!, size)
    }

    /// Returns a block to the cache (or to the system when the cache is full).
    static func free(_ p: UnsafeMutableRawPointer, size: Int) {
        pthread_mutex_lock(lock)
        if cachedBytes + size <= limitBytes {
            buckets[size, default: []].append(p)
            cachedBytes += size
            pthread_mutex_unlock(lock)
            return
        }
        pthread_mutex_unlock(lock)
        Glibc.free(p)
    }

    /// Releases every cached block to the system.
    static func emptyCache() {
        pthread_mutex_lock(lock)
        let all = buckets
        buckets = [:]
        cachedBytes = 0
        pthread_mutex_unlock(lock)
        for (_, list) in all { for p in list { Glibc.free(p) } }
    }
}
