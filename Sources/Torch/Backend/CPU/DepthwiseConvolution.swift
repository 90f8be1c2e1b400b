import CTorchKernels

/// Depthwise convolutions (one input channel per group: MobileNet's, EfficientNet's and ShuffleNet's 3×3 and 5×5
/// layers) as direct loops over output rows, instead of the grouped im2col path's one small GEMM per channel and
/// image.
///
/// Grouped im2col would build an im2col matrix and run a 1-row GEMM per channel, mostly copying (figures:
/// docs/performance.md, "Depthwise convolution"). Here each output row is the sum of kernel-volume shifted input
/// rows scaled by one weight: for stride 1 a unit-stride multiply-add over the row, which the compiler
/// vectorises. The weight gradient accumulates one row of products per tap and sums each row once per channel, so
/// no loop carries a floating-point reduction (which the compiler would leave scalar).
///
/// The float32 forward, and at stride 1 the input gradient, run one plane at a time in CTorchKernels
/// (`ct_depthwise_plane_f32`, compiled per ISA): each output accumulates its taps in a register, one store per output
/// instead of one per tap, 8 lanes wide with FMA on AVX2.
///
/// Work is split over channel planes (forward and input gradient) or output channels (weight gradient), so no two
/// threads write the same element.
enum DepthwiseConvolution {
    /// Whether the depthwise loops take this convolution: one input channel per group (a channel multiplier of one or
    /// more), more than one group, and a 1-D or 2-D problem (3-D depthwise stays on im2col).
    static func applies(_ g: ConvGeometry) -> Bool {
        enabled && g.groups > 1 && g.groups == g.bigChannels && g.smallChannels % g.groups == 0
            && g.big[0] == 1 && g.small[0] == 1 && g.kernel[0] == 1
    }

    /// Kill switch for tests and A/B runs: false routes these convolutions through grouped im2col.
    nonisolated(unsafe) static var enabled = true
}

/// The horizontal geometry of one depthwise problem: for each kernel column the input offset of output column 0
/// and the output columns that read inside the input.
private struct DepthwiseColumns {
    let offsets: [Int]
    let valid: [Range<Int>]

    init(_ g: ConvGeometry) {
        offsets = (0..<g.kernel[2]).map { $0 * g.dilation[2] - g.padding[2] }
        valid = offsets.map { validRange(offset: $0, stride: g.stride[2], inSize: g.big[2], outSize: g.small[2]) }
    }
}

/// Calls `body(oh, kh, ih)` for each output row and kernel row whose input row `ih` lies inside the input.
@inline(__always)
private func forEachLiveRow(_ g: ConvGeometry, _ body: (_ oh: Int, _ kh: Int, _ ih: Int) -> Void) {
    for oh in 0..<g.small[1] {
        for kh in 0..<g.kernel[1] {
            let ih = oh &* g.stride[1] &- g.padding[1] &+ kh &* g.dilation[1]
            if ih >= 0 && ih < g.big[1] { body(oh, kh, ih) }
        }
    }
}

/// dst[i·dstStride] += weight · src[i·srcStride] for i in `range`, one of the strides 1 (a unit-stride loop when both
/// are, which the compiler vectorises). float32 forward planes run the C kernel instead, so these loops serve float64,
/// the transposed direction and kernels of more rows than the C kernel takes.
@inline(__always)
private func addScaledRow<T: ConvElement>(_ dst: UnsafeMutablePointer<T>, stride dstStride: Int, _ src: UnsafePointer<T>,
                                          stride srcStride: Int, _ weight: T, _ range: Range<Int>) {
    if dstStride == 1 && srcStride == 1 {
        for i in range { dst[i] += weight * src[i] }
    } else {
        for i in range { dst[i &* dstStride] += weight * src[i &* srcStride] }
    }
}

