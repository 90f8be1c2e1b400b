/// Resize (and the older Upsample) for every mode (nearest, linear, cubic), coordinate transformation and
/// nearest rounding mode ONNX defines, antialiasing included, as one interpolation matrix per resized axis applied
/// with a matmul: exact for nearest (one-hot rows), and the same weights ONNX's reference implementation uses
/// otherwise.
extension ONNXOps {
    static func resize(_ node: ONNXNode, _ ins: ONNXInputs, upsample: Bool) throws -> [Tensor] {
        let x = try ins.x(0)
        let r = x.dim
        let mode = try node.string("mode", "nearest")
        let ctm = upsample || node.opset < 11 ? "asymmetric" : try node.string("coordinate_transformation_mode", "half_pixel")
        let nearestMode = upsample || node.opset < 11 ? "floor" : try node.string("nearest_mode", "round_prefer_floor")
        let cubicA = try node.float("cubic_coeff_a", -0.75)
        let excludeOutside = try node.int("exclude_outside", 0) != 0
        let extrapolation = try node.float("extrapolation_value", 0)
        let antialias = try node.int("antialias", 0) != 0 && (mode == "linear" || mode == "cubic")
        let axes = try (node.ints("axes") ?? Array(0..<r)).map { try node.axis($0, rank: r) }

        var scales: [Double]?, sizes: [Int]?
        var roi: [Double] = []
        if upsample {
            scales = node.opset < 9 ? try node.floats("scales") : ins.opt(1).map { $0.toArray(as: Double.self) }
        } else if node.opset < 11 {
            scales = ins.opt(1).map { $0.toArray(as: Double.self) }
        } else {
            if let t = ins.opt(1), t.numel > 0 { roi = t.toArray(as: Double.self) }
            if let t = ins.opt(2), t.numel > 0 { scales = t.toArray(as: Double.self) }
            if let t = ins.opt(3), t.numel > 0 { sizes = try ins.ints(3) }
        }
        var outSize = x.shape
        var scale = [Double](repeating: 1, count: r)
        if let s = scales {
            guard s.count == axes.count, s.allSatisfy({ $0 > 0 && $0.isFinite }) else { throw node.fail("scales \(s) for axes \(axes)") }
            for (k, a) in axes.enumerated() {
                scale[a] = s[k]
                outSize[a] = Int((Double(x.shape[a]) * s[k]).rounded(.down))
            }
        } else if let sz = sizes {
            guard sz.count == axes.count, sz.allSatisfy({ $0 >= 0 }) else { throw node.fail("sizes \(sz) for axes \(axes)") }
            let policy = try node.string("keep_aspect_ratio_policy", "stretch")
            if policy == "stretch" {
                for (k, a) in axes.enumerated() { outSize[a] = sz[k]; scale[a] = Double(sz[k]) / Double(Swift.max(x.shape[a], 1)) }
            } else {
                let ratios = axes.enumerated().map { Double(sz[$0.offset]) / Double(Swift.max(x.shape[$0.element], 1)) }
                let s = policy == "not_larger" ? ratios.min()! : ratios.max()!
                for a in axes { scale[a] = s; outSize[a] = Int((Double(x.shape[a]) * s).rounded(.toNearestOrEven)) }
            }
        } else {
            throw node.fail("needs scales or sizes")
        }
        try checkShape(outSize, node)

        let compute: DType = x.dtype == .float64 ? .float64 : .float32
        var y = x.to(compute)
        for (k, a) in axes.enumerated() {
            let n = x.shape[a], m = outSize[a]
            if n == m && scale[a] == 1 && ctm != "tf_crop_and_resize" { continue }
            let roiStart = roi.count == 2 * axes.count ? roi[k] : (roi.count == 2 * r ? roi[a] : 0)
            let roiEnd = roi.count == 2 * axes.count ? roi[k + axes.count] : (roi.count == 2 * r ? roi[a + r] : 1)
            var w = [Double](repeating: 0, count: m * n)
            var outside = [Bool](repeating: false, count: m)
            for o in 0..<m {
                let s = scale[a], od = Double(o)
                var c: Double
                switch ctm {
                case "half_pixel": c = (od + 0.5) / s - 0.5
                case "pytorch_half_pixel": c = m > 1 ? (od + 0.5) / s - 0.5 : 0
                case "align_corners": c = m == 1 ? 0 : od * Double(n - 1) / (s * Double(n) - 1)
                case "asymmetric": c = od / s
                case "half_pixel_symmetric":
                    let adj = Double(m) / (s * Double(n))
                    c = Double(n) / 2 * (1 - adj) + (od + 0.5) / s - 0.5
                case "tf_crop_and_resize":
                    c = m > 1 ? roiStart * Double(n - 1) + od * (roiEnd - roiStart) * Double(n - 1) / Double(m - 1)
                              : 0.5 * (roiStart + roiEnd) * Double(n - 1)
                    if c < 0 || c > Double(n - 1) { outside[o] = true; continue }
                default: throw node.fail("coordinate_transformation_mode '\(ctm)'")
                }
                if antialias {
                    antialiasTaps(c, scale: scale[a], cubic: mode == "cubic", a: cubicA, inputSize: n,
                                  excludeOutside: excludeOutside) { w[o * n + $0] += $1 }
                    continue
                }
                switch mode {
                case "nearest":
                    var i: Int
                    switch nearestMode {
                    case "round_prefer_floor": i = c == c.rounded(.down) + 0.5 ? Int(c.rounded(.down)) : Int(c.rounded())
                    case "round_prefer_ceil": i = Int(c.rounded())
                    case "floor": i = Int(c.rounded(.down))
                    case "ceil": i = Int(c.rounded(.up))
                    default: throw node.fail("nearest_mode '\(nearestMode)'")
                    }
                    w[o * n + Swift.min(Swift.max(i, 0), n - 1)] = 1
                case "linear":
                    let cc = Swift.min(Swift.max(c, 0), Double(n - 1))
                    let i0 = Int(cc.rounded(.down)), i1 = Swift.min(i0 + 1, n - 1)
                    let f = cc - Double(i0)
                    w[o * n + i0] += 1 - f
                    w[o * n + i1] += f
                case "cubic":
                    let i0 = Int(c.rounded(.down)), tt = c - Double(i0)
                    var taps: [(Int, Double)] = []
                    for j in -1...2 {
                        let idx = i0 + j
                        let wt = cubicWeight(tt - Double(j), a: cubicA)
                        if excludeOutside && (idx < 0 || idx >= n) { continue }
                        taps.append((Swift.min(Swift.max(idx, 0), n - 1), wt))
                    }
                    let total = excludeOutside ? taps.reduce(0) { $0 + $1.1 } : 1
                    for (idx, wt) in taps { w[o * n + idx] += wt / total }
                default: throw node.fail("mode '\(mode)'")
                }
            }
            let wm = Tensor(w, shape: [m, n]).to(y.device, dtype: compute)
            var moved = y.movedim(a, r - 1).matmul(wm.t())
            if outside.contains(true) {
                let mask = Tensor(outside, shape: [m]).to(y.device)
                moved = torch.where(mask, scalar(extrapolation, compute, y.device), moved)
            }
            y = moved.movedim(r - 1, a).contiguous()
        }
        if x.isFloatingPoint { return [y.to(x.dtype)] }
        return [y.round().to(x.dtype)]
    }

