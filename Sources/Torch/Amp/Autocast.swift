/// Automatic mixed precision (PyTorch's `torch.amp` / `torch.autocast`): regions where matrix products and
/// convolutions run in float16 or bfloat16 while precision-sensitive ops (softmax, losses, norms, reductions)
/// run in float32, and ``torch/amp/GradScaler`` to keep float16 gradients from underflowing.
///
/// ```swift
/// let scaler = torch.amp.GradScaler(device: "cuda")
/// for (x, y) in loader {
///     optimizer.zeroGrad()
///     let loss = torch.autocast(deviceType: "cuda", dtype: .float16) {
///         F.crossEntropy(model(x.to(device)), y.to(device))
///     }
///     scaler.scale(loss).backward()
///     scaler.step(optimizer)
///     scaler.update()
/// }
/// ```
extension torch {
    public enum amp {
        /// `torch.amp.autocast`: the same as ``torch/autocast(deviceType:dtype:enabled:cacheEnabled:_:)``.
        public static func autocast<R>(deviceType: String, dtype: DType? = nil, enabled: Bool = true,
                                       cacheEnabled: Bool? = nil, _ body: () throws -> R) rethrows -> R {
            try torch.autocast(deviceType: deviceType, dtype: dtype, enabled: enabled, cacheEnabled: cacheEnabled, body)
        }
    }

    /// Runs `body` with autocast on for `deviceType` ("cuda" or "cpu"), as PyTorch's `with torch.autocast(...)`:
    /// inside, ops on that device's floating tensors run in the dtype autocast's op lists give them. Matrix
    /// products, linear layers and convolutions run in `dtype` (default float16 on CUDA, bfloat16 on the CPU);
    /// softmax, the losses, layer/group norm and reductions run in float32 (on the CPU only the losses and a few
    /// numerically delicate ops, as in PyTorch). Outputs keep the dtype they were computed in, and gradients
    /// flow back to float32 parameters in float32.
    ///
    /// Autocast is per thread. Regions nest, and `enabled: false` turns it off inside an outer region.
    /// float32 parameters cast for the region are cached until the outermost region ends (`cacheEnabled`,
    /// default true). Run `backward()` outside the region: backward ops run in the forward ops' dtypes.
    ///
    /// An unsupported `dtype`, or `"cuda"` on a machine without a usable GPU, prints PyTorch's warning and runs
    /// `body` with autocast off for that device.
    ///
    /// ```swift
    /// let logits = torch.autocast(deviceType: "cpu", dtype: .bfloat16) { model(x) }   // bfloat16
    /// ```
    public static func autocast<R>(deviceType: String, dtype: DType? = nil, enabled: Bool = true,
                                   cacheEnabled: Bool? = nil, _ body: () throws -> R) rethrows -> R {
        let kind = AutocastDevice(deviceType)
        var on = enabled
        let target = dtype ?? Autocast.dtype(for: kind)
        if on && kind == .cuda && !torch.cuda.isAvailable() {
            Autocast.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            on = false
        }
        if on && !(target == .float16 || target == .bfloat16) {
            switch kind {
            case .cpu:
                Autocast.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                    + "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
            case .cuda:
                Autocast.warn("In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n"
                    + "CUDA Autocast only supports dtype of torch.float16, torch.bfloat16 currently.")
            }
            on = false
        }
        return try Autocast.withRegion(kind, enabled: on, dtype: target, cacheEnabled: cacheEnabled, body)
    }

    /// Whether autocast is on for `deviceType` on this thread (`torch.is_autocast_enabled(device_type)`).
    public static func isAutocastEnabled(_ deviceType: String = "cuda") -> Bool {
        Autocast.isEnabled(AutocastDevice(deviceType))
    }

    /// The dtype autocast uses for `deviceType`'s lower-precision ops on this thread
    /// (`torch.get_autocast_dtype`): float16 for CUDA and bfloat16 for the CPU unless a region says otherwise.
    public static func getAutocastDtype(_ deviceType: String) -> DType {
        Autocast.dtype(for: AutocastDevice(deviceType))
    }

