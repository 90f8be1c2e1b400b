/// im2col and its adjoint col2im for the convolution kernels (ConvolutionKernels.swift), in two forms chosen
/// per geometry by `Im2colPlan`:
/// - the *row walk* copies one output row per (channel, kernel tap, output row) with vector moves;
/// - the *gather* copies element by element through a table built once per call, for output rows shorter than
///   one vector, where the row walk's per-row bookkeeping costs more than the copy.

/// How one convolution's im2col matrices are written and added back, fixed for one kernel call.
///
/// Deep stages on small images run on 4×4, 2×2 and 1×1 planes: a 3×3 convolution on a 2×2 plane walks 2 × 9
/// rows of 2 elements per channel, and the row walk's per-row work (a closure call, bounds and a zero-fill
/// decision) then costs more than the copy. The gather does the same copies from a table of (tap, position,
/// source) entries, the valid ones first, with no per-row work.
/// (figures: docs/performance.md, "im2col")
struct Im2colPlan {
    let geometry: ConvGeometry
    /// (tap, output position, source offset) triples, the valid entries first: the tap is the row within a
    /// channel's block of `kernelVolume` rows, the position the column within the image's plane, the source the
    /// offset in the input channel's plane the entry reads; the entries from `validCount` on read the zero padding
    /// and have no source (0).
    private let table: [Int32]
    private let validCount: Int

    /// Rows of at most this many output elements are gathered: shorter than one 8-float AVX2 vector (the row
    /// copy's unit), so the row walk would spend more on per-row work than on moving data. A property of the
    /// copy loop, not of the CPU's caches.
    static let maxGatherRowLength = 7
    /// Table size limit (entries = kernel volume × output plane): at most 48 KB of Int32 triples.
    static let maxGatherEntries = 1 << 12
    /// Kill switch for tests and A/B runs: false walks rows for every geometry.
    nonisolated(unsafe) static var gatherEnabled = true

    init(_ g: ConvGeometry) {
        geometry = g
        let entries = g.kernelVolume * g.smallPlane
        guard Im2colPlan.gatherEnabled, !g.isPointwise, g.small[2] <= Im2colPlan.maxGatherRowLength, entries <= Im2colPlan.maxGatherEntries else {
            (table, validCount) = ([], 0)
            return
        }
        var valid: [Int32] = [], padding: [Int32] = []
        valid.reserveCapacity(3 * entries)
        let (D, H, W) = (g.big[0], g.big[1], g.big[2])
        let (OD, OH, OW) = (g.small[0], g.small[1], g.small[2])
        var tap: Int32 = 0
        for kd in 0..<g.kernel[0] {
            for kh in 0..<g.kernel[1] {
                for kw in 0..<g.kernel[2] {
                    var position: Int32 = 0
                    for od in 0..<OD {
                        let id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0]
                        for oh in 0..<OH {
                            let ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1]
                            for ow in 0..<OW {
                                let iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2]
                                if id >= 0, id < D, ih >= 0, ih < H, iw >= 0, iw < W {
                                    valid += [tap, position, Int32((id * H + ih) * W + iw)]
                                } else {
                                    padding += [tap, position, 0]
                                }
                                position += 1
                            }
                        }
                    }
                    tap += 1
                }
            }
        }
        table = valid + padding
        validCount = valid.count / 3
    }

    /// True when this plan gathers through its table (else it walks rows).
    var gathers: Bool { !table.isEmpty }

    /// Writes the im2col matrix (`channels`·kernel volume rows × output-plane columns, rows `ld` apart) of one
    /// image's `channels` channels.
    func im2col<T: ConvElement>(_ x: UnsafePointer<T>, channels: Int, into col: UnsafeMutablePointer<T>, ld: Int) {
        guard gathers else { return rowWalkIm2col(x, channels: channels, geometry, into: col, ld: ld) }
        let plane = geometry.bigPlane, block = geometry.kernelVolume * ld
        table.withUnsafeBufferPointer { e in
            for c in 0..<channels {
                let xc = x + c * plane, cc = col + c * block
                for k in 0..<validCount { cc[Int(e[3 &* k]) &* ld &+ Int(e[3 &* k &+ 1])] = xc[Int(e[3 &* k &+ 2])] }
                for k in validCount..<(e.count / 3) { cc[Int(e[3 &* k]) &* ld &+ Int(e[3 &* k &+ 1])] = 0 }
            }
        }
    }

    /// Adds the im2col-shaped `col` (rows `ld` apart) back into one image's `channels` channels of `x` (the
    /// adjoint of `im2col`).
    func col2imAdd<T: ConvElement>(_ col: UnsafePointer<T>, channels: Int, into x: UnsafeMutablePointer<T>, ld: Int) {
        guard gathers else { return rowWalkCol2imAdd(col, channels: channels, geometry, into: x, ld: ld) }
        let plane = geometry.bigPlane, block = geometry.kernelVolume * ld
        table.withUnsafeBufferPointer { e in
            for c in 0..<channels {
                let xc = x + c * plane, cc = col + c * block
                for k in 0..<validCount { xc[Int(e[3 &* k &+ 2])] += cc[Int(e[3 &* k]) &* ld &+ Int(e[3 &* k &+ 1])] }
            }
        }
    }
}

