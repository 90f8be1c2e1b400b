import CTorchKernels

/// Winograd F(2×2, 3×3) convolution (Lavin & Gray, 2015) for 3×3, stride-1, undilated, ungrouped 2-D
/// convolutions with enough channels and output: each 2×2 output tile costs 16 multiply-adds per
/// (input, output) channel pair instead of 36, so the GEMM part does 2.25× less work than im2col's.
///
/// The steps, for a block of whole images (≤ `winogradBlockTiles` tiles):
/// 1. U[ξ] (Cout × Cin) = G·g·Gᵀ for every 3×3 filter g, ξ = 4i + j over the 4×4 transformed tile (once per call,
///    or once per weight when it is packed ahead: `PackedGEMMWeight.Form.winogradFilters`);
/// 2. V[ξ] (Cin × tiles) = Bᵀ·d·B for every overlapping 4×4 input tile d (zero outside the input);
/// 3. M[ξ] = U[ξ]·V[ξ], sixteen GEMMs on the packed micro-kernels;
/// 4. every 2×2 output tile = Aᵀ·m·A (+ bias), clipped at the output's edge.
/// The weight gradient runs the same transforms the other way round (`winogradWeightGradient`).
/// The tile transforms run in CTorchKernels (`ct_winograd_input_plane_f32` and its twins, per ISA) one channel
/// plane at a time, in bands of tile rows: the even and odd input columns are split apart, and every step is a
/// unit-stride loop over all of a band's tiles that the C compiler vectorises at the CPU's width, however narrow
/// the image: a loop along one tile row would leave narrow images' few tiles short of a vector, and Swift at
/// baseline x86-64 cannot use the wide vectors at all. float32 only: float64 convolutions stay on im2col, exact
/// to rounding.
///
/// Rounding: the transforms add and subtract a few inputs, so results differ from im2col's by a few ulps of
/// the inputs' magnitude (about 1e-6 relative in float32 on unit-normal data, inside PyTorch's own conv
/// tolerance; oneDNN uses Winograd too).
/// (figures: docs/performance.md, "Winograd")

/// Kill switch for tests and A/B runs: false routes every convolution through im2col.
nonisolated(unsafe) var winogradEnabled = true

/// Output tiles per block: V and M then take 16·C·tiles elements each (2 MB apiece at C = 64), about the L2 of
/// current x86 cores (1–2 MB); larger blocks only lengthen the GEMMs' N, which is already past their knee.
private let winogradBlockTiles = 512

/// Floats between consecutive ξ planes of V, M and Z (`channels · tiles` plus one cache line). The transforms
/// write or read all 16 planes of a tile at once; planes a multiple of 4 KB apart (64 channels × 512 tiles is
/// 128 KB) would put those 16 streams in the same L1 sets, where they evict each other; the skew spreads them
/// over 16 sets.
@inline(__always)
private func winogradPlaneStride(channels: Int, tiles: Int) -> Int { channels * tiles + 16 }

/// One Winograd problem: `inChannels` planes of height × width in, `outChannels` planes of outHeight × outWidth
/// out, zero padding `padH`/`padW` in front of the input (the same or less behind it).
struct WinogradProblem {
    var inChannels: Int, outChannels: Int
    var height: Int, width: Int
    var outHeight: Int, outWidth: Int
    var padH: Int, padW: Int
    var tilesH: Int { (outHeight + 1) / 2 }
    var tilesW: Int { (outWidth + 1) / 2 }
    var tilesPerImage: Int { tilesH * tilesW }

    /// The forward problem of a convolution, or nil when Winograd does not apply or would not win (`wins`);
    /// `packedFilters`: whether U can come packed ahead.
    init?(forward g: ConvGeometry, batch: Int, packedFilters: Bool = false) {
        guard winogradEnabled, g.kernel == [1, 3, 3], g.stride == [1, 1, 1], g.dilation == [1, 1, 1], g.groups == 1,
              g.big[0] == 1, g.small[0] == 1, g.padding[0] == 0 else { return nil }
        self.init(inChannels: g.bigChannels, outChannels: g.smallChannels, height: g.big[1], width: g.big[2],
                  outHeight: g.small[1], outWidth: g.small[2], padH: g.padding[1], padW: g.padding[2])
        guard wins(batch: batch, packedFilters: packedFilters) else { return nil }
    }

