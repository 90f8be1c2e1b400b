import CTorchKernels

/// The CPU kernels of softmax and log_softmax, forward and backward (the input viewed as `[outer, n, inner]`); their
/// CUDA twin is `CUDAFused.softmax` / `CUDAFused.softmaxBackward`.
enum CPUSoftmax {
    /// softmax or log_softmax of `x` over normalised dim `d`, in `x`'s dtype.
    static func forward(_ x: Tensor, dim d: Int, log: Bool) -> Tensor {
        let compute = x.dtype.computeType
        let src = contiguousAs(x, compute)
        let out = Tensor(uninitializedShape: x.shape, dtype: compute)
        let (outer, n, inner) = splitAround(x.shape, d)
        if x.numel > 0 {
            switch compute {
            case .float32:
                softmaxKernel(UnsafePointer(src.pointer(Float.self)), out.pointer(Float.self), outer: outer, n: n, inner: inner, log: log)
            default:
                softmaxKernel(UnsafePointer(src.pointer(Double.self)), out.pointer(Double.self), outer: outer, n: n, inner: inner, log: log)
            }
        }
        return compute == x.dtype ? out : out.to(x.dtype)
    }

    /// The input gradient of softmax / log_softmax from the output gradient `g` and the output `y`.
    static func backward(_ g: Tensor, _ y: Tensor, dim d: Int, log: Bool) -> Tensor {
        let compute = y.dtype.computeType
        let gc = contiguousAs(g, compute), yc = contiguousAs(y, compute)
        let gx = Tensor(uninitializedShape: y.shape, dtype: compute)
        let (outer, n, inner) = splitAround(y.shape, d)
        if y.numel > 0 {
            switch compute {
            case .float32:
                softmaxBackwardKernel(UnsafePointer(gc.pointer(Float.self)), UnsafePointer(yc.pointer(Float.self)), gx.pointer(Float.self),
                                      outer: outer, n: n, inner: inner, log: log)
            default:
                softmaxBackwardKernel(UnsafePointer(gc.pointer(Double.self)), UnsafePointer(yc.pointer(Double.self)), gx.pointer(Double.self),
                                      outer: outer, n: n, inner: inner, log: log)
            }
        }
        return compute == y.dtype ? gx : gx.to(y.dtype)
    }
}

/// Columns processed together in the inner-dim kernels (the per-column max/sum scratch size).
private let softmaxColumnBlock = 256

/// exp in place over `n` contiguous elements (vectorized for float32); the cross-entropy kernels use it too.
@inline(__always)
func expInPlace<T: FloatElement>(_ p: UnsafeMutablePointer<T>, _ n: Int) {
    if T.self == Float.self {
        let q = UnsafeMutableRawPointer(p).assumingMemoryBound(to: Float.self)
        ct_vexp_f32(q, q, Int64(n))
    } else {
        for i in 0..<n { p[i] = T.exp(p[i]) }
    }
}

/// Sum of `n` contiguous elements.
@inline(__always)
private func rowSum<T: FloatElement>(_ p: UnsafePointer<T>, _ n: Int) -> T {
    if T.self == Float.self {
        return unsafeBitCast(ct_vsum_f32(UnsafeRawPointer(p).assumingMemoryBound(to: Float.self), Int64(n)), to: T.self)
    }
    var a0 = T.zeroValue, a1 = T.zeroValue, a2 = T.zeroValue, a3 = T.zeroValue
    var i = 0
    while i + 4 <= n { a0 += p[i]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3]; i += 4 }
    while i < n { a0 += p[i]; i += 1 }
    return (a0 + a1) + (a2 + a3)
}

