/// One raw allocation shared by a tensor and its views, on the CPU (64-byte aligned) or on a CUDA device.
///
/// `version` is bumped by every in-place change; autograd compares it with the version
/// recorded when a tensor was saved for backward (like PyTorch's version counter).
///
/// For CUDA storage `data` holds the device address (a `CUdeviceptr`): it must never be dereferenced on
/// the host. `Tensor.pointer(_:)` checks the device, so an op without a CUDA kernel stops with a message
/// instead of reading device memory (docs/architecture.md §7).
public final class Storage {
    /// Start of the allocation (a device address for CUDA storage).
    public let data: UnsafeMutableRawPointer
    /// Size in bytes.
    public let byteCount: Int
    /// Where the memory lives.
    public let device: Device
    /// True for host memory (CPU storage), checked on every host access.
    @usableFromInline let isHost: Bool
    /// In-place modification counter.
    @exclusivity(unchecked) public internal(set) var version: Int = 0
    /// A kernel's prepared form of this storage's contents (a packed GEMM weight, `PackedGEMMWeight`), which checks
    /// `version` before reuse; read and written under that type's lock.
    var preparedOperand: AnyObject?
    /// Keeps an external owner (e.g. a memory map) alive; nil for our own allocations.
    private let owner: AnyObject?
    /// Who gives the memory back, and how much was reserved.
    private let release: Release

    private enum Release {
        case borrowed
        case hostCache(capacity: Int)
        case pinned(capacity: Int)
        case cuda(device: Int, capacity: Int)
    }

    /// Allocates `byteCount` uninitialized bytes on `device` (aligned to 64 on the CPU, 512 on CUDA).
    public init(byteCount: Int, device: Device = .cpu) {
        self.byteCount = byteCount
        self.device = device
        owner = nil
        switch device {
        case .cpu:
            let (p, capacity) = CachingAllocator.allocate(byteCount)
            data = p
            isHost = true
            release = .hostCache(capacity: capacity)
        case .cuda(let index):
            let (p, capacity) = CUDAAllocator.allocate(byteCount, device: index)
            data = p
            isHost = false
            release = .cuda(device: index, capacity: capacity)
        }
    }

    /// Allocates page-locked host memory (PyTorch's pinned memory) for fast asynchronous copies to a GPU;
    /// plain host memory when no CUDA driver is loaded.
    init(pinnedByteCount byteCount: Int) {
        self.byteCount = byteCount
        device = .cpu
        isHost = true
        owner = nil
        if let (p, capacity) = CUDARuntime.allocatePinned(byteCount) {
            data = p
            release = .pinned(capacity: capacity)
        } else {
            let (p, capacity) = CachingAllocator.allocate(byteCount)
            data = p
            release = .hostCache(capacity: capacity)
        }
    }

    /// Wraps host memory owned by `owner` (kept alive as long as this storage lives).
    public init(borrowing data: UnsafeMutableRawPointer, byteCount: Int, owner: AnyObject?) {
        self.data = data
        self.byteCount = byteCount
        self.owner = owner
        device = .cpu
        isHost = true
        release = .borrowed
    }

    deinit {
        switch release {
        case .borrowed: break
        case .hostCache(let capacity): CachingAllocator.free(data, size: capacity)
        case .pinned(let capacity): CUDARuntime.freePinned(data, capacity: capacity)
        case .cuda(let index, let capacity): CUDAAllocator.free(data, size: capacity, device: index)
        }
    }

    /// True when this is page-locked host memory (`Tensor.isPinned()`).
    var isPinned: Bool {
        if case .pinned = release { return true }
        return false
    }

    /// The device address as the driver API takes it (CUDA storage only).
    var deviceAddress: UInt64 { UInt64(UInt(bitPattern: data)) }

    @inline(__always) func bumpVersion() { version &+= 1 }
}
