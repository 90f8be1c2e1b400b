import CTorchKernels

/// Direct convolution for convolutions whose im2col matrix is short (few input channels × taps): LeNet-5's
/// 5×5 convolutions on 3 and 6 channels, the first 3×3 layer of a CNN on 1 or 3 channels.
///
/// im2col + GEMM writes the input `taps` times over (the im2col matrix), packs it again for the GEMM, and then
/// multiplies with an inner dimension K = Cin·taps that is shorter than one of the GEMM's K blocks (256), so the
/// copies cost more than the multiply-adds (figures: docs/performance.md, "Direct convolution"). The direct
/// kernels read the input itself, through a *wide* output plane: with stride 1, output position (oh, ow) of an
/// input padded to Hp × Wp reads input element `(oh + kh)·Wp + (ow + kw)`, i.e. `j + kh·Wp + kw` for
/// j = oh·Wp + ow. Computing every j < OH·Wp — the OW real columns plus KW − 1 throw-away ones per row — turns
/// each tap into a shifted contiguous vector, so a tile of output channels × 2 vectors of j accumulates
/// `Cin·taps` broadcast multiply-adds from unit-stride loads and no copies (`ct_direct_conv_f32`, per ISA). The weight gradient is the same sum the other way round
/// (`ct_direct_conv_wgrad_f32`: dot products of the wide output gradient, zero at the throw-away columns, with the
/// shifted input), and the input gradient a direct convolution of the output gradient padded by the kernel with
/// the flipped, transposed filters.
///
/// Rounding: each output is the same sum of products as im2col's in another order (float32 accumulation).
/// The throw-away columns read neighbouring input elements; only outputs that are discarded, or gradients
/// multiplied by the zeros at those columns, see them.
enum DirectConvolution {
    /// Whether the direct kernels take this convolution: float32, 1-D or 2-D, stride 1, no dilation, one group,
    /// a kernel of more than one tap, padding smaller than the kernel, and an im2col matrix of at most
    /// `maxColumnRows` rows.
    static func applies<T>(_ g: ConvGeometry, _: T.Type) -> Bool {
        T.self == Float.self && enabled && g.groups == 1 && g.big[0] == 1 && g.kernel[0] == 1
            && g.stride == [1, 1, 1] && g.dilation == [1, 1, 1] && g.kernelVolume > 1
            && g.padding[1] < g.kernel[1] && g.padding[2] < g.kernel[2] && g.colRows <= maxColumnRows
            && g.smallPlane > 0
    }

    /// The GEMM blocks its inner dimension by 256 (CT_KC in gemm.c) and amortises its packing over it; an im2col
    /// matrix with at most that many rows fits one block, so the copies are not amortised. This is a property of
    /// the GEMM's blocking, not of the CPU's caches.
    static let maxColumnRows = 256

    /// Kill switch for tests and A/B runs: false routes these convolutions through im2col.
    nonisolated(unsafe) static var enabled = true
}

/// The wide-plane layout of one direct convolution: the input zero-padded to `rows × width` per channel, `outRows`
/// rows of `width` output positions, and the tap offsets into a padded plane.
private struct WidePlane {
    let rows: Int, width: Int, outRows: Int
    let offsets: [Int64]
    /// Output positions computed per channel: whole rows, rounded up to two vectors (the forward tile).
    let positions: Int
    /// Floats of the padded input per image, with the slack the last tile reads past the last channel.
    let inputCount: Int

    init(rows: Int, width: Int, outRows: Int, kernelH: Int, kernelW: Int, channels: Int) {
        (self.rows, self.width, self.outRows) = (rows, width, outRows)
        var offsets: [Int64] = []
        for kh in 0..<kernelH { for kw in 0..<kernelW { offsets.append(Int64(kh * width + kw)) } }
        self.offsets = offsets
        let tile = 2 * Int(ct_direct_conv_width_f32())
        positions = (outRows * width + tile - 1) / tile * tile
        let plane = rows * width
        inputCount = Swift.max(channels * plane, (channels - 1) * plane + Int(offsets.last!) + positions)
    }

    var plane: Int { rows * width }
}

/// Copies `channels` planes of `height × width` into `dst` (planes of `wide.rows × wide.width`) at row `top`,
/// column `left`, zeros elsewhere up to `wide.inputCount`.
private func copyPadded(_ src: UnsafePointer<Float>, channels: Int, height: Int, width: Int, top: Int, left: Int,
                        _ wide: WidePlane, into dst: UnsafeMutablePointer<Float>) {
    dst.update(repeating: 0, count: wide.inputCount)
    for c in 0..<channels {
        for r in 0..<height {
            (dst + c * wide.plane + (top + r) * wide.width + left).update(from: src + (c * height + r) * width, count: width)
        }
    }
}