/// Largest of `n` contiguous elements (-inf when empty). The running maxima of 32 interleaved lanes
/// are independent, so the compare-select loop vectorizes instead of forming one serial chain. A
/// NaN may or may not win; callers only need the row to come out NaN, which `exp(x - max)`
/// guarantees either way.
@inline(__always)
private func rowMax<T: FloatElement>(_ p: UnsafePointer<T>, _ n: Int) -> T {
    let lanes = 32
    var m = -T.infinity
    var i = 0
    if n >= lanes {
        withUnsafeTemporaryAllocation(of: T.self, capacity: lanes) { buf in
            let acc = buf.baseAddress!
            for j in 0..<lanes { acc[j] = p[j] }
            i = lanes
            while i + lanes <= n {
                let q = p + i
                for j in 0..<lanes {
                    let v = q[j], c = acc[j]
                    acc[j] = v > c ? v : c
                }
                i += lanes
            }
            for j in 0..<lanes where acc[j] > m { m = acc[j] }
        }
    }
    while i < n {
        let v = p[i]
        m = v > m ? v : m
        i += 1
    }
    return m
}

/// Dot product of `n` contiguous pairs, accumulated in 32 interleaved lanes (vectorizes; the
/// lanes are summed pairwise at the end).
@inline(__always)
private func rowDot<T: FloatElement>(_ a: UnsafePointer<T>, _ b: UnsafePointer<T>, _ n: Int) -> T {
    let lanes = 32
    var i = 0
    var total = T.zeroValue
    if n >= lanes {
        withUnsafeTemporaryAllocation(of: T.self, capacity: lanes) { buf in
            let acc = buf.baseAddress!
            for j in 0..<lanes { acc[j] = 0 }
            while i + lanes <= n {
                let p = a + i, q = b + i
                for j in 0..<lanes { acc[j] += p[j] * q[j] }
                i += lanes
            }
            var w = lanes / 2
            while w >= 1 {
                for j in 0..<w { acc[j] += acc[j + w] }
                w /= 2
            }
            total = acc[0]
        }
    }
    while i < n { total += a[i] * b[i]; i += 1 }
    return total
}

/// Runs `body(o, j0, j1)` over outer index `o` and column blocks `[j0, j1)` of `inner`, in parallel.
@inline(__always)
private func forEachBlock(outer: Int, n: Int, inner: Int, _ body: (Int, Int, Int) -> Void) {
    let blocks = (inner + softmaxColumnBlock - 1) / softmaxColumnBlock
    let perTask = Swift.max(1, n * Swift.min(inner, softmaxColumnBlock))
    parallelFor(outer * blocks, grain: Swift.max(1, elementwiseGrain / perTask)) { lo, hi in
        for t in lo..<hi {
            let o = t / blocks, b = t % blocks
            let j0 = b * softmaxColumnBlock
            body(o, j0, Swift.min(j0 + softmaxColumnBlock, inner))
        }
    }
}

/// y = softmax(x) or log_softmax(x) over the middle dim of contiguous `[outer, n, inner]` data.
private func softmaxKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>,
                                            outer: Int, n: Int, inner: Int, log: Bool) {
    if inner == 1 {
        parallelFor(outer, grain: Swift.max(1, elementwiseGrain / Swift.max(n, 1))) { lo, hi in
            for r in lo..<hi {
                let xr = x + r * n, yr = y + r * n
                let m = rowMax(xr, n)
                for i in 0..<n { yr[i] = xr[i] - m }
                expInPlace(yr, n)
                let s = rowSum(UnsafePointer(yr), n)
                if log {
                    let shift = m + T.log(s)
                    for i in 0..<n { yr[i] = xr[i] - shift }
                } else {
                    let inv = 1 / s
                    for i in 0..<n { yr[i] *= inv }
                }
            }
        }
        return
    }
    forEachBlock(outer: outer, n: n, inner: inner) { o, j0, j1 in
        let w = j1 - j0
        withUnsafeTemporaryAllocation(of: T.self, capacity: 2 * w) { scratch in
            let m = scratch.baseAddress!, s = m + w
            let xb = x + o * n * inner + j0, yb = y + o * n * inner + j0
            for j in 0..<w { m[j] = -T.infinity; s[j] = 0 }
            for k in 0..<n {
                let xr = xb + k * inner
                for j in 0..<w {
                    let v = xr[j], c = m[j]
                    m[j] = v > c ? v : c
                }
            }
            for k in 0..<n {
                let xr = xb + k * inner, yr = yb + k * inner
                for j in 0..<w { yr[j] = xr[j] - m[j] }
                expInPlace(yr, w)
                for j in 0..<w { s[j] += yr[j] }
            }
            if log {
                for j in 0..<w { s[j] = m[j] + T.log(s[j]) }
                for k in 0..<n {
                    let xr = xb + k * inner, yr = yb + k * inner
                    for j in 0..<w { yr[j] = xr[j] - s[j] }
                }
            } else {
                for j in 0..<w { s[j] = 1 / s[j] }
                for k in 0..<n {
                    let yr = yb + k * inner
                    for j in 0..<w { yr[j] *= s[j] }
                }
            }
        }
    }
}

