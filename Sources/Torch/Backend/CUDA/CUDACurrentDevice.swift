/// The calling thread's current CUDA device: PyTorch's `torch.cuda.current_device()`, which, like
/// `cudaSetDevice`, is per host thread (a new thread starts on device 0). It names the device that `x.cuda()`,
/// `Device("cuda")`, `torch.cuda.manualSeed` and the memory figures use when no index is given; ops run on their
/// tensors' device whatever it is.
enum CUDACurrentDevice {
    /// The index + 1, so that a thread that never set it reads 0 (device 0).
    private static let slot = ThreadLocalSlot("torch.cuda.current_device")

    /// The index (0 until set on this thread).
    static var index: Int {
        @inline(__always) get { Swift.max(slot.word - 1, 0) }
        set { slot.word = newValue + 1 }
    }
}
