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

    /// Sets the number of threads intra-op kernels use (PyTorch's `torch.set_num_threads`): the size of the
    /// persistent pool that splits one op's work, the calling thread included. May be called at any time
    /// (PyTorch's default OpenMP build allows that too); counts above 256 are capped at 256.
    ///
    /// Until it is called the count comes from the environment, read once at the first parallel op or
    /// `getNumThreads()`, as PyTorch reads it at start-up: `OMP_NUM_THREADS`, overridden by `MKL_NUM_THREADS`,
    /// overridden by SwiftTorch's own `SWIFTTORCH_NUM_THREADS`; a value that is not a positive integer is
    /// ignored with a warning on stderr (as PyTorch does), and with none the default is the number of CPUs
    /// the process may run on (its affinity mask, so `taskset` and container CPU sets are honoured).
    public static func setNumThreads(_ n: Int) {
        precondition(n > 0, "set_num_threads expects a positive integer (got \(n))")
        ct_set_num_threads(Int32(clamping: n))
    }

    /// Number of threads intra-op kernels use (PyTorch's `torch.get_num_threads`); see `setNumThreads(_:)`
    /// for the default.
    public static func getNumThreads() -> Int { Int(ct_get_num_threads()) }

    /// Sets the number of inter-op threads (PyTorch's `torch.set_num_interop_threads`), with PyTorch's rule:
    /// at most once per process, and only before inter-op work has started; a second call, or one after
    /// that work began, stops the program, as PyTorch raises.
    ///
    /// What the count governs: in PyTorch, the pool that runs independent ops concurrently
    /// (`torch.jit.fork`, `at::launch`); DataLoader workers (`numWorkers`) and the distributed backends'
    /// communication threads are sized apart from it there. SwiftTorch has no such fork/launch executor
    /// yet: its DataLoader workers follow `numWorkers` and each process group has one communication thread,
    /// as in PyTorch, so today the value is stored and reported but sizes no thread. It is kept so that
    /// programs ported from PyTorch run unchanged and so that a future inter-op executor is sized by it.
    public static func setNumInteropThreads(_ n: Int) {
        precondition(n > 0, "set_num_interop_threads expects a positive integer (got \(n))")
        precondition(ct_set_num_interop_threads(Int32(clamping: n)) == 0,
                     "set_num_interop_threads: Error: cannot set number of interop threads after parallel work "
                     + "has started or set_num_interop_threads called")
    }

    /// Number of inter-op threads (PyTorch's `torch.get_num_interop_threads`): the count set with
    /// `setNumInteropThreads(_:)`, else the number of CPUs the process may run on, as PyTorch's default (both
    /// report 1 under `taskset -c 0`); no environment variable changes it, in either.
    public static func getNumInteropThreads() -> Int { Int(ct_get_num_interop_threads()) }

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
