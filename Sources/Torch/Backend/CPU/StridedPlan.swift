import CTorchKernels

/// An iteration plan over up to three strided operands of one logical shape (operand 0 is
/// usually the output). Size-1 dims are dropped and mergeable neighbours coalesced, so a
/// contiguous or simply broadcast case becomes one long inner row.
///
/// Kernels receive rows: `(count, offset0, offset1, offset2)` plus the inner strides, all in elements.
struct StridedPlan {
    /// Elements per inner row.
    let inner: Int
    /// Inner strides of the three operands.
    let innerStrides: (Int, Int, Int)
    /// Outer (coalesced) sizes and strides, outermost first; empty when there is a single row.
    private let outerSizes: [Int]
    private let o0: [Int], o1: [Int], o2: [Int]

    /// Builds a plan for `shape`; `nil` strides mean "all zero" (an unused or scalar operand).
    /// Allocates nothing when everything coalesces into one row (the contiguous case).
    init(shape: [Int], _ a: [Int], _ b: [Int]?, _ c: [Int]?) {
        let rank = shape.count
        var inner = 1, i0 = 0, i1 = 0, i2 = 0
        var haveInner = false
        var outer: [(Int, Int, Int, Int)] = []
        // Walk from the innermost dim outwards, merging while strides chain.
        var d = rank - 1
        while d >= 0 {
            let n = shape[d]
            if n != 1 {
                let sa = a[d], sb = b?[d] ?? 0, sc = c?[d] ?? 0
                if !haveInner {
                    inner = n; i0 = sa; i1 = sb; i2 = sc; haveInner = true
                } else if outer.isEmpty && sa == i0 * inner && sb == i1 * inner && sc == i2 * inner {
                    inner *= n
                } else if let last = outer.last, sa == last.1 * last.0, sb == last.2 * last.0, sc == last.3 * last.0 {
                    outer[outer.count - 1].0 = last.0 * n
                } else {
                    outer.append((n, sa, sb, sc))
                }
            }
            d -= 1
        }
        self.inner = haveInner ? inner : 1
        innerStrides = (i0, i1, i2)
        if outer.isEmpty {
            outerSizes = []; o0 = []; o1 = []; o2 = []
        } else {
            outer.reverse()
            outerSizes = outer.map(\.0); o0 = outer.map(\.1); o1 = outer.map(\.2); o2 = outer.map(\.3)
        }
    }

    /// A plan over `n` elements with fixed strides (no allocation).
    init(flat n: Int, _ s0: Int, _ s1: Int, _ s2: Int) {
        inner = n
        innerStrides = (s0, s1, s2)
        outerSizes = []; o0 = []; o1 = []; o2 = []
    }

    /// Coalesced sizes, outermost first (for plan comparisons).
    var sizes: [Int] { outerSizes + [inner] }

    /// Number of inner rows.
    var rows: Int {
        var n = 1
        for s in outerSizes { n *= s }
        return n
    }

    /// Calls `body(count, o0, o1, o2)` for rows `range` (a sub-range of `0..<rows`), in order.
    @inline(__always)
    func forEachRow(_ range: Range<Int>, _ body: (Int, Int, Int, Int) -> Void) {
        // A single-row plan's one row is its elements 0..<inner (none for an empty tensor).
        forEachUnit(outerSizes.isEmpty ? 0..<(range.isEmpty ? 0 : inner) : range, body)
    }

    /// The units the parallel loops split: the elements of the one row of a single-row plan, else whole rows.
    ///
    /// Calls `body(count, o0, o1, o2)` for units `range`: one call for a range of elements, one per row
    /// otherwise. `body` has one call site, so the loop it holds is emitted once wherever this is inlined.
    @inline(__always)
    func forEachUnit(_ range: Range<Int>, _ body: (Int, Int, Int, Int) -> Void) {
        if range.isEmpty { return }     // also covers empty tensors (a size-0 dim would divide by zero below)
        let outerRank = outerSizes.count
        var n = inner, calls = range.count
        var x = 0, y = 0, z = 0
        var idx: [Int] = []
        if outerRank == 0 {
            let (s0, s1, s2) = innerStrides
            let lo = range.lowerBound
            n = calls; calls = 1
            x = lo &* s0; y = lo &* s1; z = lo &* s2
        } else if outerRank == 1 {
            let r = range.lowerBound
            x = r &* o0[0]; y = r &* o1[0]; z = r &* o2[0]
        } else {
            // Odometer over the outer dims, started at range.lowerBound.
            idx = [Int](repeating: 0, count: outerRank)
            var rem = range.lowerBound
            for d in Swift.stride(from: outerRank - 1, through: 0, by: -1) {
                idx[d] = rem % outerSizes[d]
                rem /= outerSizes[d]
                x += idx[d] * o0[d]; y += idx[d] * o1[d]; z += idx[d] * o2[d]
            }
        }
        for _ in 0..<calls {
            body(n, x, y, z)
            if outerRank == 1 {
                x &+= o0[0]; y &+= o1[0]; z &+= o2[0]
            } else if outerRank > 1 {
                var d = outerRank - 1
                while d >= 0 {
                    idx[d] += 1
                    x += o0[d]; y += o1[d]; z += o2[d]
                    if idx[d] < outerSizes[d] { break }
                    x -= o0[d] * outerSizes[d]; y -= o1[d] * outerSizes[d]; z -= o2[d] * outerSizes[d]
                    idx[d] = 0
                    d -= 1
                }
            }
        }
    }

