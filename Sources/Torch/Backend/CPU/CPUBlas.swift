import CTorchKernels

/// The CPU GEMM: float32/float64 through the packed GEMM of CTorchKernels, integers with exact int64
/// accumulation; its CUDA twin is `CUDABlas`.
enum CPUBlas {
    /// out = alpha * a @ b + beta * out for 2-D views `a` (M×K) and `b` (K×N) of `out.dtype`; `out` has
    /// contiguous rows.
    static func gemm(_ a: Tensor, _ b: Tensor, into out: Tensor, alpha: Double, beta: Double) {
        let m = a.shape[0], k = a.shape[1], n = b.shape[1]
        let rsc = out.strides[0]
        switch out.dtype {
        case .float32:
            ct_sgemm(Int64(m), Int64(n), Int64(k), Float(alpha),
                     a.pointer(Float.self), Int64(a.strides[0]), Int64(a.strides[1]),
                     b.pointer(Float.self), Int64(b.strides[0]), Int64(b.strides[1]),
                     Float(beta), out.pointer(Float.self), Int64(rsc))
        case .float64:
            ct_dgemm(Int64(m), Int64(n), Int64(k), alpha,
                     a.pointer(Double.self), Int64(a.strides[0]), Int64(a.strides[1]),
                     b.pointer(Double.self), Int64(b.strides[0]), Int64(b.strides[1]),
                     beta, out.pointer(Double.self), Int64(rsc))
        default:
            // Integer matrices: exact int64 accumulation.
            let x = a.to(.int64), y = b.to(.int64)
            let o = out.dtype == .int64 ? out : Tensor(uninitializedShape: out.shape, dtype: .int64)
            let px = x.pointer(Int64.self), py = y.pointer(Int64.self), po = o.pointer(Int64.self)
            for i in 0..<m {
                for j in 0..<n {
                    var acc: Int64 = 0
                    for t in 0..<k { acc &+= px[i * x.strides[0] + t * x.strides[1]] &* py[t * y.strides[0] + j * y.strides[1]] }
                    let prev = beta == 0 ? 0 : po[i * o.strides[0] + j] &* Int64(beta)
                    po[i * o.strides[0] + j] = Int64(alpha) &* acc &+ prev
                }
            }
            if o !== out { copyKernel(from: o, into: out) }
        }
    }
}
