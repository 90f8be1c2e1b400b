import CTorchKernels

/// The three kernels every convolution is made of (forward, transposed, weight gradient), over up to three
/// spatial dims, as im2col/col2im around the packed GEMM of CTorchKernels — unless a faster algorithm takes the
/// shape: Winograd F(2×2, 3×3) (WinogradKernels.swift) or the direct kernels for short im2col matrices
/// (DirectConvolution.swift); kernel taps that read only padding are cropped first (ConvolutionTapCropping.swift).
///
/// Naming: a convolution relates a *big* tensor `X` `[N, Cbig, D, H, W]` and a *small* tensor `Y`
/// `[N, Csmall, OD, OH, OW]` through a weight `[Csmall, Cbig / groups, KD, KH, KW]`:
/// - `smallFromBig`  Y = conv(X, W)            (Conv forward; ConvTranspose's input gradient)
/// - `bigFromSmall`  X = convᵀ(Y, W)           (Conv's input gradient; ConvTranspose forward)
/// - `weightGrad`    dW = Σₙ Y[n] · im2col(X[n])ᵀ (both weight gradients)
/// 1-D and 2-D problems are 3-D ones with leading spatial sizes of 1.
///
/// Work is split over the images of the batch (each thread its own im2col buffer and, for the weight
/// gradient, its own partial sum) when there are at least as many images as threads; a single image
/// leaves the threads to the GEMM, which splits large products itself.

/// The geometry of one convolution, in 3-D form.
struct ConvGeometry: Equatable {
    /// Spatial size of the big tensor (D, H, W).
    var big: [Int]
    /// Spatial size of the small tensor (OD, OH, OW).
    var small: [Int]
    var kernel: [Int]
    var stride: [Int]
    /// Zero padding in front of each big dim (the same amount may follow it).
    var padding: [Int]
    var dilation: [Int]
    var groups: Int
    /// Channels of the big and of the small tensor.
    var bigChannels: Int
    var smallChannels: Int

    var bigPlane: Int { big[0] * big[1] * big[2] }
    var smallPlane: Int { small[0] * small[1] * small[2] }
    var kernelVolume: Int { kernel[0] * kernel[1] * kernel[2] }
    /// Rows of one group's im2col matrix (Cbig/groups × kernel volume).
    var colRows: Int { bigChannels / groups * kernelVolume }

    /// True when im2col would copy the input unchanged (1×1 kernel, stride 1, no padding): the GEMM reads
    /// the big tensor directly.
    var isPointwise: Bool {
        kernel == [1, 1, 1] && stride == [1, 1, 1] && padding == [0, 0, 0]
    }