    /// Keys' cubic convolution kernel with coefficient `a` at distance `d` (zero from 2 on).
    private static func cubicWeight(_ d: Double, a: Double) -> Double {
        let x = Swift.abs(d)
        if x <= 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
        if x < 2 { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a }
        return 0
    }

    /// The taps of one output at input coordinate `c` with `antialias` set, as ONNX's reference computes them: when
    /// downsampling by `scale` < 1 the linear or cubic filter is stretched by 1/scale (so every input sample under
    /// the output's footprint counts), the weights are normalized to sum to 1, inputs past the edge repeat the edge
    /// sample, or with `excludeOutside` are dropped and the rest renormalized. Tap i sits at `left + i`, where `left`
    /// is the last sample before `c` (c − 1 when c is a whole number: the reference keeps the ratio c − left in
    /// (0, 1]).
    private static func antialiasTaps(_ c: Double, scale: Double, cubic: Bool, a: Double, inputSize n: Int,
                                      excludeOutside: Bool, _ add: (Int, Double) -> Void) {
        let s = Swift.min(scale, 1)
        let left = c == c.rounded(.down) ? c - 1 : c.rounded(.down)
        let ratio = c - left
        let first = Int(((cubic ? -2 : -1) / s).rounded(.down)) + 1
        let count = 2 - 2 * first       // taps first ..< 2 − first, around the ratio
        func filter(_ d: Double) -> Double { cubic ? cubicWeight(d, a: a) : Swift.max(0, 1 - Swift.abs(d)) }
        let taps = (first..<(first + count)).map { i in (Int(left) + i, filter(s * (Double(i) - ratio))) }
        let total = taps.reduce(0) { $0 + $1.1 }
        let inside = excludeOutside ? taps.filter { $0.0 >= 0 && $0.0 < n } : taps
        // Normalized over every tap first, then over the ones kept (the reference's two divisions).
        let kept = inside.reduce(0) { $0 + $1.1 / total }
        for (index, weight) in inside {
            add(Swift.min(Swift.max(index, 0), n - 1), weight / total / (excludeOutside ? kept : 1))
        }
    }
}
