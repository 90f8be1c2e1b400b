/// The optimizer kernel family: one launch per parameter for a whole update (PyTorch's `fused` optimizers do
/// the same), where the composed form launches a dozen elementwise kernels and allocates their temporaries.
/// Every element is independent, so one thread per element in a grid-stride loop; the arithmetic is the CPU
/// loop's, in the parameter's dtype (float32 or float64).
enum OptimizerKernelOp: Int, CaseIterable {
    /// Adam and AdamW. `ptr`: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad). `f`: step size
    /// (lr / bias correction 1), beta1, beta2, eps, weight decay, √(bias correction 2), 1 − lr·weight decay.
    /// `flags`: maximize, amsgrad, decoupled weight decay, weight decay ≠ 0.
    case adam
    /// SGD. `ptr`: param, grad, momentum buffer. `f`: lr, momentum, dampening, weight decay. `flags`: maximize,
    /// nesterov, has a momentum buffer, first step (the buffer takes the gradient as it is), weight decay ≠ 0.
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

    static func kernel(_ op: OptimizerKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard supports(d) else { return nil }
        let t = KernelPrelude.storageType(d)
        let name = "optimizer_\(op.name)_\(KernelPrelude.tag(d))"
        func flag(_ f: OptimizerKernelFlags) -> String { "(args.flags & \(f.rawValue))" }
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
                    if (\(flag(.amsgrad))) { T *vmax = (T *)args.ptr[4]; if (vmax[i] < vi) vmax[i] = vi; second = vmax[i]; }
                    const T denom = st_sqrt(second) / (T)args.f[5] + (T)args.f[3];
                    p[i] = p[i] + (mi / denom) * (T)(-args.f[0]);
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
            T *p = (T *)args.ptr[0];
            const T *g = (const T *)args.ptr[1];
            T *m = (T *)args.ptr[2];
            T *v = (T *)args.ptr[3];
            (void)v;
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += (long long)gridDim.x * blockDim.x) {
        \(body)
            }
        }

        """
        return (name, text)
    }
}
