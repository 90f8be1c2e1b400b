/// The fused row-wise kernels (the `fused` family): softmax/log-softmax forward and backward along any dim,
/// cross-entropy with class-index targets, LayerNorm and BatchNorm forward and backward, and the median/mode
/// picks of sorted rows. Each op is one launch where the composed form took five to twenty.
///
/// Every kernel takes `stcu_fused_args`: a `[outer, length, inner]` geometry (the reduced axis is `length`,
/// `inner` its element stride), `ptr` operands whose meaning each op documents, `f` scalars and `flags`.
/// Arithmetic runs in the accumulator type (float for float16/bfloat16/float32, double for float64), like
/// PyTorch's `acc_type`; reductions over a row use the block helpers below: a warp-shuffle tree, then every
/// thread adds the ≤ 32 warp totals itself (deterministic, and no second barrier to broadcast the result).
enum FusedKernelOp: Int, CaseIterable {
    /// y = softmax(x) along `length`. ptr: x, y.
    case softmax
    /// y = log_softmax(x). ptr: x, y.
    case logSoftmax
    /// gx = y · (g − Σ g·y). ptr: g, y, gx.
    case softmaxBackward
    /// gx = g − exp(y) · Σ g. ptr: g, y, gx.
    case logSoftmaxBackward
    /// Per (sample, position) row of `[N, C, S]` logits (outer = N·S rows, length = C, inner = S): the row's
    /// log-sum-exp, target weight and −w·log_softmax(x)[t] (NaN for a target outside [0, C)). ptr: x, target
    /// (int64), weight or 0, row loss (acc), row weight (acc), log-sum-exp (acc), out (T, written when flag 1
    /// says the reduction is `none`). `index` = ignoreIndex.
    case crossEntropyRows
    /// One block sums the row losses and weights: out = Σ loss (/ Σ w for the mean, flag 1). ptr[3], ptr[4] as
    /// above, ptr[6] the scalar out (T), ptr[7] the total weight (acc), kept for the backward.
    case crossEntropyReduce
    /// grad[n, c, s] = k · (softmax(x)[c] − [c == t]), k = w[t] · g (· 1/Σw for the mean, flag 1; g per row when
    /// flag 2). ptr: x, target, weight or 0, grad out, -, log-sum-exp, g, total weight.
    case crossEntropyBackward
    /// LayerNorm of `outer` rows of `length`: y = (x − μ)·rstd·γ + β. ptr: x, γ or 0, β or 0, y, μ (acc), rstd (acc);
    /// f[0] = eps.
    case layerNorm
    /// dx of LayerNorm per row (PyTorch's three coefficients). ptr: g, x, γ or 0, dx, μ, rstd.
    case layerNormBackwardInput
    /// dγ = Σ g·x̂ and dβ = Σ g over the rows, one thread per column. ptr: g, x, -, -, μ, rstd, dγ or 0, dβ or 0.
    case layerNormBackwardParams
    /// BatchNorm over channels (outer = C, length = N, inner = L): the batch statistics when training (flag 1;
    /// the running ones updated in place) or the running ones, then y = (x − μ)·invstd·w + b, one block per
    /// channel. ptr: x, w or 0, b or 0, y, μ (acc), invstd (acc), running mean or 0, running var or 0;
    /// f = eps, momentum.
    case batchNorm
    /// BatchNorm's dx, dw, db per channel. ptr: g, x, w or 0, dx or 0, μ, invstd, dw or 0, db or 0; flag 1 = training.
    case batchNormBackward
    /// The lower median of each sorted row (NaN first unless flag 1 ignores NaN). ptr: sorted values, their
    /// int64 positions, out value, out position.
    case medianRows
    /// The most frequent value of each sorted row (the smallest on ties) and its last position. ptr as medianRows.
    case modeRows

    var name: String { "\(self)" }

    /// The kernels that only pick from sorted rows exist for every dtype; the others for the floating types.
    func supports(_ d: DType) -> Bool {
        switch self {
        case .medianRows, .modeRows: return true
        default: return d.isFloatingPoint
        }
    }
}

