/// Pooling kernels over up to three spatial dims (1-D and 2-D pooling are 3-D pooling with leading sizes 1):
/// max pooling with saved argmax indices, average pooling with PyTorch's divisor rules, and their backward
/// passes. Work is split over the (N·C) planes, each plane independent, so the backward scatter needs no locks.

/// The window of each output position along one dim: the first input index, the step between window elements,
/// and the range of window elements that fall inside the input.
struct PoolAxis {
    /// First input index of output `o`'s window (may be negative: padding).
    var start: [Int]
    /// Window elements `j` with `start + j·step` inside the input.
    var valid: [Range<Int>]
    /// The step between window elements (the dilation).
    var step: Int
    /// Average pooling's pool size with padding counted (clipped at input + padding), per output.
    var paddedCount: [Int]

    /// A fixed window of `kernel` elements every `stride`, starting `padding` before the input.
    init(input: Int, output: Int, kernel: Int, stride: Int, padding: Int, dilation: Int) {
        step = dilation
        start = (0..<output).map { $0 * stride - padding }
        valid = start.map { s in
            let lo = s >= 0 ? 0 : (-s + dilation - 1) / dilation
            let hi = Swift.min(kernel, s >= input ? 0 : (input - 1 - s) / dilation + 1)
            return lo..<Swift.max(lo, hi)
        }
        paddedCount = start.map { s in Swift.min(s + kernel, input + padding) - s }
    }

    /// Adaptive windows: output `o` covers `[⌊o·in/out⌋, ⌈(o+1)·in/out⌉)`.
    init(adaptiveInput input: Int, output: Int) {
        step = 1
        start = (0..<output).map { $0 * input / output }
        valid = (0..<output).map { o in 0..<(((o + 1) * input + output - 1) / output - o * input / output) }
        paddedCount = valid.map { $0.count }
    }
}

/// Three axes (D, H, W) and the plane sizes.
struct PoolGeometry {
    var axes: [PoolAxis]
    var input: [Int]
    var output: [Int]
    var inPlane: Int { input[0] * input[1] * input[2] }
    var outPlane: Int { output[0] * output[1] * output[2] }
}

/// Planes per parallel chunk so that a chunk touches about `elementwiseGrain` input elements.
private func planeGrain(_ g: PoolGeometry) -> Int { Swift.max(1, elementwiseGrain / Swift.max(g.inPlane, 1)) }

/// Calls `body(outIndex, d, h, w)` for each output position, with the three axes' window data.
@inline(__always)
private func forEachOutput(_ g: PoolGeometry, _ body: (_ o: Int, _ od: Int, _ oh: Int, _ ow: Int) -> Void) {
    var o = 0
    for od in 0..<g.output[0] {
        for oh in 0..<g.output[1] {
            for ow in 0..<g.output[2] {
                body(o, od, oh, ow)
                o += 1
            }
        }
    }
}

/// Max pooling of `planes` planes: writes each window's maximum (NaN wins, like PyTorch) and its flat index in
/// the input plane.
func maxPoolForwardKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, _ indices: UnsafeMutablePointer<Int64>,
                                           planes: Int, _ g: PoolGeometry) {
    let (ad, ah, aw) = (g.axes[0], g.axes[1], g.axes[2])
    let (H, W) = (g.input[1], g.input[2])
    parallelFor(planes, grain: planeGrain(g)) { lo, hi in
        for p in lo..<hi {
            let xp = x + p * g.inPlane, yp = y + p * g.outPlane, ip = indices + p * g.outPlane
            forEachOutput(g) { o, od, oh, ow in
                var best = -T.infinity
                var bestIndex = -1
                for jd in ad.valid[od] {
                    let id = ad.start[od] + jd * ad.step
                    for jh in ah.valid[oh] {
                        let rowBase = (id * H + ah.start[oh] + jh * ah.step) * W
                        for jw in aw.valid[ow] {
                            let idx = rowBase + aw.start[ow] + jw * aw.step
                            let v = xp[idx]
                            if bestIndex < 0 || v > best || v.isNaN {
                                best = v
                                bestIndex = idx
                            }
                        }
                    }
                }
                yp[o] = bestIndex < 0 ? -T.infinity : best
                ip[o] = Int64(Swift.max(bestIndex, 0))
            }
        }
    }
}

