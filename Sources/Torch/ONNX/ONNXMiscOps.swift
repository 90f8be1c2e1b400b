/// Selection and small numeric ops without a single Torch counterpart: Compress, Unique, ReverseSequence, Det,
/// the window functions, NonMaxSuppression, OptionalHasElement without an input, and Scatter (ScatterElements'
/// old name).
extension ONNXOps {
    static var miscOps: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]

        t["Scatter"] = { node, ins in try shapeOpsAndLosses["ScatterElements"]!(node, ins) }

        t["Compress"] = { node, ins in
            let x = try ins.x(0), c = try ins.x(1)
            guard c.dim == 1 else { throw node.fail("condition must be 1-D, got shape \(c.shape)") }
            let keep = c.toArray(as: Bool.self).enumerated().filter { $0.element }.map(\.offset)
            let src = node.has("axis") ? x : x.reshape([x.numel])
            let axis = node.has("axis") ? try node.axis(try node.int("axis", 0), rank: x.dim) : 0
            guard keep.allSatisfy({ $0 < src.shape[axis] }) else {
                throw node.fail("condition selects index \(keep.last!) beyond dim \(src.shape[axis])")
            }
            return [src.indexSelect(axis, int64s(keep, device: x.device))]
        }

        t["Det"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2, x.shape[x.dim - 1] == x.shape[x.dim - 2] else { throw node.fail("needs square matrices, got shape \(x.shape)") }
            return [torch.linalg.det(x)]
        }

        for (name, coefficients) in [("HannWindow", [0.5, 0.5]), ("HammingWindow", [25.0 / 46, 21.0 / 46]),
                                     ("BlackmanWindow", [0.42, 0.5, 0.08])] {
            t[name] = { node, ins in
                guard let size = try ins.ints(0)?.first, size >= 0 else { throw node.fail("size must be a non-negative scalar") }
                try checkShape([size], node)
                let periodic = try node.int("periodic", 1) != 0
                let n = Double(periodic ? size : size - 1)
                let dt = Int32(clamping: try node.int("output_datatype", 1))
                guard let dtype = ONNXTensorCodec.dtype(of: dt) else {
                    throw ONNXError.unsupportedDataType(field: node.attrField("output_datatype"), dataType: dt)
                }
                let w: [Double] = (0..<size).map { k in
                    var v = 0.0
                    for (j, a) in coefficients.enumerated() {
                        v += (j % 2 == 0 ? a : -a) * (n == 0 ? 1 : cos(2 * Double.pi * Double(j * k) / n))
                    }
                    return v
                }
                return [Tensor(w.map { Float($0) }, shape: [size]).to(dtype)]
            }
        }

        t["OptionalHasElement"] = { node, ins in
            guard ins.opt(0) == nil else {
                throw ONNXError.unsupportedOperator(op: "OptionalHasElement (of a value)", domain: "", opset: node.opset, node: node.label)
            }
            return [torch.full([], 0, dtype: .bool)]
        }

        t["OptionalGetElement"] = { node, ins in
            // Values here are tensors (an optional or sequence input is not supported): the element is the value.
            [try ins.x(0)]
        }
        t["ReverseSequence"] = { node, ins in
            let x = try ins.x(0)
            guard let lens = try ins.ints(1) else { throw node.fail("sequence_lens is required") }
            guard x.dim >= 2 else { throw node.fail("input must have rank ≥ 2") }
            let b = try node.axis(try node.int("batch_axis", 1), rank: x.dim), tAxis = try node.axis(try node.int("time_axis", 0), rank: x.dim)
            guard b != tAxis, b <= 1, tAxis <= 1 else { throw node.fail("batch_axis and time_axis must be 0 and 1") }
            guard lens.count == x.shape[b] else { throw node.fail("sequence_lens has \(lens.count) values for batch \(x.shape[b])") }
            let T = x.shape[tAxis]
            guard lens.allSatisfy({ $0 >= 0 && $0 <= T }) else { throw node.fail("a sequence length exceeds \(T)") }
            let strides = contiguousStrides(x.shape)
            let idx: [Int64] = (0..<x.numel).map { i in
                let t = (i / strides[tAxis]) % T, bi = (i / strides[b]) % x.shape[b]
                return Int64(t < lens[bi] ? lens[bi] - 1 - t : t)
            }
            return [x.gather(tAxis, Tensor(idx, shape: x.shape).to(x.device))]
        }

        t["AffineGrid"] = { node, ins in
            let theta = try ins.x(0)
            guard let size = try ins.ints(1), size.count == 4 || size.count == 5 else { throw node.fail("size must be [N, C, H, W] or [N, C, D, H, W]") }
            let k = size.count - 2
            guard theta.dim == 3, theta.shape == [size[0], k, k + 1] else {
                throw node.fail("theta must be [N, \(k), \(k + 1)] for size \(size), got shape \(theta.shape)")
            }
            try checkShape(size, node)
            return [nn.functional.affineGrid(theta, size: size, alignCorners: try node.int("align_corners", 0) != 0)]
        }
        for op in ["Adagrad", "Momentum", "Adam"] {
            t["ai.onnx.preview.training." + op] = { node, ins in try optimizerStep(node, ins) }
        }
        t["MaxUnpool"] = { node, ins in
            let x = try ins.x(0), idx = try ins.x(1)
            guard idx.shape == x.shape, x.dim >= 3 else { throw node.fail("X and I must share a shape of rank ≥ 3") }
            let sd = x.dim - 2
            guard let k = try node.ints("kernel_shape"), k.count == sd, k.allSatisfy({ $0 > 0 }) else {
                throw ONNXError.invalidAttribute(field: node.attrField("kernel_shape"), reason: "required, one positive value per spatial dim")
            }
            let strides = try node.ints("strides") ?? [Int](repeating: 1, count: sd)
            let pads = try node.ints("pads") ?? [Int](repeating: 0, count: 2 * sd)
            guard strides.count == sd, pads.count == 2 * sd else { throw node.fail("strides/pads do not fit the spatial rank") }
            let spatial: [Int] = (0..<sd).map { d -> Int in
                let stretched: Int = (x.shape[2 + d] - 1) * strides[d]
                return stretched - pads[d] - pads[d + sd] + k[d]
            }
            let shape = Array(x.shape[..<2]) + spatial
            try checkShape(shape, node)
            let n = shape.reduce(1, *)
            var y = [Double](repeating: 0, count: n)
            let v = x.toArray(as: Double.self), iv = idx.toArray(as: Int64.self)
            for (i, j) in iv.enumerated() {
                guard j >= 0, Int(j) < n else { throw node.fail("index \(j) is outside the output of \(n) elements") }
                y[Int(j)] = v[i]
            }
            let out = Tensor(y, shape: shape).to(x.dtype)
            // An output_shape places the unpooled values (indexed in the default shape) at its start, zeros after.
            guard let os = try ins.ints(2) else { return [out] }
            guard os.count == x.dim, zip(os, shape).allSatisfy({ $0 >= $1 }), os[0] == shape[0], os[1] == shape[1] else {
                throw node.fail("output_shape \(os) must have \(x.dim) values, none smaller than \(shape)")
            }
            try checkShape(os, node)
            let padList = (0..<sd).reversed().flatMap { [0, os[2 + $0] - shape[2 + $0]] }
            return [nn.functional.pad(out, padList)]
        }
        t["CausalConvWithState"] = { node, ins in
            // A depthwise causal conv over [B, C, L]: the past state (K−1 steps, zeros when absent) is prepended,
            // the output keeps L steps, and the last K−1 steps of the padded input are the present state.
            let x = try ins.x(0), w = try ins.x(1), b = ins.opt(2)
            guard x.dim == 3, w.dim == 3, w.shape[0] == x.shape[1], w.shape[1] == 1, w.shape[2] >= 1 else {
                throw node.fail("input [B, C, L] and weight [C, 1, K] expected, got \(x.shape) and \(w.shape)")
            }
            let B = x.shape[0], C = x.shape[1], K = w.shape[2]
            if let b, b.shape != [C] { throw node.fail("bias must be [\(C)], got \(b.shape)") }
            let past = ins.opt(3) ?? torch.zeros([B, C, K - 1], dtype: x.dtype, device: x.device)
            guard past.shape == [B, C, K - 1] else { throw node.fail("past_state must be [\(B), \(C), \(K - 1)], got \(past.shape)") }
            let padded = torch.cat([past, x], dim: 2)
            var y = torch.convolution(padded, w, b, stride: [1], padding: [0], dilation: [1], transposed: false,
                                      outputPadding: [0], groups: C)
            let act = try node.string("activation", "none")
            switch act {
            case "none": break
            case "silu", "swish":
                let f = y.to(.float32)
                y = (f * f.sigmoid()).to(y.dtype)
            default: throw ONNXError.invalidAttribute(field: node.attrField("activation"), reason: "must be none, silu or swish, got '\(act)'")
            }
            return [y, padded.narrow(2, padded.shape[2] - (K - 1), K - 1).contiguous()]
        }
        t["TensorScatter"] = { node, ins in
            // Writes each batch's update into the cache along `axis` from its write index (wrapping with `circular`).
            let past = try ins.x(0), upd = try ins.x(1)
            guard past.dim >= 2, upd.dim == past.dim else { throw node.fail("past_cache and update must share a rank ≥ 2") }
            let axis = try node.axis(try node.int("axis", -2), rank: past.dim)
            guard axis != 0 else { throw node.fail("axis must not be the batch axis") }
            let mode = try node.string("mode", "linear")
            guard mode == "linear" || mode == "circular" else {
                throw ONNXError.invalidAttribute(field: node.attrField("mode"), reason: "must be linear or circular, got '\(mode)'")
            }
            for k in 0..<past.dim where k != axis && upd.shape[k] != past.shape[k] {
                throw node.fail("update \(upd.shape) does not fit past_cache \(past.shape) outside axis \(axis)")
            }
            let B = past.shape[0], maxLen = past.shape[axis]
            let starts = try ins.ints(2) ?? [Int](repeating: 0, count: B)
            guard starts.count == B else { throw node.fail("write_indices has \(starts.count) values for batch \(B)") }
            var y = past.toArray(as: Double.self)
            let u = upd.toArray(as: Double.self)
            let uStr = contiguousStrides(upd.shape), pStr = contiguousStrides(past.shape)
            for i in 0..<u.count {
                var off = 0
                for k in 0..<past.dim {
                    var c = (i / uStr[k]) % upd.shape[k]
                    if k == axis {
                        c += starts[(i / uStr[0]) % B]
                        if mode == "circular" { c = ((c % maxLen) + maxLen) % maxLen }
                        guard c >= 0, c < maxLen else { throw node.fail("a write runs past the cache length \(maxLen)") }
                    }
                    off += c * pStr[k]
                }
                y[off] = u[i]
            }
            return [Tensor(y, shape: past.shape).to(past.dtype)]
        }
        t["TfIdfVectorizer"] = { node, ins in try tfIdf(node, ins) }
        t["Unique"] = { node, ins in try unique(node, ins) }
        t["NonMaxSuppression"] = { node, ins in try nonMaxSuppression(node, ins) }
        return t
    }

    /// The families whose kernels others here reuse.
    static var shapeOpsAndLosses: [String: ONNXKernel] { shapeOps.merging(losses) { a, _ in a } }

    /// One step of the preview training domain's Adagrad, Momentum or Adam on each (X, G, state…) group.
    static func optimizerStep(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let r = try ins.scalar(0) ?? 0, t = try ins.scalar(1) ?? 0
        let groups = node.opType == "Adam" ? 4 : 3
        guard (ins.count - 2) % groups == 0, ins.count > 2 else {
            throw node.fail("expects R, T and \(groups) inputs per tensor, got \(ins.count) inputs")
        }
        let n = (ins.count - 2) / groups
        let norm = try node.float("norm_coefficient", 0)
        var outs = [[Tensor]](repeating: [], count: groups - 1)
        for k in 0..<n {
            let xT = try ins.x(2 + k)
            let parts = try (1..<groups).map { try ins.x(2 + $0 * n + k) }
            guard parts.allSatisfy({ $0.shape == xT.shape }) else { throw node.fail("tensor group \(k) differs in shape") }
            let x = xT.toArray(as: Double.self), g0 = parts[0].toArray(as: Double.self)
            let g = zip(x, g0).map { norm * $0 + $1 }
            var newX = x, s1 = x, s2 = x
            switch node.opType {
            case "Adagrad":
                let h = parts[1].toArray(as: Double.self)
                let decay = try node.float("decay_factor", 0), eps = try node.float("epsilon", 1e-6)
                let rr = r / (1 + t * decay)
                for i in x.indices {
                    s1[i] = h[i] + g[i] * g[i]
                    newX[i] = x[i] - rr * g[i] / (s1[i].squareRoot() + eps)
                }
                outs[0].append(Tensor(newX, shape: xT.shape).to(xT.dtype)); outs[1].append(Tensor(s1, shape: xT.shape).to(xT.dtype))
            case "Momentum":
                let v = parts[1].toArray(as: Double.self)
                let alpha = try node.float("alpha", 0), beta = try node.float("beta", 0), mode = try node.string("mode", "standard")
                guard mode == "standard" || mode == "nesterov" else {
                    throw ONNXError.invalidAttribute(field: node.attrField("mode"), reason: "must be standard or nesterov, got '\(mode)'")
                }
                let b = t > 0 ? beta : 1
                for i in x.indices {
                    s1[i] = alpha * v[i] + b * g[i]
                    newX[i] = mode == "standard" ? x[i] - r * s1[i] : x[i] - r * (g[i] + alpha * s1[i])
                }
                outs[0].append(Tensor(newX, shape: xT.shape).to(xT.dtype)); outs[1].append(Tensor(s1, shape: xT.shape).to(xT.dtype))
            default:
                let v = parts[1].toArray(as: Double.self), h = parts[2].toArray(as: Double.self)
                let alpha = try node.float("alpha", 0.9), beta = try node.float("beta", 0.999), eps = try node.float("epsilon", 1e-6)
                let post = try node.float("norm_coefficient_post", 0)
                let rr = t > 0 ? r * (1 - pow(beta, t)).squareRoot() / (1 - pow(alpha, t)) : r
                for i in x.indices {
                    s1[i] = alpha * v[i] + (1 - alpha) * g[i]
                    s2[i] = beta * h[i] + (1 - beta) * g[i] * g[i]
                    newX[i] = (1 - post) * (x[i] - rr * s1[i] / (s2[i].squareRoot() + eps))
                }
                outs[0].append(Tensor(newX, shape: xT.shape).to(xT.dtype)); outs[1].append(Tensor(s1, shape: xT.shape).to(xT.dtype))
                outs[2].append(Tensor(s2, shape: xT.shape).to(xT.dtype))
            }
        }
        return outs.flatMap { $0 }
    }

    /// A dilated average (p nil) or Lp pool over [N, C, spatial…], window by window in double precision: the
    /// average divides by the window's elements inside the input (or, with `includePad`, inside the padded input).
    static func windowPool(_ x: Tensor, kernel k: [Int], strides: [Int], dilations dil: [Int], pads: [Int], ceil: Bool,
                           includePad: Bool, p: Double?, _ node: ONNXNode) throws -> Tensor {
        let sd = k.count
        let inS = Array(x.shape[2...])
        var outS = [Int]()
        for i in 0..<sd {
            let span = inS[i] + pads[i] + pads[i + sd] - ((k[i] - 1) * dil[i] + 1)
            guard span >= 0 else { throw node.fail("kernel \(k) larger than the padded input \(x.shape)") }
            var o = (ceil ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1
            if ceil && (o - 1) * strides[i] >= inS[i] + pads[i] { o -= 1 }
            outS.append(o)
        }
        let shape = Array(x.shape[..<2]) + outS
        try checkShape(shape, node)
        let v = x.toArray(as: Double.self)
        let plane = inS.reduce(1, *), outPlane = outS.reduce(1, *), kCount = k.reduce(1, *)
        let inStr = contiguousStrides(inS), outStr = contiguousStrides(outS), kStr = contiguousStrides(k)
        var y = [Double](repeating: 0, count: shape.reduce(1, *))
        for nc in 0..<(x.shape[0] * x.shape[1]) {
            for o in 0..<outPlane {
                var sum = 0.0, inside = 0, padded = 0
                for kk in 0..<kCount {
                    var off = 0, ok = true, inPadded = true
                    for i in 0..<sd {
                        let pos = ((o / outStr[i]) % outS[i]) * strides[i] + ((kk / kStr[i]) % k[i]) * dil[i] - pads[i]
                        if pos < -pads[i] || pos >= inS[i] + pads[i + sd] { inPadded = false }
                        if pos < 0 || pos >= inS[i] { ok = false } else { off += pos * inStr[i] }
                    }
                    if inPadded { padded += 1 }
                    guard ok else { continue }
                    inside += 1
                    let e = v[nc * plane + off]
                    sum += p.map { pow(Swift.abs(e), $0) } ?? e
                }
                let r: Double
                if let p { r = pow(sum, 1 / p) } else { r = sum / Double(includePad ? padded : inside) }
                y[nc * outPlane + o] = r
            }
        }
        return Tensor(y, shape: shape).to(x.dtype)
    }

    /// `x` with each block of `block` update values combined (mul, min or max) into the elements at its target
    /// offset, in order.
    static func scatterReduce(_ x: Tensor, targets: [Int], updates: Tensor, block: Int, reduction: String,
                              _ node: ONNXNode) throws -> Tensor {
        var v = x.toArray(as: Double.self)
        let u = updates.toArray(as: Double.self)
        guard u.count == targets.count * block else { throw node.fail("updates do not fit the indices") }
        for (r, t) in targets.enumerated() {
            guard t >= 0, t + block <= v.count else { throw node.fail("index out of range") }
            for k in 0..<block {
                let a = v[t + k], b = u[r * block + k]
                switch reduction {
                case "mul": v[t + k] = a * b
                case "min": v[t + k] = Swift.min(a, b)
                default: v[t + k] = Swift.max(a, b)
                }
            }
        }
        return Tensor(v, shape: x.shape).to(x.dtype)
    }

    /// TfIdfVectorizer over integer rows: counts of the pool's n-grams (min…max length; for n ≥ 2 with 0…max_skip_count
    /// elements skipped between items), as TF, IDF (weight where present) or TFIDF (count · weight).
    static func tfIdf(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0)
        guard x.dim == 1 || x.dim == 2, !x.isFloatingPoint else { throw node.fail("input must be a 1-D or 2-D integer tensor, got \(x.dtype) \(x.shape)") }
        let minN = try node.int("min_gram_length", 1), maxN = try node.int("max_gram_length", 1), maxSkip = try node.int("max_skip_count", 0)
        let mode = try node.string("mode", "TF")
        guard let counts = try node.ints("ngram_counts"), let indexes = try node.ints("ngram_indexes"),
              let pool = try node.ints("pool_int64s") else {
            throw ONNXError.invalidAttribute(field: node.attrField("pool_int64s"), reason: "ngram_counts, ngram_indexes and pool_int64s are required (string pools are not supported)")
        }
        guard minN >= 1, maxN >= minN, maxN <= counts.count, maxSkip >= 0, ["TF", "IDF", "TFIDF"].contains(mode) else {
            throw node.fail("gram lengths \(minN)…\(maxN), max_skip_count \(maxSkip) or mode '\(mode)' do not fit ngram_counts \(counts)")
        }
        let weights = try node.floats("weights")
        // n-gram → ordinal, per length.
        var ordinal = 0
        var dicts = [[ [Int]: Int ]](repeating: [:], count: counts.count + 1)
        for n in 1...counts.count {
            let start = counts[n - 1], end = n < counts.count ? counts[n] : pool.count
            guard start >= 0, start <= end, end <= pool.count, (end - start) % n == 0 else {
                throw ONNXError.invalidAttribute(field: node.attrField("ngram_counts"), reason: "\(counts) does not split a pool of \(pool.count)")
            }
            for g in stride(from: start, to: end, by: n) { dicts[n][Array(pool[g..<(g + n)])] = ordinal; ordinal += 1 }
        }
        guard indexes.count == ordinal, indexes.allSatisfy({ $0 >= 0 }), weights == nil || weights!.count == ordinal else {
            throw ONNXError.invalidAttribute(field: node.attrField("ngram_indexes"), reason: "needs one non-negative index (and weight) per n-gram of the pool (\(ordinal))")
        }
        let width = (indexes.max() ?? -1) + 1
        let rows = x.dim == 1 ? 1 : x.shape[0], C = x.shape[x.dim - 1]
        try checkShape([rows, width], node)
        let v = x.toArray(as: Int64.self).map { Int($0) }
        var y = [Double](repeating: 0, count: rows * width)
        for r in 0..<rows {
            var count = [Int](repeating: 0, count: ordinal)
            let row = Array(v[(r * C)..<((r + 1) * C)])
            for n in minN...maxN where !dicts[n].isEmpty {
                for skip in 0...(n == 1 ? 0 : maxSkip) {
                    let step = skip + 1
                    var i = 0
                    while i + (n - 1) * step < C {
                        let gram = (0..<n).map { row[i + $0 * step] }
                        if let o = dicts[n][gram] { count[o] += 1 }
                        i += 1
                    }
                }
            }
            for o in 0..<ordinal where count[o] > 0 {
                let w = weights?[o] ?? 1
                let val: Double = mode == "TF" ? Double(count[o]) : mode == "IDF" ? w : Double(count[o]) * w
                y[r * width + indexes[o]] = val
            }
        }
        return [Tensor(y.map { Float($0) }, shape: x.dim == 1 ? [width] : [rows, width])]
    }

    static func unique(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let x = try ins.x(0)
        let sorted = try node.int("sorted", 1) != 0
        let hasAxis = node.has("axis")
        let src = hasAxis ? x : x.reshape([x.numel])
        let axis = hasAxis ? try node.axis(try node.int("axis", 0), rank: x.dim) : 0
        let n = src.shape[axis]
        var perm = [axis]
        for k in 0..<src.dim where k != axis { perm.append(k) }
        let flat = src.permute(perm).toArray(as: Double.self)
        let width = n == 0 ? 0 : flat.count / n
        func slice(_ i: Int) -> ArraySlice<Double> { flat[(i * width)..<((i + 1) * width)] }
        func less(_ a: Int, _ b: Int) -> Bool {
            for (u, v) in zip(slice(a), slice(b)) where u != v { return u < v }
            return false
        }
        // First occurrences in order, then (sorted) by value.
        var firsts: [Int] = []
        var inverse = [Int](repeating: 0, count: n)
        var counts: [Int] = []
        for i in 0..<n {
            if let k = firsts.firstIndex(where: { slice($0) == slice(i) }) {
                inverse[i] = k; counts[k] += 1
            } else {
                inverse[i] = firsts.count; firsts.append(i); counts.append(1)
            }
        }
        var order = Array(firsts.indices)
        if sorted { order.sort { less(firsts[$0], firsts[$1]) } }
        var rank = [Int](repeating: 0, count: order.count)
        for (r, k) in order.enumerated() { rank[k] = r }
        let indices = order.map { firsts[$0] }
        let y = src.indexSelect(axis, int64s(indices, device: x.device))
        return [y, int64s(indices, device: x.device), int64s(inverse.map { rank[$0] }, device: x.device),
                int64s(order.map { counts[$0] }, device: x.device)]
    }

    static func nonMaxSuppression(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let boxes = try ins.x(0), scores = try ins.x(1)
        guard boxes.dim == 3, boxes.shape[2] == 4, scores.dim == 3, scores.shape[0] == boxes.shape[0],
              scores.shape[2] == boxes.shape[1] else {
            throw node.fail("boxes [B, N, 4] and scores [B, C, N] expected, got \(boxes.shape) and \(scores.shape)")
        }
        let maxOut = try ins.ints(2)?.first ?? 0
        let iouThreshold = try ins.scalar(3) ?? 0
        let scoreThreshold = try ins.scalar(4)
        let center = try node.int("center_point_box", 0)
        guard center == 0 || center == 1 else {
            throw ONNXError.invalidAttribute(field: node.attrField("center_point_box"), reason: "must be 0 or 1, got \(center)")
        }
        let B = boxes.shape[0], N = boxes.shape[1], C = scores.shape[1]
        let bx = boxes.toArray(as: Double.self), sc = scores.toArray(as: Double.self)
        // Corners (y1, x1, y2, x2) ordered.
        func corners(_ b: Int, _ i: Int) -> (Double, Double, Double, Double) {
            let o = (b * N + i) * 4
            if center == 1 {
                let xc = bx[o], yc = bx[o + 1], w = bx[o + 2], h = bx[o + 3]
                return (yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2)
            }
            return (Swift.min(bx[o], bx[o + 2]), Swift.min(bx[o + 1], bx[o + 3]), Swift.max(bx[o], bx[o + 2]), Swift.max(bx[o + 1], bx[o + 3]))
        }
        func iou(_ b: Int, _ i: Int, _ j: Int) -> Double {
            let p = corners(b, i), q = corners(b, j)
            let ih = Swift.max(0, Swift.min(p.2, q.2) - Swift.max(p.0, q.0)), iw = Swift.max(0, Swift.min(p.3, q.3) - Swift.max(p.1, q.1))
            let inter = ih * iw
            let union = (p.2 - p.0) * (p.3 - p.1) + (q.2 - q.0) * (q.3 - q.1) - inter
            return union <= 0 ? 0 : inter / union
        }
        var selected: [Int64] = []
        if maxOut > 0 {
            for b in 0..<B {
                for c in 0..<C {
                    let s = { (i: Int) in sc[(b * C + c) * N + i] }
                    var cand = (0..<N).filter { scoreThreshold == nil || s($0) > scoreThreshold! }
                    cand.sort { s($0) > s($1) || (s($0) == s($1) && $0 < $1) }
                    var kept: [Int] = []
                    for i in cand where kept.count < maxOut {
                        if kept.allSatisfy({ iou(b, $0, i) <= iouThreshold }) { kept.append(i) }
                    }
                    for i in kept { selected += [Int64(b), Int64(c), Int64(i)] }
                }
            }
        }
        return [Tensor(selected, shape: [selected.count / 3, 3])]
    }
}
