import CTorchKernels

/// PyTorch's `torch` module: tensor creation, math, random seeds, grad mode, save/load.
public enum torch {
    nonisolated(unsafe) static var _defaultDType: DType = .float32

    /// The floating type created from Swift floating literals and produced by integer → float ops.
    public static var defaultDType: DType { _defaultDType }

    /// Sets the default floating dtype (float32 or float64).
    public static func setDefaultDType(_ d: DType) {
        precondition(d == .float32 || d == .float64, "set_default_dtype: only floating-point types are supported as the default type (got \(d))")
        _defaultDType = d
    }

    /// Number of threads intra-op kernels use (default: available cores).
    public static func setNumThreads(_ n: Int) {
        precondition(n > 0, "set_num_threads expects a positive integer (got \(n))")
        ct_set_num_threads(Int32(n))
    }

    /// Number of threads intra-op kernels use.
    public static func getNumThreads() -> Int { Int(ct_get_num_threads()) }

    /// PyTorch's `torch.cuda`: no CUDA backend exists yet.
    public enum cuda {
        /// Always false: SwiftTorch has only a CPU backend today.
        public static func isAvailable() -> Bool { false }
        /// Always 0.
        public static func deviceCount() -> Int { 0 }
    }

    /// Dtype aliases as in PyTorch: `torch.float32`, `torch.long`, ...
    public static let float32 = DType.float32
    public static let float = DType.float32
    public static let float64 = DType.float64
    public static let double = DType.float64
    public static let float16 = DType.float16
    public static let half = DType.float16
    public static let bfloat16 = DType.bfloat16
    public static let int64 = DType.int64
    public static let long = DType.int64
    public static let int32 = DType.int32
    public static let int = DType.int32
    public static let uint8 = DType.uint8
    public static let bool = DType.bool
}