enum FusedKernelSource {
    /// The largest block for one row. 256 threads (8 warps) keep a row's loads in flight while several blocks
    /// stay resident per SM; shorter rows take one thread per element rounded up to a warp, so none idles.
    static let maxRowBlock = 256

    /// Threads per block for rows of `length` elements: a multiple of the warp size (the shuffles need whole
    /// warps), at most `maxRowBlock`.
    static func rowBlock(_ length: Int) -> Int {
        Swift.min(maxRowBlock, Swift.max(32, (length + 31) / 32 * 32))
    }

    /// Shared text of a dtype's module: storage/accumulator types, load/store macros and the row helpers.
    static func prelude(_ d: DType) -> String {
        let t = KernelPrelude.storageType(d)
        let a = d.isFloatingPoint ? ReductionKernelSource.accumulatorType(d) : KernelPrelude.mathType(d)
        let types = """
        typedef \(t) st_t;
        typedef \(a) st_acc;
        #define ST_LOAD(v) \(KernelPrelude.load("(v)", d, as: "st_acc"))
        #define ST_STORE(v) \(KernelPrelude.store("(v)", d))
        #define ST_NAN st_bits_to_float(0x7fc00000u)

        """
        // Integer modules hold only the picks from sorted rows, which need no arithmetic helpers.
        guard d.isFloatingPoint else { return types }
        return types + """
        template <typename A> ST_DEVICE A st_block_sum(A v, A *scratch) {
            for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
            __syncthreads();
            if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
            __syncthreads();
            A r = 0;
            for (unsigned w = 0; w < (blockDim.x + 31) / 32; w++) r += scratch[w];
            return r;
        }
        template <typename A> ST_DEVICE A st_block_max(A v, A *scratch) {
            for (int off = 16; off > 0; off /= 2) { A o = __shfl_down_sync(0xffffffffu, v, off); v = o > v ? o : v; }
            __syncthreads();
            if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
            __syncthreads();
            A r = scratch[0];
            for (unsigned w = 1; w < (blockDim.x + 31) / 32; w++) r = scratch[w] > r ? scratch[w] : r;
            return r;
        }
        // A row walked by the whole block (`block`: lanes = the block's threads, then a block reduction) or by one
        // thread; `block` is uniform across the block, so the barriers inside are reached by every thread.
        #define ST_LANE0 (block ? (long long)threadIdx.x : 0LL)
        #define ST_LANES (block ? (long long)blockDim.x : 1LL)
        ST_DEVICE st_acc st_row_max(const st_t *p, long long n, long long stride, bool block, st_acc *scratch) {
            st_acc m = -ST_INF;
            for (long long k = ST_LANE0; k < n; k += ST_LANES) { st_acc v = ST_LOAD(p[k * stride]); m = v > m ? v : m; }
            return block ? st_block_max(m, scratch) : m;
        }
        ST_DEVICE st_acc st_row_sum_exp(const st_t *p, long long n, long long stride, st_acc m, bool block, st_acc *scratch) {
            st_acc s = 0;
            for (long long k = ST_LANE0; k < n; k += ST_LANES) s += st_exp(ST_LOAD(p[k * stride]) - m);
            return block ? st_block_sum(s, scratch) : s;
        }

        """
    }

    /// Row loop of the softmax family: `inner == 1` rows are walked by whole blocks (grid-stride over rows),
    /// other dims by one thread per (outer, inner) line; `body` sees `row` (the line's first element offset),
    /// `stride`, `block` and `scratch`.
    private static func rows(_ body: String) -> String {
        """
            __shared__ st_acc scratch[32];
            const long long n = args.length;
            if (args.inner == 1) {
                const bool block = true;
                for (long long line = blockIdx.x; line < args.outer; line += gridDim.x) {
                    const long long row = line * n, stride = 1;
        \(body)
                }
                return;
            }
            const bool block = false;
            for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < args.outer * args.inner;
                 line += (long long)gridDim.x * blockDim.x) {
                const long long stride = args.inner, row = (line / args.inner) * n * args.inner + line % args.inner;
        \(body)
            }

        """
    }