// MARK: - The row walk

/// Output positions `o` in `0..<outSize` whose input position `o·stride + offset` lies in `0..<inSize`.
@inline(__always)
func validRange(offset: Int, stride: Int, inSize: Int, outSize: Int) -> Range<Int> {
    // o·s + off ≥ 0  ⇔  o ≥ ceil(−off / s);   o·s + off ≤ inSize − 1  ⇔  o ≤ floor((inSize − 1 − off) / s)
    let lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride
    let top = inSize - 1 - offset
    let hi = top < 0 ? 0 : top / stride + 1
    let l = Swift.min(lo, outSize), h = Swift.min(Swift.max(hi, l), outSize)
    return l..<h
}

/// Walks the im2col matrix of `channels` channels of one image, its rows `ld` elements apart: for each row
/// (channel, kernel offset) and each output row (od, oh), calls `body(colRow, inputRow, range)` where `colRow` is
/// the output row's first column,
/// `inputRow` the input row it reads (nil where it lies in the padding), shifted so that output column `ow`
/// reads `inputRow[ow·strideW]`, and `range` the columns that read inside the input.
@inline(__always)
private func forEachColumnRow(_ g: ConvGeometry, channels: Int, ld: Int,
                              _ body: (_ colOffset: Int, _ inputOffset: Int?, _ valid: Range<Int>) -> Void) {
    let (D, H, W) = (g.big[0], g.big[1], g.big[2])
    let (OD, OH, OW) = (g.small[0], g.small[1], g.small[2])
    let (KD, KH, KW) = (g.kernel[0], g.kernel[1], g.kernel[2])
    var row = 0
    for c in 0..<channels {
        let channelBase = c * D * H * W
        for kd in 0..<KD {
            for kh in 0..<KH {
                for kw in 0..<KW {
                    let offW = kw * g.dilation[2] - g.padding[2]
                    let valid = validRange(offset: offW, stride: g.stride[2], inSize: W, outSize: OW)
                    for od in 0..<OD {
                        let id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0]
                        for oh in 0..<OH {
                            let ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1]
                            let colOffset = row * ld + (od * OH + oh) * OW
                            if id < 0 || id >= D || ih < 0 || ih >= H {
                                body(colOffset, nil, valid)
                            } else {
                                body(colOffset, channelBase + (id * H + ih) * W + offW, valid)
                            }
                        }
                    }
                    row += 1
                }
            }
        }
    }
}

