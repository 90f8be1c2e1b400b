/// The optimizer kernel family: multi-tensor updates (PyTorch's `fused`/`foreach` paths and their
/// multi_tensor_apply), one launch for up to `STCU_OPT_TENSORS` parameters of a group, where the composed form
/// launches a dozen elementwise kernels per parameter and allocates their temporaries. Every element is
/// independent: a block updates one chunk of one tensor (`stcu_opt_args` documents the block-to-tensor map),
/// one thread per element in a block-stride loop; the arithmetic is the CPU loop's, in the parameter's dtype
/// (float32 or float64). Each kernel reads its tensor's own scalars as `s0`, `s1` and its flags as `flags`.
enum OptimizerKernelOp: Int, CaseIterable {
    /// Adam and AdamW. `ptr`: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad). Per tensor: step
    /// size (lr / bias correction 1), √(bias correction 2). `f`: unused, beta1, beta2, eps, weight decay, unused,
    /// 1 − lr·weight decay.
    /// `flags`: maximize, amsgrad, decoupled weight decay, weight decay ≠ 0.
    case adam
    /// SGD. `ptr`: param, grad, momentum buffer. `f`: lr, momentum, dampening, weight decay. `flags`: maximize,
    /// nesterov, has a momentum buffer, weight decay ≠ 0; per tensor: first step (the buffer takes the gradient as
    /// it is).
    case sgd

    var name: String { self == .adam ? "adam" : "sgd" }
}

/// The `flags` bits of the optimizer kernels.
struct OptimizerKernelFlags: OptionSet {
    let rawValue: Int64
    static let maximize = OptimizerKernelFlags(rawValue: 1)
    static let amsgrad = OptimizerKernelFlags(rawValue: 2)
    static let decoupled = OptimizerKernelFlags(rawValue: 4)
    static let weightDecay = OptimizerKernelFlags(rawValue: 8)
    static let nesterov = OptimizerKernelFlags(rawValue: 16)
    static let momentum = OptimizerKernelFlags(rawValue: 32)
    static let firstStep = OptimizerKernelFlags(rawValue: 64)
}

enum OptimizerKernelSource {
    /// The parameter dtypes with an optimizer kernel.
    static func supports(_ d: DType) -> Bool { d == .float32 || d == .float64 }

    /// Elements one block updates (a chunk of one tensor): 16 per thread of a 256-thread block.
    static let chunk = 4096
    /// Threads per block.
    static let blockSize = 256

    static func kernel(_ op: OptimizerKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard supports(d) else { return nil }
        let t = KernelPrelude.storageType(d)
        let name = "optimizer_\(op.name)_\(KernelPrelude.tag(d))"
        func flag(_ f: OptimizerKernelFlags) -> String { "(flags & \(f.rawValue))" }
        let body: String
        switch op {
        case .adam:
            body = """
                    T grad = \(flag(.maximize)) ? -g[i] : g[i];
                    if (\(flag(.weightDecay))) {
                        if (\(flag(.decoupled))) p[i] = p[i] * (T)args.f[6]; else grad = grad + p[i] * (T)args.f[4];
                    }
                    const T w1 = (T)(1 - args.f[1]);
                    const T mi = w1 < (T)0.5 ? m[i] + w1 * (grad - m[i]) : grad - (grad - m[i]) * (T)args.f[1];
                    const T vi = v[i] * (T)args.f[2] + grad * grad * (T)(1 - args.f[2]);
                    m[i] = mi; v[i] = vi;
                    T second = vi;
                    if (\(flag(.amsgrad))) { if (vmax[i] < vi) vmax[i] = vi; second = vmax[i]; }
                    const T denom = st_sqrt(second) / (T)s1 + (T)args.f[3];
                    p[i] = p[i] + (mi / denom) * (T)(-s0);
            """
        case .sgd:
            body = """
                    T d = \(flag(.maximize)) ? -g[i] : g[i];
                    if (\(flag(.weightDecay))) d = d + p[i] * (T)args.f[3];
                    if (\(flag(.momentum))) {
                        const T b = \(flag(.firstStep)) ? d : m[i] * (T)args.f[1] + d * (T)(1 - args.f[2]);
                        m[i] = b;
                        d = \(flag(.nesterov)) ? d + b * (T)args.f[1] : b;
                    }
                    p[i] = p[i] + d * (T)(-args.f[0]);
            """
        }
        let text = """
        extern "C" __global__ void \(name)(const stcu_opt_args args) {
            typedef \(t) T;
            // This block's tensor: the last t whose first block is at or before this one.
            const long long block = blockIdx.x;
            int lo = 0, hi = (int)args.tensors - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) / 2;
                if (args.block_start[mid] <= block) lo = mid; else hi = mid - 1;
            }
            const int t = lo;
            const long long flags = args.flags | args.tensor_flags[t];
            const double s0 = args.tf[0][t], s1 = args.tf[1][t];
            (void)s0; (void)s1;
            T *p = (T *)args.ptr[0][t];
            const T *g = (const T *)args.ptr[1][t];
            T *m = (T *)args.ptr[2][t];
            T *v = (T *)args.ptr[3][t];
            T *vmax = (T *)args.ptr[4][t];
            (void)v; (void)vmax;
            const long long begin = (block - args.block_start[t]) * args.chunk;
            const long long end = begin + args.chunk < args.n[t] ? begin + args.chunk : args.n[t];
            for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
        \(body)
            }
        }

        """
        return (name, text)
    }
}
