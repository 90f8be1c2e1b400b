import CCUDAShim

/// Each GPU's random generator: a seed and a Philox counter offset (PyTorch's CUDA generator state), and
/// the launches of the random kernel family (`RandomKernelSource`).
///
/// `torch.manualSeed` seeds every GPU, `torch.cuda.manualSeed` the current one; an unseeded GPU starts from
/// PyTorch's default seed. Samples differ from the CPU generator's (as in PyTorch, where CPU and CUDA streams
/// differ) but repeat exactly for a seed.
enum CUDARandom {
    /// PyTorch's `default_rng_seed_val`.
    static let defaultSeed: UInt64 = 67_280_421_310_721

    nonisolated(unsafe) private static var states: [Int: (seed: UInt64, offset: UInt64)] = [:]
    /// The seed of every device without its own (set by `manualSeed(_, device: nil)`).
    nonisolated(unsafe) private static var sharedSeed = defaultSeed
    private static let lock = PosixLock()

    /// Seeds `device`'s generator (every device's when nil) and rewinds its offset.
    static func manualSeed(_ seed: UInt64, device: Int? = nil) {
        lock.lock(); defer { lock.unlock() }
        if let device {
            states[device] = (seed, 0)
        } else {
            states.removeAll()
            sharedSeed = seed
        }
    }

    /// The current seed of `device`'s generator.
    static func initialSeed(device: Int) -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        return states[device]?.seed ?? sharedSeed
    }

    /// Reserves the counters `count` elements use and returns (seed, first offset).
    private static func reserve(device: Int, count: Int) -> (seed: UInt64, offset: UInt64) {
        lock.lock(); defer { lock.unlock() }
        let state = states[device] ?? (sharedSeed, 0)
        states[device] = (state.seed, state.offset &+ UInt64((count + 1) / 2))
        return state
    }

    /// Fills the CUDA tensor `t` (floating dtype) with samples of `op` with parameters `a`, `b`.
    static func fill(_ op: RandomKernelOp, _ t: Tensor, _ a: Double, _ b: Double) {
        precondition(t.dtype.isFloatingPoint, "\(op.name)_: expected a floating point tensor (got \(t.dtype))")
        guard case .cuda(let index) = t.device else { preconditionFailure("CUDARandom: \(t.device) is not a CUDA device") }
        if t.numel == 0 { return }
        if CUDAGraphCapture.isUnderway {
            // The seed and Philox offset go in by value: every replay would draw the same numbers. PyTorch keeps
            // them on the device for graphs (graph-safe RNG); SwiftTorch has no such generator yet.
            CUDAGraphCapture.refuse("\(op.name) on cuda:\(index) (random numbers, e.g. dropout: the generator's offset "
                + "would be frozen in the graph)")
        }
        let target = t.isContiguous ? t : Tensor(uninitializedShape: t.shape, dtype: t.dtype, device: t.device)
        let (seed, offset) = reserve(device: index, count: t.numel)
        var args = stcu_ew_args()
        args.n = Int64(t.numel)
        args.ptr.0 = target.deviceAddress
        args.i.0 = Int64(bitPattern: seed)
        args.i.1 = Int64(bitPattern: offset)
        args.f.0 = a
        args.f.1 = b
        CUDAElementwise.launch(.random(op, t.dtype), device: index, args: &args, threads: t.numel)
        if target !== t { CUDAElementwise.copy(from: target, into: t) }
    }
}
