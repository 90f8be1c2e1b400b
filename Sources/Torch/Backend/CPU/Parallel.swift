import CTorchKernels

/// Grain (elements per chunk) below which elementwise work stays on one thread (DESIGN.md §5).
let elementwiseGrain = 32_768

/// Runs `body` over `[0, n)` split into chunks across the thread pool (one parallel region).
///
/// Runs inline when `n <= grain` or when one thread is set, which keeps tiny ops cheap.
@inline(__always)
func parallelFor(_ n: Int, grain: Int, _ body: (Int, Int) -> Void) {
    if n <= grain || ct_get_num_threads() <= 1 {
        if n > 0 { body(0, n) }
        return
    }
    withoutActuallyEscaping(body) { escapable in
        var box = escapable
        withUnsafeMutablePointer(to: &box) { p in
            ct_parallel_for(Int64(n), Int64(grain), { ctx, begin, end in
                let f = ctx!.assumingMemoryBound(to: ((Int, Int) -> Void).self).pointee
                f(Int(begin), Int(end))
            }, UnsafeMutableRawPointer(p))
        }
    }
}
