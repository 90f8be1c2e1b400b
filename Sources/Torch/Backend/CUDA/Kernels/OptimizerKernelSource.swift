/// The optimizer kernel family: multi-tensor updates (PyTorch's `fused`/`foreach` paths and their
/// multi_tensor_apply), one launch for up to `STCU_OPT_TENSORS` parameters of a group, where the composed form
/// launches a dozen elementwise kernels per parameter and allocates their temporaries. Every element is
/// independent: a block updates one chunk of one tensor (`stcu_opt_args` documents the block-to-tensor map),
/// one thread per element in a block-stride loop; the arithmetic is the CPU loop's, in the parameter's dtype
/// (float32 or float64), operation for operation.
///
/// Every kernel is the same template (`OptimizerKernelSource.kernel`) around one update formula, which sees
/// the element's parameter `p[i]` and gradient `g[i]`, up to three state buffers `a[i]`, `b[i]`, `c[i]`
/// (`ptr[2...4]`), the shared scalars `f[k]`, the tensor's own scalars `s0`, `s1`, `s2` and the flags
/// (shared ORed with the tensor's own). Each case says what its buffers, scalars and flags are; the shared
/// `f` values are the ones the CPU loop converts to the element type, so both round alike.
enum OptimizerKernelOp: Int, CaseIterable {
    /// Adam and AdamW. Buffers: exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad). Per tensor: step size (lr / bias
    /// correction 1), √(bias correction 2). `f`: unused, beta1, beta2, eps, weight decay, unused,
    /// 1 − lr·weight decay. Flags: maximize, amsgrad, decoupled weight decay, weight decay ≠ 0.
    case adam
    /// SGD. Buffer: momentum buffer. `f`: lr, momentum, dampening, weight decay. Flags: maximize, nesterov, has
    /// a momentum buffer, weight decay ≠ 0; per tensor: first step (the buffer takes the gradient as it is).
    case sgd
    /// RMSprop. Buffers: square_avg, momentum_buffer (momentum > 0), grad_avg (centered). `f`: alpha,
    /// 1 − alpha, eps, weight decay, momentum, lr. Flags: maximize, weight decay ≠ 0, momentum, centered.
    case rmsprop
    /// Adagrad. Buffer: sum. Per tensor: the decayed learning rate. `f`: eps, weight decay. Flags: maximize,
    /// weight decay ≠ 0.
    case adagrad
    /// Adadelta. Buffers: square_avg, acc_delta. `f`: rho, 1 − rho, eps, weight decay, lr. Flags: maximize,
    /// weight decay ≠ 0.
    case adadelta
    /// Adamax. Buffers: exp_avg, exp_inf. Per tensor: lr / bias correction 1. `f`: 1 − beta1, beta2, eps, weight
    /// decay. Flags: maximize, weight decay ≠ 0.
    case adamax
    /// NAdam. Buffers: exp_avg, exp_avg_sq. Per tensor: bias correction 2, the gradient's and the average's
    /// step coefficients (−lr·(1 − μ)/(1 − Πμ), −lr·μ'/(1 − Πμ·μ')). `f`: 1 − beta1, beta2, 1 − beta2, eps,
    /// weight decay, 1 − lr·weight decay. Flags: maximize, weight decay ≠ 0, decoupled weight decay.
    case nadam
    /// RAdam. Buffers: exp_avg, exp_avg_sq. Per tensor: bias correction 1, √(bias correction 2), the
    /// rectification. `f`: 1 − beta1, beta2, 1 − beta2, eps, weight decay, 1 − lr·weight decay, lr. Flags:
    /// maximize, weight decay ≠ 0, decoupled weight decay; per tensor: rectified (ρ_t > 5).
    case radam

    var name: String {
        switch self {
        case .adam: return "adam"
        case .sgd: return "sgd"
        case .rmsprop: return "rmsprop"
        case .adagrad: return "adagrad"
        case .adadelta: return "adadelta"
        case .adamax: return "adamax"
        case .nadam: return "nadam"
        case .radam: return "radam"
        }
    }
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
    static let centered = OptimizerKernelFlags(rawValue: 128)
    static let rectified = OptimizerKernelFlags(rawValue: 256)

    /// The options most updates share: `maximize`, and `weightDecay` when it is not 0 (`decoupled` from the
    /// gradient when asked).
    init(maximize: Bool, weightDecay: Double, decoupled: Bool = false) {
        self = []
        if maximize { insert(.maximize) }
        if weightDecay != 0 { insert(.weightDecay) }
        if decoupled { insert(.decoupled) }
    }