    /// The input gradient of a convolution (`convᵀ`): a convolution of the output gradient with the flipped,
    /// transposed filters and padding 2 − p, or nil as above (and for p > 2).
    init?(transposed g: ConvGeometry, batch: Int) {
        guard winogradEnabled, g.kernel == [1, 3, 3], g.stride == [1, 1, 1], g.dilation == [1, 1, 1], g.groups == 1,
              g.big[0] == 1, g.small[0] == 1, g.padding[0] == 0, g.padding[1] <= 2, g.padding[2] <= 2 else { return nil }
        self.init(inChannels: g.smallChannels, outChannels: g.bigChannels, height: g.small[1], width: g.small[2],
                  outHeight: g.big[1], outWidth: g.big[2], padH: 2 - g.padding[1], padW: 2 - g.padding[2])
        guard wins(batch: batch, packedFilters: false) else { return nil }
    }

    private init(inChannels: Int, outChannels: Int, height: Int, width: Int, outHeight: Int, outWidth: Int, padH: Int, padW: Int) {
        (self.inChannels, self.outChannels, self.height, self.width) = (inChannels, outChannels, height, width)
        (self.outHeight, self.outWidth, self.padH, self.padW) = (outHeight, outWidth, padH, padW)
    }

    /// Whether Winograd beats im2col: at least 16 channels each way (below that the transforms, ~30 adds per tile
    /// and channel, cost more than the multiply-adds they save) and enough tiles in the batch. With U transformed
    /// and packed per call, 64 tiles: fewer make sixteen skinny GEMMs that each pack a whole U[ξ]. With U packed
    /// ahead there is no such cost, and 16 tiles (one micro-kernel's width on AVX2) win: at 512 channels on 7×7
    /// (16 tiles), 1.9 ms against 3.4 ms for the im2col GEMM alone, one thread.
    /// (figures: docs/performance.md, "Winograd")
    func wins(batch: Int, packedFilters: Bool) -> Bool {
        inChannels >= 16 && outChannels >= 16 && outHeight > 0 && outWidth > 0
            && batch * tilesPerImage >= (packedFilters ? 16 : 64)
    }
}

/// One block of whole images in the Winograd buffers: V (the input channels' 16 transformed planes) and the 16 planes
/// of the output channels (M forward, Z for the weight gradient).
private struct WinogradBlock {
    var first: Int, count: Int, tiles: Int
    var v: UnsafeMutablePointer<Float>, vStride: Int
    var out: UnsafeMutablePointer<Float>, outStride: Int
}

/// Runs `body` over `images` in blocks of at most `winogradBlockTiles` tiles, with buffers sized for the largest
/// block (allocated once per call from the caching allocator).
private func forEachWinogradBlock(_ images: Range<Int>, _ p: WinogradProblem, _ body: (WinogradBlock) -> Void) {
    guard !images.isEmpty else { return }
    let perImage = p.tilesPerImage
    let imagesPerBlock = Swift.max(1, winogradBlockTiles / perImage)
    let blockTiles = Swift.min(imagesPerBlock, images.count) * perImage
    let v = ScratchBuffer<Float>(count: 16 * winogradPlaneStride(channels: p.inChannels, tiles: blockTiles))
    let out = ScratchBuffer<Float>(count: 16 * winogradPlaneStride(channels: p.outChannels, tiles: blockTiles))
    forEachImageBlock(images, block: imagesPerBlock) { first, count in
        let tiles = count * perImage
        body(WinogradBlock(first: first, count: count, tiles: tiles,
                           v: v.pointer, vStride: winogradPlaneStride(channels: p.inChannels, tiles: tiles),
                           out: out.pointer, outStride: winogradPlaneStride(channels: p.outChannels, tiles: tiles)))
    }
    out.free()
    v.free()
}

