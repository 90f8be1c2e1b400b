/// The random kernel family: uniform, normal and Bernoulli samples drawn on the GPU from a counter-based
/// generator (Philox-4x32-10, as PyTorch's CUDA generator and cuRAND use), so a sample depends only on
/// (seed, offset, element) and threads need no shared state.
///
/// Element `i` of a launch uses the 64-bit counter `offset + i / 2` and two of the four 32-bit words that
/// counter yields; a launch of n elements therefore advances the device's offset by ⌈n / 2⌉ (`CUDARandom`).
/// Arguments (`stcu_ew_args`, contiguous output in `ptr[0]`): `i[0]` seed, `i[1]` offset, `f[0]`/`f[1]`
/// the op's parameters (from/to, mean/std, probability/value).
enum RandomKernelOp: Int, CaseIterable {
    /// `f[0] + (f[1] − f[0]) × u`, u uniform in [0, 1).
    case uniform
    /// `f[0] + f[1] × z`, z standard normal (Box–Muller).
    case normal
    /// `f[1]` with probability `f[0]`, else 0 (a dropout mask with its 1/(1 − p) scale).
    case bernoulli

    var name: String {
        switch self {
        case .uniform: return "uniform"
        case .normal: return "normal"
        case .bernoulli: return "bernoulli"
        }
    }
}

enum RandomKernelSource {
    /// Philox-4x32-10 (Salmon et al., SC'11): ten rounds of two 32×32→64 multiplications, with the
    /// published multipliers and Weyl key increments.
    static let philox = """
    ST_DEVICE void st_philox(unsigned long long seed, unsigned long long counter, unsigned w[4]) {
        unsigned c0 = (unsigned)counter, c1 = (unsigned)(counter >> 32), c2 = 0u, c3 = 0u;
        unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
            const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
            c0 = n0; c1 = (unsigned)p1; c2 = n2; c3 = (unsigned)p0;
            k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
        }
        w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
    }

    """

    /// The kernel of `op` writing dtype `d` (floating types only).
    static func kernel(_ op: RandomKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard d.isFloatingPoint else { return nil }
        let name = "random_\(op.name)_\(KernelPrelude.tag(d))"
        let t = KernelPrelude.storageType(d), m = KernelPrelude.mathType(d)
        // Uniform in [0, 1) with the type's precision: 24 bits for float, 53 for double.
        let unit = m == "double" ? "((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0)"
            : "(float)(a >> 8) * (1.0f / 16777216.0f)"
        let value: String
        switch op {
        case .uniform: value = "(M)args.f[0] + ((M)args.f[1] - (M)args.f[0]) * (\(unit))"
        case .normal:
            value = "(M)args.f[0] + (M)args.f[1] * st_sqrt((M)-2 * st_log(((M)a + (M)1) * (M)2.3283064365386963e-10))"
                + " * st_cos((M)6.283185307179586 * (M)b * (M)2.3283064365386963e-10)"
        case .bernoulli: value = "(\(unit)) < (M)args.f[0] ? (M)args.f[1] : (M)0"
        }
        let text = """
        extern "C" __global__ void \(name)(const stcu_ew_args args) {
            typedef \(m) M;
            \(t) *out = (\(t) *)args.ptr[0];
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += (long long)gridDim.x * blockDim.x) {
                unsigned w[4];
                st_philox((unsigned long long)args.i[0], (unsigned long long)args.i[1] + (unsigned long long)(i / 2), w);
                const unsigned a = w[(i & 1) * 2], b = w[(i & 1) * 2 + 1];
                out[i] = \(KernelPrelude.store(value, d));
            }
        }

        """
        return (name, text)
    }
}
