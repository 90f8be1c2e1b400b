import CCUDAShim
/// Convolutions on CUDA through cuDNN 9's legacy convolution API (stcu_cudnn.h), the path `CUDAConvolution`
/// takes first whenever cuDNN loaded, `torch.backends.cudnn.enabled` is true and cuDNN can take the problem
/// (`route`); everything else runs as im2col + cuBLAS.
///
/// The three kernels of `CUDAConvolution` map onto cuDNN's three calls, as PyTorch maps them:
/// - `smallFromBig` (convolution forward) → `cudnnConvolutionForward`
/// - `bigFromSmall` (input gradient, transposed convolution) → `cudnnConvolutionBackwardData`
/// - `weightGrad` (both weight gradients) → `cudnnConvolutionBackwardFilter`
/// Biases are added by the elementwise kernels (one launch, as in PyTorch's cuDNN path); bias gradients are the
/// ops' own sums.
///
/// Each (direction, device, problem, settings) gets a `CUDNNPlan` once: its descriptors and the algorithm,
/// chosen by cuDNN's heuristics, or by timing every algorithm (`cudnnFind…AlgorithmEx`) when
/// `torch.backends.cudnn.benchmark` is true; only deterministic algorithms when `.deterministic` is. The plan
/// is cached (PyTorch caches only benchmark results, but a cached heuristic choice also saves the descriptor
/// set-up and the heuristics query on every call of a training step). A problem cuDNN rejects is remembered
/// and runs as im2col.
enum CUDNNConvolution {
    /// The most workspace an algorithm may use. PyTorch lets any algorithm take what the caching allocator can
    /// give; FFT algorithms then ask for several GiB on large batches while the implicit-GEMM kernels that win on
    /// recent GPUs need at most tens of MiB for ResNet-sized layers. 1 GiB keeps every algorithm that matters in
    /// the running and bounds what a timing run holds.
    nonisolated(unsafe) static var workspaceLimit = 1 << 30

    // MARK: entry points (nil: not for cuDNN, run im2col)

    /// `conv(x, w) + bias` shaped `outShape` through `cudnnConvolutionForward`, or nil.
    static func smallFromBig(_ x: Tensor, _ w: Tensor, bias: Tensor?, _ g: ConvGeometry, outShape: [Int]) -> Tensor? {
        guard let (d, index) = usableDescription(x, g, batch: x.shape[0], spatialDims: outShape.count - 2) else {
            return emptyResult(x, outShape, zero: false)
        }
        let out = Tensor(uninitializedShape: outShape, dtype: x.dtype, device: x.device)
        guard run(.forward, d, device: index, big: x.deviceAddress, small: out.deviceAddress, filter: w.deviceAddress) else { return nil }
        addBias(bias, to: out, channels: g.smallChannels)
        return out
    }

    /// The transposed convolution of `y` plus a per-big-channel bias, shaped `outShape`, through
    /// `cudnnConvolutionBackwardData`, or nil.
    static func bigFromSmall(_ y: Tensor, _ w: Tensor, bias: Tensor?, _ g: ConvGeometry, outShape: [Int]) -> Tensor? {
        guard let (d, index) = usableDescription(y, g, batch: y.shape[0], spatialDims: outShape.count - 2) else {
            return emptyResult(y, outShape, zero: false)
        }
        let out = Tensor(uninitializedShape: outShape, dtype: y.dtype, device: y.device)
        guard run(.backwardData, d, device: index, big: out.deviceAddress, small: y.deviceAddress, filter: w.deviceAddress) else { return nil }
        addBias(bias, to: out, channels: g.bigChannels)
        return out
    }

    /// The weight gradient for output gradient `dy` and input `x` through `cudnnConvolutionBackwardFilter`, or nil.
    static func weightGrad(_ dy: Tensor, _ x: Tensor, _ g: ConvGeometry, weightShape: [Int]) -> Tensor? {
        guard let (d, index) = usableDescription(x, g, batch: x.shape[0], spatialDims: weightShape.count - 2) else {
            return emptyResult(x, weightShape, zero: true)
        }
        let out = Tensor(uninitializedShape: weightShape, dtype: x.dtype, device: x.device)
        guard run(.backwardFilter, d, device: index, big: x.deviceAddress, small: dy.deviceAddress, filter: out.deviceAddress) else { return nil }
        return out
    }

