/// The reduction kernel template: reduce the middle axis of a contiguous `[outer, length, inner]` input.
///
/// `inner == 1` (the reduced elements are adjacent): one block per (row, part); threads stride through the
/// part, then a warp-shuffle tree and one shared-memory step combine the block. `partials > 1` splits long
/// rows over several blocks (grid.y) whose results a second launch combines, so a whole-tensor sum fills
/// the GPU. `inner > 1`: one thread per output walks the reduced axis; neighbouring threads read
/// neighbouring addresses, so the loads coalesce without a transpose.
enum CUDAReduceOp: Int, CaseIterable {
    case sum, prod, max, min, argmax, argmin
    /// Running sum / product along the middle axis (`cumsum`, `cumprod`): an output per input element.
    case cumsum, cumprod

    var name: String {
        switch self {
        case .sum: return "sum"
        case .prod: return "prod"
        case .max: return "max"
        case .min: return "min"
        case .argmax: return "argmax"
        case .argmin: return "argmin"
        case .cumsum: return "cumsum"
        case .cumprod: return "cumprod"
        }
    }

    /// True for the ops that also produce the position of the chosen element.
    var producesIndex: Bool { self == .argmax || self == .argmin }

    /// `max`/`min` ignore-nothing semantics as PyTorch's: NaN wins, first occurrence wins ties.
    var isExtremum: Bool { [.max, .min, .argmax, .argmin].contains(self) }

    /// True for the running (prefix) ops.
    var isScan: Bool { self == .cumsum || self == .cumprod }
}

enum ReductionKernelSource {
    static let blockSize = 256

    /// The accumulator type: float for the half types and float32, double, int64 for integers, int for bool.
    static func accumulatorType(_ d: DType) -> String {
        switch d {
        case .float16, .bfloat16, .float32: return "float"
        case .float64: return "double"
        case .int64, .int32, .uint8: return "long long"
        case .bool: return "int"
        }
    }

    private static func identity(_ op: CUDAReduceOp, _ d: DType) -> String {
        switch op {
        case .sum, .cumsum: return "(A)0"
        case .prod, .cumprod: return "(A)1"
        case .max, .argmax:
            if d.isFloatingPoint { return "(A)(-ST_INF)" }
            return d == .bool ? "(A)0" : "(A)(-9223372036854775807LL - 1)"
        case .min, .argmin:
            if d.isFloatingPoint { return "(A)ST_INF" }
            return d == .bool ? "(A)1" : "(A)9223372036854775807LL"
        }
    }

    /// `better(a, ia, b, ib)`: whether candidate b replaces a (NaN first, then the extremum, then the lower index).
    private static func better(_ op: CUDAReduceOp) -> String {
        let cmp = (op == .max || op == .argmax) ? ">" : "<"
        return "((b != b) ? ((a == a) || ib < ia) : ((a == a) && (b \(cmp) a || (b == a && ib < ia))))"
    }