/// y = conv(x, w) (+ bias) by F(2×2, 3×3); `x` is `[n, Cin, H, W]`, `w` `[Cout, Cin, 3, 3]`, `y` `[n, Cout, OH, OW]`.
/// `packedFilters`: `w` as `PackedGEMMWeight.Form.winogradFilters` lays it out, or nil to transform it here.
func winogradConvolution(_ x: UnsafePointer<Float>, _ w: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
                         _ y: UnsafeMutablePointer<Float>, batch n: Int, _ p: WinogradProblem,
                         packedFilters: UnsafePointer<Float>? = nil) {
    let (cin, cout) = (p.inChannels, p.outChannels)
    let u = packedFilters == nil ? ScratchBuffer<Float>(count: 16 * cout * cin) : nil
    if let u { winogradTransformFilters(w, filters: cout * cin, into: u.pointer) }
    let perImage = p.tilesPerImage
    let chunks = imageChunks(n, macsPerImage: 16 * cin * cout * perImage)
    forEachImageChunk(n, chunks: chunks) { _, images in
        forEachWinogradBlock(images, p) { b in
            for i in 0..<b.count {
                winogradTransformInput(x + (b.first + i) * cin * p.height * p.width, p, into: b.v, tileOffset: i * perImage,
                                       tiles: b.tiles, planeStride: b.vStride)
            }
            // One chunk (a small batch, or one thread): the pool splits the sixteen GEMMs by position, each on one
            // thread, rather than each GEMM its columns. At batch 1 a deep stage has 16 tiles, a single column
            // panel, which one thread would multiply while the others wait. (Inside an image chunk this runs inline.)
            parallelFor(16, grain: 1) { lo, hi in
                for xi in lo..<hi {
                    if let packedFilters {
                        ct_sgemm_prepacked(Int64(cout), Int64(b.tiles), Int64(cin), 1, packedFilters + xi * cout * cin,
                                           b.v + xi * b.vStride, Int64(b.tiles), 1, 0, b.out + xi * b.outStride, Int64(b.tiles))
                    } else {
                        Float.gemm(cout, b.tiles, cin, u!.pointer + xi * cout * cin, cin, 1, b.v + xi * b.vStride, b.tiles, 1,
                                   beta: 0, b.out + xi * b.outStride, b.tiles)
                    }
                }
            }
            for i in 0..<b.count {
                winogradTransformOutput(b.out, p, tileOffset: i * perImage, tiles: b.tiles, planeStride: b.outStride,
                                        bias: bias, into: y + (b.first + i) * cout * p.outHeight * p.outWidth)
            }
        }
    }
    u?.free()
}

/// x = convᵀ(y, w) (+ bias) by F(2×2, 3×3): the convolution of `y` `[n, Csmall, OH, OW]` with the filters
/// flipped in space and transposed in channels (`w` is `[Csmall, Cbig, 3, 3]`), into `x` `[n, Cbig, H, W]`.
func winogradTransposedConvolution(_ y: UnsafePointer<Float>, _ w: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
                                   _ x: UnsafeMutablePointer<Float>, batch n: Int, _ p: WinogradProblem) {
    // p.inChannels is Csmall (the filters' first dim), p.outChannels Cbig.
    let flipped = ScratchBuffer<Float>(count: p.outChannels * p.inChannels * 9)
    for cs in 0..<p.inChannels {
        for cb in 0..<p.outChannels {
            let src = w + (cs * p.outChannels + cb) * 9, dst = flipped.pointer + (cb * p.inChannels + cs) * 9
            for k in 0..<9 { dst[k] = src[8 - k] }
        }
    }
    winogradConvolution(y, UnsafePointer(flipped.pointer), bias: bias, x, batch: n, p)
    flipped.free()
}

