/// Signal and image ops computed in double precision on the CPU: DFT (forward, inverse, one-sided, the inverse of a
/// one-sided spectrum), LRN and Col2Im.
extension ONNXOps {
    static var signalOps: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]
        t["DFT"] = { node, ins in try dft(node, ins) }
        t["LRN"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2 else { throw node.fail("input must have rank ≥ 2, got shape \(x.shape)") }
            guard let size = try node.int("size"), size >= 1 else {
                throw ONNXError.invalidAttribute(field: node.attrField("size"), reason: "required, at least 1")
            }
            let alpha = try node.float("alpha", 1e-4), beta = try node.float("beta", 0.75), bias = try node.float("bias", 1)
            let v = x.toArray(as: Double.self)
            let C = x.shape[1], inner = x.shape[2...].reduce(1, *)
            let lo = (size - 1) / 2, hi = size - 1 - lo
            var y = [Double](repeating: 0, count: v.count)
            for i in 0..<v.count {
                let c = (i / inner) % C, base = i - c * inner
                var s = 0.0
                for k in Swift.max(0, c - lo)...Swift.min(C - 1, c + hi) { let e = v[base + k * inner]; s += e * e }
                y[i] = v[i] / pow(bias + alpha / Double(size) * s, beta)
            }
            return [Tensor(y, shape: x.shape).to(x.dtype)]
        }
        t["Col2Im"] = { node, ins in try col2im(node, ins) }
        t["RoiAlign"] = { node, ins in try roiAlign(node, ins) }
        t["DeformConv"] = { node, ins in try deformConv(node, ins) }
        t["STFT"] = { node, ins in
            // Frames of frame_length every frame_step, times the window, each through a forward DFT.
            let x = try ins.x(0)
            guard x.dim == 3, x.shape[2] == 1 || x.shape[2] == 2 else { throw node.fail("signal must be [B, L, 1 or 2], got \(x.shape)") }
            guard let step = try ins.ints(1)?.first, step > 0 else { throw node.fail("frame_step must be a positive scalar") }
            let window = ins.opt(2)
            let fl = try ins.ints(3)?.first ?? window?.numel ?? 0
            guard fl > 0, fl <= x.shape[1], window == nil || window!.numel == fl else {
                throw node.fail("frame_length \(fl) must be positive, at most the signal length, and the window's length")
            }
            let onesided = try node.int("onesided", 1) != 0
            let B = x.shape[0], L = x.shape[1], ch = x.shape[2]
            let frames = (L - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl
            try checkShape([B, frames, bins, 2], node)
            let v = x.toArray(as: Double.self), w = window?.toArray(as: Double.self) ?? [Double](repeating: 1, count: fl)
            var y = [Double](repeating: 0, count: B * frames * bins * 2)
            for b in 0..<B {
                for f in 0..<frames {
                    for k in 0..<bins {
                        var sr = 0.0, si = 0.0
                        for j in 0..<fl {
                            let p = (b * L + f * step + j) * ch
                            let re = v[p] * w[j], im = ch == 2 ? v[p + 1] * w[j] : 0
                            let ang = -2 * Double.pi * Double((j * k) % fl) / Double(fl)
                            sr += re * cos(ang) - im * sin(ang)
                            si += re * sin(ang) + im * cos(ang)
                        }
                        let o = ((b * frames + f) * bins + k) * 2
                        y[o] = sr; y[o + 1] = si
                    }
                }
            }
            return [Tensor(y, shape: [B, frames, bins, 2]).to(x.dtype)]
        }
        return t
    }

    static func dft(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0)
        let r = x.dim
        guard r >= 2, x.shape[r - 1] == 1 || x.shape[r - 1] == 2 else {
            throw node.fail("input must end in a dimension of 1 (real) or 2 (complex), got shape \(x.shape)")
        }
        let inverse = try node.int("inverse", 0) != 0, onesided = try node.int("onesided", 0) != 0
        var a: Int
        if node.opset >= 20 { a = try ins.ints(2)?.first ?? -2 } else { a = try node.int("axis", 1) }
        if a < 0 { a += r }
        guard a >= 0 && a <= r - 2 else { throw node.fail("axis \(a) is out of range for shape \(x.shape)") }
        let m = x.shape[a]
        let length = try ins.ints(1)?.first ?? (inverse && onesided ? 2 * (m - 1) : m)
        guard length >= 1 else { throw node.fail("dft_length must be positive, got \(length)") }
        let complexIn = x.shape[r - 1] == 2
        let outer = x.shape[..<a].reduce(1, *), inner = x.shape[(a + 1)..<(r - 1)].reduce(1, *)
        let outLen = inverse ? length : (onesided ? length / 2 + 1 : length)
        let realOut = inverse && onesided
        var outShape = x.shape
        outShape[a] = outLen
        outShape[r - 1] = realOut ? 1 : 2
        try checkShape(outShape, node)
        let v = x.toArray(as: Double.self)
        let ch = complexIn ? 2 : 1
        var y = [Double](repeating: 0, count: outShape.reduce(1, *))
        let sign = inverse ? 1.0 : -1.0
        var re = [Double](repeating: 0, count: length), im = [Double](repeating: 0, count: length)
        for o in 0..<outer {
            for i in 0..<inner {
                // The input signal of `length` values (zero-padded or cut; a one-sided spectrum made whole).
                for j in 0..<length { re[j] = 0; im[j] = 0 }
                for j in 0..<Swift.min(m, length) {
                    let p = ((o * m + j) * inner + i) * ch
                    re[j] = v[p]; im[j] = complexIn ? v[p + 1] : 0
                }
                if realOut && m < length {
                    for k in m..<length where length - k < m && length - k >= 0 { re[k] = re[length - k]; im[k] = -im[length - k] }
                }
                for k in 0..<outLen {
                    var sr = 0.0, si = 0.0
                    for j in 0..<length {
                        let ang = sign * 2 * Double.pi * Double((j * k) % length) / Double(length)
                        let c = cos(ang), s = sin(ang)
                        sr += re[j] * c - im[j] * s
                        si += re[j] * s + im[j] * c
                    }
                    if inverse { sr /= Double(length); si /= Double(length) }
                    let p = ((o * outLen + k) * inner + i) * (realOut ? 1 : 2)
                    y[p] = sr
                    if !realOut { y[p + 1] = si }
                }
            }
        }
        return [Tensor(y, shape: outShape).to(x.dtype)]
    }

    /// RoiAlign: each region's bins averaged (or maxed, weight by weight, as the reference does) over a grid of
    /// bilinear samples.
    static func roiAlign(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0), rois = try ins.x(1)
        guard let bi = try ins.ints(2) else { throw node.fail("batch_indices is required") }
        guard x.dim == 4, rois.dim == 2, rois.shape[1] == 4, bi.count == rois.shape[0] else {
            throw node.fail("X [N, C, H, W], rois [R, 4] and batch_indices [R] expected, got \(x.shape), \(rois.shape), \(bi.count)")
        }
        let mode = try node.string("mode", "avg")
        guard mode == "avg" || mode == "max" else { throw ONNXError.invalidAttribute(field: node.attrField("mode"), reason: "must be avg or max, got '\(mode)'") }
        let oh = try node.int("output_height", 1), ow = try node.int("output_width", 1), sr = try node.int("sampling_ratio", 0)
        guard oh > 0, ow > 0, sr >= 0 else { throw node.fail("output_height/width must be positive, sampling_ratio non-negative") }
        let scale = try node.float("spatial_scale", 1)
        let ctm = try node.string("coordinate_transformation_mode", node.opset >= 16 ? "half_pixel" : "output_half_pixel")
        guard ctm == "half_pixel" || ctm == "output_half_pixel" else {
            throw ONNXError.invalidAttribute(field: node.attrField("coordinate_transformation_mode"), reason: "unknown mode '\(ctm)'")
        }
        let N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], R = rois.shape[0]
        guard bi.allSatisfy({ $0 >= 0 && $0 < N }) else { throw node.fail("a batch index is outside 0..<\(N)") }
        guard H > 0, W > 0 else { throw node.fail("X has an empty spatial dim: \(x.shape)") }
        try checkShape([R, C, oh, ow], node)
        let v = x.toArray(as: Double.self), r = rois.toArray(as: Double.self)
        var y = [Double](repeating: 0, count: R * C * oh * ow)
        let off = ctm == "half_pixel" ? 0.5 : 0
        for n in 0..<R {
            let sw = r[n * 4] * scale - off, sh = r[n * 4 + 1] * scale - off
            var rw = r[n * 4 + 2] * scale - off - sw, rh = r[n * 4 + 3] * scale - off - sh
            if ctm == "output_half_pixel" { rw = Swift.max(rw, 1); rh = Swift.max(rh, 1) }
            let bh = rh / Double(oh), bw = rw / Double(ow)
            let gh = sr > 0 ? sr : Int((rh / Double(oh)).rounded(.up)), gw = sr > 0 ? sr : Int((rw / Double(ow)).rounded(.up))
            let count = Double(Swift.max(gh * gw, 1))
            for c in 0..<C {
                let plane = ((bi[n] * C) + c) * H * W
                for ph in 0..<oh {
                    for pw in 0..<ow {
                        var acc = mode == "avg" ? 0.0 : -Double.infinity
                        var any = false
                        for iy in 0..<gh {
                            for ix in 0..<gw {
                                var yy = sh + Double(ph) * bh + (Double(iy) + 0.5) * bh / Double(gh)
                                var xx = sw + Double(pw) * bw + (Double(ix) + 0.5) * bw / Double(gw)
                                any = true
                                if yy < -1 || yy > Double(H) || xx < -1 || xx > Double(W) {
                                    if mode == "avg" { continue }
                                    acc = Swift.max(acc, 0); continue
                                }
                                yy = Swift.max(yy, 0); xx = Swift.max(xx, 0)
                                var yl = Int(yy), xl = Int(xx), yh2: Int, xh2: Int
                                if yl >= H - 1 { yl = H - 1; yh2 = H - 1; yy = Double(yl) } else { yh2 = yl + 1 }
                                if xl >= W - 1 { xl = W - 1; xh2 = W - 1; xx = Double(xl) } else { xh2 = xl + 1 }
                                let ly = yy - Double(yl), lx = xx - Double(xl), hy = 1 - ly, hx = 1 - lx
                                let t1 = hy * hx * v[plane + yl * W + xl], t2 = hy * lx * v[plane + yl * W + xh2]
                                let t3 = ly * hx * v[plane + yh2 * W + xl], t4 = ly * lx * v[plane + yh2 * W + xh2]
                                if mode == "avg" { acc += t1 + t2 + t3 + t4 } else { acc = Swift.max(acc, t1, t2, t3, t4) }
                            }
                        }
                        y[((n * C + c) * oh + ph) * ow + pw] = mode == "avg" ? acc / count : (any ? acc : 0)
                    }
                }
            }
        }
        return [Tensor(y, shape: [R, C, oh, ow]).to(x.dtype)]
    }

    /// 2-D DeformConv: each kernel tap samples the input bilinearly at its offset position (zero outside), scaled
    /// by the mask when given, then the grouped convolution sums.
    static func deformConv(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0), w = try ins.x(1), offset = try ins.x(2), b = ins.opt(3), mask = ins.opt(4)
        guard x.dim == 4, w.dim == 4 else {
            throw ONNXError.unsupportedOperator(op: "DeformConv (not 2-D)", domain: "", opset: node.opset, node: node.label)
        }
        let N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
        let OC = w.shape[0], kH = w.shape[2], kW = w.shape[3], K = kH * kW
        let group = try node.int("group", 1), og = try node.int("offset_group", 1)
        guard group > 0, og > 0, C == w.shape[1] * group, OC % group == 0, C % og == 0 else {
            throw node.fail("input \(x.shape), weight \(w.shape), group \(group) and offset_group \(og) disagree")
        }
        if let k = try node.ints("kernel_shape"), k != [kH, kW] { throw node.fail("kernel_shape \(k) differs from the weight's \([kH, kW])") }
        let s = try node.ints("strides") ?? [1, 1], d = try node.ints("dilations") ?? [1, 1], p = try node.ints("pads") ?? [0, 0, 0, 0]
        guard s.count == 2, d.count == 2, p.count == 4, s.allSatisfy({ $0 > 0 }), d.allSatisfy({ $0 > 0 }) else {
            throw node.fail("strides, dilations (2 values) and pads (4) must fit a 2-D conv")
        }
        let oH = (H + p[0] + p[2] - d[0] * (kH - 1) - 1) / s[0] + 1, oW = (W + p[1] + p[3] - d[1] * (kW - 1) - 1) / s[1] + 1
        guard oH > 0, oW > 0, offset.shape == [N, og * 2 * K, oH, oW] else {
            throw node.fail("offset must be [\(N), \(og * 2 * K), \(oH), \(oW)], got \(offset.shape)")
        }
        if let mask, mask.shape != [N, og * K, oH, oW] { throw node.fail("mask must be [\(N), \(og * K), \(oH), \(oW)], got \(mask.shape)") }
        if let b, b.numel != OC { throw node.fail("B has \(b.numel) values for \(OC) channels") }
        try checkShape([N, OC, oH, oW], node)
        let xv = x.toArray(as: Double.self), wv = w.toArray(as: Double.self), ov = offset.toArray(as: Double.self)
        let mv = mask?.toArray(as: Double.self), bv = b?.toArray(as: Double.self)
        let cpg = C / group, ocpg = OC / group, cpog = C / og
        // Sampled columns [N, C, K, oH, oW].
        var cols = [Double](repeating: 0, count: N * C * K * oH * oW)
        for n in 0..<N {
            for c in 0..<C {
                let g = c / cpog, plane = (n * C + c) * H * W
                for k in 0..<K {
                    let ki = k / kW, kj = k % kW
                    for oy in 0..<oH {
                        for ox in 0..<oW {
                            let o = ((n * og + g) * 2 * K + 2 * k) * oH * oW + oy * oW + ox
                            let yy = Double(oy * s[0] - p[0] + ki * d[0]) + ov[o]
                            let xx = Double(ox * s[1] - p[1] + kj * d[1]) + ov[o + oH * oW]
                            var val = 0.0
                            if yy > -1, yy < Double(H), xx > -1, xx < Double(W) {
                                let y0 = Int(yy.rounded(.down)), x0 = Int(xx.rounded(.down))
                                let ly = yy - Double(y0), lx = xx - Double(x0)
                                func at(_ r: Int, _ q: Int) -> Double { r >= 0 && r < H && q >= 0 && q < W ? xv[plane + r * W + q] : 0 }
                                val = (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1)
                                    + ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1)
                            }
                            if let mv { val *= mv[((n * og + g) * K + k) * oH * oW + oy * oW + ox] }
                            cols[(((n * C + c) * K + k) * oH + oy) * oW + ox] = val
                        }
                    }
                }
            }
        }
        var y = [Double](repeating: 0, count: N * OC * oH * oW)
        for n in 0..<N {
            for oc in 0..<OC {
                let g = oc / ocpg
                for pos in 0..<(oH * oW) {
                    var acc = bv?[oc] ?? 0
                    for ci in 0..<cpg {
                        let c = g * cpg + ci
                        for k in 0..<K { acc += wv[(oc * cpg + ci) * K + k] * cols[((n * C + c) * K + k) * oH * oW + pos] }
                    }
                    y[(n * OC + oc) * oH * oW + pos] = acc
                }
            }
        }
        return [Tensor(y, shape: [N, OC, oH, oW]).to(x.dtype)]
    }

    static func col2im(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0)
        guard let image = try ins.ints(1), let block = try ins.ints(2), image.count == block.count, !image.isEmpty else {
            throw node.fail("image_shape and block_shape must be given, of one length")
        }
        let d = image.count
        guard x.dim == 3 else { throw node.fail("input must be [N, C·prod(block), L], got shape \(x.shape)") }
        let dil = try node.ints("dilations") ?? [Int](repeating: 1, count: d)
        let strides = try node.ints("strides") ?? [Int](repeating: 1, count: d)
        let pads = try node.ints("pads") ?? [Int](repeating: 0, count: 2 * d)
        guard dil.count == d, strides.count == d, pads.count == 2 * d, dil.allSatisfy({ $0 >= 1 }), strides.allSatisfy({ $0 >= 1 }),
              block.allSatisfy({ $0 >= 1 }), image.allSatisfy({ $0 >= 0 }) else {
            throw node.fail("dilations, strides ([\(d)]) and pads ([\(2 * d)]) must fit the image rank, positive")
        }
        let kProd = block.reduce(1, *)
        guard kProd > 0, x.shape[1] % kProd == 0 else { throw node.fail("channel dim \(x.shape[1]) is not a multiple of \(kProd)") }
        let C = x.shape[1] / kProd, N = x.shape[0], L = x.shape[2]
        // Blocks per spatial dim.
        let counts: [Int] = (0..<d).map { (k: Int) -> Int in
            let extent: Int = dil[k] * (block[k] - 1) + 1
            let span: Int = image[k] + pads[k] + pads[k + d] - extent
            return span / strides[k] + 1
        }
        guard counts.reduce(1, *) == L else { throw node.fail("L = \(L), but the image and block give \(counts.reduce(1, *)) blocks") }
        let outShape = [N, C] + image
        try checkShape(outShape, node)
        let v = x.toArray(as: Double.self)
        let imgSize = image.reduce(1, *)
        var y = [Double](repeating: 0, count: N * C * imgSize)
        let kStrides = contiguousStrides(block), lStrides = contiguousStrides(counts), iStrides = contiguousStrides(image)
        for n in 0..<N {
            for c in 0..<C {
                for kk in 0..<kProd {
                    for l in 0..<L {
                        var off = 0, inside = true
                        for k in 0..<d {
                            let kb = (kk / kStrides[k]) % block[k], lb = (l / lStrides[k]) % counts[k]
                            let pos = lb * strides[k] + kb * dil[k] - pads[k]
                            if pos < 0 || pos >= image[k] { inside = false; break }
                            off += pos * iStrides[k]
                        }
                        if inside { y[(n * C + c) * imgSize + off] += v[(n * C * kProd + c * kProd + kk) * L + l] }
                    }
                }
            }
        }
        return [Tensor(y, shape: outShape).to(x.dtype)]
    }
}
