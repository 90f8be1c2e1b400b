import CCUDAShim

/// Fused multi-tensor optimizer updates on CUDA (the `optimizer` kernel family, `OptimizerKernelSource`; twin of
/// `CPUOptimizer`), like PyTorch's `fused`/`foreach` paths: `OptimizerUpdates` (Optim/Optimizer.swift) collects an
/// optimizer step's CUDA parameters in a `Batch`, and `Batch.launch()` updates up to `STCU_OPT_TENSORS` of them per
/// launch. Parameters share a launch when they share the device, dtype, kernel and the group's options; each keeps
/// its own scalars and flags (whatever follows its own step count, SGD's first step, RAdam's rectification). Every
/// tensor is contiguous: `forEachParameter` updates a non-contiguous parameter through a contiguous copy.
///
/// Everything a launch needs, the tensors' addresses included, goes in its by-value `stcu_opt_args`: no table
/// is copied to the device, so a CUDA graph can capture the launches (`CUDAGraphCapture` refuses
/// host-to-device copies).
enum CUDAOptimizer {
    /// The most tensors one launch updates.
    static let tensorsPerLaunch = Int(STCU_OPT_TENSORS)

    /// What every tensor of a launch shares: kernel, device, dtype, the group's flags and scalars (as bit
    /// patterns, so that equal scalars, NaN included, make equal keys).
    private struct LaunchKey: Hashable {
        var op: OptimizerKernelOp
        var device: Int
        var dtype: DType
        var flags: Int64
        var scalarBits: [UInt64]
    }

    /// One parameter's part of a launch: parameter, gradient and state buffers (nil = absent), its own flags
    /// and its own scalars (at most 3).
    private struct Member {
        var tensors: [Tensor?]
        var flags: Int64
        var scalars: [Double]
    }

    /// The fusable parameters of one optimizer step, waiting for their multi-tensor launches. Append each
    /// parameter (`append`), then `launch()` once; the tensors stay alive until then.
    struct Batch {
        private var keys: [LaunchKey] = []
        private var members: [LaunchKey: [Member]] = [:]

        /// Whether nothing waits.
        var isEmpty: Bool { keys.isEmpty }

        /// Adds one update of `tensors[0]` by kernel `op`: `tensors` are the parameter, its gradient and the state
        /// buffers in the order `op`'s documentation gives (nil = absent, at most 5 in all); `flags` and `scalars`
        /// (at most 8) are the group's, shared by a launch; `tensorFlags` and `tensorScalars` (at most 3) this
        /// parameter's own. Every tensor is contiguous, on the parameter's device, of its dtype and size.
        mutating func append(_ op: OptimizerKernelOp, tensors: [Tensor?], flags: OptimizerKernelFlags, scalars: [Double],
                             tensorFlags: OptimizerKernelFlags = [], tensorScalars: [Double] = []) {
            precondition(tensors.count >= 2 && tensors.count <= 5 && scalars.count <= 8 && tensorScalars.count <= 3,
                         "CUDAOptimizer.Batch.append(\(op.name)): \(tensors.count) tensors, \(scalars.count) shared and "
                             + "\(tensorScalars.count) per-tensor scalars")
            guard let p = tensors[0] else { preconditionFailure("CUDAOptimizer.Batch.append(\(op.name)): no parameter") }
            guard case .cuda(let device) = p.device else {
                preconditionFailure("CUDAOptimizer.Batch.append(\(op.name)): parameter on \(p.device)")
            }
            if p.numel == 0 { return }
            let key = LaunchKey(op: op, device: device, dtype: p.dtype, flags: flags.rawValue,
                                scalarBits: scalars.map(\.bitPattern))
            if members[key] == nil { keys.append(key) }
            members[key, default: []].append(Member(tensors: tensors, flags: tensorFlags.rawValue, scalars: tensorScalars))
        }

        /// Launches every update added, `tensorsPerLaunch` tensors at a time, and empties the batch.
        mutating func launch() {
            for key in keys {
                let all = members[key]!
                var start = 0
                while start < all.count {
                    let end = Swift.min(start + CUDAOptimizer.tensorsPerLaunch, all.count)
                    CUDAOptimizer.launch(key, all[start..<end])
                    start = end
                }
            }
            keys = []
            members = [:]
        }
    }

    /// The one dispatch point: one launch of `key`'s kernel over `members` (at most `tensorsPerLaunch`, none empty).
    private static func launch(_ key: LaunchKey, _ members: ArraySlice<Member>) {
        precondition(members.count <= tensorsPerLaunch, "CUDAOptimizer.launch: \(members.count) tensors in one launch")
        let slots = tensorsPerLaunch, chunk = OptimizerKernelSource.chunk
        var counts = [Int64](repeating: 0, count: slots), starts = [Int64](repeating: 0, count: slots)
        var tensorFlags = [Int64](repeating: 0, count: slots)
        var pointers = [UInt64](repeating: 0, count: 5 * slots), scalars = [Double](repeating: 0, count: 3 * slots)
        var blocks = 0
        for (t, member) in members.enumerated() {
            let n = member.tensors[0]!.numel
            counts[t] = Int64(n)
            starts[t] = Int64(blocks)
            blocks += (n + chunk - 1) / chunk
            tensorFlags[t] = member.flags
            for (k, tensor) in member.tensors.enumerated() { pointers[k * slots + t] = tensor?.deviceAddress ?? 0 }
            for (k, scalar) in member.scalars.enumerated() { scalars[k * slots + t] = scalar }
        }
        precondition(blocks <= Int(Int32.max), "CUDAOptimizer.launch: \(blocks) blocks exceed the grid")
        var args = stcu_opt_args()
        args.flags = key.flags
        args.tensors = Int64(members.count)
        args.chunk = Int64(chunk)
        fill(&args.n, counts)
        fill(&args.block_start, starts)
        fill(&args.tensor_flags, tensorFlags)
        fill(&args.ptr, pointers)
        fill(&args.tf, scalars)
        fill(&args.f, key.scalarBits.map(Double.init(bitPattern:)))
        CUDARuntime.device(key.device).launch(.optimizer(key.op, key.dtype), grid: (UInt32(blocks), 1),
                                              block: OptimizerKernelSource.blockSize, args: &args, "optimizer_\(key.op.name)")
    }

    /// Copies `values` over the start of the C array (a homogeneous tuple) `field`.
    private static func fill<Field, Element>(_ field: inout Field, _ values: [Element]) {
        withUnsafeMutableBytes(of: &field) { raw in
            values.withUnsafeBytes { source in
                precondition(source.count <= raw.count, "CUDAOptimizer.fill: \(source.count) bytes into \(raw.count)")
                raw.copyMemory(from: source)
            }
        }
    }
}