    // MARK: routing

    /// The cuDNN description of a problem when cuDNN should run it: cuDNN `available` on the device, `enabled`
    /// (`torch.backends.cudnn.enabled`) and the problem one cuDNN takes (`CUDNNConvolutionDescription`). nil:
    /// im2col.
    static func route(_ g: ConvGeometry, batch: Int, spatialDims: Int, dtype: DType, enabled: Bool, available: Bool,
                      allowTF32: Bool) -> CUDNNConvolutionDescription? {
        guard enabled && available else { return nil }
        return CUDNNConvolutionDescription(g, batch: batch, spatialDims: spatialDims, dtype: dtype, allowTF32: allowTF32)
    }

    /// The description and device of a problem for cuDNN, or nil (im2col; also for an empty batch, which
    /// `emptyResult` answers).
    private static func usableDescription(_ t: Tensor, _ g: ConvGeometry, batch: Int,
                                          spatialDims: Int) -> (CUDNNConvolutionDescription, Int)? {
        guard torch.backends.cudnn.enabled, case .cuda(let index) = t.device, handle(index) != nil else { return nil }
        let d = route(g, batch: batch, spatialDims: spatialDims, dtype: t.dtype, enabled: true, available: true,
                      allowTF32: torch.backends.cudnn.allowTF32)
        return d.map { ($0, index) }
    }

    /// What a convolution of an empty batch gives when cuDNN would otherwise have taken it (cuDNN rejects zero
    /// sizes): an empty result, or a zero weight gradient. nil when the problem is not cuDNN's anyway.
    private static func emptyResult(_ t: Tensor, _ shape: [Int], zero: Bool) -> Tensor? {
        guard t.shape[0] == 0, torch.backends.cudnn.enabled, CUDNNConvolutionDescription.dataType(t.dtype) != nil,
              case .cuda(let index) = t.device, handle(index) != nil else { return nil }
        let out = Tensor(uninitializedShape: shape, dtype: t.dtype, device: t.device)
        if zero { CUDAElementwise.fill(out, 0) }
        return out
    }

    private static func addBias(_ bias: Tensor?, to out: Tensor, channels: Int) {
        guard let bias else { return }
        let view = out.view([out.shape[0], channels, -1])
        CUDAElementwise.launch(.binary(.add, out.dtype), out: view, view, bias.view([1, channels, 1]))
    }

    // MARK: the library and its handles

    /// Whether libcudnn.so.9 loads with every call SwiftTorch binds (`torch.backends.cudnn.isAvailable()`).
    /// Needs no GPU, as PyTorch's answer does not.
    static var isLoaded: Bool {
        var err = [CChar](repeating: 0, count: 1024)
        return stcu_load_cudnn(&err, err.count) == 0
    }

    /// cuDNN's version (`MAJOR·10000 + MINOR·100 + PATCH`, e.g. 92600 for 9.26.0), or nil when it does not load.
    static var version: Int? { isLoaded ? Int(stcu_cudnnGetVersion()) : nil }

    private enum HandleState {
        case unknown
        case ready(cudnnHandle_t)
        case unusable
    }

    nonisolated(unsafe) private static var handles: [HandleState] = []
    nonisolated(unsafe) private static var plans: [CUDNNPlanKey: CUDNNPlan?] = [:]
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    private static func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// Device `index`'s cuDNN handle on its stream, made at first use; nil when cuDNN is not loaded, the device is
    /// the emulator, or `cudnnCreate` failed (said once on stderr: convolutions then run as im2col).
    static func handle(_ index: Int) -> cudnnHandle_t? {
        let state: HandleState = locked { index < handles.count ? handles[index] : .unknown }
        switch state {
        case .ready(let h): return h
        case .unusable: return nil
        case .unknown: break
        }
        // Not remembered: a test may leave the emulator for the real driver.
        if CUDARuntime.isEmulated { return nil }
        let made = makeHandle(index)
        return locked {
            while handles.count <= index { handles.append(.unknown) }
            if case .ready(let h) = handles[index] { return h }   // another thread was first
            handles[index] = made.map { .ready($0) } ?? .unusable
            return made
        }
    }

