/// The sort kernel family: a stable sort of each contiguous row, values and their int64 positions.
///
/// A bitonic sorting network in its "flip" form, where every comparator puts the element that comes first at
/// the lower position: stage `k` (2, 4, … up to the row length rounded up to a power of two) first compares
/// each position of a `k`-block's lower half with its mirror image in the upper half, then runs half-cleaners
/// at distances k/4, k/8, … 1. A row whose length is not a power of two behaves as if padded with elements
/// that come last: a comparator whose upper position lies past the row would never swap, so it is skipped,
/// and no padding is stored. Ties are broken by original position, which makes the result a stable sort (and
/// exactly the CPU's order); NaN comes after every number (first when descending), as in PyTorch.
///
/// Stages up to `chunk` only compare within aligned `chunk`-blocks, so one launch sorts every block in shared
/// memory (`sortChunk`). A longer row then runs each larger stage as global-memory steps (`merge`, one
/// thread per comparator) while the distance is at least `chunk`, and finishes the stage's shorter distances
/// in shared memory again (`mergeChunk`): 55 launches for a row of 2^20.
///
/// Launch arguments (`stcu_red_args`): `outer` rows of `length`; `in` the input rows (`sortChunk`); `out`
/// and `index_out` the values and positions, sorted in place by the merge kernels; `inner` the stage size `k`
/// and `partials` the distance `j` (`merge`).
enum SortKernelOp: Int, CaseIterable {
    case chunkAscending, chunkDescending, mergeAscending, mergeDescending, mergeChunkAscending, mergeChunkDescending

    enum Step { case chunk, merge, mergeChunk }

    var step: Step {
        switch self {
        case .chunkAscending, .chunkDescending: return .chunk
        case .mergeAscending, .mergeDescending: return .merge
        case .mergeChunkAscending, .mergeChunkDescending: return .mergeChunk
        }
    }

    var descending: Bool { [.chunkDescending, .mergeDescending, .mergeChunkDescending].contains(self) }

    static func op(_ step: Step, descending: Bool) -> SortKernelOp {
        switch step {
        case .chunk: return descending ? .chunkDescending : .chunkAscending
        case .merge: return descending ? .mergeDescending : .mergeAscending
        case .mergeChunk: return descending ? .mergeChunkDescending : .mergeChunkAscending
        }
    }
}

enum SortKernelSource {
    /// Elements one block sorts in shared memory: 2048 values of 8 bytes and their 8-byte positions are 32 KiB,
    /// inside the 48 KiB of static shared memory every architecture since sm_30 gives a block.
    static let chunk = 2048
    static let blockSize = 256

    /// `ST_BEFORE(va, ia, vb, ib)`: whether (va at position ia) comes before (vb at ib) in the sorted row.
    private static func before(descending: Bool) -> String {
        if descending {
            return "#define ST_BEFORE(va, ia, vb, ib) (((va) != (va)) ? (((vb) == (vb)) || (ia) < (ib)) "
                + ": (((vb) == (vb)) && ((va) > (vb) || ((va) == (vb) && (ia) < (ib)))))\n"
        }
        return "#define ST_BEFORE(va, ia, vb, ib) (((va) != (va)) ? (((vb) != (vb)) && (ia) < (ib)) "
            + ": (((vb) != (vb)) || (va) < (vb) || ((va) == (vb) && (ia) < (ib))))\n"
    }