/// Scatters `gy` into `gx` (zeroed here) at the saved max indices.
func maxPoolBackwardKernel<T: FloatElement>(_ gy: UnsafePointer<T>, _ indices: UnsafePointer<Int64>, _ gx: UnsafeMutablePointer<T>,
                                            planes: Int, inPlane: Int, outPlane: Int) {
    parallelFor(planes, grain: Swift.max(1, elementwiseGrain / Swift.max(inPlane, 1))) { lo, hi in
        (gx + lo * inPlane).update(repeating: 0, count: (hi - lo) * inPlane)
        for p in lo..<hi {
            let gxp = gx + p * inPlane, gyp = gy + p * outPlane, ip = indices + p * outPlane
            for o in 0..<outPlane { gxp[Int(ip[o])] += gyp[o] }
        }
    }
}

/// The divisor of each output of an average pooling: `divisorOverride`, the window size with padding
/// (`countIncludePad`), or the number of input elements in the window.
private func averageDivisor(_ g: PoolGeometry, od: Int, oh: Int, ow: Int, countIncludePad: Bool, divisorOverride: Int?) -> Int {
    if let divisorOverride { return divisorOverride }
    let (ad, ah, aw) = (g.axes[0], g.axes[1], g.axes[2])
    if countIncludePad { return ad.paddedCount[od] * ah.paddedCount[oh] * aw.paddedCount[ow] }
    return ad.valid[od].count * ah.valid[oh].count * aw.valid[ow].count
}

/// Average pooling of `planes` planes (PyTorch's divisor rules; an empty window gives 0).
func avgPoolForwardKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, planes: Int, _ g: PoolGeometry,
                                           countIncludePad: Bool, divisorOverride: Int?) {
    let (ad, ah, aw) = (g.axes[0], g.axes[1], g.axes[2])
    let (H, W) = (g.input[1], g.input[2])
    parallelFor(planes, grain: planeGrain(g)) { lo, hi in
        for p in lo..<hi {
            let xp = x + p * g.inPlane, yp = y + p * g.outPlane
            forEachOutput(g) { o, od, oh, ow in
                var sum: T = 0
                for jd in ad.valid[od] {
                    let id = ad.start[od] + jd * ad.step
                    for jh in ah.valid[oh] {
                        let row = xp + (id * H + ah.start[oh] + jh * ah.step) * W + aw.start[ow]
                        for jw in aw.valid[ow] { sum += row[jw * aw.step] }
                    }
                }
                let div = averageDivisor(g, od: od, oh: oh, ow: ow, countIncludePad: countIncludePad, divisorOverride: divisorOverride)
                yp[o] = ad.valid[od].isEmpty || ah.valid[oh].isEmpty || aw.valid[ow].isEmpty ? 0 : sum / T(div)
            }
        }
    }
}

/// Spreads each output gradient over its window (divided like the forward) into `gx` (zeroed here).
func avgPoolBackwardKernel<T: FloatElement>(_ gy: UnsafePointer<T>, _ gx: UnsafeMutablePointer<T>, planes: Int, _ g: PoolGeometry,
                                            countIncludePad: Bool, divisorOverride: Int?) {
    let (ad, ah, aw) = (g.axes[0], g.axes[1], g.axes[2])
    let (H, W) = (g.input[1], g.input[2])
    parallelFor(planes, grain: planeGrain(g)) { lo, hi in
        (gx + lo * g.inPlane).update(repeating: 0, count: (hi - lo) * g.inPlane)
        for p in lo..<hi {
            let gxp = gx + p * g.inPlane, gyp = gy + p * g.outPlane
            forEachOutput(g) { o, od, oh, ow in
                let div = averageDivisor(g, od: od, oh: oh, ow: ow, countIncludePad: countIncludePad, divisorOverride: divisorOverride)
                let v = gyp[o] / T(div)
                for jd in ad.valid[od] {
                    let id = ad.start[od] + jd * ad.step
                    for jh in ah.valid[oh] {
                        let row = gxp + (id * H + ah.start[oh] + jh * ah.step) * W + aw.start[ow]
                        for jw in aw.valid[ow] { row[jw * aw.step] += v }
                    }
                }
            }
        }
    }
}
