import CCUDAShim
/// A failure that comes from outside the program: a missing or unusable CUDA library, a kernel the
/// compiler rejected, a driver call that failed. Thrown by the APIs that can throw (`torch.cuda.init()`,
/// `KernelCompiler`); inside tensor ops, which cannot throw, the same text stops the program.
public enum CUDAError: Error, CustomStringConvertible, Equatable {
    /// No usable CUDA (the reason says which piece is missing).
    case unavailable(String)
    /// NVRTC (or the emulator's host compiler) rejected a kernel source; the log is attached.
    case compilation(kernel: String, log: String)
    /// A driver or library call failed: the call, and CUDA's error name and string.
    case call(String, code: Int32, message: String)

    public var description: String {
        switch self {
        case .unavailable(let why): return "CUDA is not available: \(why)"
        case .compilation(let name, let log): return "CUDA kernel compilation failed for \(name):\n\(log)"
        case .call(let op, _, let message): return "\(op): CUDA error: \(message)"
        }
    }
}

/// One CUDA device as the backend uses it: its primary context, its one stream, what it is, and the
/// kernels loaded for it (docs/architecture.md §7: one stream per device, asynchronous launches).
final class CUDADeviceContext {
    let index: Int
    let context: CUcontext?
    let stream: CUstream?
    let name: String
    let major: Int
    let minor: Int
    let multiprocessorCount: Int
    let totalMemory: Int
    /// Loaded kernels by `KernelID.slot` (nil until first use); looked up by index on the hot path.
    let functions: UnsafeMutablePointer<CUfunction?>
    /// cuBLAS handle, made at first GEMM, and the TF32 setting it was last given.
    var cublas: cublasHandle_t?
    var tf32: Bool?

    init(index: Int, context: CUcontext?, stream: CUstream?, name: String, major: Int, minor: Int,
         multiprocessorCount: Int, totalMemory: Int) {
        self.index = index
        self.context = context
        self.stream = stream
        self.name = name
        self.major = major
        self.minor = minor
        self.multiprocessorCount = multiprocessorCount
        self.totalMemory = totalMemory
        functions = .allocate(capacity: KernelID.slotCount)
        functions.initialize(repeating: nil, count: KernelID.slotCount)
    }

    /// `sm_90` for compute capability 9.0.
    var architecture: String { "sm_\(major)\(minor)" }

    /// Makes this device's context current on the calling thread (a thread-local compare when it already is).
    @inline(__always) func bind() {
        let r = stcu_dev_bind(context)
        if _slowPath(r != 0) { CUDARuntime.fail(r, "cuCtxSetCurrent") }
    }
}

/// Loads CUDA once (driver, NVRTC, cuBLAS; or the host emulator), keeps why it is unusable, and owns the
/// devices. Nothing here runs until a CUDA API is first used, so CPU-only programs never touch CUDA.
enum CUDARuntime {
    /// What loading found: the devices, or why there are none, and which libraries were used.
    struct Status {
        var devices: [CUDADeviceContext] = []
        var reason: String? = nil
        var emulated = false
        var driverVersion = 0
        var nvrtcVersion: (Int, Int)? = nil
        var libraries: [(name: String, path: String?)] = []
        var cublasReason: String? = nil
        var cudnnVersion: Int? = nil
    }

    nonisolated(unsafe) private static var loaded: Status? = nil
    nonisolated(unsafe) private static var deviceTable: [CUDADeviceContext] = []
    nonisolated(unsafe) private static var emulatorRequested: Bool = {
        if let v = getenv("SWIFTTORCH_CUDA_EMULATOR") { return String(cString: v) == "1" }
        return false
    }()
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    /// Uses the host emulator instead of a GPU (tests; `SWIFTTORCH_CUDA_EMULATOR=1`), with `devices` emulated
    /// devices (nil: `SWIFTTORCH_CUDA_EMULATOR_DEVICES`, default 1). Ignored when a real GPU is already in use;
    /// otherwise it replaces the "no CUDA" status of an earlier look-up, or an emulator with another count.
    static func useEmulator(devices: Int? = nil) {
        let count = devices ?? emulatorDeviceCount()
        precondition(count >= 1, "CUDARuntime.useEmulator: expected at least one device, got \(count)")
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if let s = loaded, !s.devices.isEmpty, !s.emulated || s.devices.count == count { return }
        emulatorRequested = true
        loaded = loadEmulator(devices: count)
        deviceTable = loaded!.devices
    }

