import CTorchKernels

/// Grain (elements per chunk) below which elementwise work stays on one thread (docs/architecture.md §5).
let elementwiseGrain = 32_768

/// Runs `body` over `[0, n)` split into chunks across the thread pool (one parallel region).
///
/// Runs on the calling thread when `n <= grain` or when one thread is set, which keeps tiny ops cheap: there `body`
/// is inlined, a second copy beside the one the pool calls (calling it through the pool's function pointer instead
/// made `add` of 10 floats 16 % slower; docs/performance.md §8).
///
/// The pool's threads call `body` through a function pointer, so `body` is compiled as a
/// stand-alone function: a loop written inside it is specialised as usual, but a *closure it
/// captures* (say the `f` of a generic `map(f)` helper) stays an indirect call per element,
/// unvectorised (measured: 2 threads ran an add 2× slower than one). Generic helpers that call
/// a caller-supplied closure per element use `parallelFor(_:grain:context:_:)` instead.
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

/// `parallelFor` for generic helpers: `body(context, begin, end)` gets its run-time data
/// (pointers, strides, plans) through `context` and should capture nothing but closure
/// literals of its caller (element functions like `{ $0 + $1 }`).
///
/// Why: a closure whose captures are all constants is specialised by the optimizer for each
/// call site (capture propagation), so `body`'s loop gets the element function inlined and
/// vectorised even though the pool calls `body` through a function pointer. A captured
/// pointer or plan would defeat that and leave one indirect call per element.
@inline(__always)
func parallelFor<Context>(_ n: Int, grain: Int, context: Context, _ body: (Context, Int, Int) -> Void) {
    if n <= grain || ct_get_num_threads() <= 1 {
        if n > 0 { body(context, 0, n) }
        return
    }
    poolParallelFor(n, grain: grain, context: context, body)
}

/// `parallelFor(_:grain:context:_:)`'s pool region alone, for callers that handled the one-chunk case
/// themselves: `body` is emitted once, as the function the pool calls.
@inline(__always)
func poolParallelFor<Context>(_ n: Int, grain: Int, context: Context, _ body: (Context, Int, Int) -> Void) {
    var ctx = context
    withUnsafePointer(to: &ctx) { p in
        parallelForRaw(n, grain: grain, context: UnsafeRawPointer(p)) { raw, lo, hi in
            body(raw.assumingMemoryBound(to: Context.self).pointee, lo, hi)
        }
    }
}

/// The non-generic core of the context form (a C callback cannot capture generic parameters).
@inline(__always)
private func parallelForRaw(_ n: Int, grain: Int, context: UnsafeRawPointer,
                            _ body: (UnsafeRawPointer, Int, Int) -> Void) {
    withoutActuallyEscaping(body) { escapable in
        var region = RegionBody(run: escapable, context: context)
        withUnsafeMutablePointer(to: &region) { p in
            ct_parallel_for(Int64(n), Int64(grain), { raw, begin, end in
                let r = raw!.assumingMemoryBound(to: RegionBody.self)
                r.pointee.run(r.pointee.context, Int(begin), Int(end))
            }, UnsafeMutableRawPointer(p))
        }
    }
}

/// A region's body and its context as the C callback receives them. A concrete type (not a tuple) stores the
/// closure at its own abstraction, so calling it needs no reabstraction thunk.
private struct RegionBody {
    let run: (UnsafeRawPointer, Int, Int) -> Void
    let context: UnsafeRawPointer
}

/// Marks inter-op work as started and returns the thread count it must use: PyTorch's `get_pool()`, which
/// sizes the inter-op pool at its first task and from then on makes `torch.setNumInteropThreads` fail.
///
/// Nothing calls it yet: SwiftTorch has no executor of independent ops (PyTorch's `torch.jit.fork` /
/// `at::launch`), the one thing PyTorch's inter-op count sizes. Such an executor calls it once, before its
/// first task, and starts that many threads.
func startInteropWork() -> Int { Int(ct_start_interop()) }
