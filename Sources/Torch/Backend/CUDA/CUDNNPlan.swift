import CCUDAShim

/// One convolution as cuDNN's legacy API takes it: NCHW (NCDHW) dims of the big tensor (the convolution's
/// input), the small tensor (its output) and the filter, all contiguous; padding, stride and dilation; groups;
/// data, compute and math types. Pure values, so it keys the plan cache and is testable without a GPU.
struct CUDNNConvolutionDescription: Hashable {
    var dataType: Int32
    var computeType: Int32
    /// The math type the descriptor starts with (what PyTorch sets: tensor cores for half types, FMA for float32
    /// when TF32 is not allowed); the chosen algorithm's own math type replaces it unless that is FMA.
    var mathType: Int32
    var bigDims: [Int32]
    var smallDims: [Int32]
    var filterDims: [Int32]
    var padding: [Int32]
    var stride: [Int32]
    var dilation: [Int32]
    var groups: Int32

    /// The description of `g` over `batch` images with `spatialDims` spatial dims, or nil when cuDNN cannot take
    /// it: a dtype other than float32/float64/float16/bfloat16, an empty tensor, or a tensor or size beyond the
    /// legacy API's 32-bit counts (PyTorch splits such batches; here they run as im2col).
    init?(_ g: ConvGeometry, batch: Int, spatialDims: Int, dtype: DType, allowTF32: Bool) {
        guard let dataType = Self.dataType(dtype), (1...3).contains(spatialDims), g.groups > 0 else { return nil }
        // Nd descriptors take 4 to 8 dims: a 1-D convolution is a 2-D one of height 1 (as in PyTorch); the 3-D
        // geometry already has that leading 1.
        let n = Swift.max(spatialDims, 2)
        func tail(_ v: [Int]) -> [Int] { Array(v.suffix(n)) }
        let big = [batch, g.bigChannels] + tail(g.big)
        let small = [batch, g.smallChannels] + tail(g.small)
        let filter = [g.smallChannels, g.bigChannels / g.groups] + tail(g.kernel)
        for dims in [big, small, filter] {
            var count = 1
            for v in dims {
                guard v > 0 else { return nil }
                let (p, overflow) = count.multipliedReportingOverflow(by: v)
                guard !overflow, p <= Int(Int32.max) else { return nil }
                count = p
            }
        }
        let parameters = tail(g.padding) + tail(g.stride) + tail(g.dilation)
        guard parameters.allSatisfy({ $0 >= 0 && $0 <= Int(Int32.max) }) else { return nil }
        self.dataType = dataType
        computeType = dtype == .float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT
        mathType = Self.mathType(dtype, allowTF32: allowTF32)
        bigDims = big.map { Int32($0) }
        smallDims = small.map { Int32($0) }
        filterDims = filter.map { Int32($0) }
        padding = tail(g.padding).map { Int32($0) }
        stride = tail(g.stride).map { Int32($0) }
        dilation = tail(g.dilation).map { Int32($0) }
        groups = Int32(g.groups)
    }

    /// cuDNN's data type for `dtype`, or nil when cuDNN has no convolutions in it.
    static func dataType(_ dtype: DType) -> Int32? {
        switch dtype {
        case .float32: return CUDNN_DATA_FLOAT
        case .float64: return CUDNN_DATA_DOUBLE
        case .float16: return CUDNN_DATA_HALF
        case .bfloat16: return CUDNN_DATA_BFLOAT16
        default: return nil
        }
    }

    /// PyTorch's math type for a convolution descriptor: tensor cores for float16/bfloat16, FMA only for float32
    /// when TF32 is not allowed (`torch.backends.cudnn.allowTF32` false: full float32 products, as im2col's
    /// cuBLAS GEMMs), cuDNN's default otherwise (which lets float32 use TF32 tensor cores).
    static func mathType(_ dtype: DType, allowTF32: Bool) -> Int32 {
        switch dtype {
        case .float16, .bfloat16: return CUDNN_TENSOR_OP_MATH
        case .float32: return allowTF32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH
        default: return CUDNN_DEFAULT_MATH
        }
    }

    /// Whether only FMA (no tensor-core) algorithms may run: float32 with TF32 off.
    var fmaOnly: Bool { dataType == CUDNN_DATA_FLOAT && mathType == CUDNN_FMA_MATH }