    /// `SWIFTTORCH_CUDA_EMULATOR_DEVICES`: how many devices the emulator reports (1 when unset).
    static func emulatorDeviceCount() -> Int {
        guard let v = getenv("SWIFTTORCH_CUDA_EMULATOR_DEVICES") else { return 1 }
        let text = String(cString: v)
        guard let n = Int(text), n >= 1, n <= 64 else {
            preconditionFailure("SWIFTTORCH_CUDA_EMULATOR_DEVICES: expected a device count from 1 to 64, got '\(text)'")
        }
        return n
    }

    /// Leaves the emulator (tests that must see a machine without CUDA run after it): frees its cached blocks
    /// and forgets the status, so the next look-up loads the real driver again. Live device tensors must be gone.
    static func stopEmulator() {
        guard isEmulated else { return }
        for d in status.devices { CUDAAllocator.emptyCache(device: d.index) }
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        loaded = nil
        deviceTable = []
        emulatorRequested = false
        stcu_dev_use_emulator(0)
    }

    /// Loads on first call.
    static var status: Status {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if let s = loaded { return s }
        let s = emulatorRequested ? loadEmulator(devices: emulatorDeviceCount()) : loadDriver()
        loaded = s
        deviceTable = s.devices
        return s
    }

    static var isAvailable: Bool { !status.devices.isEmpty }
    static var isEmulated: Bool { status.emulated }

    /// The device `index`, stopping with PyTorch's messages when CUDA is unusable or the index is invalid.
    @inline(__always) static func device(_ index: Int) -> CUDADeviceContext {
        let table = deviceTable
        if _fastPath(index >= 0 && index < table.count) { return table[index] }
        return deviceSlow(index)
    }

    @inline(never) private static func deviceSlow(_ index: Int) -> CUDADeviceContext {
        let s = status
        if s.devices.isEmpty {
            preconditionFailure("Torch not compiled with CUDA enabled, or no usable GPU: \(s.reason ?? "no CUDA device") (torch.cuda.isAvailable() is false)")
        }
        precondition(index >= 0 && index < s.devices.count,
                     "CUDA error: invalid device ordinal (cuda:\(index) requested; torch.cuda.deviceCount() is \(s.devices.count))")
        return s.devices[index]
    }

    // MARK: loading

    private static func cString(_ body: (UnsafeMutablePointer<CChar>, Int) -> Void) -> String {
        var buf = [CChar](repeating: 0, count: 512)
        buf.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        return String(cString: buf)
    }

