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
        /// Compute capability as (major, minor), e.g. (9, 0).
        public static func getDeviceCapability(_ device: Int = 0) -> (Int, Int) {
            let d = CUDARuntime.device(device)
            return (d.major, d.minor)
        }
        nonisolated(unsafe) private static var current = 0
        /// The default CUDA device index (`.cuda()` with no index uses device 0, as documented by PyTorch's
        /// `torch.cuda.current_device()` for a fresh process).
        public static func currentDevice() -> Int { current }
        /// Sets the current device.
        public static func setDevice(_ device: Int) {
            _ = CUDARuntime.device(device)
            current = device
        }
        /// Waits for all queued work on `device` (default: every device).
        public static func synchronize(_ device: Int? = nil) {
            if let d = device { CUDARuntime.synchronize(d); return }
            for d in 0..<deviceCount() { CUDARuntime.synchronize(d) }
        }
        /// Seeds the current GPU's random generator (the CPU's is left alone, as in PyTorch).
        public static func manualSeed(_ seed: UInt64) { CUDARandom.manualSeed(seed, device: current) }
        /// Seeds every GPU's random generator.
        public static func manualSeedAll(_ seed: UInt64) { CUDARandom.manualSeed(seed) }
        /// The current GPU's seed.
        public static func initialSeed() -> UInt64 { CUDARandom.initialSeed(device: current) }
        /// Bytes held by live tensors on `device` (rounded to the allocator's block sizes, like PyTorch).
        public static func memoryAllocated(_ device: Int = 0) -> Int { CUDAAllocator.stats(device: device).allocated }
        /// The highest `memoryAllocated` since the start or `resetPeakMemoryStats`.
        public static func maxMemoryAllocated(_ device: Int = 0) -> Int { CUDAAllocator.stats(device: device).peakAllocated }
        /// Bytes the caching allocator holds from the driver (live plus cached blocks).
        public static func memoryReserved(_ device: Int = 0) -> Int { CUDAAllocator.stats(device: device).reserved }
        /// Gives cached, unused blocks back to the driver (the current device).
        public static func emptyCache() {
            for d in 0..<deviceCount() { CUDAAllocator.emptyCache(device: d) }
        }
        /// Restarts `maxMemoryAllocated` from the current figure.
        public static func resetPeakMemoryStats(_ device: Int = 0) { CUDAAllocator.resetPeak(device: device) }
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