    init(rawValue: Int64) { self.rawValue = rawValue }
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
        /// Shared scalar `k` in the element type.
        func f(_ k: Int) -> String { "((T)args.f[\(k)])" }
        /// PyTorch's scalar-weight lerp, as the CPU's `lerp` (Adam.swift) computes it.
        func lerp(_ a: String, _ b: String, _ w: String) -> String {
            "(\(w) < (T)0.5 ? \(a) + \(w) * (\(b) - \(a)) : \(b) - (\(b) - \(a)) * ((T)1 - \(w)))"
        }
        /// The gradient with maximize and coupled weight decay (shared scalar `decay`); with `decoupledScale`,
        /// decoupled decay scales the parameter instead when that flag is set.
        func gradient(decay: Int, decoupledScale: Int? = nil) -> String {
            let coupled = "grad = grad + p[i] * \(f(decay));"
            let decayStep = decoupledScale.map { "if (\(flag(.decoupled))) p[i] = p[i] * \(f($0)); else \(coupled)" } ?? coupled
            return """
                    T grad = \(flag(.maximize)) ? -g[i] : g[i];
                    if (\(flag(.weightDecay))) { \(decayStep) }
            """
        }
        let body: String
        switch op {
        case .adam:
            body = gradient(decay: 4, decoupledScale: 6) + """

                    const T w1 = (T)(1 - args.f[1]);
                    const T mi = w1 < (T)0.5 ? a[i] + w1 * (grad - a[i]) : grad - (grad - a[i]) * (T)args.f[1];
                    const T vi = b[i] * (T)args.f[2] + grad * grad * (T)(1 - args.f[2]);
                    a[i] = mi; b[i] = vi;
                    T second = vi;
                    if (\(flag(.amsgrad))) { if (c[i] < vi) c[i] = vi; second = c[i]; }
                    const T denom = st_sqrt(second) / (T)s1 + \(f(3));
                    p[i] = p[i] + (mi / denom) * (T)(-s0);
            """
        case .sgd:
            body = """
                    T d = \(flag(.maximize)) ? -g[i] : g[i];
                    if (\(flag(.weightDecay))) d = d + p[i] * \(f(3));
                    if (\(flag(.momentum))) {
                        const T m = \(flag(.firstStep)) ? d : a[i] * \(f(1)) + d * (T)(1 - args.f[2]);
                        a[i] = m;
                        d = \(flag(.nesterov)) ? d + m * \(f(1)) : m;
                    }
                    p[i] = p[i] + d * (T)(-args.f[0]);
            """
        case .rmsprop:
            body = gradient(decay: 3) + """

                    const T sq = a[i] * \(f(0)) + grad * grad * \(f(1));
                    a[i] = sq;
                    T avg;
                    if (\(flag(.centered))) {
                        const T ga = \(lerp("c[i]", "grad", f(1)));
                        c[i] = ga;
                        avg = st_sqrt(sq + ga * ga * (T)-1);
                    } else {
                        avg = st_sqrt(sq);
                    }
                    avg = avg + \(f(2));
                    if (\(flag(.momentum))) {
                        const T m = b[i] * \(f(4)) + grad / avg;
                        b[i] = m;
                        p[i] = p[i] + m * -\(f(5));
                    } else {
                        p[i] = p[i] + (grad / avg) * -\(f(5));
                    }
            """
        case .adagrad:
            body = gradient(decay: 1) + """

                    const T sum = a[i] + grad * grad;
                    a[i] = sum;
                    const T std = st_sqrt(sum) + \(f(0));
                    p[i] = p[i] + (grad / std) * -(T)s0;
            """
        case .adadelta:
            body = gradient(decay: 3) + """

                    const T sq = a[i] * \(f(0)) + grad * grad * \(f(1));
                    a[i] = sq;
                    const T std = st_sqrt(sq + \(f(2)));
                    const T delta = (st_sqrt(b[i] + \(f(2))) / std) * grad;
                    b[i] = b[i] * \(f(0)) + delta * delta * \(f(1));
                    p[i] = p[i] + delta * -\(f(4));
            """
        case .adamax:
            body = gradient(decay: 3) + """

                    const T mi = \(lerp("a[i]", "grad", f(0)));
                    a[i] = mi;
                    const T decayed = b[i] * \(f(1)), current = st_fabs(grad) + \(f(2));
                    const T u = (decayed != decayed || decayed > current) ? decayed : current;
                    b[i] = u;
                    p[i] = p[i] + (mi / u) * -(T)s0;
            """
        case .nadam, .radam:
            let moments = gradient(decay: 4, decoupledScale: 5) + """

                    const T mi = \(lerp("a[i]", "grad", f(0)));
                    const T vi = b[i] * \(f(1)) + grad * grad * \(f(2));
                    a[i] = mi; b[i] = vi;

            """
            if op == .nadam {
                body = moments + """
                        const T denom = st_sqrt(vi / (T)s0) + \(f(3));
                        p[i] = p[i] + (grad / denom) * (T)s1;
                        p[i] = p[i] + (mi / denom) * (T)s2;
                """
            } else {
                body = moments + """
                        const T corrected = mi / (T)s0;
                        if (\(flag(.rectified))) {
                            const T adaptive = (T)s1 / (st_sqrt(vi) + \(f(3)));
                            p[i] = p[i] - corrected * \(f(6)) * adaptive * (T)s2;
                        } else {
                            p[i] = p[i] - corrected * \(f(6));
                        }
                """
            }
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
            const double s0 = args.tf[0][t], s1 = args.tf[1][t], s2 = args.tf[2][t];
            (void)s0; (void)s1; (void)s2;
            T *p = (T *)args.ptr[0][t];
            const T *g = (const T *)args.ptr[1][t];
            T *a = (T *)args.ptr[2][t];
            T *b = (T *)args.ptr[3][t];
            T *c = (T *)args.ptr[4][t];
            (void)a; (void)b; (void)c;
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
