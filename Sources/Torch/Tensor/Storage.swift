#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One 64-byte-aligned raw allocation shared by a tensor and its views.
///
/// `version` is bumped by every in-place change; autograd compares it with the version
/// recorded when a tensor was saved for backward (like PyTorch's version counter).
public final class Storage {
    /// Start of the allocation.
    public let data: UnsafeMutableRawPointer
    /// Size in bytes.
    public let byteCount: Int
    /// In-place modification counter.
    @exclusivity(unchecked) public internal(set) var version: Int = 0
    /// Keeps an external owner (e.g. a memory map) alive; nil for our own allocations.
    private let owner: AnyObject?
    /// Bytes reserved from the caching allocator (0 for borrowed memory).
    private let capacity: Int

    /// Allocates `byteCount` uninitialized bytes aligned to 64.
    public init(byteCount: Int) {
        self.byteCount = byteCount
        (data, capacity) = CachingAllocator.allocate(byteCount)
        owner = nil
    }

    /// Wraps memory owned by `owner` (kept alive as long as this storage lives).
    public init(borrowing data: UnsafeMutableRawPointer, byteCount: Int, owner: AnyObject?) {
        self.data = data
        self.byteCount = byteCount
        self.owner = owner
        capacity = 0
    }

    deinit {
        if capacity > 0 { CachingAllocator.free(data, size: capacity) }
    }

    @inline(__always) func bumpVersion() { version &+= 1 }
}