    static func kernel(_ op: FusedKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard op.supports(d) else { return nil }
        let name = "fused_\(op.name)_\(KernelPrelude.tag(d))"
        var s = "extern \"C\" __global__ void \(name)(const stcu_fused_args args) {\n"
        switch op {
        case .softmax, .logSoftmax:
            s += "    const st_t *x = (const st_t *)args.ptr[0]; st_t *y = (st_t *)args.ptr[1];\n"
            let write = op == .logSoftmax
                ? "const st_acc shift = m + st_log(sum); for (long long k = ST_LANE0; k < n; k += ST_LANES) y[row + k * stride] = ST_STORE(ST_LOAD(x[row + k * stride]) - shift);"
                : "const st_acc inv = (st_acc)1 / sum; for (long long k = ST_LANE0; k < n; k += ST_LANES) y[row + k * stride] = ST_STORE(st_exp(ST_LOAD(x[row + k * stride]) - m) * inv);"
            s += rows("""
                        const st_acc m = st_row_max(x + row, n, stride, block, scratch);
                        const st_acc sum = st_row_sum_exp(x + row, n, stride, m, block, scratch);
                        \(write)
            """)
        case .softmaxBackward, .logSoftmaxBackward:
            s += "    const st_t *g = (const st_t *)args.ptr[0], *y = (const st_t *)args.ptr[1]; st_t *gx = (st_t *)args.ptr[2];\n"
            let log = op == .logSoftmaxBackward
            let term = log ? "ST_LOAD(g[row + k * stride])" : "ST_LOAD(g[row + k * stride]) * ST_LOAD(y[row + k * stride])"
            let write = log
                ? "gx[row + k * stride] = ST_STORE(ST_LOAD(g[row + k * stride]) - st_exp(ST_LOAD(y[row + k * stride])) * total);"
                : "gx[row + k * stride] = ST_STORE(ST_LOAD(y[row + k * stride]) * (ST_LOAD(g[row + k * stride]) - total));"
            s += rows("""
                        st_acc total = 0;
                        for (long long k = ST_LANE0; k < n; k += ST_LANES) total += \(term);
                        if (block) total = st_block_sum(total, scratch);
                        for (long long k = ST_LANE0; k < n; k += ST_LANES) \(write)
            """)
        case .crossEntropyRows:
            s += """
                const st_t *x = (const st_t *)args.ptr[0]; const long long *target = (const long long *)args.ptr[1];
                const st_t *weight = (const st_t *)args.ptr[2];
                st_acc *row_loss = (st_acc *)args.ptr[3], *row_weight = (st_acc *)args.ptr[4], *lse = (st_acc *)args.ptr[5];
                st_t *out = (st_t *)args.ptr[6];
                // Rows are (sample, position) pairs: line i = n·S + s starts at n·C·S + s, classes S apart.
                const long long classes = args.length, positions = args.inner, rows_total = args.outer;
                __shared__ st_acc scratch[32];
                const bool block = positions == 1;
                const long long first = block ? blockIdx.x : (long long)blockIdx.x * blockDim.x + threadIdx.x;
                const long long step = block ? gridDim.x : (long long)gridDim.x * blockDim.x;
                for (long long i = first; i < rows_total; i += step) {
                    const long long row = (i / positions) * classes * positions + i % positions;
                    const st_acc m = st_row_max(x + row, classes, positions, block, scratch);
                    const st_acc logsum = st_log(st_row_sum_exp(x + row, classes, positions, m, block, scratch));
                    if (block && threadIdx.x != 0) continue;
                    const long long t = target[i];
                    const bool counted = t != args.index;
                    const st_acc w = !counted ? (st_acc)0 : (weight && t >= 0 && t < classes ? ST_LOAD(weight[t]) : (st_acc)1);
                    st_acc loss = 0;
                    if (counted) loss = (t >= 0 && t < classes) ? -((ST_LOAD(x[row + t * positions]) - m) - logsum) * w : (st_acc)ST_NAN;
                    row_loss[i] = loss; row_weight[i] = w; lse[i] = m + logsum;
                    if (args.flags & 1) out[i] = ST_STORE(loss);
                }

            """
        case .crossEntropyReduce:
            // Sums in double: the CPU adds the row losses in double too, and there are only N·S of them.
            s += """
                const st_acc *row_loss = (const st_acc *)args.ptr[3], *row_weight = (const st_acc *)args.ptr[4];
                st_t *out = (st_t *)args.ptr[6]; st_acc *total_weight = (st_acc *)args.ptr[7];
                __shared__ double scratch[32];
                double loss = 0, weight = 0;
                for (long long i = threadIdx.x; i < args.outer; i += blockDim.x) { loss += row_loss[i]; weight += row_weight[i]; }
                loss = st_block_sum(loss, scratch);
                weight = st_block_sum(weight, scratch);
                if (threadIdx.x == 0) {
                    out[0] = ST_STORE((args.flags & 1) ? loss / weight : loss);
                    total_weight[0] = (st_acc)weight;
                }

            """
        case .crossEntropyBackward:
            s += """
                const st_t *x = (const st_t *)args.ptr[0]; const long long *target = (const long long *)args.ptr[1];
                const st_t *weight = (const st_t *)args.ptr[2]; st_t *grad = (st_t *)args.ptr[3];
                const st_acc *lse = (const st_acc *)args.ptr[5]; const st_t *g = (const st_t *)args.ptr[6];
                const st_acc *total_weight = (const st_acc *)args.ptr[7];
                const long long classes = args.length, positions = args.inner, total = args.outer * classes;
                for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
                    const long long per_sample = classes * positions, sample = e / per_sample, c = (e % per_sample) / positions;
                    const long long i = sample * positions + e % positions, t = target[i];
                    if (t == args.index) { grad[e] = ST_STORE((st_acc)0); continue; }
                    const st_acc w = weight && t >= 0 && t < classes ? ST_LOAD(weight[t]) : (st_acc)1;
                    st_acc k = w * ST_LOAD(g[(args.flags & 2) ? i : 0]);
                    if (args.flags & 1) k = k * ((st_acc)1 / total_weight[0]);
                    const st_acc p = st_exp(ST_LOAD(x[e]) - lse[i]);
                    grad[e] = ST_STORE(k * p - (c == t ? k : (st_acc)0));
                }

            """
        case .layerNorm:
            s += """
                const st_t *x = (const st_t *)args.ptr[0], *gamma = (const st_t *)args.ptr[1], *beta = (const st_t *)args.ptr[2];
                st_t *y = (st_t *)args.ptr[3]; st_acc *mean = (st_acc *)args.ptr[4], *rstd = (st_acc *)args.ptr[5];
                __shared__ st_acc scratch[32];
                const long long n = args.length;
                for (long long i = blockIdx.x; i < args.outer; i += gridDim.x) {
                    const st_t *p = x + i * n; st_t *q = y + i * n;
                    st_acc s = 0;
                    for (long long k = threadIdx.x; k < n; k += blockDim.x) s += ST_LOAD(p[k]);
                    const st_acc mu = st_block_sum(s, scratch) / (st_acc)n;
                    st_acc v = 0;
                    for (long long k = threadIdx.x; k < n; k += blockDim.x) { const st_acc d = ST_LOAD(p[k]) - mu; v += d * d; }
                    v = st_block_sum(v, scratch) / (st_acc)n;
                    const st_acc r = (st_acc)1 / st_sqrt((v > 0 ? v : (st_acc)0) + (st_acc)args.f[0]);
                    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
                        st_acc o = (ST_LOAD(p[k]) - mu) * r;
                        if (gamma) o = o * ST_LOAD(gamma[k]);
                        if (beta) o = o + ST_LOAD(beta[k]);
                        q[k] = ST_STORE(o);
                    }
                    if (threadIdx.x == 0) { mean[i] = mu; rstd[i] = r; }
                }

            """
        case .layerNormBackwardInput:
            s += """
                const st_t *g = (const st_t *)args.ptr[0], *x = (const st_t *)args.ptr[1], *gamma = (const st_t *)args.ptr[2];
                st_t *dx = (st_t *)args.ptr[3]; const st_acc *mean = (const st_acc *)args.ptr[4], *rstd = (const st_acc *)args.ptr[5];
                __shared__ st_acc scratch[32];
                const long long n = args.length;
                for (long long i = blockIdx.x; i < args.outer; i += gridDim.x) {
                    const st_t *gp = g + i * n, *xp = x + i * n; st_t *o = dx + i * n;
                    const st_acc mu = mean[i], r = rstd[i];
                    st_acc sum_g = 0, sum_gx = 0;
                    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
                        const st_acc gw = ST_LOAD(gp[k]) * (gamma ? ST_LOAD(gamma[k]) : (st_acc)1);
                        sum_g += gw; sum_gx += gw * (ST_LOAD(xp[k]) - mu) * r;
                    }
                    sum_g = st_block_sum(sum_g, scratch) / (st_acc)n;
                    sum_gx = st_block_sum(sum_gx, scratch) / (st_acc)n;
                    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
                        const st_acc gw = ST_LOAD(gp[k]) * (gamma ? ST_LOAD(gamma[k]) : (st_acc)1);
                        o[k] = ST_STORE(r * (gw - sum_g - (ST_LOAD(xp[k]) - mu) * r * sum_gx));
                    }
                }

            """
        case .layerNormBackwardParams:
            s += """
                const st_t *g = (const st_t *)args.ptr[0], *x = (const st_t *)args.ptr[1];
                const st_acc *mean = (const st_acc *)args.ptr[4], *rstd = (const st_acc *)args.ptr[5];
                st_t *dgamma = (st_t *)args.ptr[6], *dbeta = (st_t *)args.ptr[7];
                const long long n = args.length;
                for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
                    st_acc dw = 0, db = 0;
                    for (long long i = 0; i < args.outer; i++) {
                        const st_acc gv = ST_LOAD(g[i * n + j]);
                        dw += gv * (ST_LOAD(x[i * n + j]) - mean[i]) * rstd[i];
                        db += gv;
                    }
                    if (dgamma) dgamma[j] = ST_STORE(dw);
                    if (dbeta) dbeta[j] = ST_STORE(db);
                }

            """
        case .batchNorm:
            s += """
                const st_t *x = (const st_t *)args.ptr[0], *w = (const st_t *)args.ptr[1], *b = (const st_t *)args.ptr[2];
                st_t *y = (st_t *)args.ptr[3]; st_acc *mean = (st_acc *)args.ptr[4], *invstd = (st_acc *)args.ptr[5];
                st_t *running_mean = (st_t *)args.ptr[6], *running_var = (st_t *)args.ptr[7];
                __shared__ st_acc scratch[32];
                const long long channels = args.outer, images = args.length, plane = args.inner, count = images * plane;
                // Element k of channel c: image k / plane, offset k % plane.
                #define ST_AT(c, k) ((((k) / plane) * channels + (c)) * plane + (k) % plane)
                for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
                    st_acc mu, is;
                    if (args.flags & 1) {
                        st_acc s = 0;
                        for (long long k = threadIdx.x; k < count; k += blockDim.x) s += ST_LOAD(x[ST_AT(c, k)]);
                        mu = st_block_sum(s, scratch) / (st_acc)count;
                        st_acc v = 0;
                        for (long long k = threadIdx.x; k < count; k += blockDim.x) { const st_acc d = ST_LOAD(x[ST_AT(c, k)]) - mu; v += d * d; }
                        v = st_block_sum(v, scratch);
                        is = (st_acc)1 / st_sqrt(v / (st_acc)count + (st_acc)args.f[0]);
                        if (threadIdx.x == 0) {
                            const double momentum = args.f[1];
                            if (running_mean) running_mean[c] = ST_STORE(momentum * (double)mu + (1 - momentum) * (double)ST_LOAD(running_mean[c]));
                            if (running_var) {
                                const double unbiased = (double)v / (double)(count > 1 ? count - 1 : 1);
                                running_var[c] = ST_STORE(momentum * unbiased + (1 - momentum) * (double)ST_LOAD(running_var[c]));
                            }
                        }
                    } else {
                        mu = ST_LOAD(running_mean[c]);
                        is = (st_acc)1 / st_sqrt(ST_LOAD(running_var[c]) + (st_acc)args.f[0]);
                    }
                    if (threadIdx.x == 0) { mean[c] = mu; invstd[c] = is; }
                    const st_acc scale = is * (w ? ST_LOAD(w[c]) : (st_acc)1), shift = b ? ST_LOAD(b[c]) : (st_acc)0;
                    for (long long k = threadIdx.x; k < count; k += blockDim.x) {
                        const long long at = ST_AT(c, k);
                        y[at] = ST_STORE((ST_LOAD(x[at]) - mu) * scale + shift);
                    }
                }
                #undef ST_AT

            """
        case .batchNormBackward:
            s += """
                const st_t *g = (const st_t *)args.ptr[0], *x = (const st_t *)args.ptr[1], *w = (const st_t *)args.ptr[2];
                st_t *dx = (st_t *)args.ptr[3]; const st_acc *mean = (const st_acc *)args.ptr[4], *invstd = (const st_acc *)args.ptr[5];
                st_t *dw = (st_t *)args.ptr[6], *db = (st_t *)args.ptr[7];
                __shared__ st_acc scratch[32];
                const long long channels = args.outer, images = args.length, plane = args.inner, count = images * plane;
                #define ST_AT(c, k) ((((k) / plane) * channels + (c)) * plane + (k) % plane)
                for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
                    const st_acc mu = mean[c], is = invstd[c];
                    st_acc sum = 0, dot = 0;
                    for (long long k = threadIdx.x; k < count; k += blockDim.x) {
                        const long long at = ST_AT(c, k);
                        const st_acc gv = ST_LOAD(g[at]);
                        sum += gv; dot += gv * (ST_LOAD(x[at]) - mu);
                    }
                    sum = st_block_sum(sum, scratch);
                    dot = st_block_sum(dot, scratch);
                    if (threadIdx.x == 0) {
                        if (dw) dw[c] = ST_STORE(dot * is);
                        if (db) db[c] = ST_STORE(sum);
                    }
                    if (!dx) continue;
                    const st_acc scale = is * (w ? ST_LOAD(w[c]) : (st_acc)1);
                    const st_acc mean_dy = sum / (st_acc)count, k_coef = dot * is * is / (st_acc)count;
                    for (long long k = threadIdx.x; k < count; k += blockDim.x) {
                        const long long at = ST_AT(c, k);
                        const st_acc gv = ST_LOAD(g[at]);
                        dx[at] = ST_STORE((args.flags & 1) ? (gv - mean_dy - (ST_LOAD(x[at]) - mu) * k_coef) * scale : gv * scale);
                    }
                }
                #undef ST_AT

            """
        case .medianRows, .modeRows:
            let pick = op == .medianRows ? """
                        long long numbers = n;
                        while (numbers > 0 && ST_LOAD(v[numbers - 1]) != ST_LOAD(v[numbers - 1])) numbers--;
                        // A NaN wins (the first NaN, the lowest position: the sort is stable) unless NaNs are ignored.
                        const long long at = numbers < n && (!(args.flags & 1) || numbers == 0) ? numbers : (numbers - 1) / 2;
                """ : """
                        // Runs of equal values in sorted order; the first longest run wins (the smallest value),
                        // reported at its last element (the highest original position, the sort being stable).
                        long long at = 0, best = 0;
                        for (long long i = 0; i < n;) {
                            long long j = i;
                            while (j + 1 < n && ST_LOAD(v[j + 1]) == ST_LOAD(v[i])) j++;
                            if (j - i + 1 > best) { best = j - i + 1; at = j; }
                            i = j + 1;
                        }
                """
            s += """
                const long long n = args.length;
                for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < args.outer; r += (long long)gridDim.x * blockDim.x) {
                    const st_t *v = (const st_t *)args.ptr[0] + r * n; const long long *pos = (const long long *)args.ptr[1] + r * n;
            \(pick)
                    ((st_t *)args.ptr[2])[r] = v[at];
                    ((long long *)args.ptr[3])[r] = pos[at];
                }

            """
        }
        s += "}\n"
        return (name, s)
    }
}