    /// Drops the float32 → lower-precision casts of parameters autocast keeps for the current region
    /// (`torch.clear_autocast_cache()`).
    public static func clearAutocastCache() { Autocast.state?.cache.removeAll() }
}

/// The two device types autocast knows.
enum AutocastDevice: Equatable {
    case cpu, cuda

    init(_ name: String) {
        switch name {
        case "cpu": self = .cpu
        case "cuda": self = .cuda
        default: preconditionFailure("User specified an unsupported autocast device_type '\(name)'")
        }
    }

    init(_ device: Device) {
        switch device {
        case .cpu: self = .cpu
        case .cuda: self = .cuda
        }
    }
}

/// One thread's autocast settings and cast cache, alive while the thread is inside a region.
final class AutocastState {
    var cpuEnabled = false, cpuDtype = DType.bfloat16
    var cudaEnabled = false, cudaDtype = DType.float16
    var cacheEnabled = true
    /// float32 leaf parameters already cast to the lower dtype in this region, by tensor identity. The source is
    /// held so its identity cannot be reused by a new tensor while the entry lives.
    var cache: [ObjectIdentifier: (source: Tensor, cast: Tensor)] = [:]

    func enabled(_ kind: AutocastDevice) -> Bool { kind == .cpu ? cpuEnabled : cudaEnabled }
    func dtype(_ kind: AutocastDevice) -> DType { kind == .cpu ? cpuDtype : cudaDtype }
}

/// The thread-local switch the ops consult: one `pthread_getspecific` on the fast path (as ``GradMode``), set
/// only inside a region and cleared while an op runs on inputs autocast already cast (PyTorch's redispatch
/// below the Autocast key) and during backward.
enum Autocast {
    /// The retained state of the outermost region, nil outside one and while suspended.
    private static let slot = ThreadLocalSlot("torch.autocast")

    /// True on this thread inside an autocast region (enabled or not) and outside a suspension.
    static var isActive: Bool { @inline(__always) get { slot.pointer != nil } }

    /// This thread's state, when inside a region and not suspended.
    static var state: AutocastState? {
        guard let p = slot.pointer else { return nil }
        return Unmanaged<AutocastState>.fromOpaque(p).takeUnretainedValue()
    }

    static func isEnabled(_ kind: AutocastDevice) -> Bool { state?.enabled(kind) ?? false }

    static func dtype(for kind: AutocastDevice) -> DType {
        state?.dtype(kind) ?? (kind == .cpu ? .bfloat16 : .float16)
    }

    /// Runs `body` in a region that sets `kind`'s switch and dtype, restoring the outer settings after; the
    /// outermost region owns the state (and so the cast cache), which ends with it.
    static func withRegion<R>(_ kind: AutocastDevice, enabled: Bool, dtype: DType, cacheEnabled: Bool?,
                              _ body: () throws -> R) rethrows -> R {
        let outer = state
        let s = outer ?? AutocastState()
        let saved = (s.cpuEnabled, s.cpuDtype, s.cudaEnabled, s.cudaDtype, s.cacheEnabled)
        switch kind {
        case .cpu: s.cpuEnabled = enabled; s.cpuDtype = dtype
        case .cuda: s.cudaEnabled = enabled; s.cudaDtype = dtype
        }
        if let cacheEnabled { s.cacheEnabled = cacheEnabled }
        let unmanaged = Unmanaged.passRetained(s)
        if outer == nil { slot.pointer = unmanaged.toOpaque() }
        defer {
            (s.cpuEnabled, s.cpuDtype, s.cudaEnabled, s.cudaDtype, s.cacheEnabled) = saved
            if outer == nil {
                s.cache.removeAll()
                slot.pointer = nil
            }
            unmanaged.release()
        }
        return try body()
    }

    /// Runs `body` with autocast off on this thread (ops whose inputs autocast has already cast, and backward),
    /// restoring it after.
    @inline(__always) static func suspended<R>(_ body: () throws -> R) rethrows -> R {
        guard let p = slot.pointer else { return try body() }
        slot.pointer = nil
        defer { slot.pointer = p }
        return try body()
    }

    /// PyTorch's `UserWarning` lines, on standard error.
    static func warn(_ message: String) {
        writeStandardError("UserWarning: " + message + "\n")
    }
}
