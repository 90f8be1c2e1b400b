/// An iteration plan over up to three strided operands of one logical shape (operand 0 is
/// usually the output). Size-1 dims are dropped and mergeable neighbours coalesced, so a
/// contiguous or simply broadcast case becomes one long inner row.
///
/// Kernels receive rows: `(count, offset0, offset1, offset2)` plus the inner strides, all in elements.
struct StridedPlan {
    /// Coalesced sizes, innermost last (at least one dim).
    private(set) var sizes: [Int]
    private(set) var s0: [Int]
    private(set) var s1: [Int]
    private(set) var s2: [Int]

    /// Builds a plan; pass `[]`-free strides with the same rank as `shape` (use zeros for unused operands).
    init(shape: [Int], _ a: [Int], _ b: [Int], _ c: [Int]) {
        var sz: [Int] = [], x: [Int] = [], y: [Int] = [], z: [Int] = []
        sz.reserveCapacity(shape.count); x.reserveCapacity(shape.count)
        y.reserveCapacity(shape.count); z.reserveCapacity(shape.count)
        for d in 0..<shape.count where shape[d] != 1 {
            if let last = sz.last,
               x[x.count - 1] == a[d] * shape[d], y[y.count - 1] == b[d] * shape[d], z[z.count - 1] == c[d] * shape[d] {
                // Outer dim (last appended) steps exactly over this dim: merge.
                sz[sz.count - 1] = last * shape[d]
                x[x.count - 1] = a[d]; y[y.count - 1] = b[d]; z[z.count - 1] = c[d]
            } else {
                sz.append(shape[d]); x.append(a[d]); y.append(b[d]); z.append(c[d])
            }
        }
        if sz.isEmpty { sz = [1]; x = [0]; y = [0]; z = [0] }
        sizes = sz; s0 = x; s1 = y; s2 = z
    }

    /// Elements per inner row.
    @inline(__always) var inner: Int { sizes[sizes.count - 1] }
    /// Number of inner rows.
    var rows: Int {
        var n = 1
        for i in 0..<(sizes.count - 1) { n *= sizes[i] }
        return n
    }
    @inline(__always) var innerStrides: (Int, Int, Int) {
        let k = sizes.count - 1
        return (s0[k], s1[k], s2[k])
    }

    /// Calls `body(count, o0, o1, o2)` for rows `range` (a sub-range of `0..<rows`), in order.
    @inline(__always)
    func forEachRow(_ range: Range<Int>, _ body: (Int, Int, Int, Int) -> Void) {
        if range.isEmpty { return }     // also covers empty tensors (a size-0 dim would divide by zero below)
        let n = inner
        let outerRank = sizes.count - 1
        if outerRank == 0 {
            if !range.isEmpty { body(n, 0, 0, 0) }
            return
        }
        if outerRank == 1 {
            let a = s0[0], b = s1[0], c = s2[0]
            for r in range { body(n, r * a, r * b, r * c) }
            return
        }
        // Odometer over outer dims, started at range.lowerBound.
        var idx = [Int](repeating: 0, count: outerRank)
        var rem = range.lowerBound
        var o0 = 0, o1 = 0, o2 = 0
        for d in stride(from: outerRank - 1, through: 0, by: -1) {
            idx[d] = rem % sizes[d]
            rem /= sizes[d]
            o0 += idx[d] * s0[d]; o1 += idx[d] * s1[d]; o2 += idx[d] * s2[d]
        }
        for _ in range {
            body(n, o0, o1, o2)
            var d = outerRank - 1
            while d >= 0 {
                idx[d] += 1
                o0 += s0[d]; o1 += s1[d]; o2 += s2[d]
                if idx[d] < sizes[d] { break }
                o0 -= s0[d] * sizes[d]; o1 -= s1[d] * sizes[d]; o2 -= s2[d] * sizes[d]
                idx[d] = 0
                d -= 1
            }
        }
    }

    /// Runs rows in parallel when the total work is large.
    @inline(__always)
    func parallelRows(_ body: (Int, Int, Int, Int) -> Void) {
        let r = rows
        let perRow = max(inner, 1)
        let grainRows = max(1, elementwiseGrain / perRow)
        if r <= grainRows {
            forEachRow(0..<r, body)
        } else {
            parallelFor(r, grain: grainRows) { lo, hi in forEachRow(lo..<hi, body) }
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
        let off = target.count - shape.count
        var s = [Int](repeating: 0, count: target.count)
        for i in 0..<shape.count where shape[i] != 1 {
            s[i + off] = strides[i]
        }
        return s
    }
}