    static func kernel(name: String, op: CUDAReduceOp, input: DType, output: DType) -> String {
        if op.isScan { return scanKernel(name: name, op: op, d: input) }
        let inType = KernelPrelude.storageType(input), outType = KernelPrelude.storageType(output)
        let acc = accumulatorType(input)
        let load = KernelPrelude.load("p[k]", input, as: "A")
        let loadStrided = KernelPrelude.load("p[k * args.inner]", input, as: "A")
        // The accumulator (and, for extrema, its position) written to output `slot`.
        func storeResult(_ slot: String, indent: String) -> String {
            var t = "\(indent)out[\(slot)] = \(KernelPrelude.store("a", output));\n"
            if op.producesIndex || op.isExtremum { t += "\(indent)if (index_out) index_out[\(slot)] = ia;\n" }
            return t
        }
        var s = "extern \"C\" __global__ void \(name)(const stcu_red_args args) {\n"
        s += "    typedef \(acc) A;\n"
        s += "    const \(inType) *in = (const \(inType) *)args.in;\n"
        s += "    \(outType) *out = (\(outType) *)args.out;\n"
        s += "    long long *index_out = (long long *)args.index_out;\n"
        if op.producesIndex || op.isExtremum {
            s += "    #define ST_COMBINE(a, ia, b, ib) do { if (\(better(op))) { a = b; ia = ib; } } while (0)\n"
        } else {
            let combine = op == .sum || op == .cumsum ? "a = a + b" : "a = a * b"
            s += "    #define ST_COMBINE(a, ia, b, ib) do { (void)ia; (void)ib; \(combine); } while (0)\n"
        }
        s += "    if (args.inner == 1) {\n"
        s += "        const long long row = blockIdx.x, part = blockIdx.y;\n"
        s += "        const long long chunk = (args.length + args.partials - 1) / args.partials;\n"
        s += "        const long long begin = part * chunk;\n"
        s += "        const long long end = begin + chunk < args.length ? begin + chunk : args.length;\n"
        s += "        const \(inType) *p = in + row * args.length;\n"
        s += "        A a = \(identity(op, input)); long long ia = 0x7fffffffffffffffLL;\n"
        s += "        for (long long k = begin + threadIdx.x; k < end; k += blockDim.x) { A b = \(load); long long ib = k; ST_COMBINE(a, ia, b, ib); }\n"
        // Warp tree, then one value per warp through shared memory.
        s += "        for (int off = 16; off > 0; off /= 2) {\n"
        s += "            A b = __shfl_down_sync(0xffffffffu, a, off); long long ib = __shfl_down_sync(0xffffffffu, ia, off);\n"
        s += "            if ((threadIdx.x % 32) + off < 32) ST_COMBINE(a, ia, b, ib);\n"
        s += "        }\n"
        s += "        __shared__ A warp_a[32]; __shared__ long long warp_i[32];\n"
        s += "        const int warps = (blockDim.x + 31) / 32;\n"
        s += "        if (threadIdx.x % 32 == 0) { warp_a[threadIdx.x / 32] = a; warp_i[threadIdx.x / 32] = ia; }\n"
        s += "        __syncthreads();\n"
        s += "        if (threadIdx.x == 0) {\n"
        s += "            for (int w = 1; w < warps; w++) { A b = warp_a[w]; long long ib = warp_i[w]; ST_COMBINE(a, ia, b, ib); }\n"
        s += "            const long long slot = row * args.partials + part;\n"
        s += storeResult("slot", indent: "            ")
        s += "        }\n"
        s += "        return;\n"
        s += "    }\n"
        s += "    const long long total = args.outer * args.inner;\n"
        s += "    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += (long long)gridDim.x * blockDim.x) {\n"
        s += "        const long long o = j / args.inner, r = j % args.inner;\n"
        s += "        const \(inType) *p = in + o * args.length * args.inner + r;\n"
        s += "        A a = \(identity(op, input)); long long ia = 0x7fffffffffffffffLL;\n"
        s += "        for (long long k = 0; k < args.length; k++) { A b = \(loadStrided); long long ib = k; ST_COMBINE(a, ia, b, ib); }\n"
        s += storeResult("j", indent: "        ")
        s += "    }\n"
        s += "    #undef ST_COMBINE\n"
        s += "}\n"
        return s
    }

    /// The running sum/product of each `length`-long line of a contiguous `[outer, length, inner]` input, in
    /// the accumulator type. `inner == 1`: one block per row (grid-stride over rows); each thread scans its own
    /// chunk of the row twice (its total, then its outputs, started from the exclusive scan of the totals
    /// before it, which thread 0 forms in shared memory). `inner > 1`: one thread per line, neighbouring
    /// threads reading neighbouring addresses.
    static func scanKernel(name: String, op: CUDAReduceOp, d: DType) -> String {
        let t = KernelPrelude.storageType(d)
        let combine = op == .cumsum ? "+" : "*"
        let load = KernelPrelude.load("p[k]", d, as: "A"), loadStrided = KernelPrelude.load("p[k * args.inner]", d, as: "A")
        return """
        extern "C" __global__ void \(name)(const stcu_red_args args) {
            typedef \(accumulatorType(d)) A;
            const \(t) *in = (const \(t) *)args.in;
            \(t) *out = (\(t) *)args.out;
            if (args.inner == 1) {
                __shared__ A totals[\(blockSize)];
                const long long chunk = (args.length + blockDim.x - 1) / blockDim.x;
                const long long begin = threadIdx.x * chunk;
                const long long end = begin + chunk < args.length ? begin + chunk : args.length;
                for (long long row = blockIdx.x; row < args.outer; row += gridDim.x) {
                    const \(t) *p = in + row * args.length;
                    \(t) *q = out + row * args.length;
                    A a = \(identity(op, d));
                    for (long long k = begin; k < end; k++) a = a \(combine) \(load);
                    totals[threadIdx.x] = a;
                    __syncthreads();
                    if (threadIdx.x == 0) {
                        A run = \(identity(op, d));
                        for (unsigned w = 0; w < blockDim.x; w++) { const A v = totals[w]; totals[w] = run; run = run \(combine) v; }
                    }
                    __syncthreads();
                    a = totals[threadIdx.x];
                    for (long long k = begin; k < end; k++) { a = a \(combine) \(load); q[k] = \(KernelPrelude.store("a", d)); }
                    __syncthreads();
                }
                return;
            }
            const long long total = args.outer * args.inner;
            for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += (long long)gridDim.x * blockDim.x) {
                const long long o = j / args.inner, r = j % args.inner;
                const \(t) *p = in + o * args.length * args.inner + r;
                \(t) *q = out + o * args.length * args.inner + r;
                A a = \(identity(op, d));
                for (long long k = 0; k < args.length; k++) { a = a \(combine) \(loadStrided); q[k * args.inner] = \(KernelPrelude.store("a", d)); }
            }
        }

        """
    }
}
