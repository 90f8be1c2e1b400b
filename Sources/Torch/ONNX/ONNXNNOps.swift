/// Neural-network ops: Conv/ConvTranspose (any auto_pad, asymmetric pads as an explicit pad), Gemm/MatMul,
/// pools (incl. global), the normalizations in inference form, Dropout as identity, Resize/Upsample.
extension ONNXOps {
    static var nnOps: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]

        t["MatMul"] = { node, ins in
            let a = try ins.x(0), b = try ins.x(1)
            guard a.dim >= 1, b.dim >= 1 else { throw node.fail("MatMul of a scalar") }
            let k1 = a.shape[a.dim - 1], k2 = b.dim == 1 ? b.shape[0] : b.shape[b.dim - 2]
            guard k1 == k2 else { throw node.fail("shapes \(a.shape) and \(b.shape) cannot be multiplied") }
            if a.dim > 2 && b.dim > 2 {
                _ = try broadcastShape(Array(a.shape.dropLast(2)), Array(b.shape.dropLast(2)), node)
            }
            guard a.dtype == b.dtype else { throw node.fail("input types differ") }
            if !a.isFloatingPoint { return [a.to(.float64).matmul(b.to(.float64)).to(a.dtype)] }
            return [a.matmul(b)]
        }
        t["Gemm"] = { node, ins in
            var a = try ins.x(0), b = try ins.x(1)
            guard a.dim == 2, b.dim == 2 else { throw node.fail("A and B must be 2-D, got \(a.shape) and \(b.shape)") }
            if try node.int("transA", 0) != 0 { a = a.t() }
            if try node.int("transB", 0) != 0 { b = b.t() }
            guard a.shape[1] == b.shape[0] else { throw node.fail("A \(a.shape) and B \(b.shape) cannot be multiplied") }
            let alpha = try node.float("alpha", 1), beta = try node.float("beta", 1)
            var y = a.matmul(b)
            if alpha != 1 { y = y * alpha }
            if let c = ins.opt(2) {
                _ = try broadcastShape(y.shape, c.shape, node)
                y = beta == 1 ? y + c : y + c * beta
            }
            return [y.to(a.dtype)]
        }

        t["Conv"] = { node, ins in
            let x = try ins.x(0), w = try ins.x(1), b = ins.opt(2)
            let sd = x.dim - 2
            guard sd >= 1, sd <= 3, w.dim == x.dim else { throw node.fail("Conv of input \(x.shape) with weight \(w.shape)") }
            let group = try node.int("group", 1)
            guard group > 0, x.shape[1] == w.shape[1] * group, w.shape[0] % group == 0 else {
                throw node.fail("input \(x.shape), weight \(w.shape) and group \(group) disagree")
            }
            if let b { guard b.dim == 1, b.shape[0] == w.shape[0] else { throw node.fail("bias \(b.shape) for \(w.shape[0]) channels") } }
            let k = Array(w.shape[2...])
            let (strides, dil) = (try node.ints("strides") ?? ones(sd), try node.ints("dilations") ?? ones(sd))
            guard strides.count == sd, dil.count == sd, strides.allSatisfy({ $0 > 0 }), dil.allSatisfy({ $0 > 0 }) else {
                throw node.fail("strides \(strides) / dilations \(dil) for \(sd) spatial dims")
            }
            let pads = try spatialPads(node, input: Array(x.shape[2...]), kernel: k, strides: strides, dilations: dil)
            var xin = x
            var sym = (0..<sd).map { pads[$0] }
            if pads[..<sd] != pads[sd...] {
                xin = F.pad(x, torchPadList(pads, sd))
                sym = ones(sd).map { _ in 0 }
            }
            for i in 0..<sd where xin.shape[2 + i] + 2 * sym[i] < (k[i] - 1) * dil[i] + 1 {
                throw node.fail("kernel \(k) larger than the padded input \(x.shape)")
            }
            return [torch.convolution(xin, w, b, stride: strides, padding: sym, dilation: dil, transposed: false,
                                      outputPadding: ones(sd).map { _ in 0 }, groups: group)]
        }
        t["ConvTranspose"] = { node, ins in
            let x = try ins.x(0), w = try ins.x(1), b = ins.opt(2)
            let sd = x.dim - 2
            guard sd >= 1, sd <= 3, w.dim == x.dim else { throw node.fail("ConvTranspose of input \(x.shape) with weight \(w.shape)") }
            let group = try node.int("group", 1)
            guard group > 0, x.shape[1] == w.shape[0], w.shape[0] % group == 0 else {
                throw node.fail("input \(x.shape), weight \(w.shape) and group \(group) disagree")
            }
            let k = try node.ints("kernel_shape") ?? Array(w.shape[2...])
            let strides = try node.ints("strides") ?? ones(sd), dil = try node.ints("dilations") ?? ones(sd)
            var outPad = try node.ints("output_padding") ?? zeros(sd)
            guard k.count == sd, strides.count == sd, dil.count == sd, outPad.count == sd else { throw node.fail("attribute lengths differ from \(sd) spatial dims") }
            let inSize = Array(x.shape[2...])
            var full: [Int] = []
            for i in 0..<sd {
                let span: Int = (k[i] - 1) * dil[i] + 1
                full.append(strides[i] * (inSize[i] - 1) + span)
            }
            var pads = try node.ints("pads") ?? zeros(2 * sd)
            let autoPad = try node.string("auto_pad", "NOTSET")
            if let outShape = try node.ints("output_shape") {
                let os = Array(outShape.suffix(sd))
                guard os.count == sd else { throw node.fail("output_shape \(outShape)") }
                for i in 0..<sd {
                    let total = full[i] + outPad[i] - os[i]
                    if total < 0 { outPad[i] -= total; pads[i] = 0; pads[i + sd] = 0; continue }
                    if autoPad == "SAME_UPPER" { pads[i] = total / 2; pads[i + sd] = total - total / 2 }
                    else { pads[i] = total - total / 2; pads[i + sd] = total / 2 }
                }
            } else if autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
                for i in 0..<sd {
                    let total = Swift.max(0, full[i] + outPad[i] - inSize[i] * strides[i])
                    if autoPad == "SAME_UPPER" { pads[i] = total / 2; pads[i + sd] = total - total / 2 }
                    else { pads[i] = total - total / 2; pads[i + sd] = total / 2 }
                }
            } else if autoPad == "VALID" {
                pads = zeros(2 * sd)
            }
            guard pads.count == 2 * sd else { throw node.fail("pads \(pads)") }
            var y = torch.convolution(x, w, nil, stride: strides, padding: zeros(sd), dilation: dil, transposed: true,
                                      outputPadding: zeros(sd), groups: group)
            for i in 0..<sd {
                let d = 2 + i
                if outPad[i] > 0 {
                    var shape = y.shape; shape[d] = outPad[i]
                    y = torch.cat([y, torch.zeros(shape, dtype: y.dtype, device: y.device)], dim: d)
                }
                let len = full[i] + outPad[i] - pads[i] - pads[i + sd]
                guard pads[i] >= 0, len >= 0, pads[i] + len <= y.shape[d] else { throw node.fail("pads \(pads) do not fit the output") }
                y = y.narrow(d, pads[i], len)
            }
            if let b { y = y + b.reshape([1, b.numel] + ones(sd)) }
            return [y.contiguous()]
        }

        func pool(_ name: String, isMax: Bool) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                let sd = x.dim - 2
                guard sd >= 1, sd <= 3 else { throw node.fail("\(name) of a \(x.dim)-D input") }
                guard let k = try node.ints("kernel_shape"), k.count == sd, k.allSatisfy({ $0 > 0 }) else { throw node.fail("kernel_shape is required, one per spatial dim") }
                let strides = try node.ints("strides") ?? ones(sd), dil = try node.ints("dilations") ?? ones(sd)
                guard strides.count == sd, dil.count == sd, strides.allSatisfy({ $0 > 0 }), dil.allSatisfy({ $0 > 0 }) else { throw node.fail("strides/dilations") }
                let ceil = try node.int("ceil_mode", 0) != 0
                let pads = try spatialPads(node, input: Array(x.shape[2...]), kernel: k, strides: strides, dilations: dil)
                let symmetric = pads[..<sd] == pads[sd...] && (0..<sd).allSatisfy { pads[$0] <= k[$0] / 2 }
                for i in 0..<sd where x.shape[2 + i] + pads[i] + pads[i + sd] < (k[i] - 1) * dil[i] + 1 {
                    throw node.fail("kernel \(k) larger than the padded input \(x.shape)")
                }
                if isMax {
                    let columnMajor = try node.int("storage_order", 0) != 0
                    if columnMajor && sd != 2 { throw ONNXError.unsupportedOperator(op: "MaxPool (storage_order 1, not 2-D)", domain: "", opset: node.opset, node: node.label) }
                    let wantIndices = node.outputs.count > 1 && !node.outputs[1].isEmpty
                    let xf = x.isFloatingPoint ? x : x.to(.float32)
                    var xin = xf, p = (0..<sd).map { pads[$0] }
                    if !symmetric {
                        if wantIndices { throw ONNXError.unsupportedOperator(op: "MaxPool (indices with asymmetric pads)", domain: "", opset: node.opset, node: node.label) }
                        xin = F.pad(xf, torchPadList(pads, sd), mode: .constant, value: -Double.infinity)
                        p = zeros(sd)
                    }
                    // Indices only when the node names its second output: the kernel that records them took 7.5 ms of
                    // ResNet-18's forward where the values-only kernel takes 0.3 ms (profiled, 1 thread).
                    let (y, indices) = F.maxPool(xin, dims: sd, kernel: k, stride: strides, padding: p, dilation: dil,
                                                 ceilMode: ceil, indices: wantIndices)
                    var out = [y.to(x.dtype)]
                    if wantIndices, let idx = indices {
                        let plane = x.shape[2...].reduce(1, *)
                        let nc = x.shape[0] * x.shape[1]
                        let offs = (torch.arange(nc, dtype: .int64, device: x.device) * torch.full([], plane, dtype: .int64, device: x.device)).reshape([x.shape[0], x.shape[1]] + ones(sd))
                        // storage_order 1: the index within a plane counts down the columns (w·H + h).
                        let H = Int64(x.shape[2]), W = Int64(x.shape[x.dim - 1])
                        let i = columnMajor ? Tensor(idx.toArray(as: Int64.self).map { ($0 % W) * H + $0 / W }, shape: idx.shape).to(idx.device) : idx
                        out.append(i + offs)
                    }
                    return out
                }
                let includePad = try node.int("count_include_pad", 0) != 0
                if !dil.allSatisfy({ $0 == 1 }) {
                    return [try windowPool(x, kernel: k, strides: strides, dilations: dil, pads: pads, ceil: ceil,
                                           includePad: includePad, p: nil, node)]
                }
                if symmetric {
                    return [F.avgPool(x, dims: sd, kernelSize: k, stride: strides, padding: (0..<sd).map { pads[$0] },
                                      ceilMode: ceil, countIncludePad: includePad)]
                }
                let padList = torchPadList(pads, sd)
                let xp = F.pad(x, padList)
                let y = F.avgPool(xp, dims: sd, kernelSize: k, stride: strides, padding: 0, ceilMode: ceil, countIncludePad: true)
                if includePad { return [y] }
                let ones = F.pad(torch.onesLike(x), padList)
                let frac = F.avgPool(ones, dims: sd, kernelSize: k, stride: strides, padding: 0, ceilMode: ceil, countIncludePad: true)
                return [y / frac]
            }
        }
        pool("MaxPool", isMax: true)
        pool("AveragePool", isMax: false)
        t["LpPool"] = { node, ins in
            let x = try ins.x(0)
            let sd = x.dim - 2
            guard sd >= 1, sd <= 3, x.isFloatingPoint else { throw node.fail("LpPool of a \(x.dim)-D \(x.dtype) input") }
            guard let k = try node.ints("kernel_shape"), k.count == sd, k.allSatisfy({ $0 > 0 }) else { throw node.fail("kernel_shape is required, one per spatial dim") }
            let strides = try node.ints("strides") ?? ones(sd), dil = try node.ints("dilations") ?? ones(sd)
            guard strides.count == sd, strides.allSatisfy({ $0 > 0 }) else { throw node.fail("strides") }
            let p = Double(try node.int("p", 2))
            guard p > 0 else { throw node.fail("p must be positive") }
            let pads = try spatialPads(node, input: Array(x.shape[2...]), kernel: k, strides: strides, dilations: dil)
            if !dil.allSatisfy({ $0 == 1 }) {
                guard dil.count == sd, dil.allSatisfy({ $0 > 0 }) else { throw node.fail("dilations") }
                return [try windowPool(x, kernel: k, strides: strides, dilations: dil, pads: pads,
                                       ceil: try node.int("ceil_mode", 0) != 0, includePad: true, p: p, node)]
            }
            for i in 0..<sd where x.shape[2 + i] + pads[i] + pads[i + sd] < k[i] { throw node.fail("kernel \(k) larger than the padded input \(x.shape)") }
            let xp = F.pad(x.abs().pow(p), torchPadList(pads, sd))
            let avg = F.avgPool(xp, dims: sd, kernelSize: k, stride: strides, padding: 0,
                                ceilMode: try node.int("ceil_mode", 0) != 0, countIncludePad: true)
            return [(avg * Double(k.reduce(1, *))).pow(1 / p)]
        }
        t["GlobalAveragePool"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2 else { throw node.fail("needs rank ≥ 2") }
            if x.dim == 2 { return [x.clone()] }
            return [x.mean(dim: Array(2..<x.dim), keepdim: true)]
        }
        t["GlobalMaxPool"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2 else { throw node.fail("needs rank ≥ 2") }
            if x.dim == 2 { return [x.clone()] }
            return [x.amax(dim: Array(2..<x.dim), keepdim: true)]
        }

        t["BatchNormalization"] = { node, ins in
            let x = try ins.x(0), scale = try ins.x(1), bias = try ins.x(2), mean = try ins.x(3), v = try ins.x(4)
            guard x.dim >= 2 else { throw node.fail("needs rank ≥ 2, got \(x.shape)") }
            if node.opset >= 14, try node.int("training_mode", 0) != 0 {
                // Batch statistics (the biased variance) normalize; the running ones move by `momentum`.
                let c = x.shape[1]
                for (n, p) in [("scale", scale), ("B", bias), ("input_mean", mean), ("input_var", v)] where p.numel != c {
                    throw node.fail("\(n) has \(p.numel) values for \(c) channels")
                }
                let eps = try node.float("epsilon", 1e-5), momentum = try node.float("momentum", 0.9)
                let axes = [0] + Array(2..<x.dim), shape = [1, c] + ones(x.dim - 2)
                let xf = x.to(.float64)
                let bm = xf.mean(dim: axes, keepdim: true)
                let bv = ((xf - bm) * (xf - bm)).mean(dim: axes, keepdim: true)
                let y = (xf - bm) * (bv + eps).rsqrt() * scale.to(.float64).reshape(shape) + bias.to(.float64).reshape(shape)
                let rm = mean.to(.float64) * momentum + bm.reshape([c]) * (1 - momentum)
                let rv = v.to(.float64) * momentum + bv.reshape([c]) * (1 - momentum)
                return [y.to(x.dtype), rm.to(mean.dtype), rv.to(v.dtype)]
            }
            let c = x.shape[1]
            for (n, p) in [("scale", scale), ("B", bias), ("mean", mean), ("var", v)] where p.numel != c {
                throw node.fail("\(n) has \(p.numel) values for \(c) channels")
            }
            let eps = try node.float("epsilon", 1e-5)
            let shape = [1, c] + ones(x.dim - 2)
            let inv = (v.reshape(shape).to(.float32) + eps).rsqrt()
            let y = (x.to(.float32) - mean.reshape(shape).to(.float32)) * inv * scale.reshape(shape).to(.float32) + bias.reshape(shape).to(.float32)
            return [y.to(x.dtype)]
        }
        t["InstanceNormalization"] = { node, ins in
            let x = try ins.x(0), scale = try ins.x(1), bias = try ins.x(2)
            guard x.dim >= 3 else { throw node.fail("needs rank ≥ 3, got \(x.shape)") }
            let c = x.shape[1]
            guard scale.numel == c, bias.numel == c else { throw node.fail("scale/B need \(c) values") }
            let eps = try node.float("epsilon", 1e-5)
            let axes = Array(2..<x.dim), shape = [1, c] + ones(x.dim - 2)
            let m = x.mean(dim: axes, keepdim: true)
            let d = x - m
            let variance = (d * d).mean(dim: axes, keepdim: true)
            return [d * (variance + eps).rsqrt() * scale.reshape(shape) + bias.reshape(shape)]
        }
        t["LayerNormalization"] = { node, ins in
            let x = try ins.x(0), scale = try ins.x(1), bias = ins.opt(2)
            let axis = try node.axis(try node.int("axis", -1), rank: x.dim)
            let eps = try node.float("epsilon", 1e-5)
            let axes = Array(axis..<x.dim)
            let normShape = Array(x.shape[axis...])
            _ = try broadcastShape(normShape, scale.shape, node)
            let stash: DType = try node.int("stash_type", 1) == 1 ? (x.dtype == .float64 ? .float64 : .float32) : x.dtype
            let xs = x.to(stash)
            let m = xs.mean(dim: axes, keepdim: true)
            let d = xs - m
            let inv = ((d * d).mean(dim: axes, keepdim: true) + eps).rsqrt()
            var y = (d * inv).to(x.dtype) * scale
            if let bias { y = y + bias }
            return [y, m, inv]
        }
        t["GroupNormalization"] = { node, ins in
            let x = try ins.x(0), scale = try ins.x(1), bias = try ins.x(2)
            guard let g = try node.int("num_groups"), g > 0, x.dim >= 2, x.shape[1] % g == 0 else { throw node.fail("num_groups must divide the channels") }
            let eps = try node.float("epsilon", 1e-5)
            let (n, c) = (x.shape[0], x.shape[1])
            let grouped = x.to(.float32).reshape([n, g, -1])
            let m = grouped.mean(dim: [2], keepdim: true)
            let d = grouped - m
            let y = (d * ((d * d).mean(dim: [2], keepdim: true) + eps).rsqrt()).reshape(x.shape).to(x.dtype)
            let shape = [1, c] + ones(x.dim - 2)
            func perChannel(_ p: Tensor) throws -> Tensor {
                if p.numel == c { return p.reshape(shape) }
                if p.numel == g { return p.reshape([g, 1]).expand([g, c / g]).reshape(shape) }
                throw node.fail("scale/bias of \(p.numel) values for \(c) channels in \(g) groups")
            }
            return [y * (try perChannel(scale)) + (try perChannel(bias))]
        }
        t["Dropout"] = { node, ins in
            let x = try ins.x(0)
            if node.opset >= 12, let training = ins.opt(2), training.item() != 0, (try ins.scalar(1) ?? 0.5) != 0 {
                throw ONNXError.unsupportedOperator(op: "Dropout (training_mode)", domain: "", opset: node.opset, node: node.label)
            }
            return [x, torch.ones(x.shape, dtype: .bool, device: x.device)]
        }
        t["GridSample"] = { node, ins in
            let x = try ins.x(0), grid = try ins.x(1)
            let m = try node.string("mode", node.opset >= 20 ? "linear" : "bilinear")
            let mode: F.GridSampleMode
            switch m {
            case "linear", "bilinear": mode = .bilinear
            case "nearest": mode = .nearest
            case "cubic", "bicubic": mode = .bicubic
            default: throw node.fail("mode '\(m)'")
            }
            guard let padding = F.GridSamplePadding(rawValue: try node.string("padding_mode", "zeros")) else {
                throw node.fail("padding_mode")
            }
            do {
                try F.gridSampleCheck(inputShape: x.shape, gridShape: grid.shape, inputDType: x.dtype, gridDType: grid.dtype, mode: mode)
            } catch {
                throw ONNXError.unsupportedOperator(op: "GridSample (\(error))", domain: "", opset: node.opset, node: node.label)
            }
            return [F.gridSample(x, grid, mode: mode, paddingMode: padding, alignCorners: try node.int("align_corners", 0) != 0)]
        }
        t["Resize"] = { node, ins in try resize(node, ins, upsample: false) }
        t["Upsample"] = { node, ins in try resize(node, ins, upsample: true) }
        return t
    }

    static func ones(_ n: Int) -> [Int] { [Int](repeating: 1, count: n) }
    static func zeros(_ n: Int) -> [Int] { [Int](repeating: 0, count: n) }

    /// Torch's pad list (last dim first) for ONNX pads [x1_begin, x2_begin, …, x1_end, x2_end, …] of spatial dims.
    static func torchPadList(_ pads: [Int], _ sd: Int) -> [Int] {
        var r: [Int] = []
        for i in (0..<sd).reversed() { r += [pads[i], pads[i + sd]] }
        return r
    }

    /// The explicit pads of a Conv/pool node: `pads`, or those `auto_pad` SAME_UPPER/SAME_LOWER/VALID imply.
    static func spatialPads(_ node: ONNXNode, input: [Int], kernel: [Int], strides: [Int], dilations: [Int]) throws -> [Int] {
        let sd = input.count
        let autoPad = try node.string("auto_pad", "NOTSET")
        switch autoPad {
        case "NOTSET":
            let p = try node.ints("pads") ?? zeros(2 * sd)
            guard p.count == 2 * sd, p.allSatisfy({ $0 >= 0 && $0 <= 1 << 16 }) else { throw node.fail("pads \(p) for \(sd) spatial dims") }
            return p
        case "VALID": return zeros(2 * sd)
        case "SAME_UPPER", "SAME_LOWER":
            var p = zeros(2 * sd)
            for i in 0..<sd {
                let out = (input[i] + strides[i] - 1) / strides[i]
                let total = Swift.max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - input[i])
                let small = total / 2, big = total - small
                if autoPad == "SAME_UPPER" { p[i] = small; p[i + sd] = big } else { p[i] = big; p[i + sd] = small }
            }
            return p
        default: throw node.fail("auto_pad '\(autoPad)'")
        }
    }
}
