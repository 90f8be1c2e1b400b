import Torch

/// A CPU image tensor (…, C, H, W) as `count` row-major H×W planes of Doubles, the working form of the CPU
/// resampling and colour kernels. Integer images come back rounded half to even and clamped to their
/// dtype's range, as torchvision rounds after computing in floating point. The planes are host memory only:
/// an image on a GPU takes its transform's device path (`DeviceImage`), and a transform without one stops
/// with "NotImplementedError … 'CUDA' …" here rather than copy the image through the host.
struct PixelPlanes {
    /// The plane values, plane after plane.
    var data: [Double]
    /// Every dimension before the last two (…, C).
    var lead: [Int]
    var height: Int
    var width: Int

    /// Number of H×W planes.
    var count: Int { lead.reduce(1, *) }

    init(_ t: Tensor, op: String) {
        precondition(t.dim >= 2, "\(op): expected a tensor image of shape (..., H, W), got shape \(t.shape)")
        DeviceImage.requireHost(op, t)
        data = t.contiguous().toArray(as: Double.self)
        lead = Array(t.shape.dropLast(2))
        height = t.shape[t.dim - 2]
        width = t.shape[t.dim - 1]
    }

    init(lead: [Int], height: Int, width: Int, repeating value: Double = 0) {
        self.lead = lead
        self.height = height
        self.width = width
        data = [Double](repeating: value, count: lead.reduce(1, *) * height * width)
    }

    /// The planes as a tensor of `dtype` (rounded and clamped when `dtype` is an integer type).
    func tensor(_ dtype: DType) -> Tensor {
        let shape = lead + [height, width]
        if dtype.isFloatingPoint { return Tensor(data, shape: shape).to(dtype) }
        let (lo, hi) = integerRange(dtype)
        let rounded = data.map { Swift.min(Swift.max($0.rounded(.toNearestOrEven), lo), hi) }
        return Tensor(rounded, shape: shape).to(dtype)
    }

    /// Checks a sampling `fill` holds one value, or one per channel.
    static func checkFill(_ fill: [Double], channels: Int) {
        precondition(fill.count == 1 || fill.count == channels,
                     "The number of elements in 'fill' does not match the number of channels of the image (\(fill.count) != \(channels))")
    }
}

/// The largest value of an image dtype: 1 for floating point, the type's maximum for integers
/// (torchvision's `_max_value`).
func imageMaxValue(_ dtype: DType) -> Double {
    dtype.isFloatingPoint ? 1 : integerRange(dtype).1
}

/// The representable range of an integer dtype.
func integerRange(_ dtype: DType) -> (Double, Double) {
    switch dtype {
    case .uint8: return (0, 255)
    case .int32: return (Double(Int32.min), Double(Int32.max))
    case .bool: return (0, 1)
    default: return (-9.223372036854775807e18, 9.223372036854775807e18)
    }
}

/// One axis of a separable resampling: for each output index, `taps` source indices and weights.
struct AxisFilter {
    let taps: Int
    var index: [Int]
    var weight: [Double]

    /// Nearest neighbour as PyTorch's `interpolate(mode="nearest")`: `floor(o * in/out)` in float32; with
    /// `exact`, `mode="nearest-exact"`: `floor((o + 0.5) * in/out)`.
    static func nearest(_ n: Int, _ m: Int, exact: Bool = false) -> AxisFilter {
        let scale = Float(n) / Float(m)
        let idx = (0..<m).map { Swift.min(Int(((Float($0) + (exact ? 0.5 : 0)) * scale).rounded(.down)), n - 1) }
        return AxisFilter(taps: 1, index: idx, weight: [Double](repeating: 1, count: m))
    }

    /// Bilinear or bicubic without antialiasing (half-pixel centres, `align_corners=False`).
    static func interpolating(_ n: Int, _ m: Int, cubic: Bool) -> AxisFilter {
        let scale = Float(n) / Float(m)
        let taps = cubic ? 4 : 2
        var f = AxisFilter(taps: taps, index: [], weight: [])
        for o in 0..<m {
            var src = scale * (Float(o) + 0.5) - 0.5
            if !cubic && src < 0 { src = 0 }
            let i0 = Int(src.rounded(.down))
            let t = Double(src - Float(i0))
            if cubic {
                let a = -0.75
                func near(_ x: Double) -> Double { ((a + 2) * x - (a + 3)) * x * x + 1 }
                func far(_ x: Double) -> Double { ((a * x - 5 * a) * x + 8 * a) * x - 4 * a }
                f.weight += [far(t + 1), near(t), near(1 - t), far(2 - t)]
                f.index += (-1...2).map { Swift.min(Swift.max(i0 + $0, 0), n - 1) }
            } else {
                f.weight += [1 - t, t]
                f.index += [i0, Swift.min(i0 + 1, n - 1)]
            }
        }
        return f
    }

    /// Antialiased bilinear/bicubic (a triangle or a = -0.5 cubic kernel stretched by the downscale
    /// factor, weights normalised to sum 1), as PyTorch's `interpolate(antialias=True)`.
    static func antialiased(_ n: Int, _ m: Int, cubic: Bool) -> AxisFilter {
        let scale = Double(n) / Double(m)
        let support = (cubic ? 2.0 : 1.0) * Swift.max(scale, 1)
        let invScale = scale >= 1 ? 1 / scale : 1
        func kernel(_ x: Double) -> Double {
            let x = abs(x)
            if !cubic { return x < 1 ? 1 - x : 0 }
            let a = -0.5
            if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
            if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
            return 0
        }
        var ranges: [(Int, [Double])] = []
        for o in 0..<m {
            let center = scale * (Double(o) + 0.5)
            let lo = Swift.max(Int(center - support + 0.5), 0)
            let hi = Swift.min(Int(center + support + 0.5), n)
            var w = (lo..<hi).map { kernel((Double($0) - center + 0.5) * invScale) }
            let total = w.reduce(0, +)
            if total != 0 { w = w.map { $0 / total } }
            ranges.append((lo, w))
        }
        let taps = Swift.max(1, ranges.map { $0.1.count }.max() ?? 1)
        var f = AxisFilter(taps: taps, index: [], weight: [])
        for (lo, w) in ranges {
            f.index += (0..<taps).map { Swift.min(lo + $0, n - 1) }
            f.weight += w + [Double](repeating: 0, count: taps - w.count)
        }
        return f
    }
}