/// The float32 C kernel over one plane: `dst` `[outSize]` = bias + `src` `[inSize]` correlated with `w` `[KH, KW]`
/// at `g`'s strides and dilations and the given (leading) padding.
@inline(__always)
private func nativePlane<T>(_ src: UnsafePointer<T>, _ inSize: (Int, Int), _ w: UnsafePointer<T>, _ g: ConvGeometry,
                            padding: (Int, Int), bias: T, _ dst: UnsafeMutablePointer<T>, _ outSize: (Int, Int)) {
    ct_depthwise_plane_f32(UnsafeRawPointer(src).assumingMemoryBound(to: Float.self), Int64(inSize.0), Int64(inSize.1),
                           UnsafeRawPointer(w).assumingMemoryBound(to: Float.self), Int64(g.kernel[1]), Int64(g.kernel[2]),
                           Int64(g.stride[1]), Int64(g.stride[2]), Int64(padding.0), Int64(padding.1),
                           Int64(g.dilation[1]), Int64(g.dilation[2]), unsafeBitCast(bias, to: Float.self),
                           UnsafeMutableRawPointer(dst).assumingMemoryBound(to: Float.self), Int64(outSize.0), Int64(outSize.1))
}

/// Y = conv(X, W) (+ bias) for a depthwise `g`: `x` `[n, C, H, W]`, `w` `[C·m, 1, KH, KW]`, `y` `[n, C·m, OH, OW]`.
func depthwiseSmallFromBig<T: ConvElement>(_ x: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                           _ y: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry) {
    let columns = DepthwiseColumns(g)
    let (bigPlane, smallPlane, taps) = (g.bigPlane, g.smallPlane, g.kernelVolume)
    let (KW, OW, sw) = (g.kernel[2], g.small[2], g.stride[2])
    let multiplier = g.smallChannels / g.bigChannels, channels = g.smallChannels
    // float32 planes run in CTorchKernels (per ISA, every tap accumulated in a register); float64 and kernels of more
    // rows than the C kernel takes run the row loops below.
    let native = T.self == Float.self && g.kernel[1] <= Int(ct_depthwise_max_kernel_rows())
    parallelFor(n * channels, grain: Swift.max(1, elementwiseGrain / Swift.max(smallPlane * taps, 1))) { lo, hi in
        for plane in lo..<hi {
            let o = plane % channels, image = plane / channels
            let xp = x + (image * g.bigChannels + o / multiplier) * bigPlane, yp = y + plane * smallPlane
            let wp = w + o * taps
            if native {
                nativePlane(xp, (g.big[1], g.big[2]), wp, g, padding: (g.padding[1], g.padding[2]), bias: bias?[o] ?? 0,
                            yp, (g.small[1], OW))
                continue
            }
            yp.update(repeating: bias?[o] ?? 0, count: smallPlane)
            forEachLiveRow(g) { oh, kh, ih in
                let yr = yp + oh &* OW, xr = xp + ih &* g.big[2]
                for kw in 0..<KW {
                    addScaledRow(yr, stride: 1, xr + columns.offsets[kw], stride: sw, wp[kh &* KW &+ kw], columns.valid[kw])
                }
            }
        }
    }
}

