/// The CPU kernels of sorting and order statistics (stable row sorts and selections, searchsorted, histc); their CUDA
/// twin is `CUDASorting` (with `CUDAFused.pickSortedRows` for median and mode).
enum CPUSorting {
    /// Sorts or selects along each contiguous row of `rowsT` (`rows` × `n`, a sort compute type), writing
    /// `selection.outputCount` values and int64 original positions per row into `values` and `indices`.
    static func selectRows(_ rowsT: Tensor, rows: Int, n: Int, descending: Bool, _ selection: RowSelection,
                           values: Tensor, indices: Tensor) {
        func run<T: NumericElement>(_: T.Type) {
            rowKernel(UnsafePointer(rowsT.pointer(T.self)), rows: rows, n: n, descending: descending, selection,
                      values.pointer(T.self), indices.pointer(Int64.self))
        }
        switch rowsT.dtype {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        case .int64: run(Int64.self)
        case .int32: run(Int32.self)
        default: run(UInt8.self)
        }
    }

    /// For each value of `v`, its insertion position in the rows of `s` (both contiguous, one dtype), as int64.
    static func searchsorted(_ s: Tensor, _ v: Tensor, right: Bool) -> Tensor {
        let out = Tensor(uninitializedShape: v.shape, dtype: .int64)
        if out.numel > 0 {
            switch s.dtype {
            case .float32: searchsortedKernel(s, v, out, right: right, Float.self)
            case .float64: searchsortedKernel(s, v, out, right: right, Double.self)
            case .int64: searchsortedKernel(s, v, out, right: right, Int64.self)
            case .int32: searchsortedKernel(s, v, out, right: right, Int32.self)
            default: searchsortedKernel(s, v, out, right: right, UInt8.self)
            }
        }
        return out
    }

    /// Counts of `x`'s elements (contiguous float32/float64) in `bins` equal-width bins over [lo, hi].
    static func histogram(_ x: Tensor, bins: Int, lo: Double, hi: Double) -> [Double] {
        var counts = [Double](repeating: 0, count: bins)
        func run<T: FloatElement>(_: T.Type) {
            let p = x.pointer(T.self)
            let l = T(lo), h = T(hi), nb = T(bins)
            for i in 0..<x.numel {
                let e = p[i]
                if !(e >= l && e <= h) { continue }
                var b = Int((e - l) / (h - l) * nb)
                if b >= bins { b = bins - 1 }
                counts[b] += 1
            }
        }
        if x.dtype == .float64 { run(Double.self) } else { run(Float.self) }
        return counts
    }
}

/// Orders (value, original position) pairs without NaNs: by value, ties by position (so every sort is stable).
@inline(__always) private func ascendingPair<T: NumericElement>(_ a: (T, Int), _ b: (T, Int)) -> Bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}
@inline(__always) private func descendingPair<T: NumericElement>(_ a: (T, Int), _ b: (T, Int)) -> Bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// Rearranges `buf` so that `buf[k]` is the element a full sort would put there, smaller ones before it
/// and larger ones after (nth_element, Hoare partition with median-of-three pivots).
@inline(__always)
private func partialSelect<E>(_ buf: UnsafeMutableBufferPointer<E>, _ k: Int, _ less: (E, E) -> Bool) {
    var lo = 0, hi = buf.count - 1
    while lo < hi {
        let mid = lo + (hi - lo) / 2
        if less(buf[mid], buf[lo]) { buf.swapAt(mid, lo) }
        if less(buf[hi], buf[lo]) { buf.swapAt(hi, lo) }
        if less(buf[hi], buf[mid]) { buf.swapAt(hi, mid) }
        let pivot = buf[mid]
        var i = lo, j = hi
        while i <= j {
            while less(buf[i], pivot) { i += 1 }
            while less(pivot, buf[j]) { j -= 1 }
            if i <= j { buf.swapAt(i, j); i += 1; j -= 1 }
        }
        if k <= j { hi = j } else if k >= i { lo = i } else { return }
    }
}

/// Puts the first `k` elements of the sorted order of `buf` (in original-position order on entry), sorted,
/// into `buf[0..<k]`. Small `k`: one insertion pass; otherwise selection then a sort of the head.
@inline(__always)
private func sortedHead<E>(_ buf: UnsafeMutableBufferPointer<E>, _ k: Int, _ less: (E, E) -> Bool) {
    let n = buf.count
    if k <= 0 { return }
    if k >= n {
        var all = buf
        all.sort(by: less)
        return
    }
    var head = UnsafeMutableBufferPointer(rebasing: buf[0..<k])
    if k <= 64 && k * 16 <= n {
        head.sort(by: less)
        for i in k..<n {
            let e = buf[i]
            if !less(e, buf[k - 1]) { continue }
            var j = k - 1
            while j > 0 && less(e, buf[j - 1]) { buf[j] = buf[j - 1]; j -= 1 }
            buf[j] = e
        }
        return
    }
    partialSelect(buf, k - 1, less)
    head.sort(by: less)
}

