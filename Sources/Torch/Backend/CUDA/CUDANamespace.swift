import CCUDAShim

extension torch {
    /// PyTorch's `torch.cuda`: devices, synchronisation, seeds and the caching allocator's figures.
    ///
    /// ```swift
    /// let device: Device = torch.cuda.isAvailable() ? .cuda(0) : .cpu
    /// let model = MyNet().to(device)
    /// ```
    ///
    /// CUDA is loaded at run time (driver, NVRTC, cuBLAS); nothing is needed at build time. When a piece is
    /// missing `isAvailable()` is false and `unavailableReason` says which.
    public enum cuda {
        /// True when a CUDA driver, NVRTC and at least one GPU are usable.
        public static func isAvailable() -> Bool { CUDARuntime.isAvailable }
        /// Why CUDA is not usable (nil when it is).
        public static var unavailableReason: String? { CUDARuntime.isAvailable ? nil : CUDARuntime.status.reason }
        /// Number of usable GPUs (0 without CUDA).
        public static func deviceCount() -> Int { CUDARuntime.status.devices.count }
        /// The GPU's name, e.g. "NVIDIA H100 80GB HBM3".
        public static func getDeviceName(_ device: Int = 0) -> String { CUDARuntime.device(device).name }
        /// Whether `device` can read and write `peerDevice`'s memory directly, over NVLink or PCIe (PyTorch's
        /// `can_device_access_peer`). Copies between two GPUs use it where it is there (`x.to(.cuda(1))`).
        public static func canDeviceAccessPeer(_ device: Int, _ peerDevice: Int) -> Bool {
            CUDAPeerCopy.canAccessPeer(device, peerDevice)
        }
        /// Compute capability as (major, minor), e.g. (9, 0).
        public static func getDeviceCapability(_ device: Int = 0) -> (Int, Int) {
            let d = CUDARuntime.device(device)
            return (d.major, d.minor)
        }
        /// This thread's current CUDA device (0 unless set): where `x.cuda()` and `Device("cuda")` go, and what
        /// `manualSeed` and the memory figures default to. Per thread, as PyTorch's (a new thread starts on 0).
        ///
        /// ```swift
        /// torch.cuda.setDevice(1)
        /// let x = torch.ones(3).cuda()          // on cuda:1
        /// ```
        public static func currentDevice() -> Int { CUDACurrentDevice.index }
        /// Sets this thread's current device (PyTorch's `torch.cuda.set_device`).
        public static func setDevice(_ device: Int) {
            _ = CUDARuntime.device(device)
            CUDACurrentDevice.index = device
        }
        /// Sets this thread's current device to `device`, which must be a CUDA device.
        public static func setDevice(_ device: Device) { setDevice(cudaIndex(device)) }

