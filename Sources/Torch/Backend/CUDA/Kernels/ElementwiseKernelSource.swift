/// The one elementwise kernel template (PyTorch's TensorIterator / jiterator idea): every pointwise kernel is
/// this loop around an op's C expression, for given operand dtypes.
///
/// A launch passes `stcu_ew_args` by value. With `rank == 0` all operands are contiguous: each thread walks
/// 4-element vectors (128-bit loads for float32 when every pointer is aligned) with a scalar tail. Otherwise
/// the shape and per-operand strides (elements, broadcast dims have stride 0) map each linear index to
/// offsets. An input whose pointer is 0 is a scalar taken from `f[k]` (floating) or `i[k]` (integral).
enum ElementwiseKernelSource {
    /// Threads per block for elementwise launches (a multiple of the warp; 256 keeps 8 warps per block).
    static let blockSize = 256
    /// Elements per vector of the contiguous path (128-bit for float32).
    static let vectorWidth = 4
    /// Vectors per thread per grid-stride iteration of the contiguous path. With 2, a full H100/H200 (up to
    /// 2048 resident threads per SM) keeps 64 KiB of loads in flight per SM, above the ~25 KiB its ~4.8 TB/s
    /// at ~700 ns latency needs per SM (132 SMs); one vector per iteration stayed at 0.94× PyTorch's `a + a`.
    static let unroll = 2

    /// One kernel: `name(stcu_ew_args)` computing `expression` (in `mathType`, inputs `x`, `y`, `z`) from
    /// inputs of `inputs` dtypes into an output of `output` dtype. `condition`: the first input is a bool
    /// named `c` instead (torch.where).
    static func kernel(name: String, output: DType, inputs: [DType], mathType: String, expression: String,
                       condition: Bool = false) -> String {
        let names = condition ? ["c", "y", "z"] : ["x", "y", "z"]
        let outType = KernelPrelude.storageType(output)
        var s = "extern \"C\" __global__ void \(name)(const stcu_ew_args args) {\n"
        s += "    typedef \(mathType) M;\n"
        s += "    \(outType) *out = (\(outType) *)args.ptr[0];\n"
        for (k, d) in inputs.enumerated() {
            s += "    const \(KernelPrelude.storageType(d)) *p\(k) = (const \(KernelPrelude.storageType(d)) *)args.ptr[\(k + 1)];\n"
        }
        s += "    #define F0 args.f[2]\n    #define F1 args.f[3]\n"
        func value(_ k: Int, _ element: String) -> String {
            let d = inputs[k]
            let math = (condition && k == 0) ? "bool" : "M"
            let scalar = d.isFloatingPoint ? "args.f[\(k)]" : "args.i[\(k)]"
            return "\(math) \(names[k]) = p\(k) ? \(KernelPrelude.load(element, d, as: math)) : (\(math))\(scalar);"
        }
        // Contiguous path.
        s += "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        s += "    const long long step = (long long)gridDim.x * blockDim.x;\n"
        s += "    if (args.rank == 0) {\n"
        s += "        const long long n = args.n, nv = n / \(vectorWidth);\n"
        var aligned = "((unsigned long long)out % sizeof(st_vec<\(outType), \(vectorWidth)>) == 0)"
        for (k, d) in inputs.enumerated() {
            aligned += " && ((unsigned long long)p\(k) % sizeof(st_vec<\(KernelPrelude.storageType(d)), \(vectorWidth)>) == 0)"
        }
        s += "        if (\(aligned)) {\n"
        // `unroll` vectors per thread per iteration, all loaded before any is stored: the loads of one
        // iteration are then in flight together (a store between them could alias the next load, so the
        // compiler would not hoist it), which a bandwidth-bound kernel needs to keep HBM busy.
        s += "            for (long long v = i; v < nv; v += \(unroll) * step) {\n"
        for (k, d) in inputs.enumerated() {
            let t = KernelPrelude.storageType(d)
            s += "                st_vec<\(t), \(vectorWidth)> a\(k)[\(unroll)];\n"
            s += "                #pragma unroll\n"
            s += "                for (int u = 0; u < \(unroll); u++) {\n"
            s += "                    const long long w = v + u * step;\n"
            s += "                    if (p\(k) && w < nv) a\(k)[u] = ((const st_vec<\(t), \(vectorWidth)> *)p\(k))[w];\n"
            s += "                }\n"
        }
        s += "                #pragma unroll\n"
        s += "                for (int u = 0; u < \(unroll); u++) {\n"
        s += "                    const long long w = v + u * step;\n"
        s += "                    if (w >= nv) break;\n"
        s += "                    st_vec<\(outType), \(vectorWidth)> r;\n"
        s += "                    for (int e = 0; e < \(vectorWidth); e++) {\n"
        for k in inputs.indices { s += "                        \(value(k, "a\(k)[u].v[e]"))\n" }
        s += "                        r.v[e] = \(KernelPrelude.store(expression, output));\n"
        s += "                    }\n"
        s += "                    ((st_vec<\(outType), \(vectorWidth)> *)out)[w] = r;\n"
        s += "                }\n"
        s += "            }\n"
        s += "            i += nv * \(vectorWidth);\n"
        s += "        }\n"
        s += "        for (; i < n; i += step) {\n"
        for k in inputs.indices { s += "            \(value(k, "p\(k)[i]"))\n" }
        s += "            out[i] = \(KernelPrelude.store(expression, output));\n"
        s += "        }\n"
        s += "        return;\n"
        s += "    }\n"
        // Strided path.
        s += stridedLoop(offsets: ["o"] + inputs.indices.map { "o\($0)" },
                         body: inputs.indices.map { value($0, "p\($0)[o\($0)]") + "\n        " }.joined()
                            + "out[o] = \(KernelPrelude.store(expression, output));")
        s += "    #undef F0\n    #undef F1\n"
        s += "}\n"
        return s
    }

    /// The strided path's loop: each thread takes linear positions `i_` of `args.shape` (grid-stride) and
    /// maps them to element offsets named `offsets[k]`, from `args.strides[k]`, before running `body`.
    static func stridedLoop(offsets: [String], body: String) -> String {
        var s = "    for (long long i_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; i_ < args.n; i_ += (long long)gridDim.x * blockDim.x) {\n"
        s += "        long long rem = i_" + offsets.map { ", \($0) = 0" }.joined() + ";\n"
        s += "        for (int d = args.rank - 1; d >= 0; d--) {\n"
        s += "            const long long c_ = rem % args.shape[d];\n"
        s += "            rem /= args.shape[d];\n"
        for (k, o) in offsets.enumerated() { s += "            \(o) += c_ * args.strides[\(k)][d];\n" }
        s += "        }\n"
        s += "        \(body)\n"
        s += "    }\n"
        return s
    }
}
