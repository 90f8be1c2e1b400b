import CTorchKernels

/// The three kernels every convolution is made of (forward, transposed, weight gradient), over up to three
/// spatial dims, as im2col/col2im (Im2col.swift) around the packed GEMM of CTorchKernels — unless a faster algorithm takes the
/// shape: Winograd F(2×2, 3×3) (WinogradKernels.swift), the direct kernels for short im2col matrices
/// (DirectConvolution.swift) or the depthwise loops (DepthwiseConvolution.swift). Kernel taps that read only padding
/// (ConvolutionTapCropping.swift) are cropped before these kernels run: the forward and transposed kernels take a
/// geometry with live taps only (the ops pass `ConvWeightCrop`'s weight and geometry), and the weight gradient
/// computes the cropped taps and writes zeros to the others itself.
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

/// `imageChunks` for the im2col GEMM paths, with two exceptions, both when the whole batch goes into one GEMM
/// (small planes, see `imagesPerGEMM`): one chunk, the GEMM splitting the weight's rows or the columns over the
/// threads and the layout copies (im2col, col2im, the block gathers) splitting the images.
/// - The weight matrix has at least 4× as many rows as that GEMM has columns. One chunk of images per thread has
///   every thread pack the whole weight (and, for the weight gradient, sum partial copies of it), which costs more
///   than splitting one GEMM's weight rows. The 4× keeps shapes whose im2col would cost about what the duplicate
///   packing does on image chunks.
/// - A thread's share of the columns would be under `minColumnsPerThread`: with many threads and small planes each
///   thread would pack the whole weight to multiply it by a few columns, or write a whole partial weight gradient
///   from them, so the redundant work grows with the thread count. The rule depends on the thread count, so 1 and
///   2 threads keep their schedule.
/// (figures: docs/performance.md, "Convolution scheduling")
func gemmImageChunks(_ g: ConvGeometry, batch n: Int) -> Int {
    let columns = n * g.smallPlane, K = g.colRows
    let threads = Int(ct_get_num_threads())
    if n > 1, g.groups == 1, imagesPerGEMM(g, images: n) == n, g.smallChannels * K * columns >= 1 << 19,
       g.smallChannels >= 4 * columns || columns < threads * minColumnsPerThread {
        return 1
    }
    return imageChunks(n, macsPerImage: g.smallChannels * K * g.smallPlane)
}

/// Fewest GEMM columns (images × output positions) per thread for image chunks (`gemmImageChunks`): a quarter of
/// `minGEMMColumns`, the N where the packed micro-kernels reach their speed, since below it packing the weight
/// costs more than the multiply-adds it feeds. Low enough that 2-thread schedules of common batches keep image
/// chunks.
private let minColumnsPerThread = 64

/// Elements a pool chunk of the layout copies (im2col, col2im, block gathers) gets at least: these are strided
/// copies, a few hundred nanoseconds per 16 K elements, so below that a region's dispatch would cost more than it
/// saves.
private let layoutCopyGrain = 16_384

/// Runs `body(i)` for each image index `0..<count`, over the pool when the copies are large enough
/// (`elementsPerImage` each); inline inside a region (image chunks), where nesting runs inline anyway.
@inline(__always)
private func forEachImageCopy(_ count: Int, elementsPerImage: Int, _ body: (Int) -> Void) {
    let grain = Swift.max(1, layoutCopyGrain / Swift.max(elementsPerImage, 1))
    parallelFor(count, grain: grain) { lo, hi in
        for i in lo..<hi { body(i) }
    }
}

