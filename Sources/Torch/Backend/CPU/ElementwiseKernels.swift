import CTorchKernels

/// The generic elementwise loops every pointwise op is built from. Each is specialised per
/// element type and per operation closure at its call site (`@inline(__always)` + a literal
/// closure), so the inner loops are plain pointer loops with no calls.

/// out[i] = f(a[i], b[i]) over a plan whose operands are (out, a, b).
///
/// The pointers and strides travel as the parallel context and the row closure captures only
/// `f`, so every call site gets its own vectorised loop on the pool threads too
/// (see `parallelFor(_:grain:context:_:)`). `f` must be a closure literal that captures
/// nothing; an element function that needs run-time values (a slope, a threshold) takes them
/// from `binaryLoop(_:_:_:_:with:_:)`.
@inline(__always)
func binaryLoop<A, B, R>(_ plan: StridedPlan, _ out: UnsafeMutablePointer<R>, _ a: UnsafePointer<A>,
                         _ b: UnsafePointer<B>, _ f: (A, B) -> R) {
    plan.parallelRows(context: (out, a, b, plan.innerStrides)) { c, n, o0, o1, o2 in
        binaryRow(n, c.0 + o0, c.1 + o1, c.2 + o2, c.3, f)
    }
}

/// `binaryLoop` whose element function also gets `params` (run-time constants such as a
/// slope), carried in the parallel context so `f` can stay capture-free and be inlined into
/// the pool threads' loops:
///
///     binaryLoop(plan, o, g, x, with: slope) { g, x, slope in x > 0 ? g : g * slope }
@inline(__always)
func binaryLoop<A, B, R, P>(_ plan: StridedPlan, _ out: UnsafeMutablePointer<R>, _ a: UnsafePointer<A>,
                            _ b: UnsafePointer<B>, with params: P, _ f: (A, B, P) -> R) {
    plan.parallelRows(context: (out, a, b, plan.innerStrides, params)) { c, n, o0, o1, o2 in
        let p = c.4
        binaryRow(n, c.0 + o0, c.1 + o1, c.2 + o2, c.3) { f($0, $1, p) }
    }
}

/// `x` clamped to [lo, hi] with two selects that keep NaN (both comparisons are false for it) and compile to
/// max/min instructions without a branch: Hardtanh/ReLU6, their in-place loop, and max pooling's fused clamp.
@inline(__always)
func clampElement<T: FloatElement>(_ x: T, _ lo: T, _ hi: T) -> T {
    let t = x < lo ? lo : x
    return t > hi ? hi : t
}

/// One row of `binaryLoop`: contiguous and scalar-broadcast rows as plain (vectorisable) loops.
@inline(__always)
private func binaryRow<A, B, R>(_ n: Int, _ po: UnsafeMutablePointer<R>, _ pa: UnsafePointer<A>,
                                _ pb: UnsafePointer<B>, _ strides: (Int, Int, Int), _ f: (A, B) -> R) {
    let (s0, s1, s2) = strides
    if s0 == 1 && s1 == 1 && s2 == 1 {
        streamingLoop(n, po, pa, pb) { lo, hi in for i in lo..<hi { po[i] = f(pa[i], pb[i]) } }
    } else if s0 == 1 && s1 == 1 && s2 == 0 {
        let bv = pb[0]
        streamingLoop(n, po, pa, nil as UnsafePointer<A>?) { lo, hi in for i in lo..<hi { po[i] = f(pa[i], bv) } }
    } else if s0 == 1 && s1 == 0 && s2 == 1 {
        let av = pa[0]
        streamingLoop(n, po, pb, nil as UnsafePointer<B>?) { lo, hi in for i in lo..<hi { po[i] = f(av, pb[i]) } }
    } else {
        for i in 0..<n { po[i &* s0] = f(pa[i &* s1], pb[i &* s2]) }
    }
}

/// out[i] = f(a[i]) over a plan whose operands are (out, a, -); parallel like `binaryLoop`
/// (`f` captures nothing; see `unaryLoop(_:_:_:with:_:)`).
@inline(__always)
func unaryLoop<A, R>(_ plan: StridedPlan, _ out: UnsafeMutablePointer<R>, _ a: UnsafePointer<A>, _ f: (A) -> R) {
    plan.parallelRows(context: (out, a, plan.innerStrides.0, plan.innerStrides.1)) { c, n, o0, o1, _ in
        unaryRow(n, c.0 + o0, c.1 + o1, c.2, c.3, f)
    }
}

/// `unaryLoop` whose element function also gets `params`, carried in the parallel context
/// (see `binaryLoop(_:_:_:_:with:_:)`).
@inline(__always)
func unaryLoop<A, R, P>(_ plan: StridedPlan, _ out: UnsafeMutablePointer<R>, _ a: UnsafePointer<A>,
                        with params: P, _ f: (A, P) -> R) {
    plan.parallelRows(context: (out, a, plan.innerStrides.0, plan.innerStrides.1, params)) { c, n, o0, o1, _ in
        let p = c.4
        unaryRow(n, c.0 + o0, c.1 + o1, c.2, c.3) { f($0, p) }
    }
}