/// X = convᵀ(Y, W) (+ bias per big channel) for a depthwise `g`: the adjoint of `depthwiseSmallFromBig` in X (Conv's
/// input gradient, ConvTranspose's forward).
func depthwiseBigFromSmall<T: ConvElement>(_ y: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                           _ x: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry) {
    let columns = DepthwiseColumns(g)
    let (bigPlane, smallPlane, taps) = (g.bigPlane, g.smallPlane, g.kernelVolume)
    let (KW, OW, sw) = (g.kernel[2], g.small[2], g.stride[2])
    let multiplier = g.smallChannels / g.bigChannels, channels = g.bigChannels
    // At stride 1 the adjoint is itself a correlation: of Y with the kernel flipped in both axes, padded by
    // (K − 1)·dilation − padding. With one output channel per input channel and that padding ≥ 0, float32 planes take
    // the forward's C kernel.
    let (KH, dh, dw) = (g.kernel[1], g.dilation[1], g.dilation[2])
    let flippedPadding = ((KH - 1) * dh - g.padding[1], (KW - 1) * dw - g.padding[2])
    let native = T.self == Float.self && multiplier == 1 && g.stride[1] == 1 && sw == 1 && KH <= Int(ct_depthwise_max_kernel_rows())
        && flippedPadding.0 >= 0 && flippedPadding.1 >= 0
    let flipped = native ? UnsafeMutablePointer<T>.allocate(capacity: channels * taps) : nil
    defer { flipped?.deallocate() }
    if let flipped {
        for c in 0..<channels { for t in 0..<taps { flipped[c * taps + t] = w[c * taps + taps - 1 - t] } }
    }
    parallelFor(n * channels, grain: Swift.max(1, elementwiseGrain / Swift.max(smallPlane * taps * multiplier, 1))) { lo, hi in
        for plane in lo..<hi {
            let c = plane % channels, image = plane / channels
            let xp = x + plane * bigPlane
            if let flipped {
                nativePlane(y + plane * smallPlane, (g.small[1], OW), flipped + c * taps, g, padding: flippedPadding,
                            bias: bias?[c] ?? 0, xp, (g.big[1], g.big[2]))
                continue
            }
            xp.update(repeating: bias?[c] ?? 0, count: bigPlane)
            for m in 0..<multiplier {
                let o = c * multiplier + m
                let yp = y + (image * g.smallChannels + o) * smallPlane, wp = w + o * taps
                forEachLiveRow(g) { oh, kh, ih in
                    let yr = yp + oh &* OW, xr = xp + ih &* g.big[2]
                    for kw in 0..<KW {
                        addScaledRow(xr + columns.offsets[kw], stride: sw, yr, stride: 1, wp[kh &* KW &+ kw], columns.valid[kw])
                    }
                }
            }
        }
    }
}

/// dW = Σₙ Y[n] ⋆ X[n] per output channel for a depthwise `g`; `dw` `[C·m, 1, KH, KW]` is overwritten.
func depthwiseWeightGrad<T: ConvElement>(_ y: UnsafePointer<T>, _ x: UnsafePointer<T>, _ dw: UnsafeMutablePointer<T>,
                                         batch n: Int, _ g: ConvGeometry) {
    let columns = DepthwiseColumns(g)
    let (bigPlane, smallPlane, taps) = (g.bigPlane, g.smallPlane, g.kernelVolume)
    let (KW, OW, sw) = (g.kernel[2], g.small[2], g.stride[2])
    let multiplier = g.smallChannels / g.bigChannels, channels = g.smallChannels
    let grain = Swift.max(1, elementwiseGrain / Swift.max(n * smallPlane * taps, 1))
    parallelFor(channels, grain: grain) { lo, hi in
        // One row of products per tap, summed once per channel.
        let rows = ScratchBuffer<T>(count: taps * OW)
        for o in lo..<hi {
            rows.pointer.update(repeating: 0, count: taps * OW)
            for image in 0..<n {
                let xp = x + (image * g.bigChannels + o / multiplier) * bigPlane
                let yp = y + (image * channels + o) * smallPlane
                forEachLiveRow(g) { oh, kh, ih in
                    let yr = yp + oh &* OW, xr = xp + ih &* g.big[2]
                    for kw in 0..<KW {
                        let acc = rows.pointer + (kh &* KW &+ kw) &* OW, src = xr + columns.offsets[kw]
                        if sw == 1 {
                            for ow in columns.valid[kw] { acc[ow] += yr[ow] * src[ow] }
                        } else {
                            for ow in columns.valid[kw] { acc[ow] += yr[ow] * src[ow &* sw] }
                        }
                    }
                }
            }
            for t in 0..<taps {
                var sum: T = 0
                for ow in 0..<OW { sum += rows.pointer[t &* OW &+ ow] }
                dw[o * taps + t] = sum
            }
        }
        rows.free()
    }
}