/// Images whose im2col matrices sit side by side in one GEMM. A per-image GEMM packs the whole weight matrix
/// (Csmall × K) to multiply it by P columns; where P is small (deep stages on small images, down to P = 1) that
/// packing dominates. So images are grouped until the GEMM has `minGEMMColumns` columns (the N at which the
/// packed kernels reach their speed; it is a property of the micro-kernel, not of the cache), keeping the
/// column block under `maxColumnBlockElements` (16 MB of float32, a share of any current L3 or less).
/// (figures: docs/performance.md, "Convolution scheduling")
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
private func im2colImages<T: ConvElement>(_ x: UnsafePointer<T>, first: Int, count: Int, group grp: Int, _ plan: Im2colPlan,
                                          into col: UnsafeMutablePointer<T>) {
    let g = plan.geometry, cbg = g.bigChannels / g.groups, P = g.smallPlane
    if g.isPointwise {
        // im2col is the identity: the images' channel rows side by side. (The row walk would spend a call and its
        // bookkeeping per channel and image, on rows as short as one element.)
        copyImageRows(UnsafeMutablePointer(mutating: x + (first * g.bigChannels + grp * cbg) * P), imageStride: g.bigChannels * P,
                      rows: cbg, count: count, plane: P, col, toBlock: true)
        return
    }
    forEachImageCopy(count, elementsPerImage: g.colRows * P) { i in
        plan.im2col(x + ((first + i) * g.bigChannels + grp * cbg) * g.bigPlane, channels: cbg, into: col + i * P, ld: count * P)
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
    // Images over the pool: each writes its own rows of the block (or of the tensor).
    forEachImageCopy(count, elementsPerImage: rows * P) { i in
        if P < 8 {
            // Planes shorter than a vector: element loops (a copy call per row costs more than its few elements).
            let t = tensor + i &* imageStride, b = block + i &* P
            for r in 0..<rows {
                let tr = t + r &* P, br = b + r &* count &* P
                for j in 0..<P {
                    if toBlock { br[j] = tr[j] } else { tr[j] = br[j] }
                }
            }
            return
        }
        for r in 0..<rows {
            let t = tensor + i * imageStride + r * P, b = block + r * count * P + i * P
            if toBlock { b.update(from: t, count: P) } else { t.update(from: b, count: P) }
        }
    }
}

/// C (m × n, row stride n) = W (m × k, contiguous) · B (k × n, row stride n) + beta·C: the forward GEMM of one
/// group, from the packed weight when there is one (float32 and one group, so `packed` is `w`) and n is at least 16
/// (see `ct_sgemm_prepacked`).
@inline(__always)
private func weightGEMM<T: ConvElement>(_ m: Int, _ n: Int, _ k: Int, _ w: UnsafePointer<T>, _ b: UnsafePointer<T>,
                                        beta: T, _ c: UnsafeMutablePointer<T>, _ packed: UnsafePointer<Float>?) {
    if T.self == Float.self, n >= 16, let packed {
        ct_sgemm_prepacked(Int64(m), Int64(n), Int64(k), 1, packed, UnsafeRawPointer(b).assumingMemoryBound(to: Float.self),
                           Int64(n), 1, unsafeBitCast(beta, to: Float.self),
                           UnsafeMutableRawPointer(c).assumingMemoryBound(to: Float.self), Int64(n))
        return
    }
    T.gemm(m, n, k, w, k, 1, b, n, 1, beta: beta, c, n)
}

/// Y = conv(X, W) (+ bias per small channel). `x` is `[n, Cbig, big]`, `w` `[Csmall, Cbig/groups, kernel]`,
/// `y` `[n, Csmall, small]`, all contiguous; every tap of `g` live.
func convSmallFromBigKernel<T: ConvElement>(_ x: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                            _ y: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry,
                                            packedWeight: (PackedGEMMWeight.Form) -> UnsafePointer<Float>? = { _ in nil }) {
    assert(g.liveTaps == nil, "crop dead taps first (ConvWeightCrop)")
    if DepthwiseConvolution.applies(g) { return depthwiseSmallFromBig(x, w, bias: bias, y, batch: n, g) }
    if T.self == Float.self, let problem = WinogradProblem(forward: g, batch: n, packedFilters: true) {
        // Before the threads start: the lookup may pack.
        let packed = packedWeight(.winogradFilters(outChannels: problem.outChannels, inChannels: problem.inChannels))
        if packed != nil || problem.wins(batch: n, packedFilters: false) {
            winogradConvolution(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                                bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                                UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), batch: n, problem,
                                packedFilters: packed)
            return
        }
    }
    if DirectConvolution.applies(g, T.self) {
        directConvolution(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), UnsafeRawPointer(w).assumingMemoryBound(to: Float.self),
                          bias: bias.map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) },
                          UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), batch: n, g)
        return
    }
    let P = g.smallPlane, K = g.colRows
    let cbg = g.bigChannels / g.groups, csg = g.smallChannels / g.groups
    let chunks = gemmImageChunks(g, batch: n)
    let pointwise = g.isPointwise, plan = Im2colPlan(g)
    let packed = packedWeight(.matrix(rows: csg, cols: K))     // before the threads start: the lookup may pack
    forEachImageChunk(n, chunks: chunks) { _, images in
        let block = imagesPerGEMM(g, images: images.count)
        if block > 1 {
            // Several images per GEMM: their columns side by side, the result copied out per image.
            let col = ScratchBuffer<T>(count: K * block * P), out = ScratchBuffer<T>(count: csg * block * P)
            forEachImageBlock(images, block: block) { first, count in
                let ld = count * P
                for grp in 0..<g.groups {
                    im2colImages(x, first: first, count: count, group: grp, plan, into: col.pointer)
                    if let bias {
                        for r in 0..<csg { (out.pointer + r * ld).update(repeating: bias[grp * csg + r], count: ld) }
                    }
                    weightGEMM(csg, ld, K, w + grp * csg * K, UnsafePointer(col.pointer), beta: bias == nil ? 0 : 1, out.pointer, packed)
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
                    plan.im2col(xg, channels: cbg, into: col.pointer, ld: P)
                    b = UnsafePointer(col.pointer)
                } else {
                    b = xg
                }
                weightGEMM(csg, P, K, w + grp * csg * K, b, beta: beta, yg, packed)
            }
        }
        col?.free()
    }
}

