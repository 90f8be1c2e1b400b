/// The pooling kernel family: one thread per output over the same window tables the CPU kernels read
/// (`PoolGeometry`: per axis, each output's first input index, element count and padded count), so fixed,
/// ceil-mode, dilated and adaptive windows are one code path with the CPU's semantics.
enum PoolingKernelOp: Int, CaseIterable {
    /// Window maximum and its in-plane index (the first maximum in scan order; NaN wins; an empty window gives
    /// -inf at index 0), as the CPU's `ct_maxpool_row`.
    case maxForward
    /// Window sum divided by PyTorch's divisor (override, padded count or element count); empty windows give 0.
    case averageForward
    /// The adjoint of `averageForward`: each output's gradient, divided the same way, atomically added to
    /// every element of its window (the input gradient must be zeroed first).
    case averageBackward

    var name: String {
        switch self {
        case .maxForward: return "max_forward"
        case .averageForward: return "avg_forward"
        case .averageBackward: return "avg_backward"
        }
    }
}

enum PoolingKernelSource {
    static func supports(_ d: DType) -> Bool { d == .float32 || d == .float64 }

    static func kernel(_ op: PoolingKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard supports(d) else { return nil }
        let t = KernelPrelude.storageType(d)
        let name = "pool_\(op.name)_\(KernelPrelude.tag(d))"
        // Loops over the window elements inside the input, in scan order, with `off` the in-plane offset.
        func window(_ body: String) -> String {
            """
                        for (long long jd = 0; jd < cd; jd++) {
                            const long long id = fd + jd * a.step[0];
                            for (long long jh = 0; jh < ch; jh++) {
                                const long long ih = fh + jh * a.step[1];
                                for (long long jw = 0; jw < cw; jw++) {
                                    const long long off = (id * a.in_size[1] + ih) * a.in_size[2] + fw + jw * a.step[2];
                                    \(body)
                                }
                            }
                        }
            """
        }
        let divisor = "(a.divisor > 0 ? (T)a.divisor : a.count_include_pad ? (T)(pd * ph * pw) : (T)(cd * ch * cw))"
        let body: String
        switch op {
        case .maxForward:
            body = """
                        if (cd == 0 || ch == 0 || cw == 0) { out[t] = (T)(-ST_INF); if (index) index[t] = 0; continue; }
                        long long best_i = (fd * a.in_size[1] + fh) * a.in_size[2] + fw;
                        T best = x[best_i];
            \(window("const T v = x[off]; if (v > best || v != v) { best = v; best_i = off; }"))
                        out[t] = best;
                        if (index) index[t] = best_i;
            """
        case .averageForward:
            body = """
                        if (cd == 0 || ch == 0 || cw == 0) { out[t] = (T)0; continue; }
                        T sum = (T)0;
            \(window("sum += x[off];"))
                        out[t] = sum / \(divisor);
            """
        case .averageBackward:
            body = """
                        if (cd == 0 || ch == 0 || cw == 0) continue;
                        const T v = gy[t] / \(divisor);
            \(window("atomicAdd(&plane[off], v);"))
            """
        }
        let text = """
        extern "C" __global__ void \(name)(const stcu_pool_args a) {
            typedef \(t) T;
            const long long OD = a.out_size[0], OH = a.out_size[1], OW = a.out_size[2], OP = OD * OH * OW;
            const long long IP = a.in_size[0] * a.in_size[1] * a.in_size[2];
            const long long *table = (const long long *)a.table;
            const long long *t0 = table, *t1 = table + 3 * OD, *t2 = t1 + 3 * OH;
            T *out = (T *)a.out;
            long long *index = (long long *)a.indices;
            (void)index;
            for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < a.n; t += (long long)gridDim.x * blockDim.x) {
                const long long o = t % OP, p = t / OP;
                const long long ow = o % OW, oh = (o / OW) % OH, od = o / (OW * OH);
                const long long fd = t0[od], cd = t0[OD + od], pd = t0[2 * OD + od];
                const long long fh = t1[oh], ch = t1[OH + oh], ph = t1[2 * OH + oh];
                const long long fw = t2[ow], cw = t2[OW + ow], pw = t2[2 * OW + ow];
                (void)pd; (void)ph; (void)pw;
                const T *x = (const T *)a.in + p * IP;
                const T *gy = (const T *)a.in;
                T *plane = out + p * IP;
                (void)x; (void)gy; (void)plane;
        \(body)
            }
        }

        """
        return (name, text)
    }
}