    /// How `parallelRows` splits the work: units (elements of a single row, else rows) and the grain in units.
    private var parallelUnits: (count: Int, grain: Int) {
        outerSizes.isEmpty ? (inner, elementwiseGrain) : (rows, Swift.max(1, elementwiseGrain / Swift.max(inner, 1)))
    }

    /// Runs rows in parallel when the total work is large.
    ///
    /// `body` runs on pool threads as a stand-alone function: fine for loops written inside it,
    /// but a generic helper whose `body` calls a captured closure per element must use
    /// `parallelRows(context:_:)` (see `parallelFor(_:grain:context:_:)`).
    @inline(__always)
    func parallelRows(_ body: (Int, Int, Int, Int) -> Void) {
        let (units, grain) = parallelUnits
        parallelFor(units, grain: grain) { lo, hi in forEachUnit(lo..<hi, body) }
    }
}

extension StridedPlan {
    /// `parallelRows` for generic helpers: `body(context, count, o0, o1, o2)` gets its run-time
    /// data through `context` and captures only its caller's closure literals, so the element
    /// function is inlined into the loop the pool threads run (see `parallelFor(_:grain:context:_:)`).
    /// `body` is inlined twice: on this thread for work of one chunk, and as the function the pool calls.
    @inline(__always)
    func parallelRows<Context>(context: Context, _ body: (Context, Int, Int, Int, Int) -> Void) {
        let (units, grain) = parallelUnits
        if units <= grain || ct_get_num_threads() <= 1 {
            forEachUnit(0..<units) { body(context, $0, $1, $2, $3) }
            return
        }
        // The plan travels by address, so the pool threads do not each copy (retain and release) its arrays.
        var plan = self
        withUnsafePointer(to: &plan) { p in
            poolParallelFor(units, grain: grain, context: (p, context)) { c, lo, hi in
                c.0.pointee.forEachUnit(lo..<hi) { body(c.1, $0, $1, $2, $3) }
            }
        }
    }
}

/// Broadcasts two shapes (numpy rules), stopping with PyTorch's message when they don't match.
func broadcastShapes(_ a: [Int], _ b: [Int], op: String) -> [Int] {
    if a == b { return a }
    let n = max(a.count, b.count)
    var out = [Int](repeating: 1, count: n)
    for i in 0..<n {
        let da = i < n - a.count ? 1 : a[i - (n - a.count)]
        let db = i < n - b.count ? 1 : b[i - (n - b.count)]
        if da == db || db == 1 { out[i] = da } else if da == 1 { out[i] = db } else {
            preconditionFailure(broadcastErrorMessage(op: op, a, b, dim: i - (n - max(a.count, b.count))))
        }
    }
    return out
}

/// PyTorch's message for shapes that don't broadcast.
func broadcastErrorMessage(op: String, _ a: [Int], _ b: [Int], dim: Int) -> String {
    let n = max(a.count, b.count)
    let da = dim < n - a.count ? 1 : a[dim - (n - a.count)]
    let db = dim < n - b.count ? 1 : b[dim - (n - b.count)]
    return "\(op): The size of tensor a (\(da)) must match the size of tensor b (\(db)) at non-singleton dimension \(dim) (shapes \(shapeString(a)) and \(shapeString(b)))"
}

extension Tensor {
    /// Strides of this tensor viewed as `target` by broadcasting (0 in broadcast dims).
    func broadcastStrides(to target: [Int]) -> [Int] {
        if shape == target { return strides }
        let off = target.count - shape.count
        var s = [Int](repeating: 0, count: target.count)
        for i in 0..<shape.count where shape[i] != 1 {
            s[i + off] = strides[i]
        }
        return s
    }
}