    private static func loadDriver() -> Status {
        var s = Status()
        var err = ""
        let rc = Int32(truncatingIfNeeded: stcu_load_driver_into(&err))
        s.libraries.append(("libcuda", stcu_library_path(Int32(STCU_LIB_DRIVER)).map { String(cString: $0) }))
        if rc != 0 { s.reason = err; return s }
        var r = stcu_cuInit(0)
        if r != 0 { s.reason = "cuInit failed: \(errorText(r))"; return s }
        var version: Int32 = 0
        _ = stcu_cuDriverGetVersion(&version)
        s.driverVersion = Int(version)
        var nvrtcErr = ""
        if Int32(truncatingIfNeeded: stcu_load_nvrtc_into(&nvrtcErr)) != 0 {
            s.reason = nvrtcErr
            return s
        }
        var major: Int32 = 0, minor: Int32 = 0
        _ = stcu_nvrtcVersion(&major, &minor)
        s.nvrtcVersion = (Int(major), Int(minor))
        s.libraries.append(("libnvrtc", stcu_library_path(Int32(STCU_LIB_NVRTC)).map { String(cString: $0) }))
        var cublasErr = ""
        if Int32(truncatingIfNeeded: stcu_load_cublas_into(&cublasErr)) != 0 { s.cublasReason = cublasErr }
        s.libraries.append(("libcublas", stcu_library_path(Int32(STCU_LIB_CUBLAS)).map { String(cString: $0) }))
        s.libraries.append(("libcublasLt", stcu_library_path(Int32(STCU_LIB_CUBLASLT)).map { String(cString: $0) }))
        var cudnnErr = ""
        if Int32(truncatingIfNeeded: stcu_load_cudnn_into(&cudnnErr)) == 0 { s.cudnnVersion = Int(stcu_cudnnGetVersion()) }
        s.libraries.append(("libcudnn", stcu_library_path(Int32(STCU_LIB_CUDNN)).map { String(cString: $0) }))
        var count: Int32 = 0
        r = stcu_cuDeviceGetCount(&count)
        if r != 0 || count == 0 { s.reason = r != 0 ? "cuDeviceGetCount failed: \(errorText(r))" : "the driver reports no CUDA device"; return s }
        for i in 0..<Int(count) {
            var dev: CUdevice = 0
            guard stcu_cuDeviceGet(&dev, Int32(i)) == 0 else { continue }
            let name = cString { p, n in _ = stcu_cuDeviceGetName(p, Int32(n), dev) }
            func attribute(_ a: Int32) -> Int {
                var v: Int32 = 0
                _ = stcu_cuDeviceGetAttribute(&v, a, dev)
                return Int(v)
            }
            var total = 0
            _ = stcu_cuDeviceTotalMem(&total, dev)
            var ctx: CUcontext? = nil
            r = stcu_cuDevicePrimaryCtxRetain(&ctx, dev)
            if r != 0 { s.reason = "cuDevicePrimaryCtxRetain(cuda:\(i)) failed: \(errorText(r))"; return Status(reason: s.reason) }
            _ = stcu_dev_bind(ctx)
            var stream: CUstream? = nil
            r = stcu_cuStreamCreate(&stream, 0)
            if r != 0 { s.reason = "cuStreamCreate(cuda:\(i)) failed: \(errorText(r))"; return Status(reason: s.reason) }
            s.devices.append(CUDADeviceContext(
                index: i, context: ctx, stream: stream, name: name,
                major: attribute(Int32(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)),
                minor: attribute(Int32(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
                multiprocessorCount: attribute(Int32(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)), totalMemory: total))
        }
        if s.devices.isEmpty { s.reason = "no CUDA device could be opened" }
        return s
    }

    /// `devices` emulated devices, alike: each has its own allocator pool, generator and kernel table, and all
    /// run on the host (their streams are the emulator's one synchronous stream).
    private static func loadEmulator(devices: Int) -> Status {
        stcu_dev_use_emulator(1)
        var s = Status()
        s.emulated = true
        s.libraries = [("emulator", "host C++ compiler: \(KernelCompiler.hostCompiler)")]
        s.devices = (0..<devices).map {
            CUDADeviceContext(index: $0, context: nil, stream: nil, name: "SwiftTorch CUDA emulator (host CPU)",
                              major: 9, minor: 0, multiprocessorCount: 4, totalMemory: 16 << 30)
        }
        return s
    }

    // MARK: errors

    /// CUDA's name and string for `code`, as PyTorch prints them.
    static func errorText(_ code: Int32) -> String {
        if isEmulatedWithoutLoading { return emulatorErrorText(code) }
        var name: UnsafePointer<CChar>? = nil, text: UnsafePointer<CChar>? = nil
        _ = stcu_cuGetErrorName(code, &name)
        _ = stcu_cuGetErrorString(code, &text)
        let n = name.map { String(cString: $0) } ?? "CUDA error \(code)"
        return text.map { "\(String(cString: $0)) (\(n))" } ?? n
    }

    private static var isEmulatedWithoutLoading: Bool { stcu_dev_is_emulated() != 0 }

    /// The driver's text for the codes the emulator returns itself (graph capture), else the bare code.
    private static func emulatorErrorText(_ code: Int32) -> String {
        switch code {
        case Int32(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED):
            return "operation not permitted when stream is capturing (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)"
        case Int32(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED):
            return "operation failed due to a previous error during capture (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)"
        case Int32(CUDA_ERROR_ILLEGAL_STATE):
            return "the operation cannot be performed in the present state (CUDA_ERROR_ILLEGAL_STATE)"
        default: return "emulator error \(code)"
        }
    }

    /// Stops with the op and CUDA's error string (PyTorch's `RuntimeError: CUDA error: ...`).
    @inline(never) static func fail(_ code: Int32, _ op: String) -> Never {
        preconditionFailure("\(op): CUDA error: \(errorText(code))")
    }

    /// Checks a driver call's result. An operation a CUDA graph capture refused does not stop the program: the
    /// capture records it and `CUDAGraph.captureEnd()` throws (ops cannot throw; PyTorch raises at the op).
    @inline(__always) static func check(_ code: Int32, _ op: @autoclosure () -> String) {
        if _slowPath(code != 0) { failUnlessCaptureRefused(code, op()) }
    }

    @inline(never) private static func failUnlessCaptureRefused(_ code: Int32, _ op: String) {
        if code == Int32(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), CUDAGraphCapture.refuse(op) { return }
        fail(code, op)
    }

    // MARK: synchronisation and pinned host memory

    /// Waits for everything queued on `index`'s stream.
    static func synchronize(_ index: Int) {
        let d = device(index)
        d.bind()
        check(stcu_dev_sync(d.stream), "torch.cuda.synchronize")
        releaseHostBuffers(device: index)
    }

    /// Host storages an asynchronous copy to a device still reads (pinned sources), by device: kept alive until
    /// that device's stream is next waited for.
    nonisolated(unsafe) private static var hostBuffersInFlight: [Int: [Storage]] = [:]

    static func keepAliveUntilSync(_ s: Storage, device: Int) {
        pthread_mutex_lock(lock)
        hostBuffersInFlight[device, default: []].append(s)
        let many = hostBuffersInFlight[device]!.count > 256
        pthread_mutex_unlock(lock)
        if many { synchronize(device) }
    }

    /// Lets go of the pinned sources of `device`'s finished uploads; call right after waiting for its stream
    /// (every wait does: `synchronize`, a download), so a loop of uploads and downloads reuses a few pinned
    /// blocks instead of holding one per upload.
    static func releaseHostBuffers(device: Int) {
        pthread_mutex_lock(lock)
        let held = hostBuffersInFlight.removeValue(forKey: device)
        pthread_mutex_unlock(lock)
        _ = held
    }

    /// Freed page-locked blocks by capacity, reused by the next pinning of that size class (PyTorch's caching
    /// host allocator): `cuMemHostAlloc` takes milliseconds and serialises with the device, which a DataLoader
    /// pinning every batch would otherwise pay per batch. Blocks stay pinned until the process ends.
    nonisolated(unsafe) private static var pinnedCache: [Int: [UnsafeMutableRawPointer]] = [:]

    /// Page-locked host memory of at least `bytes` (capacity: the next power of two, at least 4 KiB, so
    /// batches of one loader share a size class), or nil when no real CUDA driver is loaded.
    static func allocatePinned(_ bytes: Int) -> (pointer: UnsafeMutableRawPointer, capacity: Int)? {
        let s = status
        guard !s.devices.isEmpty, !s.emulated else { return nil }
        let capacity = Swift.max(4096, 1 << (Int.bitWidth - (Swift.max(bytes, 1) - 1).leadingZeroBitCount))
        pthread_mutex_lock(lock)
        let cached = pinnedCache[capacity]?.popLast()
        pthread_mutex_unlock(lock)
        if let cached { return (cached, capacity) }
        s.devices[0].bind()
        var p: UnsafeMutableRawPointer? = nil
        let r = stcu_cuMemHostAlloc(&p, capacity, UInt32(CU_MEMHOSTALLOC_PORTABLE))
        guard r == 0, let p else { return nil }
        return (p, capacity)
    }

    /// Returns a pinned block to the cache.
    static func freePinned(_ p: UnsafeMutableRawPointer, capacity: Int) {
        pthread_mutex_lock(lock)
        pinnedCache[capacity, default: []].append(p)
        pthread_mutex_unlock(lock)
    }
}

// The loaders' error buffers, as Swift strings.
private func loadInto(_ body: (UnsafeMutablePointer<CChar>, Int) -> Int32, _ message: inout String) -> Int32 {
    var buf = [CChar](repeating: 0, count: 1024)
    let r = buf.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
    message = String(cString: buf)
    return r
}
private func stcu_load_driver_into(_ m: inout String) -> Int32 { loadInto({ stcu_load_driver($0, $1) }, &m) }
private func stcu_load_nvrtc_into(_ m: inout String) -> Int32 { loadInto({ stcu_load_nvrtc($0, $1) }, &m) }
private func stcu_load_cublas_into(_ m: inout String) -> Int32 { loadInto({ stcu_load_cublas($0, $1) }, &m) }
private func stcu_load_cudnn_into(_ m: inout String) -> Int32 { loadInto({ stcu_load_cudnn($0, $1) }, &m) }