/// Weights `[cout, cin, taps]` (read through `weight(co, c, t)`) packed for `ct_direct_conv_f32`:
/// `[block][c][t][co in block]`, zero past `cout`.
private func packDirectWeights(cout: Int, cin: Int, taps: Int, _ weight: (Int, Int, Int) -> Float) -> [Float] {
    let mb = Int(ct_direct_conv_block_f32(Int64(cout)))
    let blocks = (cout + mb - 1) / mb
    var packed = [Float](repeating: 0, count: blocks * mb * cin * taps)
    for co in 0..<cout {
        let base = (co / mb) * mb * cin * taps, lane = co % mb
        for c in 0..<cin { for t in 0..<taps { packed[base + (c * taps + t) * mb + lane] = weight(co, c, t) } }
    }
    return packed
}

private func paddedBias(_ bias: UnsafePointer<Float>?, count: Int) -> [Float]? {
    guard let bias else { return nil }
    let mb = Int(ct_direct_conv_block_f32(Int64(count)))
    var b = [Float](repeating: 0, count: (count + mb - 1) / mb * mb)
    for i in 0..<count { b[i] = bias[i] }
    return b
}

/// Runs the direct forward kernel on the padded planes of each image of `images` and copies the real columns of
/// the wide output (`outRows × outWidth` of each `wide.width`-wide row) to `out(image)`.
private func directImages(_ images: Range<Int>, cin: Int, cout: Int, _ wide: WidePlane, outWidth: Int,
                          packed: [Float], bias: [Float]?, fill: (Int, UnsafeMutablePointer<Float>) -> Void,
                          out: (Int) -> UnsafeMutablePointer<Float>) {
    let xs = ScratchBuffer<Float>(count: wide.inputCount), ys = ScratchBuffer<Float>(count: cout * wide.positions)
    packed.withUnsafeBufferPointer { w in
        wide.offsets.withUnsafeBufferPointer { off in
            for i in images {
                fill(i, xs.pointer)
                (bias ?? []).withUnsafeBufferPointer { b in
                    ct_direct_conv_f32(xs.pointer, Int64(cin), Int64(wide.plane), off.baseAddress, Int64(off.count),
                                       w.baseAddress, bias == nil ? nil : b.baseAddress, Int64(cout), ys.pointer,
                                       Int64(wide.positions), Int64(wide.outRows * wide.width))
                }
                let y = out(i)
                for co in 0..<cout {
                    for r in 0..<wide.outRows {
                        (y + (co * wide.outRows + r) * outWidth).update(from: ys.pointer + co * wide.positions + r * wide.width,
                                                                        count: outWidth)
                    }
                }
            }
        }
    }
    ys.free()
    xs.free()
}

/// Y = conv(X, W) (+ bias) by the direct kernel; shapes as `convSmallFromBigKernel`'s.
func directConvolution(_ x: UnsafePointer<Float>, _ w: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
                       _ y: UnsafeMutablePointer<Float>, batch n: Int, _ g: ConvGeometry) {
    let (cin, cout) = (g.bigChannels, g.smallChannels)
    let (H, W, OH, OW) = (g.big[1], g.big[2], g.small[1], g.small[2])
    let (KH, KW, ph, pw) = (g.kernel[1], g.kernel[2], g.padding[1], g.padding[2])
    let taps = KH * KW
    let wide = WidePlane(rows: H + 2 * ph, width: W + 2 * pw, outRows: OH, kernelH: KH, kernelW: KW, channels: cin)
    let packed = packDirectWeights(cout: cout, cin: cin, taps: taps) { co, c, t in w[(co * cin + c) * taps + t] }
    let b = paddedBias(bias, count: cout)
    forEachImageChunk(n, chunks: imageChunks(n, macsPerImage: cout * g.colRows * g.smallPlane)) { _, images in
        directImages(images, cin: cin, cout: cout, wide, outWidth: OW, packed: packed, bias: b,
                     fill: { i, xs in copyPadded(x + i * cin * H * W, channels: cin, height: H, width: W, top: ph, left: pw, wide, into: xs) },
                     out: { i in y + i * cout * OH * OW })
    }
}