/// Fused backward over `[outer, n, inner]` contiguous data:
/// softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g).
private func softmaxBackwardKernel<T: FloatElement>(_ g: UnsafePointer<T>, _ y: UnsafePointer<T>, _ gx: UnsafeMutablePointer<T>,
                                                    outer: Int, n: Int, inner: Int, log: Bool) {
    if inner == 1 {
        parallelFor(outer, grain: Swift.max(1, elementwiseGrain / Swift.max(n, 1))) { lo, hi in
            for r in lo..<hi {
                let gr = g + r * n, yr = y + r * n, out = gx + r * n
                if log {
                    let s = rowSum(gr, n)
                    for i in 0..<n { out[i] = yr[i] }
                    expInPlace(out, n)
                    for i in 0..<n { out[i] = gr[i] - out[i] * s }
                } else {
                    let dot = rowDot(gr, yr, n)
                    for i in 0..<n { out[i] = yr[i] * (gr[i] - dot) }
                }
            }
        }
        return
    }
    forEachBlock(outer: outer, n: n, inner: inner) { o, j0, j1 in
        let w = j1 - j0
        withUnsafeTemporaryAllocation(of: T.self, capacity: w) { scratch in
            let s = scratch.baseAddress!
            let base = o * n * inner + j0
            for j in 0..<w { s[j] = 0 }
            for k in 0..<n {
                let gr = g + base + k * inner, yr = y + base + k * inner
                if log { for j in 0..<w { s[j] += gr[j] } } else { for j in 0..<w { s[j] += gr[j] * yr[j] } }
            }
            for k in 0..<n {
                let gr = g + base + k * inner, yr = y + base + k * inner, out = gx + base + k * inner
                if log {
                    for j in 0..<w { out[j] = yr[j] }
                    expInPlace(out, w)
                    for j in 0..<w { out[j] = gr[j] - out[j] * s[j] }
                } else {
                    for j in 0..<w { out[j] = yr[j] * (gr[j] - s[j]) }
                }
            }
        }
    }
}

/// `[outer, n, inner]` sizes of `shape` around dim `d` (a 0-d tensor counts as `[1]`).
private func splitAround(_ shape: [Int], _ d: Int) -> (Int, Int, Int) {
    if shape.isEmpty { return (1, 1, 1) }
    let outer = shape[..<d].reduce(1, *), inner = shape[(d + 1)...].reduce(1, *)
    return (outer, shape[d], inner)
}

/// A contiguous copy of `t` in `dtype` (or `t` itself when it already is one); not recorded.
private func contiguousAs(_ t: Tensor, _ dtype: DType) -> Tensor {
    if t.dtype == dtype && t.isContiguous { return t }
    let out = Tensor(uninitializedShape: t.shape, dtype: dtype)
    copyKernel(from: t, into: out)
    return out
}