    /// Row-major strides of contiguous `dims`.
    static func contiguousStrides(_ dims: [Int32]) -> [Int32] {
        var strides = [Int32](repeating: 1, count: dims.count)
        var s: Int32 = 1
        for i in dims.indices.reversed() {
            strides[i] = s
            s &*= dims[i]
        }
        return strides
    }

    /// "[2, 3, 9, 8] * [4, 3, 3, 3] -> [2, 4, 9, 8]" for messages.
    var shapes: String { "input \(bigDims), weight \(filterDims), output \(smallDims)" }
}

/// Which of cuDNN's algorithms a plan may run, in the order cuDNN ranked them (the heuristics' expected speed,
/// or measured time when benchmarking): those that succeeded, are deterministic when that is asked for, run
/// without tensor cores when only FMA may (cuDNN reports each algorithm's math type; PyTorch likewise never runs a
/// float32 convolution on tensor cores with TF32 off), and fit the workspace limit.
func eligibleCUDNNAlgorithms(_ ranked: [stcu_cudnnAlgoPerf], deterministic: Bool, fmaOnly: Bool,
                             workspaceLimit: Int) -> [stcu_cudnnAlgoPerf] {
    ranked.filter { p in
        p.status == CUDNN_STATUS_SUCCESS
            && (!deterministic || p.determinism == CUDNN_DETERMINISTIC)
            && (!fmaOnly || (p.mathType != CUDNN_TENSOR_OP_MATH && p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
            && p.memory <= workspaceLimit
    }
}

/// A cached cuDNN convolution: its descriptors, the chosen algorithm and the workspace it needs.
final class CUDNNPlan {
    let key: CUDNNPlanKey
    private var big: cudnnTensorDescriptor_t?
    private var small: cudnnTensorDescriptor_t?
    private var filter: cudnnFilterDescriptor_t?
    private var convolution: cudnnConvolutionDescriptor_t?
    private(set) var algorithm: Int32 = 0
    private(set) var workspaceSize = 0

    /// The plan for `key` with its algorithm chosen, or nil when cuDNN rejects the problem or has no eligible
    /// algorithm for it (then it runs as im2col). Benchmarking writes the output `operands` names.
    static func make(_ key: CUDNNPlanKey, handle h: cudnnHandle_t, operands: CUDNNOperands) -> CUDNNPlan? {
        let plan = CUDNNPlan(key)
        guard plan.setDescriptors() else { return nil }
        let limit = CUDNNConvolution.workspaceLimit
        let ranked: [stcu_cudnnAlgoPerf]
        var bound = limit
        if key.benchmark {
            // cudnnFind…AlgorithmEx times each algorithm within the workspace it is given: the largest any
            // algorithm asks for, up to the limit.
            bound = (0..<key.direction.algorithmCount).compactMap { plan.workspace(h, $0) }.filter { $0 <= limit }.max() ?? 0
            ranked = plan.measure(h, operands, workspace: bound, device: key.device)
        } else {
            ranked = plan.heuristics(h)
        }
        let d = key.description
        for p in eligibleCUDNNAlgorithms(ranked, deterministic: key.deterministic, fmaOnly: d.fmaOnly, workspaceLimit: bound) {
            guard let size = plan.workspace(h, p.algo), size <= bound else { continue }
            // The math type cuDNN ranked the algorithm with (PyTorch sets it too), except that FMA stays FMA.
            let math = d.fmaOnly ? CUDNN_FMA_MATH : p.mathType
            guard stcu_cudnnSetConvolutionMathType(plan.convolution, math) == CUDNN_STATUS_SUCCESS else { continue }
            plan.algorithm = p.algo
            plan.workspaceSize = size
            return plan
        }
        return nil
    }

    private init(_ key: CUDNNPlanKey) { self.key = key }

    /// Whether cuDNN accepts `d`'s tensor, filter and convolution descriptors (host-only calls, so tests check
    /// the shim's calls and the descriptions against the real library without a GPU).
    static func descriptorsAccepted(_ d: CUDNNConvolutionDescription) -> Bool {
        CUDNNPlan(CUDNNPlanKey(direction: .forward, device: 0, description: d, benchmark: false, deterministic: false)).setDescriptors()
    }

    deinit {
        if let big { _ = stcu_cudnnDestroyTensorDescriptor(big) }
        if let small { _ = stcu_cudnnDestroyTensorDescriptor(small) }
        if let filter { _ = stcu_cudnnDestroyFilterDescriptor(filter) }
        if let convolution { _ = stcu_cudnnDestroyConvolutionDescriptor(convolution) }
    }

    /// Creates and sets the four descriptors; false when cuDNN rejects one.
    private func setDescriptors() -> Bool {
        let d = key.description
        func tensor(_ dims: [Int32]) -> cudnnTensorDescriptor_t? {
            var t: cudnnTensorDescriptor_t? = nil
            guard stcu_cudnnCreateTensorDescriptor(&t) == CUDNN_STATUS_SUCCESS else { return nil }
            let strides = CUDNNConvolutionDescription.contiguousStrides(dims)
            if stcu_cudnnSetTensorNdDescriptor(t, d.dataType, Int32(dims.count), dims, strides) != CUDNN_STATUS_SUCCESS {
                _ = stcu_cudnnDestroyTensorDescriptor(t)
                return nil
            }
            return t
        }
        big = tensor(d.bigDims)
        small = tensor(d.smallDims)
        guard big != nil, small != nil,
              stcu_cudnnCreateFilterDescriptor(&filter) == CUDNN_STATUS_SUCCESS,
              stcu_cudnnSetFilterNdDescriptor(filter, d.dataType, CUDNN_TENSOR_NCHW, Int32(d.filterDims.count),
                                              d.filterDims) == CUDNN_STATUS_SUCCESS,
              stcu_cudnnCreateConvolutionDescriptor(&convolution) == CUDNN_STATUS_SUCCESS,
              stcu_cudnnSetConvolutionNdDescriptor(convolution, Int32(d.padding.count), d.padding, d.stride, d.dilation,
                                                   CUDNN_CROSS_CORRELATION, d.computeType) == CUDNN_STATUS_SUCCESS,
              stcu_cudnnSetConvolutionGroupCount(convolution, d.groups) == CUDNN_STATUS_SUCCESS,
              stcu_cudnnSetConvolutionMathType(convolution, d.mathType) == CUDNN_STATUS_SUCCESS
        else { return false }
        return true
    }

    // MARK: the direction's calls

    /// cuDNN's heuristic ranking (`cudnnGet…Algorithm_v7`); empty when the call fails.
    private func heuristics(_ h: cudnnHandle_t) -> [stcu_cudnnAlgoPerf] {
        var perf = [stcu_cudnnAlgoPerf](repeating: stcu_cudnnAlgoPerf(), count: Int(key.direction.algorithmCount))
        var n: Int32 = 0
        let count = key.direction.algorithmCount
        let r: cudnnStatus_t
        switch key.direction {
        case .forward:
            r = stcu_cudnnGetConvolutionForwardAlgorithm_v7(h, big, filter, convolution, small, count, &n, &perf)
        case .backwardData:
            r = stcu_cudnnGetConvolutionBackwardDataAlgorithm_v7(h, filter, small, convolution, big, count, &n, &perf)
        case .backwardFilter:
            r = stcu_cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, big, small, convolution, filter, count, &n, &perf)
        }
        return r == CUDNN_STATUS_SUCCESS ? Array(perf.prefix(Int(n))) : []
    }

    /// Every algorithm timed on the real operands (`cudnnFind…AlgorithmEx`, which writes the output), fastest
    /// first, with `workspace` bytes from the caching allocator; empty when the call fails.
    private func measure(_ h: cudnnHandle_t, _ o: CUDNNOperands, workspace: Int, device: Int) -> [stcu_cudnnAlgoPerf] {
        var perf = [stcu_cudnnAlgoPerf](repeating: stcu_cudnnAlgoPerf(), count: Int(key.direction.algorithmCount))
        var n: Int32 = 0
        let count = key.direction.algorithmCount
        let ws = workspace > 0 ? CUDAAllocator.allocate(workspace, device: device) : nil
        defer { if let ws { CUDAAllocator.free(ws.0, size: ws.1, device: device) } }
        let w = ws?.0
        let r: cudnnStatus_t
        switch key.direction {
        case .forward:
            r = stcu_cudnnFindConvolutionForwardAlgorithmEx(h, big, o.pointer(o.big), filter, o.pointer(o.filter), convolution,
                                                            small, o.pointer(o.small), count, &n, &perf, w, workspace)
        case .backwardData:
            r = stcu_cudnnFindConvolutionBackwardDataAlgorithmEx(h, filter, o.pointer(o.filter), small, o.pointer(o.small),
                                                                 convolution, big, o.pointer(o.big), count, &n, &perf, w, workspace)
        case .backwardFilter:
            r = stcu_cudnnFindConvolutionBackwardFilterAlgorithmEx(h, big, o.pointer(o.big), small, o.pointer(o.small),
                                                                   convolution, filter, o.pointer(o.filter), count, &n, &perf, w,
                                                                   workspace)
        }
        return r == CUDNN_STATUS_SUCCESS ? Array(perf.prefix(Int(n))) : []
    }

    /// The workspace `algorithm` needs here, or nil when it does not apply.
    private func workspace(_ h: cudnnHandle_t, _ algorithm: Int32) -> Int? {
        var size = 0
        let r: cudnnStatus_t
        switch key.direction {
        case .forward:
            r = stcu_cudnnGetConvolutionForwardWorkspaceSize(h, big, filter, convolution, small, algorithm, &size)
        case .backwardData:
            r = stcu_cudnnGetConvolutionBackwardDataWorkspaceSize(h, filter, small, convolution, big, algorithm, &size)
        case .backwardFilter:
            r = stcu_cudnnGetConvolutionBackwardFilterWorkspaceSize(h, big, small, convolution, filter, algorithm, &size)
        }
        return r == CUDNN_STATUS_SUCCESS ? size : nil
    }

    /// Runs the plan's algorithm on `operands`, queued on the device's stream (the workspace goes back to the
    /// caching allocator at once: later work on the one stream runs after this call). A failure stops with the
    /// op, cuDNN's error string and the shapes.
    func execute(handle h: cudnnHandle_t, operands o: CUDNNOperands, device: Int) {
        let ws = workspaceSize > 0 ? CUDAAllocator.allocate(workspaceSize, device: device) : nil
        defer { if let ws { CUDAAllocator.free(ws.0, size: ws.1, device: device) } }
        let w = ws?.0, size = workspaceSize, a = algorithm
        let r = withScalars { one, zero -> cudnnStatus_t in
            switch key.direction {
            case .forward:
                return stcu_cudnnConvolutionForward(h, one, big, o.pointer(o.big), filter, o.pointer(o.filter), convolution, a, w,
                                                    size, zero, small, o.pointer(o.small))
            case .backwardData:
                return stcu_cudnnConvolutionBackwardData(h, one, filter, o.pointer(o.filter), small, o.pointer(o.small), convolution,
                                                         a, w, size, zero, big, o.pointer(o.big))
            case .backwardFilter:
                return stcu_cudnnConvolutionBackwardFilter(h, one, big, o.pointer(o.big), small, o.pointer(o.small), convolution,
                                                           a, w, size, zero, filter, o.pointer(o.filter))
            }
        }
        if r != CUDNN_STATUS_SUCCESS {
            preconditionFailure("\(key.direction.op): cuDNN error: \(CUDNNConvolution.errorString(r)) when calling "
                + "\(key.direction.call) (algorithm \(a), workspace \(formatMemory(size)), \(key.description.shapes))")
        }
    }

    /// cuDNN's alpha = 1 and beta = 0 (overwrite the output), in double for double data and float otherwise.
    private func withScalars<R>(_ body: (UnsafeRawPointer, UnsafeRawPointer) -> R) -> R {
        if key.description.dataType == CUDNN_DATA_DOUBLE {
            var one = 1.0, zero = 0.0
            return withUnsafePointer(to: &one) { p in withUnsafePointer(to: &zero) { q in body(p, q) } }
        }
        var one: Float = 1, zero: Float = 0
        return withUnsafePointer(to: &one) { p in withUnsafePointer(to: &zero) { q in body(p, q) } }
    }
}