/// X = convᵀ(Y, W) (+ bias per big channel): the adjoint of `convSmallFromBigKernel` in X; every tap of `g` live.
func convBigFromSmallKernel<T: ConvElement>(_ y: UnsafePointer<T>, _ w: UnsafePointer<T>, bias: UnsafePointer<T>?,
                                            _ x: UnsafeMutablePointer<T>, batch n: Int, _ g: ConvGeometry) {
    assert(g.liveTaps == nil, "crop dead taps first (ConvWeightCrop)")
    if DepthwiseConvolution.applies(g) { return depthwiseBigFromSmall(y, w, bias: bias, x, batch: n, g) }
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
    let chunks = gemmImageChunks(g, batch: n)
    let pointwise = g.isPointwise, plan = Im2colPlan(g)
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
                    if pointwise {
                        // col2im is the identity (see `im2colImages`).
                        copyImageRows(x + (first * g.bigChannels + grp * cbg) * plane, imageStride: g.bigChannels * plane,
                                      rows: cbg, count: count, plane: P, col.pointer, toBlock: false)
                    }
                    forEachImageCopy(count, elementsPerImage: K * P) { i in
                        let xg = x + ((first + i) * g.bigChannels + grp * cbg) * plane
                        if !pointwise {
                            xg.update(repeating: 0, count: cbg * plane)
                            plan.col2imAdd(UnsafePointer(col.pointer + i * P), channels: cbg, into: xg, ld: ld)
                        }
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
                    plan.col2imAdd(col.pointer, channels: cbg, into: xg, ld: P)
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
    if DepthwiseConvolution.applies(g) { return depthwiseWeightGrad(y, x, dw, batch: n, g) }
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
    let chunks = gemmImageChunks(g, batch: n)
    let pointwise = g.isPointwise, plan = Im2colPlan(g)
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
                    im2colImages(x, first: first, count: count, group: grp, plan, into: col.pointer)
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
                    plan.im2col(xg, channels: cbg, into: col.pointer, ld: P)
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
        // Split over the pool too: the weights of a deep stage are MBs (9.4 MB for ResNet's 512 → 512 3×3).
        let sums = partials.pointer
        parallelFor(wCount, grain: elementwiseGrain) { lo, hi in
            for c in 0..<(chunks - 1) {
                let p = sums + c * wCount
                for j in lo..<hi { dw[j] += p[j] }
            }
        }
        partials.free()
    }
}
