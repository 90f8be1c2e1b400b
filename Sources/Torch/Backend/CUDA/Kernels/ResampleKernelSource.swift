/// The resampling kernel family behind `F.interpolate` / `nn.Upsample` on CUDA: one spatial dim at a time, the
/// input viewed as `[outer, inSize, inner]` (the resampled dim in the middle), as the CPU's
/// `resampleForwardKernel` / `resampleAdjointKernel` (Backend/CPU/InterpolationKernels.swift).
///
/// Both kernels gather, one thread per output element, with the terms in the CPU's order, so neither needs atomics
/// and each run gives the same sums: the forward reads its taps from an index/weight table (tap-major,
/// `[t · outSize + o]`); the adjoint reads, for each input position, the list of (tap, output) entries that
/// sampled it, which the host inverts from the same table (`CUDAResampling`).
enum ResampleKernelOp: Int, CaseIterable {
    /// `out[b, o, i] = Σ_t w[t·outSize + o] · in[b, idx[t·outSize + o], i]`.
    case forward
    /// `out[b, j, i] = Σ_{p ∈ entries(j)} w[p] · in[b, p mod inSize, i]`: the forward's adjoint, `in` being the
    /// gradient of the forward output (its `inSize` is the forward's output length).
    case adjoint

    var name: String { self == .forward ? "forward" : "adjoint" }
}

enum ResampleKernelSource {
    /// Dtypes with resampling kernels (the floating types `F.interpolate` computes in).
    static func supports(_ d: DType) -> Bool { d == .float32 || d == .float64 }

    static func kernel(_ op: ResampleKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard supports(d) else { return nil }
        let name = "resample_\(op.name)_\(KernelPrelude.tag(d))"
        let body: String
        switch op {
        case .forward:
            body = """
                    const T *row = in + b * a.in_size * a.inner + i;
                    T acc = w[o] * row[idx[o] * a.inner];
                    for (long long k = 1; k < a.taps; k++) {
                        const long long p = k * a.out_size + o;
                        acc += w[p] * row[idx[p] * a.inner];
                    }
                    out[t] = acc;
            """
        case .adjoint:
            body = """
                    const T *row = in + b * a.in_size * a.inner + i;
                    const long long *entry = idx + a.out_size + 1;
                    T acc = (T)0;
                    for (long long m = idx[o]; m < idx[o + 1]; m++) {
                        const long long p = entry[m];
                        acc += w[p] * row[(p % a.in_size) * a.inner];
                    }
                    out[t] = acc;
            """
        }
        let text = """
        extern "C" __global__ void \(name)(const stcu_resample_args a) {
            typedef \(KernelPrelude.storageType(d)) T;
            const T *in = (const T *)a.in;
            const T *w = (const T *)a.weight;
            const long long *idx = (const long long *)a.table;
            T *out = (T *)a.out;
            for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < a.n; t += (long long)gridDim.x * blockDim.x) {
                // t = (b · out_size + o) · inner + i.
                const long long i = t % a.inner, o = (t / a.inner) % a.out_size, b = t / (a.inner * a.out_size);
        \(body)
            }
        }

        """
        return (name, text)
    }
}