@inline(__always)
private func unaryRow<A, R>(_ n: Int, _ po: UnsafeMutablePointer<R>, _ pa: UnsafePointer<A>, _ s0: Int, _ s1: Int,
                            _ f: (A) -> R) {
    if s0 == 1 && s1 == 1 {
        streamingLoop(n, po, pa, nil as UnsafePointer<A>?) { lo, hi in for i in lo..<hi { po[i] = f(pa[i]) } }
    } else {
        for i in 0..<n { po[i &* s0] = f(pa[i &* s1]) }
    }
}

/// out[i] = f(a[i], b[i], c[i]) over a plan whose operands are (out, a, b) with a third input
/// laid out like the output (used by `where` and fused backward formulas).
@inline(__always)
func ternaryLoop<A, B, C, R>(_ shape: [Int], _ out: (UnsafeMutablePointer<R>, [Int]),
                             _ a: (UnsafePointer<A>, [Int]), _ b: (UnsafePointer<B>, [Int]),
                             _ c: (UnsafePointer<C>, [Int]), _ f: (A, B, C) -> R) {
    // Two plans share the outer iteration: (out, a, b) and (c, -, -) with identical coalescing
    // is not guaranteed, so iterate with a 4-operand odometer built from two 3-operand plans.
    let p1 = StridedPlan(shape: shape, out.1, a.1, b.1)
    let p2 = StridedPlan(shape: shape, c.1, out.1, out.1)
    if p1.sizes == p2.sizes {
        let (s0, s1, s2) = p1.innerStrides
        let (sc, _, _) = p2.innerStrides
        // Rows of both plans correspond one to one.
        var offsetsC: [Int] = []
        offsetsC.reserveCapacity(p2.rows)
        p2.forEachRow(0..<p2.rows) { _, oc, _, _ in offsetsC.append(oc) }
        var row = 0
        p1.forEachRow(0..<p1.rows) { n, o0, o1, o2 in
            let po = out.0 + o0, pa = a.0 + o1, pb = b.0 + o2, pc = c.0 + offsetsC[row]
            for i in 0..<n { po[i &* s0] = f(pa[i &* s1], pb[i &* s2], pc[i &* sc]) }
            row += 1
        }
        return
    }
    // General fallback: element by element over the logical index.
    let n = shapeNumel(shape)
    var idx = [Int](repeating: 0, count: shape.count)
    for _ in 0..<n {
        var oo = 0, oa = 0, ob = 0, oc = 0
        for d in 0..<shape.count {
            oo += idx[d] * out.1[d]; oa += idx[d] * a.1[d]; ob += idx[d] * b.1[d]; oc += idx[d] * c.1[d]
        }
        out.0[oo] = f(a.0[oa], b.0[ob], c.0[oc])
        var d = shape.count - 1
        while d >= 0 {
            idx[d] += 1
            if idx[d] < shape[d] { break }
            idx[d] = 0
            d -= 1
        }
    }
}

/// Runs `body(lo, hi)` over `[0, n)` of contiguous streams `out`, `a` and `b` (nil: none).
///
/// Below `ct_prefetch_min_bytes()` (in the widest element type) it is one call. Larger streams
/// run in 1 KB chunks (of the widest type), each first prefetching the lines
/// `CT_PREFETCH_DISTANCE` bytes ahead in every stream, `out` for writing: on its own the
/// hardware streamer leaves one core well short of the L3 bandwidth.
/// The chunks stay long enough for `body`'s loop to vectorise with one alias check each.
/// `body` has a single call site, so each op's vectorised loop is emitted once, not once per
/// stream length class (this halved the elementwise kernels' machine code).
@inline(__always)
func streamingLoop<R, A, B>(_ n: Int, _ out: UnsafeMutablePointer<R>, _ a: UnsafePointer<A>,
                            _ b: UnsafePointer<B>?, _ body: (Int, Int) -> Void) {
    let widest = max(MemoryLayout<R>.stride, MemoryLayout<A>.stride, MemoryLayout<B>.stride)
    let prefetch = n &* widest >= Int(clamping: ct_prefetch_min_bytes())
    let chunk = prefetch ? 1024 / widest : n
    let outBytes = chunk &* MemoryLayout<R>.stride, aBytes = chunk &* MemoryLayout<A>.stride
    let bBytes = b == nil ? 0 : chunk &* MemoryLayout<B>.stride
    var lo = 0
    while lo < n {
        let hi = Swift.min(lo &+ chunk, n)
        if prefetch {
            ct_prefetch_ahead(out + lo, outBytes, a + lo, aBytes, b.map { UnsafeRawPointer($0 + lo) }, bBytes)
        }
        body(lo, hi)
        lo = hi
    }
}
