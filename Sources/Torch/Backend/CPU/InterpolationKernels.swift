/// The separable resampling kernel behind `F.interpolate`, and its adjoint (the backward pass): `CPUResampling`,
/// whose CUDA twin is `CUDAResampling`.
///
/// The input is viewed as `[outer, inSize, inner]` (the resampled dim in the middle); output row `o` of every
/// outer slice is `Σ_t weight[t, o] · input[idx[t, o]]`, a row at a time, so the inner loop runs over
/// contiguous memory (vectorisable) whenever the resampled dim is not the last.

enum CPUResampling {
    /// Resamples dim `dim` of contiguous `x` with `taps` into `out` (float32/float64, `x`'s dtype).
    static func forward(_ x: Tensor, into out: Tensor, dim: Int, taps: ResamplingTaps) {
        run(x, into: out, dim: dim, taps: taps, adjoint: false)
    }

    /// The adjoint of `forward`: contiguous `g` (output-shaped) scattered back into `out` (input-shaped).
    static func adjoint(_ g: Tensor, into out: Tensor, dim: Int, taps: ResamplingTaps) {
        run(g, into: out, dim: dim, taps: taps, adjoint: true)
    }

    private static func run(_ src: Tensor, into out: Tensor, dim: Int, taps: ResamplingTaps, adjoint: Bool) {
        let shape = out.shape
        let outer = shape[..<dim].reduce(1, *), inner = shape[(dim + 1)...].reduce(1, *)
        // The kernels see the taps as (input length, output length) of the forward resampling.
        let (inSize, outSize) = adjoint ? (shape[dim], src.shape[dim]) : (src.shape[dim], shape[dim])
        func kernel<T: FloatElement>(_: T.Type) {
            let index = taps.index.map { Int($0) }
            let weight = taps.weight.map { $0.map { T($0) } } ?? [T](repeating: 1, count: index.count)
            index.withUnsafeBufferPointer { ip in
                weight.withUnsafeBufferPointer { wp in
                    if adjoint {
                        resampleAdjointKernel(UnsafePointer(src.pointer(T.self)), out.pointer(T.self), outer: outer, inSize: inSize,
                                              outSize: outSize, inner: inner, taps: taps.count, index: ip.baseAddress!, weight: wp.baseAddress!)
                    } else {
                        resampleForwardKernel(UnsafePointer(src.pointer(T.self)), out.pointer(T.self), outer: outer, inSize: inSize,
                                              outSize: outSize, inner: inner, taps: taps.count, index: ip.baseAddress!, weight: wp.baseAddress!)
                    }
                }
            }
        }
        if out.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
    }
}

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