/// dw = Σₙ the weight gradient of `y = conv(x, w)` by F(2×2, 3×3), overwriting `dw` `[Cout, Cin, 3, 3]`; `dy` is
/// `[n, Cout, OH, OW]`, `x` `[n, Cin, H, W]`.
///
/// The forward is linear in the transformed filters U = G·g·Gᵀ: each output tile is Aᵀ·(U ⊙ V)·A. So
/// ∂L/∂U[ξ][co][ci] = Σ over tiles of Z[ξ][co][t]·V[ξ][ci][t] with Z = A·dy·Aᵀ the transformed output-gradient
/// tile (zero past the output's edge), and dw = Gᵀ·(∂L/∂U)·G. The sum over tiles is sixteen GEMMs with the
/// tiles as their inner dimension (Cout × tiles times tiles × Cin), accumulated block by block: 16 multiply-adds
/// per channel pair and 2×2 output tile instead of im2col's 36. Each image chunk of the pool sums its own
/// ∂L/∂U and the chunks are added before the final transform, unless the chunks would be short of tiles; then
/// the pool splits the sixteen positions instead.
func winogradWeightGradient(_ dy: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ dw: UnsafeMutablePointer<Float>,
                            batch n: Int, _ p: WinogradProblem) {
    let (cin, cout) = (p.inChannels, p.outChannels)
    let uCount = 16 * cout * cin
    let perImage = p.tilesPerImage
    var chunks = imageChunks(n, macsPerImage: 16 * cin * cout * perImage)
    let du: ScratchBuffer<Float>
    if chunks > 1, n * perImage < chunks * winogradMinTilesPerChunk {
        du = ScratchBuffer<Float>(count: uCount)
        winogradTransformedGradientByPosition(dy, x, into: du.pointer, batch: n, p)
        chunks = 1
    } else {
        du = ScratchBuffer<Float>(count: chunks * uCount)
        forEachImageChunk(n, chunks: chunks) { chunk, images in
            let acc = du.pointer + chunk * uCount
            guard !images.isEmpty else {
                acc.update(repeating: 0, count: uCount)
                return
            }
            var beta: Float = 0
            forEachWinogradBlock(images, p) { b in
                for i in 0..<b.count { winogradTransformTiles(dy, x, b, image: i, p) }
                for xi in 0..<16 { winogradAccumulatePosition(xi, b, beta: beta, into: acc, p) }
                beta = 1
            }
        }
    }
    // The chunks' sums and the filter transform split over the pool as well: 16·Cout·Cin floats are MBs for a deep
    // stage, too much for one thread while the others wait.
    let sums = du.pointer
    if chunks > 1 {
        parallelFor(uCount, grain: elementwiseGrain) { lo, hi in
            for c in 1..<chunks {
                let part = sums + c * uCount
                for j in lo..<hi { sums[j] += part[j] }
            }
        }
    }
    let filters = cout * cin
    parallelFor(filters, grain: elementwiseGrain / 16) { lo, hi in
        winogradTransformFilterGradient(UnsafePointer(sums), filters: filters, range: lo..<hi, into: dw)
    }
    du.free()
}

/// Fewest tiles an image chunk of the Winograd weight gradient gets before the pool splits the 16 transform
/// positions instead (`winogradTransformedGradientByPosition`). Each image chunk writes and then adds a whole
/// 16·Cout·Cin partial ∂L/∂U; with fewer tiles than this per chunk that traffic outweighs the chunk's GEMM work,
/// which happens with many threads on small planes. Common 2-thread schedules keep image chunks.
/// (figures: docs/performance.md, "Winograd")
private let winogradMinTilesPerChunk = 64

/// ∂L/∂U for the whole batch with the pool split over the 16 transform positions ξ: each block's tile transforms
/// run images over the pool, then each position's GEMM ∂L/∂U[ξ] += Z[ξ]·V[ξ]ᵀ runs on one thread with every
/// tile of the block as its inner dimension. Positions write disjoint planes, so there are no partial sums.
private func winogradTransformedGradientByPosition(_ dy: UnsafePointer<Float>, _ x: UnsafePointer<Float>,
                                                   into du: UnsafeMutablePointer<Float>, batch n: Int,
                                                   _ p: WinogradProblem) {
    var beta: Float = 0
    forEachWinogradBlock(0..<n, p) { b in
        parallelFor(b.count, grain: 1) { lo, hi in
            for i in lo..<hi { winogradTransformTiles(dy, x, b, image: i, p) }
        }
        let blockBeta = beta
        parallelFor(16, grain: 1) { lo, hi in
            for xi in lo..<hi { winogradAccumulatePosition(xi, b, beta: blockBeta, into: du, p) }
        }
        beta = 1
    }
}

/// V (input) and Z (output gradient) tiles of image `image` of block `b`, at its tile offset in the block.
@inline(__always)
private func winogradTransformTiles(_ dy: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ b: WinogradBlock,
                                    image i: Int, _ p: WinogradProblem) {
    let (cin, cout, perImage) = (p.inChannels, p.outChannels, p.tilesPerImage)
    winogradTransformInput(x + (b.first + i) * cin * p.height * p.width, p, into: b.v, tileOffset: i * perImage,
                           tiles: b.tiles, planeStride: b.vStride)
    winogradTransformOutputGradient(dy + (b.first + i) * cout * p.outHeight * p.outWidth, p, into: b.out,
                                    tileOffset: i * perImage, tiles: b.tiles, planeStride: b.outStride)
}

