import CCUDAShim
#if canImport(Glibc)
import Glibc
#endif

/// Copies between two GPUs of one process: one `cuMemcpyPeerAsync` on the destination's stream instead of a
/// download to the host and an upload (what these copies did before, two transfers through pageable memory). Where
/// the two devices can map each other's memory (NVLink, or PCIe under one switch; the driver's
/// `cuDeviceCanAccessPeer`), peer access is switched on once per ordered pair and the copy goes directly; elsewhere
/// the driver stages it through the host itself.
///
/// Ordering: SwiftTorch runs one stream per device, so the source device's stream is drained before the copy is
/// enqueued (the kernels that wrote the source), and the destination's stream is drained after it: the source may
/// be a temporary, and its memory returns to the source device's cache, which knows nothing of the other stream.
enum CUDAPeerCopy {
    nonisolated(unsafe) private static var enabledPairs = Set<[Int]>()
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    /// Whether `device` can access `peer`'s memory directly (PyTorch's `torch.cuda.can_device_access_peer`).
    static func canAccessPeer(_ device: Int, _ peer: Int) -> Bool {
        _ = (CUDARuntime.device(device), CUDARuntime.device(peer))   // PyTorch's errors for devices that do not exist
        var can: Int32 = 0
        CUDARuntime.check(stcu_dev_can_access_peer(&can, Int32(device), Int32(peer)), "cuDeviceCanAccessPeer")
        return can != 0
    }

    /// Lets `device`'s context read and write `peer`'s memory, once per pair, where the hardware allows it.
    private static func enablePeerAccess(_ device: Int, _ peer: Int) {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        guard !enabledPairs.contains([device, peer]) else { return }
        enabledPairs.insert([device, peer])
        guard canAccessPeer(device, peer) else { return }
        let ctx = CUDARuntime.device(device)
        ctx.bind()
        CUDARuntime.check(stcu_dev_enable_peer(CUDARuntime.device(peer).context), "cuCtxEnablePeerAccess")
    }

    /// `dst.copy_(src)` for tensors on two different GPUs: dtype conversion, broadcasting and strides are handled
    /// on the source device (into a contiguous tensor of `dst`'s dtype and shape) and, for a strided `dst`, on the
    /// destination; the bytes cross once.
    static func copy(from src: Tensor, into dst: Tensor) {
        guard case .cuda(let si) = src.device, case .cuda(let di) = dst.device, si != di else {
            preconditionFailure("CUDAPeerCopy.copy: expected tensors on two different GPUs, got \(src.device) and \(dst.device)")
        }
        if dst.numel == 0 { return }
        var packed = src
        if src.dtype != dst.dtype || src.shape != dst.shape || !src.isContiguous {
            packed = Tensor(uninitializedShape: dst.shape, dtype: dst.dtype, device: src.device)
            CUDAElementwise.copy(from: src, into: packed)
        }
        let landing = dst.isContiguous ? dst : Tensor(uninitializedShape: dst.shape, dtype: dst.dtype, device: dst.device)
        enablePeerAccess(di, si)
        let source = CUDARuntime.device(si), target = CUDARuntime.device(di)
        source.bind()
        CUDARuntime.check(stcu_dev_sync(source.stream), "cuStreamSynchronize")
        target.bind()
        CUDALaunchCounter.copies &+= 1
        CUDALaunchCounter.peerCopies &+= 1
        CUDARuntime.check(stcu_dev_peer(landing.deviceAddress, target.context, packed.deviceAddress, source.context,
                                        dst.numel * dst.dtype.itemSize, target.stream), "cuMemcpyPeerAsync")
        CUDARuntime.check(stcu_dev_sync(target.stream), "cuStreamSynchronize")
        if landing !== dst { CUDAElementwise.copy(from: landing, into: dst) }
    }
}