/// `Im2colPlan.im2col` by the row walk.
private func rowWalkIm2col<T: ConvElement>(_ x: UnsafePointer<T>, channels: Int, _ g: ConvGeometry, into col: UnsafeMutablePointer<T>, ld: Int) {
    let OW = g.small[2], sw = g.stride[2]
    forEachColumnRow(g, channels: channels, ld: ld) { colOffset, inputOffset, valid in
        let dst = col + colOffset
        guard let inputOffset else {
            dst.update(repeating: 0, count: OW)
            return
        }
        if valid.lowerBound > 0 { dst.update(repeating: 0, count: valid.lowerBound) }
        let src = x + inputOffset
        if sw == 1 {
            if !valid.isEmpty { copyRow(from: src + valid.lowerBound, to: dst + valid.lowerBound, count: valid.count) }
        } else if sw == 2 {
            copyEvenElements(from: src, to: dst, valid)
        } else {
            for ow in valid { dst[ow] = src[ow &* sw] }
        }
        if valid.upperBound < OW { (dst + valid.upperBound).update(repeating: 0, count: OW - valid.upperBound) }
    }
}

/// Copies `count` elements (Float or Double), rows up to 512 bytes inline in 32-byte moves. im2col copies one output row per
/// (channel, kernel offset, output row) — rows of 10–60 elements in small CNNs — where a libc `memmove` call per
/// row would cost more in call overhead than the copy (figures: docs/performance.md, "im2col").
@inline(__always)
private func copyRow<T>(from src: UnsafePointer<T>, to dst: UnsafeMutablePointer<T>, count: Int) {
    let bytes = count * MemoryLayout<T>.stride
    guard bytes <= 512 else {
        dst.update(from: src, count: count)
        return
    }
    let s = UnsafeRawPointer(src), d = UnsafeMutableRawPointer(dst)
    var i = 0
    while i + 32 <= bytes {
        d.storeBytes(of: s.loadUnaligned(fromByteOffset: i, as: SIMD32<UInt8>.self), toByteOffset: i, as: SIMD32<UInt8>.self)
        i += 32
    }
    while i + 4 <= bytes {
        d.storeBytes(of: s.loadUnaligned(fromByteOffset: i, as: UInt32.self), toByteOffset: i, as: UInt32.self)
        i += 4
    }
}

/// dst[i] = src[2i] for i in `range`: stride-2 convolutions' im2col rows (ResNet's 7×7 stem and downsampling
/// convolutions), 8 floats at a time from the even lanes of 16-float loads, because a scalar strided loop with
/// overflow checks is several times slower. A load never reaches past src[2·(range.upperBound − 1)].
@inline(__always)
private func copyEvenElements<T>(from src: UnsafePointer<T>, to dst: UnsafeMutablePointer<T>, _ range: Range<Int>) {
    var i = range.lowerBound
    if T.self == Float.self {
        let s = UnsafeRawPointer(src), d = UnsafeMutableRawPointer(dst)
        let stride = MemoryLayout<Float>.stride
        while i &+ 8 < range.upperBound {  // the 16-float load's last lane is src[2i + 15] ≤ src[2·(upper − 1)]
            let v = s.loadUnaligned(fromByteOffset: 2 &* i &* stride, as: SIMD16<Float>.self)
            d.storeBytes(of: v.evenHalf, toByteOffset: i &* stride, as: SIMD8<Float>.self)
            i &+= 8
        }
    }
    while i < range.upperBound {
        dst[i] = src[2 &* i]
        i &+= 1
    }
}

/// `Im2colPlan.col2imAdd` by the row walk.
private func rowWalkCol2imAdd<T: ConvElement>(_ col: UnsafePointer<T>, channels: Int, _ g: ConvGeometry, into x: UnsafeMutablePointer<T>, ld: Int) {
    let sw = g.stride[2]
    forEachColumnRow(g, channels: channels, ld: ld) { colOffset, inputOffset, valid in
        guard let inputOffset else { return }
        let src = col + colOffset, dst = x + inputOffset
        if sw == 1 {
            for ow in valid { dst[ow] += src[ow] }
        } else {
            for ow in valid { dst[ow * sw] += src[ow] }
        }
    }
}