/// ∂L/∂U[ξ] (Cout × Cin) (= or +=, by `beta`) Z[ξ] (Cout × tiles) · V[ξ]ᵀ (tiles × Cin) over block `b`'s tiles.
@inline(__always)
private func winogradAccumulatePosition(_ xi: Int, _ b: WinogradBlock, beta: Float, into du: UnsafeMutablePointer<Float>,
                                        _ p: WinogradProblem) {
    let (cin, cout) = (p.inChannels, p.outChannels)
    Float.gemm(cout, cin, b.tiles, b.out + xi * b.outStride, b.tiles, 1, b.v + xi * b.vStride, 1, b.tiles,
               beta: beta, du + xi * cout * cin, cin)
}

/// dw[f] = Gᵀ·m·G for each filter f, m[i][j] = du[(4i + j)·filters + f]: the adjoint of `winogradTransformFilters`.
/// Gᵀ = [[1, ½, ½, 0], [0, ½, −½, 0], [0, ½, ½, 1]], so a 4-vector r maps to (r0 + ½(r1 + r2), ½(r1 − r2), ½(r1 + r2) + r3).
private func winogradTransformFilterGradient(_ du: UnsafePointer<Float>, filters: Int, range: Range<Int>,
                                             into dw: UnsafeMutablePointer<Float>) {
    let half: Float = 0.5
    @inline(__always) func reduce(_ r0: Float, _ r1: Float, _ r2: Float, _ r3: Float) -> (Float, Float, Float) {
        (r0 + half * (r1 + r2), half * (r1 - r2), half * (r1 + r2) + r3)
    }
    for f in range {
        @inline(__always) func m(_ i: Int, _ j: Int) -> Float { du[(4 * i + j) * filters + f] }
        // Rows of Gᵀ·m (3 × 4), one column j at a time.
        var t0 = SIMD4<Float>(), t1 = SIMD4<Float>(), t2 = SIMD4<Float>()
        for j in 0..<4 {
            (t0[j], t1[j], t2[j]) = reduce(m(0, j), m(1, j), m(2, j), m(3, j))
        }
        let g = dw + f * 9
        (g[0], g[1], g[2]) = reduce(t0[0], t0[1], t0[2], t0[3])
        (g[3], g[4], g[5]) = reduce(t1[0], t1[1], t1[2], t1[3])
        (g[6], g[7], g[8]) = reduce(t2[0], t2[1], t2[2], t2[3])
    }
}

/// Z[ξ][co][tileOffset + tile] = (A·dy·Aᵀ)[ξ] for each 2×2 tile of one image's output gradient (zero past the
/// output's edge), one channel plane at a time in CTorchKernels.
private func winogradTransformOutputGradient(_ dy: UnsafePointer<Float>, _ p: WinogradProblem, into z: UnsafeMutablePointer<Float>,
                                             tileOffset: Int, tiles: Int, planeStride: Int) {
    let (ow, oh) = (p.outWidth, p.outHeight)
    forEachChannelRange(p.outChannels, plane: oh * ow, p) { channels, scratch in
        for co in channels {
            ct_winograd_grad_plane_f32(dy + co * oh * ow, Int64(oh), Int64(ow), Int64(p.tilesH), Int64(p.tilesW),
                                       z + co * tiles + tileOffset, Int64(planeStride), scratch)
        }
    }
}