    static func kernel(_ op: SortKernelOp, _ d: DType) -> (name: String, text: String) {
        let t = KernelPrelude.storageType(d), acc = ReductionKernelSource.accumulatorType(d)
        let name = "sort_\(op)_\(KernelPrelude.tag(d))"
        var s = "extern \"C\" __global__ void \(name)(const stcu_red_args args) {\n"
        s += "    typedef \(acc) A;\n"
        s += "    const \(t) *in = (const \(t) *)args.in;\n"
        s += "    \(t) *out = (\(t) *)args.out;\n"
        s += "    long long *pos = (long long *)args.index_out;\n"
        s += "    (void)in;\n"
        s += "    " + before(descending: op.descending)
        switch op.step {
        case .chunk, .mergeChunk:
            let fromInput = op.step == .chunk
            s += """
                __shared__ A sv[\(chunk)]; __shared__ long long si[\(chunk)];
                #define ST_EXCHANGE(i, l) do { if ((l) < n && ST_BEFORE(sv[l], si[l], sv[i], si[i])) { \\
                    const A v = sv[i]; sv[i] = sv[l]; sv[l] = v; const long long q = si[i]; si[i] = si[l]; si[l] = q; } } while (0)
                const long long chunks = (args.length + \(chunk) - 1) / \(chunk);
                for (long long c = blockIdx.x; c < args.outer * chunks; c += gridDim.x) {
                    const long long row = c / chunks, base = (c % chunks) * \(chunk);
                    const int n = (int)(args.length - base < \(chunk) ? args.length - base : \(chunk));
                    int p2 = 1;
                    while (p2 < n) p2 *= 2;
                    const long long first = row * args.length + base;
                    for (int i = threadIdx.x; i < n; i += blockDim.x) {
                        sv[i] = \(KernelPrelude.load(fromInput ? "in[first + i]" : "out[first + i]", d, as: "A"));
                        si[i] = \(fromInput ? "base + i" : "pos[first + i]");
                    }
                    __syncthreads();

            """
            // sortChunk runs every stage up to the chunk; mergeChunk the rest of a larger stage (distances chunk/2 … 1).
            s += fromInput ? """
                    for (int k = 2; k <= p2; k *= 2) {
                        for (int j = k / 2; j > 0; j /= 2) {
                            for (int m = threadIdx.x; m < p2 / 2; m += blockDim.x) {
                                const int i = 2 * j * (m / j) + m % j;
                                const int l = j == k / 2 ? (i ^ (k - 1)) : i + j;
                                ST_EXCHANGE(i, l);
                            }
                            __syncthreads();
                        }
                    }

            """ : """
                    for (int j = \(chunk / 2); j > 0; j /= 2) {
                        for (int m = threadIdx.x; m < p2 / 2; m += blockDim.x) {
                            const int i = 2 * j * (m / j) + m % j, l = i + j;
                            ST_EXCHANGE(i, l);
                        }
                        __syncthreads();
                    }

            """
            s += """
                    for (int i = threadIdx.x; i < n; i += blockDim.x) {
                        out[first + i] = \(KernelPrelude.store("sv[i]", d));
                        pos[first + i] = si[i];
                    }
                    __syncthreads();
                }
                #undef ST_EXCHANGE

            """
        case .merge:
            s += """
                const long long k = args.inner, j = args.partials;
                long long p2 = 1;
                while (p2 < args.length) p2 *= 2;
                const long long total = args.outer * (p2 / 2);
                for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (long long)gridDim.x * blockDim.x) {
                    const long long row = g / (p2 / 2), m = g % (p2 / 2);
                    const long long i = 2 * j * (m / j) + m % j;
                    const long long l = j == k / 2 ? (i ^ (k - 1)) : i + j;
                    if (l >= args.length) continue;
                    \(t) *v = out + row * args.length;
                    long long *q = pos + row * args.length;
                    const A vi = \(KernelPrelude.load("v[i]", d, as: "A")), vl = \(KernelPrelude.load("v[l]", d, as: "A"));
                    if (ST_BEFORE(vl, q[l], vi, q[i])) {
                        const \(t) w = v[i]; v[i] = v[l]; v[l] = w;
                        const long long r = q[i]; q[i] = q[l]; q[l] = r;
                    }
                }

            """
        }
        s += "    #undef ST_BEFORE\n}\n"
        return (name, s)
    }
}