extension PixelPlanes {
    /// Resamples every plane to `outHeight`×`outWidth`, rows first, then columns.
    func resampled(rows fy: AxisFilter, cols fx: AxisFilter, outHeight: Int, outWidth: Int) -> PixelPlanes {
        var out = PixelPlanes(lead: lead, height: outHeight, width: outWidth)
        var tmp = [Double](repeating: 0, count: height * outWidth)
        let (tx, ty) = (fx.taps, fy.taps)
        data.withUnsafeBufferPointer { src in
        out.data.withUnsafeMutableBufferPointer { dst in
        tmp.withUnsafeMutableBufferPointer { mid in
        fx.index.withUnsafeBufferPointer { xi in fx.weight.withUnsafeBufferPointer { xw in
        fy.index.withUnsafeBufferPointer { yi in fy.weight.withUnsafeBufferPointer { yw in
            for p in 0..<count {
                // Rows: each input row resampled to outWidth columns.
                let s = src.baseAddress! + p * height * width
                for y in 0..<height {
                    let row = s + y * width
                    for x in 0..<outWidth {
                        var acc = 0.0
                        for k in 0..<tx { acc += xw[x * tx + k] * row[xi[x * tx + k]] }
                        mid[y * outWidth + x] = acc
                    }
                }
                // Columns: each output row is a weighted sum of intermediate rows.
                let d = dst.baseAddress! + p * outHeight * outWidth
                for y in 0..<outHeight {
                    let outRow = d + y * outWidth
                    for x in 0..<outWidth { outRow[x] = 0 }
                    for k in 0..<ty {
                        let wgt = yw[y * ty + k]
                        if wgt == 0 { continue }
                        let inRow = mid.baseAddress! + yi[y * ty + k] * outWidth
                        for x in 0..<outWidth { outRow[x] += wgt * inRow[x] }
                    }
                }
            }
        } } } } } } }
        return out
    }

    /// Samples every plane at the source points `grid` (x, y pixel coordinates per output pixel, row
    /// major over `outHeight`×`outWidth`) with zeros outside, like `grid_sample(padding_mode="zeros")`.
    /// With `fill` (one value per channel, or one for all), points outside take the fill colour: blended
    /// by the in-bounds weight for bilinear, replaced when that weight is under 0.5 for nearest.
    func sampled(at grid: [(Double, Double)], outHeight: Int, outWidth: Int, nearest: Bool, fill: [Double]?) -> PixelPlanes {
        var out = PixelPlanes(lead: lead, height: outHeight, width: outWidth)
        let channels = lead.last ?? 1
        if let fill { Self.checkFill(fill, channels: channels) }
        let plane = height * width, outPlane = outHeight * outWidth
        data.withUnsafeBufferPointer { src in
            out.data.withUnsafeMutableBufferPointer { dst in
                // Up to four source taps per output pixel; weight 0 marks an unused or outside tap.
                var idx = (0, 0, 0, 0), wt = (0.0, 0.0, 0.0, 0.0)
                for (o, (ix, iy)) in grid.enumerated() {
                    var inside = 0.0
                    if nearest {
                        let x = Int(ix.rounded(.toNearestOrEven)), y = Int(iy.rounded(.toNearestOrEven))
                        let ok = x >= 0 && x < width && y >= 0 && y < height
                        idx = (ok ? y * width + x : 0, 0, 0, 0)
                        wt = (ok ? 1 : 0, 0, 0, 0)
                        inside = wt.0
                    } else {
                        let fx = ix.rounded(.down), fy = iy.rounded(.down)
                        let x0 = Int(fx), y0 = Int(fy), tx = ix - fx, ty = iy - fy
                        func tap(_ x: Int, _ y: Int, _ w: Double) -> (Int, Double) {
                            x >= 0 && x < width && y >= 0 && y < height ? (y * width + x, w) : (0, 0)
                        }
                        let a = tap(x0, y0, (1 - tx) * (1 - ty)), b = tap(x0 + 1, y0, tx * (1 - ty))
                        let c = tap(x0, y0 + 1, (1 - tx) * ty), d = tap(x0 + 1, y0 + 1, tx * ty)
                        idx = (a.0, b.0, c.0, d.0)
                        wt = (a.1, b.1, c.1, d.1)
                        inside = a.1 + b.1 + c.1 + d.1
                    }
                    for p in 0..<count {
                        let s = src.baseAddress! + p * plane
                        var v = wt.0 * s[idx.0] + wt.1 * s[idx.1] + wt.2 * s[idx.2] + wt.3 * s[idx.3]
                        if let fill {
                            let f = fill.count == 1 ? fill[0] : fill[p % channels]
                            if nearest { if inside < 0.5 { v = f } } else { v = v * inside + (1 - inside) * f }
                        }
                        dst[p * outPlane + o] = v
                    }
                }
            }
        }
        return out
    }
}