        /// Runs `body` with `index` as this thread's current device, then restores the previous one (PyTorch's
        /// `with torch.cuda.device(i):`); a negative index leaves the current device as it is.
        ///
        /// ```swift
        /// let y = torch.cuda.device(1) { torch.randn(4, 4).cuda().mm(w1) }   // w1 on cuda:1
        /// ```
        @discardableResult
        public static func device<R>(_ index: Int, _ body: () throws -> R) rethrows -> R {
            if index < 0 { return try body() }
            let previous = CUDACurrentDevice.index
            setDevice(index)
            defer { CUDACurrentDevice.index = previous }
            return try body()
        }
        /// `device(_:_:)` for a CUDA `Device`.
        @discardableResult
        public static func device<R>(_ device: Device, _ body: () throws -> R) rethrows -> R {
            try self.device(cudaIndex(device), body)
        }
        /// Runs `body` on the device of `tensor` when it is a CUDA tensor (PyTorch's `torch.cuda.device_of`);
        /// for a CPU tensor the current device is left as it is.
        @discardableResult
        public static func deviceOf<R>(_ tensor: Tensor, _ body: () throws -> R) rethrows -> R {
            guard case .cuda(let i) = tensor.device else { return try body() }
            return try device(i, body)
        }
        private static func cudaIndex(_ device: Device) -> Int {
            guard case .cuda(let i) = device else { preconditionFailure("Expected a cuda device, but got: \(device)") }
            return i
        }
        /// Waits for all queued work on `device` (default: every device).
        public static func synchronize(_ device: Int? = nil) {
            if let d = device { CUDARuntime.synchronize(d); return }
            for d in 0..<deviceCount() { CUDARuntime.synchronize(d) }
        }
        /// Seeds the current GPU's random generator (the CPU's is left alone, as in PyTorch).
        public static func manualSeed(_ seed: UInt64) { CUDARandom.manualSeed(seed, device: currentDevice()) }
        /// Seeds every GPU's random generator.
        public static func manualSeedAll(_ seed: UInt64) { CUDARandom.manualSeed(seed) }
        /// The current GPU's seed.
        public static func initialSeed() -> UInt64 { CUDARandom.initialSeed(device: currentDevice()) }
        /// Bytes held by live tensors on `device` (default: the current device), rounded to the allocator's
        /// block sizes, like PyTorch.
        public static func memoryAllocated(_ device: Int? = nil) -> Int {
            CUDAAllocator.stats(device: device ?? currentDevice()).allocated
        }
        /// The highest `memoryAllocated` since the start or `resetPeakMemoryStats`.
        public static func maxMemoryAllocated(_ device: Int? = nil) -> Int {
            CUDAAllocator.stats(device: device ?? currentDevice()).peakAllocated
        }
        /// Bytes the caching allocator holds from the driver (live plus cached blocks).
        public static func memoryReserved(_ device: Int? = nil) -> Int {
            CUDAAllocator.stats(device: device ?? currentDevice()).reserved
        }
        /// Gives cached, unused blocks back to the driver (every device's).
        public static func emptyCache() {
            for d in 0..<deviceCount() { CUDAAllocator.emptyCache(device: d) }
        }
        /// Restarts `maxMemoryAllocated` from the current figure.
        public static func resetPeakMemoryStats(_ device: Int? = nil) {
            CUDAAllocator.resetPeak(device: device ?? currentDevice())
        }
    }
}

extension torch.backends {
    /// PyTorch's `torch.backends.cuda`.
    public enum cuda {
        /// `torch.backends.cuda.matmul`.
        public enum matmul {
            /// Lets float32 GEMMs use TF32 tensor cores (faster, 10-bit mantissa inputs). False by default, as
            /// in PyTorch ≥ 1.12.
            nonisolated(unsafe) public static var allowTF32 = false
        }
    }
}

/// What CUDA loading found, for `swifttorch info` (the reason CUDA is unusable, the driver, the GPUs and
/// the path of each library).
public struct CUDAInfo {
    public let reason: String?
    public let emulated: Bool
    /// The driver's CUDA version, e.g. "13.0".
    public let driver: String
    /// "NVIDIA H200 (sm_90, 139.8 GiB)" per device.
    public let devices: [String]
    public let libraries: [(name: String, path: String?)]

    public static var current: CUDAInfo {
        let s = CUDARuntime.status
        var libraries = s.libraries
        if let v = s.nvrtcVersion { libraries = libraries.map { $0.name == "libnvrtc" ? ($0.name, ($0.path ?? "?") + " (NVRTC \(v.0).\(v.1))") : $0 } }
        if let r = s.cublasReason { libraries.append(("cuBLAS", "unusable: \(r)")) }
        return CUDAInfo(reason: s.devices.isEmpty ? (s.reason ?? "no CUDA device") : nil, emulated: s.emulated,
                        driver: "\(s.driverVersion / 1000).\(s.driverVersion % 1000 / 10)",
                        devices: s.devices.map { "\($0.name) (\($0.architecture), \(formatMemory($0.totalMemory)))" },
                        libraries: libraries)
    }
}