    /// The output size of a convolution along one dim (PyTorch's formula).
    static func outputSize(input: Int, kernel: Int, stride: Int, padding: Int, dilation: Int) -> Int {
        (input + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
    }
}

/// Elements of the GEMM the convolution kernels are built on.
protocol ConvElement: FloatElement {
    /// C[m×n] (rows `rsc` apart) = A·B + beta·C, A element (i,k) at a[i·rsa + k·csa], B (k,j) at b[k·rsb + j·csb].
    static func gemm(_ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<Self>, _ rsa: Int, _ csa: Int,
                     _ b: UnsafePointer<Self>, _ rsb: Int, _ csb: Int, beta: Self,
                     _ c: UnsafeMutablePointer<Self>, _ rsc: Int)
}

extension Float: ConvElement {
    @inline(__always)
    static func gemm(_ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<Float>, _ rsa: Int, _ csa: Int,
                     _ b: UnsafePointer<Float>, _ rsb: Int, _ csb: Int, beta: Float,
                     _ c: UnsafeMutablePointer<Float>, _ rsc: Int) {
        ct_sgemm(Int64(m), Int64(n), Int64(k), 1, a, Int64(rsa), Int64(csa), b, Int64(rsb), Int64(csb),
                 beta, c, Int64(rsc))
    }
}

extension Double: ConvElement {
    @inline(__always)
    static func gemm(_ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<Double>, _ rsa: Int, _ csa: Int,
                     _ b: UnsafePointer<Double>, _ rsb: Int, _ csb: Int, beta: Double,
                     _ c: UnsafeMutablePointer<Double>, _ rsc: Int) {
        ct_dgemm(Int64(m), Int64(n), Int64(k), 1, a, Int64(rsa), Int64(csa), b, Int64(rsb), Int64(csb),
                 beta, c, Int64(rsc))
    }
}

/// A scratch buffer from the caching allocator (a training step's buffers are re-used, not re-mapped).
struct ScratchBuffer<T> {
    let pointer: UnsafeMutablePointer<T>
    private let raw: UnsafeMutableRawPointer
    private let size: Int
    init(count: Int) {
        (raw, size) = CachingAllocator.allocate(Swift.max(count, 1) * MemoryLayout<T>.stride)
        pointer = raw.bindMemory(to: T.self, capacity: Swift.max(count, 1))
    }
    func free() { CachingAllocator.free(raw, size: size) }
}

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

/// Writes the im2col matrix (`channels`·KD·KH·KW rows × OD·OH·OW columns, rows `ld` apart) of one image's
/// `channels` channels.
func im2col<T: ConvElement>(_ x: UnsafePointer<T>, channels: Int, _ g: ConvGeometry, into col: UnsafeMutablePointer<T>, ld: Int) {
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
/// (channel, kernel offset, output row) — rows of 10–60 elements in small CNNs — and a libc `memmove` call per
/// row cost LeNet-5's forward 14 % of its time in call overhead (perf, AMD Zen 4).
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
/// convolutions), 8 floats at a time from the even lanes of 16-float loads, which a scalar strided loop with
/// overflow checks ran at a quarter of the speed. A load never reaches past src[2·(range.upperBound − 1)].
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

/// Adds the im2col-shaped `col` (rows `ld` apart) back into one image's `channels` channels of `x` (the adjoint of
/// `im2col`).
func col2imAdd<T: ConvElement>(_ col: UnsafePointer<T>, channels: Int, _ g: ConvGeometry, into x: UnsafeMutablePointer<T>, ld: Int) {
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

/// How to split a batch of `n` images over the pool: contiguous chunks of images, one per thread, when the
/// batch has at least two images per thread or the per-image product is too small for the GEMM to split
/// (below ~0.5M multiply-adds it runs on one thread); otherwise one chunk, the GEMM using the threads.
func imageChunks(_ n: Int, macsPerImage: Int) -> Int {
    let threads = Int(ct_get_num_threads())
    guard threads > 1, n > 1 else { return 1 }
    if n >= 2 * threads || macsPerImage < 1 << 19 { return Swift.min(threads, n) }
    return 1
}

/// Runs `body(chunk, images)` over `chunks` contiguous ranges of `0..<n`, in parallel when `chunks > 1`.
@inline(__always)
func forEachImageChunk(_ n: Int, chunks: Int, _ body: (Int, Range<Int>) -> Void) {
    if chunks <= 1 {
        body(0, 0..<n)
        return
    }
    parallelFor(chunks, grain: 1) { lo, hi in
        for c in lo..<hi { body(c, (c * n / chunks)..<((c + 1) * n / chunks)) }
    }
}

/// Images whose im2col matrices sit side by side in one GEMM. A per-image GEMM packs the whole weight matrix
/// (Csmall × K) to multiply it by P columns; where P is small that packing dominates: ResNet-18's last stage on
/// 32×32 inputs has P = 1 and packed 9 MB of weights per image and convolution (its train step ran at 0.37×
/// PyTorch's speed). So images are grouped until the GEMM has `minGEMMColumns` columns (the N at which the
/// packed kernels reach their speed; it is a property of the micro-kernel, not of the cache), keeping the
/// column block under `maxColumnBlockElements` (16 MB of float32, a share of any current L3 or less).
private let minGEMMColumns = 256
private let maxColumnBlockElements = 1 << 22

/// How many of a chunk's `images` go into one GEMM (1: the GEMM reads and writes the tensors directly).
private func imagesPerGEMM(_ g: ConvGeometry, images: Int) -> Int {
    let P = g.smallPlane
    guard P < minGEMMColumns, images > 1 else { return 1 }
    let wanted = (minGEMMColumns + P - 1) / P
    let fits = Swift.max(1, maxColumnBlockElements / Swift.max(g.colRows * P, 1))
    return Swift.min(wanted, fits, images)
}

/// The im2col matrices of group `grp` of images `first ..< first + count` side by side in `col`: image i's
/// columns start at `col + i·P`, the rows are `count·P` apart.
@inline(__always)
private func im2colImages<T: ConvElement>(_ x: UnsafePointer<T>, first: Int, count: Int, group grp: Int, _ g: ConvGeometry,
                                          into col: UnsafeMutablePointer<T>) {
    let cbg = g.bigChannels / g.groups, P = g.smallPlane
    for i in 0..<count {
        im2col(x + ((first + i) * g.bigChannels + grp * cbg) * g.bigPlane, channels: cbg, g, into: col + i * P, ld: count * P)
    }
}

/// Runs `body(first, count)` over consecutive blocks of at most `block` images of `images`.
@inline(__always)
func forEachImageBlock(_ images: Range<Int>, block: Int, _ body: (_ first: Int, _ count: Int) -> Void) {
    var first = images.lowerBound
    while first < images.upperBound {
        let count = Swift.min(block, images.upperBound - first)
        body(first, count)
        first += count
    }
}

/// Copies rows `rows` of `count` images' planes (P elements each; image i's row r at `tensor + i·imageStride +
/// r·P`) to or from a block matrix whose row r holds the images side by side (`block + r·count·P + i·P`).
@inline(__always)
private func copyImageRows<T>(_ tensor: UnsafeMutablePointer<T>, imageStride: Int, rows: Int, count: Int, plane P: Int,
                              _ block: UnsafeMutablePointer<T>, toBlock: Bool) {
    for i in 0..<count {
        for r in 0..<rows {
            let t = tensor + i * imageStride + r * P, b = block + r * count * P + i * P
            if toBlock { b.update(from: t, count: P) } else { t.update(from: b, count: P) }
        }
    }
}

/// Y = conv(X, W) (+ bias per small channel). `x` is `[n, Cbig, big]`, `w` `[Csmall, Cbig/groups, kernel]`,
/// `y` `[n, Csmall, small]`, all contiguous.
func convSmallFromBigKernel<T: ConvElement>(_ x: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                            _ y: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry) {
    if withLiveTaps(w, g, { convSmallFromBigKernel(x, $0, bias: bias, y, batch: n, $1) }) { return }
    if T.self == Float.self, let problem = WinogradProblem(forward: g, batch: n) {
        winogradConvolution(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                            bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                            UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), batch: n, problem)
        return
    }
    if DirectConvolution.applies(g, T.self) {
        directConvolution(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                          bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                          UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), batch: n, g)
        return
    }
    let P = g.smallPlane, K = g.colRows
    let cbg = g.bigChannels / g.groups, csg = g.smallChannels / g.groups
    let chunks = imageChunks(n, macsPerImage: g.smallChannels * K * P)
    let pointwise = g.isPointwise
    forEachImageChunk(n, chunks: chunks) { _, images in
        let block = imagesPerGEMM(g, images: images.count)
        if block > 1 {
            // Several images per GEMM: their columns side by side, the result copied out per image.
            let col = ScratchBuffer<T>(count: K * block * P), out = ScratchBuffer<T>(count: csg * block * P)
            forEachImageBlock(images, block: block) { first, count in
                let ld = count * P
                for grp in 0..<g.groups {
                    im2colImages(x, first: first, count: count, group: grp, g, into: col.pointer)
                    if let bias {
                        for r in 0..<csg { (out.pointer + r * ld).update(repeating: bias[grp * csg + r], count: ld) }
                    }
                    T.gemm(csg, ld, K, w + grp * csg * K, K, 1, UnsafePointer(col.pointer), ld, 1, beta: bias == nil ? 0 : 1,
                           out.pointer, ld)
                    copyImageRows(y + (first * g.smallChannels + grp * csg) * P, imageStride: g.smallChannels * P, rows: csg,
                                  count: count, plane: P, out.pointer, toBlock: false)
                }
            }
            out.free()
            col.free()
            return
        }
        let col = pointwise ? nil : ScratchBuffer<T>(count: K * P)
        for i in images {
            for grp in 0..<g.groups {
                let xg = x + (i * g.bigChannels + grp * cbg) * g.bigPlane
                let yg = y + (i * g.smallChannels + grp * csg) * P
                var beta: T = 0
                if let bias {
                    for r in 0..<csg { (yg + r * P).update(repeating: bias[grp * csg + r], count: P) }
                    beta = 1
                }
                let b: UnsafePointer<T>
                if let col {
                    im2col(xg, channels: cbg, g, into: col.pointer, ld: P)
                    b = UnsafePointer(col.pointer)
                } else {
                    b = xg
                }
                T.gemm(csg, P, K, w + grp * csg * K, K, 1, b, P, 1, beta: beta, yg, P)
            }
        }
        col?.free()
    }
}

/// X = convᵀ(Y, W) (+ bias per big channel): the adjoint of `convSmallFromBigKernel` in X.
func convBigFromSmallKernel<T: ConvElement>(_ y: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                            _ x: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry) {
    if withLiveTaps(w, g, { convBigFromSmallKernel(y, $0, bias: bias, x, batch: n, $1) }) { return }
    if T.self == Float.self, let problem = WinogradProblem(transposed: g, batch: n) {
        winogradTransposedConvolution(UnsafeRawPointer(y).assumingMemoryBound(to: Float.self),
                                      UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                                      bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                                      UnsafeMutableRawPointer(x).assumingMemoryBound(to: Float.self), batch: n, problem)
        return
    }
    if DirectConvolution.applies(g, T.self) {
        directTransposedConvolution(UnsafeRawPointer(y).assumingMemoryBound(to: Float.self),
                                    UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                                    bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                                    UnsafeMutableRawPointer(x).assumingMemoryBound(to: Float.self), batch: n, g)
        return
    }
    let P = g.smallPlane, K = g.colRows, plane = g.bigPlane
    let cbg = g.bigChannels / g.groups, csg = g.smallChannels / g.groups
    let chunks = imageChunks(n, macsPerImage: g.smallChannels * K * P)
    let pointwise = g.isPointwise
    forEachImageChunk(n, chunks: chunks) { _, images in
        let block = imagesPerGEMM(g, images: images.count)
        if block > 1 {
            // Several images per GEMM: Wgᵀ (K × csg) times their Yg side by side, then col2im per image.
            let col = ScratchBuffer<T>(count: K * block * P), ys = ScratchBuffer<T>(count: csg * block * P)
            forEachImageBlock(images, block: block) { first, count in
                let ld = count * P
                for grp in 0..<g.groups {
                    copyImageRows(UnsafeMutablePointer(mutating: y + (first * g.smallChannels + grp * csg) * P),
                                  imageStride: g.smallChannels * P, rows: csg, count: count, plane: P, ys.pointer, toBlock: true)
                    T.gemm(K, ld, csg, w + grp * csg * K, 1, K, UnsafePointer(ys.pointer), ld, 1, beta: 0, col.pointer, ld)
                    for i in 0..<count {
                        let xg = x + ((first + i) * g.bigChannels + grp * cbg) * plane
                        xg.update(repeating: 0, count: cbg * plane)
                        col2imAdd(UnsafePointer(col.pointer + i * P), channels: cbg, g, into: xg, ld: ld)
                        if let bias {
                            for c in 0..<cbg {
                                let v = bias[grp * cbg + c], row = xg + c * plane
                                for j in 0..<plane { row[j] += v }
                            }
                        }
                    }
                }
            }
            ys.free()
            col.free()
            return
        }
        let col = pointwise ? nil : ScratchBuffer<T>(count: K * P)
        for i in images {
            for grp in 0..<g.groups {
                let xg = x + (i * g.bigChannels + grp * cbg) * plane
                let yg = y + (i * g.smallChannels + grp * csg) * P
                // colᵀ-shaped product Wgᵀ (K × csg) · Yg (csg × P).
                let wg = w + grp * csg * K
                if let col {
                    T.gemm(K, P, csg, wg, 1, K, yg, P, 1, beta: 0, col.pointer, P)
                    xg.update(repeating: 0, count: cbg * plane)
                    col2imAdd(col.pointer, channels: cbg, g, into: xg, ld: P)
                } else {
                    T.gemm(K, P, csg, wg, 1, K, yg, P, 1, beta: 0, xg, P)
                }
                if let bias {
                    for c in 0..<cbg {
                        let v = bias[grp * cbg + c], row = xg + c * plane
                        for j in 0..<plane { row[j] += v }
                    }
                }
            }
        }
        col?.free()
    }
}

/// dW = Σₙ Y[n] · im2col(X[n])ᵀ, per group; `dw` is `[Csmall, Cbig/groups, kernel]` and is overwritten.
func convWeightGradKernel<T: ConvElement>(_ y: UnsafePointer<T>, _ x: UnsafePointer<T>, _ dw: UnsafeMutablePointer<T>,
                                          batch n: Int, _ g: ConvGeometry) {
    if let taps = g.liveTaps {
        let cg = g.cropped(to: taps)
        let dwc = ScratchBuffer<T>(count: g.smallChannels * cg.colRows)
        convWeightGradKernel(y, x, dwc.pointer, batch: n, cg)
        copyLiveTaps(dw, dwc.pointer, rows: g.smallChannels * g.bigChannels / g.groups, kernel: g.kernel, taps: taps,
                     toCropped: false)
        dwc.free()
        return
    }
    if T.self == Float.self, n > 0, let problem = WinogradProblem(forward: g, batch: n) {
        winogradWeightGradient(UnsafeRawPointer(y).assumingMemoryBound(to: Float.self),
                               UnsafeRawPointer(x).assumingMemoryBound(to: Float.self),
                               UnsafeMutableRawPointer(dw).assumingMemoryBound(to: Float.self), batch: n, problem)
        return
    }
    if n > 0, DirectConvolution.applies(g, T.self) {
        directWeightGradient(UnsafeRawPointer(y).assumingMemoryBound(to: Float.self),
                             UnsafeRawPointer(x).assumingMemoryBound(to: Float.self),
                             UnsafeMutableRawPointer(dw).assumingMemoryBound(to: Float.self), batch: n, g)
        return
    }
    let P = g.smallPlane, K = g.colRows
    let cbg = g.bigChannels / g.groups, csg = g.smallChannels / g.groups
    let wCount = g.smallChannels * K
    guard n > 0 else {
        dw.update(repeating: 0, count: wCount)
        return
    }
    let chunks = imageChunks(n, macsPerImage: g.smallChannels * K * P)
    let pointwise = g.isPointwise
    // Chunk 0 sums into dw itself, the others into partial buffers added at the end.
    let partials = chunks > 1 ? ScratchBuffer<T>(count: (chunks - 1) * wCount) : nil
    forEachImageChunk(n, chunks: chunks) { chunk, images in
        let acc = chunk == 0 ? dw : partials!.pointer + (chunk - 1) * wCount
        let block = imagesPerGEMM(g, images: images.count)
        if block > 1 {
            // Several images per GEMM: dWg += Yg (csg × count·P) · colᵀ (count·P × K) with their columns side by side.
            let col = ScratchBuffer<T>(count: K * block * P), ys = ScratchBuffer<T>(count: csg * block * P)
            var beta: T = 0
            forEachImageBlock(images, block: block) { first, count in
                let ld = count * P
                for grp in 0..<g.groups {
                    copyImageRows(UnsafeMutablePointer(mutating: y + (first * g.smallChannels + grp * csg) * P),
                                  imageStride: g.smallChannels * P, rows: csg, count: count, plane: P, ys.pointer, toBlock: true)
                    im2colImages(x, first: first, count: count, group: grp, g, into: col.pointer)
                    T.gemm(csg, K, ld, UnsafePointer(ys.pointer), ld, 1, UnsafePointer(col.pointer), 1, ld, beta: beta,
                           acc + grp * csg * K, K)
                }
                beta = 1
            }
            ys.free()
            col.free()
            return
        }
        let col = pointwise ? nil : ScratchBuffer<T>(count: K * P)
        for (k, i) in images.enumerated() {
            let beta: T = k == 0 ? 0 : 1
            for grp in 0..<g.groups {
                let xg = x + (i * g.bigChannels + grp * cbg) * g.bigPlane
                let yg = y + (i * g.smallChannels + grp * csg) * P
                let b: UnsafePointer<T>
                if let col {
                    im2col(xg, channels: cbg, g, into: col.pointer, ld: P)
                    b = UnsafePointer(col.pointer)
                } else {
                    b = xg
                }
                // dWg (csg × K) += Yg (csg × P) · colᵀ (P × K)
                T.gemm(csg, K, P, yg, P, 1, b, 1, P, beta: beta, acc + grp * csg * K, K)
            }
        }
        if images.isEmpty { acc.update(repeating: 0, count: wCount) }
        col?.free()
    }
    if let partials {
        for c in 0..<(chunks - 1) {
            let p = partials.pointer + c * wCount
            for j in 0..<wCount { dw[j] += p[j] }
        }
        partials.free()
    }
}