/// Sorts or selects within each contiguous row of `n` elements, writing `selection.outputCount` values
/// and original positions per row. NaNs are set aside first (they order as the largest value), so the
/// comparisons in the hot loops are plain.
private func rowKernel<T: NumericElement>(_ src: UnsafePointer<T>, rows: Int, n: Int, descending: Bool,
                                          _ selection: RowSelection,
                                          _ vals: UnsafeMutablePointer<T>, _ idx: UnsafeMutablePointer<Int64>) {
    let k = selection.outputCount(rowLength: n)
    let logn = max(1, Int.bitWidth - n.leadingZeroBitCount)
    parallelFor(rows, grain: max(1, elementwiseGrain / max(n * logn, 1))) { lo, hi in
        let buf = UnsafeMutableBufferPointer<(T, Int)>.allocate(capacity: max(n, 1))
        defer { buf.deallocate() }
        for r in lo..<hi {
            let row = src + r * n
            var nanCount = 0, firstNaN = -1
            for i in 0..<n where row[i] != row[i] {
                if firstNaN < 0 { firstNaN = i }
                nanCount += 1
            }
            let ov = vals + r * k, oi = idx + r * k
            if case .median(let ignoreNaN) = selection, nanCount > 0 && (!ignoreNaN || nanCount == n) {
                ov[0] = row[firstNaN]; oi[0] = Int64(firstNaN)
                continue
            }
            // Full sorted order = [NaNs][numbers] when descending, [numbers][NaNs] when ascending.
            let m = n - nanCount
            let numStart = descending ? nanCount : 0, nanStart = descending ? 0 : m
            var a = numStart, b = nanStart
            for i in 0..<n {
                let v = row[i]
                if v != v { buf[b] = (v, i); b += 1 } else { buf[a] = (v, i); a += 1 }
            }
            let nums = UnsafeMutableBufferPointer(rebasing: buf[numStart..<(numStart + m)])
            /// Sorts the first `count` of the numbers' order into place.
            func head(_ count: Int) {
                let c = min(max(count, 0), m)
                if descending { sortedHead(nums, c, descendingPair) } else { sortedHead(nums, c, ascendingPair) }
            }
            func select(_ p: Int) {
                if descending { partialSelect(nums, p, descendingPair) } else { partialSelect(nums, p, ascendingPair) }
            }
            func emit(_ count: Int) {
                for i in 0..<count { ov[i] = buf[i].0; oi[i] = Int64(buf[i].1) }
            }
            switch selection {
            case .all:
                head(m)
                emit(n)
            case .first(let kk):
                head(kk - (descending ? nanCount : 0))
                emit(kk)
            case .position(let p):
                let q = p - numStart
                if q >= 0 && q < m { select(q) }
                ov[0] = buf[p].0; oi[0] = Int64(buf[p].1)
            case .median:
                let p = (m - 1) / 2
                select(p)
                ov[0] = nums[p].0; oi[0] = Int64(nums[p].1)
            case .mode:
                head(m)
                var best = 0, bestCount = 0, i = 0
                while i < n {
                    var j = i
                    while j + 1 < n && buf[j + 1].0 == buf[i].0 { j += 1 }
                    if j - i + 1 > bestCount { bestCount = j - i + 1; best = j }
                    i = j + 1
                }
                ov[0] = buf[best].0; oi[0] = Int64(buf[best].1)
            }
        }
    }
}

private func searchsortedKernel<T: NumericElement>(_ seq: Tensor, _ values: Tensor, _ out: Tensor, right: Bool, _: T.Type) {
    let n = seq.shape.last ?? 0
    let m = values.dim == 0 ? 1 : values.shape[values.dim - 1]
    let total = values.numel
    let shared = seq.dim == 1
    let s = UnsafePointer(seq.pointer(T.self)), v = UnsafePointer(values.pointer(T.self))
    let o = out.pointer(Int64.self)
    @inline(__always) func less(_ a: T, _ b: T) -> Bool { a < b || (b != b && a == a) }
    parallelFor(total, grain: max(1, elementwiseGrain / 16)) { lo, hi in
        for e in lo..<hi {
            let row = shared ? s : s + (e / max(m, 1)) * n
            let x = v[e]
            var a = 0, b = n
            while a < b {
                let mid = (a + b) >> 1
                // left: first position with row[mid] >= x; right: first with row[mid] > x.
                if right ? !less(x, row[mid]) : less(row[mid], x) { a = mid + 1 } else { b = mid }
            }
            o[e] = Int64(a)
        }
    }
}