    private static func makeHandle(_ index: Int) -> cudnnHandle_t? {
        let status = CUDARuntime.status
        guard status.cudnnVersion != nil, index < status.devices.count else { return nil }
        let ctx = CUDARuntime.device(index)
        ctx.bind()
        var h: cudnnHandle_t? = nil
        var r = stcu_cudnnCreate(&h)
        if r == CUDNN_STATUS_SUCCESS, let h {
            r = stcu_cudnnSetStream(h, ctx.stream)
            if r == CUDNN_STATUS_SUCCESS { return h }
            _ = stcu_cudnnDestroy(h)
        }
        let message = "SwiftTorch: cuDNN is loaded but unusable on cuda:\(index) (\(errorString(r))); convolutions run as im2col + cuBLAS\n"
        fputs(message, stderr)
        return nil
    }

    /// Why a convolution is not running through cuDNN, for messages.
    static var unavailableReason: String {
        if !torch.backends.cudnn.enabled { return "torch.backends.cudnn.enabled is false" }
        if CUDARuntime.isEmulated { return "the CUDA emulator has no cuDNN" }
        var err = [CChar](repeating: 0, count: 1024)
        if stcu_load_cudnn(&err, err.count) != 0 { return String(cString: err) }
        return "cudnnCreate failed on this device"
    }

    static func errorString(_ status: cudnnStatus_t) -> String { String(cString: stcu_cudnnGetErrorString(status)) }

    // MARK: plans

    /// Runs `direction` for problem `d` on device `index` with the big tensor, small tensor and filter at these
    /// addresses (the output is the one the direction writes). False when cuDNN has no algorithm for it.
    private static func run(_ direction: CUDNNDirection, _ d: CUDNNConvolutionDescription, device index: Int,
                            big: UInt64, small: UInt64, filter: UInt64) -> Bool {
        guard let h = handle(index) else { return false }
        let key = CUDNNPlanKey(direction: direction, device: index, description: d,
                               benchmark: torch.backends.cudnn.benchmark, deterministic: torch.backends.cudnn.deterministic)
        let ctx = CUDARuntime.device(index)
        ctx.bind()
        let operands = CUDNNOperands(big: big, small: small, filter: filter)
        let cached: CUDNNPlan?? = locked { plans[key] }
        let plan: CUDNNPlan?
        if let cached {
            plan = cached
        } else {
            plan = CUDNNPlan.make(key, handle: h, operands: operands)
            locked { plans[key] = .some(plan) }
        }
        guard let plan else { return false }
        plan.execute(handle: h, operands: operands, device: index)
        return true
    }

    /// How many problems have a cached plan or are remembered as im2col's (`cuda-check` reports it).
    static var cachedPlanCount: Int { locked { plans.count } }
}

/// Which cuDNN call a plan is for.
enum CUDNNDirection: Int, Hashable, CaseIterable {
    /// y = conv(x, w): `cudnnConvolutionForward`.
    case forward
    /// x = convᵀ(y, w): `cudnnConvolutionBackwardData`.
    case backwardData
    /// dw from x and dy: `cudnnConvolutionBackwardFilter`.
    case backwardFilter

    /// How many algorithms cuDNN has for this direction.
    var algorithmCount: Int32 {
        switch self {
        case .forward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT
        case .backwardData: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
        case .backwardFilter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT
        }
    }

    /// The cuDNN call that runs it, and the op it serves, for messages.
    var call: String {
        switch self {
        case .forward: return "cudnnConvolutionForward"
        case .backwardData: return "cudnnConvolutionBackwardData"
        case .backwardFilter: return "cudnnConvolutionBackwardFilter"
        }
    }
    var op: String {
        switch self {
        case .forward: return "conv"
        case .backwardData: return "conv_transpose"
        case .backwardFilter: return "conv_backward_weight"
        }
    }
}

/// One cached choice: the problem, the device, and the settings that change which algorithm may run (TF32 is
/// in the description's math type).
struct CUDNNPlanKey: Hashable {
    var direction: CUDNNDirection
    var device: Int
    var description: CUDNNConvolutionDescription
    var benchmark: Bool
    var deterministic: Bool
}

/// Device addresses of one call's big tensor, small tensor and filter.
struct CUDNNOperands {
    var big: UInt64
    var small: UInt64
    var filter: UInt64

    func pointer(_ a: UInt64) -> UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: UInt(a)) }
}
