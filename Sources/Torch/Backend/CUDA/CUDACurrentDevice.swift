#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's current CUDA device: PyTorch's `torch.cuda.current_device()`, which, like
/// `cudaSetDevice`, is per host thread (a new thread starts on device 0). It names the device that `x.cuda()`,
/// `Device("cuda")`, `torch.cuda.manualSeed` and the memory figures use when no index is given; ops run on their
/// tensors' device whatever it is.
enum CUDACurrentDevice {
    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// The index (0 until set on this thread); stored as index + 1 so that "unset" is nil.
    static var index: Int {
        @inline(__always) get {
            guard let p = pthread_getspecific(key) else { return 0 }
            return Int(bitPattern: p) - 1
        }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue + 1)) }
    }
}
