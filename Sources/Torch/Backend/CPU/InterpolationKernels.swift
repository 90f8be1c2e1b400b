/// The separable resampling kernel behind `F.interpolate`, and its adjoint (the backward pass).
///
/// The input is viewed as `[outer, inSize, inner]` (the resampled dim in the middle); output row `o` of every
/// outer slice is `Σ_t weight[t, o] · input[idx[t, o]]`, a row at a time, so the inner loop runs over
/// contiguous memory (vectorisable) whenever the resampled dim is not the last.

/// `y[b, o, :] = Σ_t w[t·outSize + o] · x[b, idx[t·outSize + o], :]`.
func resampleForwardKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, outer: Int,
                                            inSize: Int, outSize: Int, inner: Int, taps: Int,
                                            index: UnsafePointer<Int>, weight: UnsafePointer<T>) {
    let rows = outer * outSize
    let grain = Swift.max(1, elementwiseGrain / Swift.max(1, inner * taps))
    parallelFor(rows, grain: grain) { lo, hi in
        for r in lo..<hi {
            let b = r / outSize, o = r - b * outSize
            let dst = y + r * inner
            let base = x + b * inSize * inner
            let w0 = weight[o]
            let src0 = base + index[o] * inner
            for i in 0..<inner { dst[i] = w0 * src0[i] }
            for t in 1..<Swift.max(taps, 1) {
                let w = weight[t * outSize + o]
                let src = base + index[t * outSize + o] * inner
                for i in 0..<inner { dst[i] += w * src[i] }
            }
        }
    }
}

/// The adjoint: `gx[b, idx[t·outSize + o], :] += w[t·outSize + o] · g[b, o, :]`, `gx` zeroed first.
func resampleAdjointKernel<T: FloatElement>(_ g: UnsafePointer<T>, _ gx: UnsafeMutablePointer<T>, outer: Int,
                                            inSize: Int, outSize: Int, inner: Int, taps: Int,
                                            index: UnsafePointer<Int>, weight: UnsafePointer<T>) {
    let grain = Swift.max(1, elementwiseGrain / Swift.max(1, outSize * inner * taps))
    parallelFor(outer, grain: grain) { lo, hi in
        for b in lo..<hi {
            let dstBase = gx + b * inSize * inner
            dstBase.initialize(repeating: 0, count: inSize * inner)
            for o in 0..<outSize {
                let src = g + (b * outSize + o) * inner
                for t in 0..<taps {
                    let w = weight[t * outSize + o]
                    if w == 0 { continue }
                    let dst = dstBase + index[t * outSize + o] * inner
                    for i in 0..<inner { dst[i] += w * src[i] }
                }
            }
        }
    }
}
