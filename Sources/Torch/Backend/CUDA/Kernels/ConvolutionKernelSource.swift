/// The convolution kernel family: the two layout kernels that turn every convolution into GEMMs on CUDA.
///
/// The column matrix of a batch holds one row per (big channel, kernel tap) and one column per (image, small
/// position): `col[c·K + k, n·P + p]` is the big-tensor element tap `k` of small position `p` reads (0 in the
/// padding), with K the kernel volume and P the small plane. With the images side by side in the columns, a
/// convolution is one GEMM per group (weights × col), its input gradient one GEMM (weightsᵀ × dy) and `col2im`,
/// its weight gradient one GEMM (dy × colᵀ); `CUDAConvolution` does the GEMMs. Geometry is 3-D (1-D and 2-D
/// convolutions have leading sizes of 1), as the CPU kernels' `ConvGeometry`.
enum ConvolutionKernelOp: Int, CaseIterable {
    /// `out` = the column matrix of `in` (contiguous [images, channels, big…]); one thread per col element.
    case im2col
    /// `out` (contiguous [images, channels, big…]) = the adjoint of im2col applied to the column matrix `in`:
    /// each big element gathers, in a fixed order, the column entries of the taps that read it, so no atomics
    /// and the same sum every run. One thread per big element.
    case col2im

    var name: String { self == .im2col ? "im2col" : "col2im" }
}

enum ConvolutionKernelSource {
    /// Dtypes with convolution kernels (those cuBLAS multiplies here).
    static func supports(_ d: DType) -> Bool { d == .float32 || d == .float64 }

    static func kernel(_ op: ConvolutionKernelOp, _ d: DType) -> (name: String, text: String)? {
        guard supports(d) else { return nil }
        let t = KernelPrelude.storageType(d)
        let name = "conv_\(op.name)_\(KernelPrelude.tag(d))"
        let body: String
        switch op {
        case .im2col:
            body = """
                    // t = row · columns + column; row = c·K + (kd, kh, kw); column = n·P + (od, oh, ow).
                    const long long col = t % columns, row = t / columns;
                    const long long n = col / P, p = col % P, c = row / K, k = row % K;
                    const long long kd = k / (a.kernel[1] * a.kernel[2]), kh = (k / a.kernel[2]) % a.kernel[1], kw = k % a.kernel[2];
                    const long long od = p / (a.small[1] * a.small[2]), oh = (p / a.small[2]) % a.small[1], ow = p % a.small[2];
                    const long long id = od * a.stride[0] - a.padding[0] + kd * a.dilation[0];
                    const long long ih = oh * a.stride[1] - a.padding[1] + kh * a.dilation[1];
                    const long long iw = ow * a.stride[2] - a.padding[2] + kw * a.dilation[2];
                    T v = (T)0;
                    if (id >= 0 && id < a.big[0] && ih >= 0 && ih < a.big[1] && iw >= 0 && iw < a.big[2])
                        v = in[(((n * a.channels + c) * a.big[0] + id) * a.big[1] + ih) * a.big[2] + iw];
                    out[t] = v;
            """
        case .col2im:
            body = """
                    // t = ((n · channels + c) · D + id) · H · W + ih · W + iw.
                    const long long iw = t % a.big[2], ih = (t / a.big[2]) % a.big[1], id = (t / (a.big[1] * a.big[2])) % a.big[0];
                    const long long nc = t / B, c = nc % a.channels, n = nc / a.channels;
                    T acc = (T)0;
                    for (long long kd = 0; kd < a.kernel[0]; kd++) {
                        const long long zd = id + a.padding[0] - kd * a.dilation[0];
                        if (zd < 0 || zd % a.stride[0] != 0 || zd / a.stride[0] >= a.small[0]) continue;
                        for (long long kh = 0; kh < a.kernel[1]; kh++) {
                            const long long zh = ih + a.padding[1] - kh * a.dilation[1];
                            if (zh < 0 || zh % a.stride[1] != 0 || zh / a.stride[1] >= a.small[1]) continue;
                            for (long long kw = 0; kw < a.kernel[2]; kw++) {
                                const long long zw = iw + a.padding[2] - kw * a.dilation[2];
                                if (zw < 0 || zw % a.stride[2] != 0 || zw / a.stride[2] >= a.small[2]) continue;
                                const long long k = (kd * a.kernel[1] + kh) * a.kernel[2] + kw;
                                const long long p = ((zd / a.stride[0]) * a.small[1] + zh / a.stride[1]) * a.small[2] + zw / a.stride[2];
                                acc += in[(c * K + k) * columns + n * P + p];
                            }
                        }
                    }
                    out[t] = acc;
            """
        }
        let text = """
        extern "C" __global__ void \(name)(const stcu_conv_args a) {
            typedef \(t) T;
            const T *in = (const T *)a.in;
            T *out = (T *)a.out;
            const long long K = a.kernel[0] * a.kernel[1] * a.kernel[2];
            const long long P = a.small[0] * a.small[1] * a.small[2], B = a.big[0] * a.big[1] * a.big[2];
            const long long columns = a.images * P;
            (void)B;
            for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < a.n; t += (long long)gridDim.x * blockDim.x) {
        \(body)
            }
        }

        """
        return (name, text)
    }
}