/// U[ξ][co][ci] = (G·g·Gᵀ)[ξ] for each of the `filters` = Cout·Cin filters g = w[co][ci],
/// G = [[1, 0, 0], [½, ½, ½], [½, −½, ½], [0, 0, 1]].
///
/// The 16 planes of U lie Cout·Cin floats apart — 64 KB at 128 channels, a multiple of 4 KB — so storing each
/// filter's 16 values straight into them would make 16 store streams that alias in the L1. Blocks of `block`
/// consecutive filters are transformed into a small local [16][block] tile first, then copied to the planes as
/// 16 contiguous runs.
func winogradTransformFilters(_ w: UnsafePointer<Float>, filters: Int, into u: UnsafeMutablePointer<Float>) {
    let half: Float = 0.5
    let block = 64
    // Blocks of 64 filters split over the pool (a deep stage has 10⁵ filters: too many for one thread while the
    // others wait).
    parallelFor((filters + block - 1) / block, grain: elementwiseGrain / (16 * block)) { firstBlock, endBlock in
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 16 * block) { tileBuffer in
            let tile = tileBuffer.baseAddress!
            for blockIndex in firstBlock..<endBlock {
                let start = blockIndex * block, count = Swift.min(block, filters - start)
                for b in 0..<count {
                    let g = w + (start + b) * 9
                    // Row i of r = G·g is (r0, r1, r2); row i of U = r·Gᵀ is (r0, ½(r0 + r1 + r2), ½(r0 − r1 + r2), r2).
                    func emit(_ i: Int, _ r0: Float, _ r1: Float, _ r2: Float) {
                        tile[(4 * i) * block + b] = r0
                        tile[(4 * i + 1) * block + b] = half * (r0 + r1 + r2)
                        tile[(4 * i + 2) * block + b] = half * (r0 - r1 + r2)
                        tile[(4 * i + 3) * block + b] = r2
                    }
                    emit(0, g[0], g[1], g[2])
                    emit(1, half * (g[0] + g[3] + g[6]), half * (g[1] + g[4] + g[7]), half * (g[2] + g[5] + g[8]))
                    emit(2, half * (g[0] - g[3] + g[6]), half * (g[1] - g[4] + g[7]), half * (g[2] - g[5] + g[8]))
                    emit(3, g[6], g[7], g[8])
                }
                for xi in 0..<16 { (u + xi * filters + start).update(from: tile + xi * block, count: count) }
            }
        }
    }
}

/// V[ξ][ci][tileOffset + tile] = (Bᵀ·d·B)[ξ] for each 4×4 input tile d of one image,
/// Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0], [0, −1, 1, 0], [0, 1, 0, −1]], one channel plane at a time in CTorchKernels.
private func winogradTransformInput(_ x: UnsafePointer<Float>, _ p: WinogradProblem, into v: UnsafeMutablePointer<Float>,
                                    tileOffset: Int, tiles: Int, planeStride: Int) {
    let (width, height) = (p.width, p.height)
    forEachChannelRange(p.inChannels, plane: height * width, p) { channels, scratch in
        for ci in channels {
            ct_winograd_input_plane_f32(x + ci * height * width, Int64(height), Int64(width), Int64(p.padH), Int64(p.padW),
                                        Int64(p.tilesH), Int64(p.tilesW), v + ci * tiles + tileOffset, Int64(planeStride), scratch)
        }
    }
}

/// One image's output: each 2×2 tile = Aᵀ·m·A (+ bias), Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]], clipped at the edge,
/// one channel plane at a time in CTorchKernels.
private func winogradTransformOutput(_ m: UnsafePointer<Float>, _ p: WinogradProblem, tileOffset: Int, tiles: Int,
                                     planeStride: Int, bias: UnsafePointer<Float>?, into y: UnsafeMutablePointer<Float>) {
    let (ow, oh) = (p.outWidth, p.outHeight)
    forEachChannelRange(p.outChannels, plane: oh * ow, p) { channels, scratch in
        for co in channels {
            ct_winograd_output_plane_f32(m + co * tiles + tileOffset, Int64(planeStride), Int64(p.tilesH), Int64(p.tilesW),
                                         bias?[co] ?? 0, y + co * oh * ow, Int64(oh), Int64(ow), scratch)
        }
    }
}

/// Plane elements a pool chunk of the tile transforms gets at least: each element costs a few adds, so below
/// this a region's dispatch (a few µs) would cost more than the split saves.
private let winogradTransformGrain = 16_384

/// Runs `body(channels, scratch)` over `0..<count` channel planes of `plane` elements, split over the pool (inline
/// inside a region, where image chunks split the work already), each pool chunk with its own transform scratch.
@inline(__always)
private func forEachChannelRange(_ count: Int, plane: Int, _ p: WinogradProblem,
                                 _ body: (Range<Int>, UnsafeMutablePointer<Float>) -> Void) {
    parallelFor(count, grain: Swift.max(1, winogradTransformGrain / Swift.max(plane, 1))) { lo, hi in
        let scratch = ScratchBuffer<Float>(count: Int(ct_winograd_scratch_f32(Int64(p.tilesW))))
        body(lo..<hi, scratch.pointer)
        scratch.free()
    }
}
