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
    public internal(set) var version: Int = 0
    /// Keeps an external owner (e.g. a memory map) alive; nil for our own allocations.
    private let owner: AnyObject?
    private let ownsMemory: Bool

    /// Allocates `byteCount` uninitialized bytes aligned to 64.
    public init(byteCount: Int) {
        self.byteCount = byteCount
        var p: UnsafeMutableRawPointer? = nil
        let rc = posix_memalign(&p, 64, max(byteCount, 64))
        precondition(rc == 0 && p != nil, "Storage: failed to allocate \(byteCount) bytes")
        data = p!
        owner = nil
        ownsMemory = true
    }

    /// Wraps memory owned by `owner` (kept alive as long as this storage lives).
    public init(borrowing data: UnsafeMutableRawPointer, byteCount: Int, owner: AnyObject?) {
        self.data = data
        self.byteCount = byteCount
        self.owner = owner
        ownsMemory = false
    }

    deinit {
        if ownsMemory { free(data) }
    }

    @inline(__always) func bumpVersion() { version &+= 1 }
}