/// X = convᵀ(Y, W) (+ bias) by the direct kernel: the output gradient padded by the kernel less the forward
/// padding, convolved with the filters flipped in space and transposed in channels.
func directTransposedConvolution(_ y: UnsafePointer<Float>, _ w: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
                                 _ x: UnsafeMutablePointer<Float>, batch n: Int, _ g: ConvGeometry) {
    let (cbig, csmall) = (g.bigChannels, g.smallChannels)
    let (H, W, OH, OW) = (g.big[1], g.big[2], g.small[1], g.small[2])
    let (KH, KW, ph, pw) = (g.kernel[1], g.kernel[2], g.padding[1], g.padding[2])
    let taps = KH * KW
    // X[c][i][j] = Σ W[co][c][kh][kw]·Y[co][i + ph − kh][j + pw − kw]: with Y placed at row KH − 1 − ph and column
    // KW − 1 − pw of a (H + KH − 1) × (W + KW − 1) plane, tap (kh', kw') = (KH − 1 − kh, KW − 1 − kw) reads it at
    // (i + kh', j + kw').
    let wide = WidePlane(rows: H + KH - 1, width: W + KW - 1, outRows: H, kernelH: KH, kernelW: KW, channels: csmall)
    let packed = packDirectWeights(cout: cbig, cin: csmall, taps: taps) { c, co, t in w[(co * cbig + c) * taps + taps - 1 - t] }
    let b = paddedBias(bias, count: cbig)
    forEachImageChunk(n, chunks: imageChunks(n, macsPerImage: csmall * g.colRows * g.smallPlane)) { _, images in
        directImages(images, cin: csmall, cout: cbig, wide, outWidth: W, packed: packed, bias: b,
                     fill: { i, ys in
                         copyPadded(y + i * csmall * OH * OW, channels: csmall, height: OH, width: OW, top: KH - 1 - ph,
                                    left: KW - 1 - pw, wide, into: ys)
                     },
                     out: { i in x + i * cbig * H * W })
    }
}

/// dW = Σₙ the weight gradient of Y = conv(X, W) by the direct kernel (`dw` `[Csmall, Cbig, KH, KW]`, overwritten).
func directWeightGradient(_ dy: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ dw: UnsafeMutablePointer<Float>,
                          batch n: Int, _ g: ConvGeometry) {
    let (cin, cout) = (g.bigChannels, g.smallChannels)
    let (H, W, OH, OW) = (g.big[1], g.big[2], g.small[1], g.small[2])
    let (KH, KW, ph, pw) = (g.kernel[1], g.kernel[2], g.padding[1], g.padding[2])
    let wCount = cout * cin * KH * KW
    let wide = WidePlane(rows: H + 2 * ph, width: W + 2 * pw, outRows: OH, kernelH: KH, kernelW: KW, channels: cin)
    let vector = Int(ct_direct_conv_width_f32())
    // Whole vectors of wide positions; the output gradient is zero past each row's OW real columns.
    let positions = (OH * wide.width + vector - 1) / vector * vector
    let chunks = imageChunks(n, macsPerImage: cout * g.colRows * g.smallPlane)
    let partials = ScratchBuffer<Float>(count: chunks * wCount)
    partials.pointer.update(repeating: 0, count: chunks * wCount)
    forEachImageChunk(n, chunks: chunks) { chunk, images in
        // Lane-wise sums over the chunk's images, reduced across lanes once (ct_direct_conv_wgrad_f32).
        let lanes = ScratchBuffer<Float>(count: wCount * vector)
        lanes.pointer.update(repeating: 0, count: wCount * vector)
        let xs = ScratchBuffer<Float>(count: wide.inputCount), gs = ScratchBuffer<Float>(count: cout * positions)
        gs.pointer.update(repeating: 0, count: cout * positions)
        wide.offsets.withUnsafeBufferPointer { off in
            for i in images {
                copyPadded(x + i * cin * H * W, channels: cin, height: H, width: W, top: ph, left: pw, wide, into: xs.pointer)
                let yi = dy + i * cout * OH * OW
                for co in 0..<cout {
                    for r in 0..<OH {
                        (gs.pointer + co * positions + r * wide.width).update(from: yi + (co * OH + r) * OW, count: OW)
                    }
                }
                ct_direct_conv_wgrad_f32(gs.pointer, Int64(positions), Int64(cout), xs.pointer, Int64(cin), Int64(wide.plane),
                                         off.baseAddress, Int64(off.count), Int64(positions), lanes.pointer)
            }
        }
        ct_direct_conv_wgrad_reduce_f32(lanes.pointer, Int64(wCount), partials.pointer + chunk * wCount)
        gs.free()
        xs.free()
        lanes.free()
    }
    dw.update(from: partials.pointer, count: wCount)
    for c in 1..<Swift.max(chunks, 1) {
        let p = partials.pointer + c * wCount
        for j in 0..<wCount { dw[j] += p[j] }
    }
    partials.free()
}
