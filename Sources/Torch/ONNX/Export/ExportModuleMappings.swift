// Layers → ONNX nodes. A layer listed here is recorded whole when it is called (its forward runs for the value,
// untraced); weights become initializers named from the state dict. Everything else is traced through its
// forward's tensor ops (ExportOpMappings.swift). The export runs the model in eval mode, so BatchNorm uses its
// running statistics and Dropout disappears.

enum ExportModuleMappings {
    /// Whether `m` is mapped as one piece.
    static func isMapped(_ m: nn.Module) -> Bool {
        m is nn.Linear || m is nn.ConvNd || m is nn.MaxPoolNd || m is nn.AvgPoolNd || m is nn.AdaptivePoolNd
            || m is nn.BatchNormBase || m is nn.LayerNorm || m is nn.GroupNorm || m is nn.DropoutBase
            || m is nn.Flatten || m is nn.Identity || m is nn.Embedding
    }

    static func emit(_ m: nn.Module, _ x: Tensor, _ xn: String, _ y: Tensor, _ s: ExportSession) {
        switch m {
        case let l as nn.Linear: linear(l, x, xn, y, s)
        case let c as nn.ConvNd: conv(c, x, xn, y, s)
        case let p as nn.MaxPoolNd:
            if p.returnIndices { return s.unsupported("aten::max_pool_with_indices", "MaxPool with return_indices") }
            let n = p.dims, k = per(p.kernelSize, n, 1), pad = per(p.padding, n, 0)
            s.emit("MaxPool", [xn], y, [attr("kernel_shape", k), attr("strides", per(p.stride, n, k)),
                                        attr("pads", pad + pad), attr("dilations", per(p.dilation, n, 1)),
                                        attr("ceil_mode", p.ceilMode ? 1 : 0)])
        case let p as nn.AvgPoolNd:
            if p.divisorOverride != nil { return s.unsupported("aten::avg_pool", "AvgPool with divisor_override") }
            let n = p.dims, k = per(p.kernelSize, n, 1), pad = per(p.padding, n, 0)
            s.emit("AveragePool", [xn], y, [attr("kernel_shape", k), attr("strides", per(p.stride, n, k)),
                                            attr("pads", pad + pad), attr("ceil_mode", p.ceilMode ? 1 : 0),
                                            attr("count_include_pad", p.countIncludePad ? 1 : 0)])
        case let p as nn.AdaptivePoolNd: adaptivePool(p, x, xn, y, s)
        case let b as nn.BatchNormBase:
            guard let mean = b.runningMean, let variance = b.runningVar else {
                return s.unsupported("aten::batch_norm", "BatchNorm without running statistics uses batch statistics")
            }
            let c = b.numFeatures
            let scale = b.weight.map { s.weight($0) } ?? s.constant(torch.ones(c, dtype: x.dtype))
            let bias = b.bias.map { s.weight($0) } ?? s.constant(torch.zeros(c, dtype: x.dtype))
            s.emit("BatchNormalization", [xn, scale, bias, s.weight(mean), s.weight(variance)], y,
                   [attr("epsilon", b.eps), attr("momentum", 1 - (b.momentum ?? 0.1))])
        case let l as nn.LayerNorm:
            guard s.opset >= 17 else {
                return s.unsupported("aten::layer_norm", "LayerNormalization needs opset 17 or newer (asked for \(s.opset))")
            }
            let shape = l.normalizedShape
            let scale = l.weight.map { s.weight($0) } ?? s.constant(torch.ones(shape, dtype: x.dtype))
            var ins = [xn, scale]
            if let b = l.bias { ins.append(s.weight(b)) } else if l.weight != nil { ins.append(s.constant(torch.zeros(shape, dtype: x.dtype))) }
            s.emit("LayerNormalization", ins, y, [attr("axis", -shape.count), attr("epsilon", l.eps)])
        case let g as nn.GroupNorm: groupNorm(g, x, xn, y, s)
        case is nn.DropoutBase, is nn.Identity:
            s.bind(y, xn)
        case let f as nn.Flatten:
            ExportOpMappings.emit(.flatten(start: f.startDim, end: f.endDim), [x], [xn], y, s)
        case let e as nn.Embedding:
            if e.maxNorm != nil { return s.unsupported("aten::embedding_renorm", "Embedding with max_norm") }
            s.emit("Gather", [s.weight(e.weight), s.cast(xn, to: .int64)], y, [attr("axis", 0)])
        default:
            s.unsupported(m.typeName, "no ONNX mapping")
        }
    }

    /// A per-dim setting of `n` spatial dims: one value repeated, or `fallback` when empty.
    static func per(_ v: [Int], _ n: Int, _ fallback: Int) -> [Int] {
        per(v, n, [Int](repeating: fallback, count: n))
    }

    static func per(_ v: [Int], _ n: Int, _ fallback: [Int]) -> [Int] {
        if v.count == n { return v }
        if v.count == 1 { return [Int](repeating: v[0], count: n) }
        return fallback
    }

    static func linear(_ l: nn.Linear, _ x: Tensor, _ xn: String, _ y: Tensor, _ s: ExportSession) {
        let w = s.weight(l.weight)
        if x.dim == 2 {
            var ins = [xn, w]
            if let b = l.bias { ins.append(s.weight(b)) }
            s.emit("Gemm", ins, y, [attr("alpha", 1.0), attr("beta", 1.0), attr("transB", 1)])
            return
        }
        // With constant folding the transposed weight is an initializer (PyTorch's folded `onnx::MatMul_…`).
        let wt = s.foldConstants && s.isInitializer(w) ? s.constant(l.weight.detach().t().contiguous())
            : s.node("Transpose", [w], [attr("perm", [1, 0])])[0]
        guard let b = l.bias else { return s.emit("MatMul", [xn, wt], y) }
        s.emit("Add", [s.node("MatMul", [xn, wt])[0], s.weight(b)], y)
    }

    static func conv(_ c: nn.ConvNd, _ x: Tensor, _ xn: String, _ y: Tensor, _ s: ExportSession) {
        let dims = c.spatialDims
        var pads: [Int]
        switch c.padding {
        case .explicit(let p): pads = per(p, dims, 0)
            pads += pads
        case .valid: pads = [Int](repeating: 0, count: 2 * dims)
        case .same:
            let total = zip(per(c.kernelSize, dims, 1), per(c.dilation, dims, 1)).map { $1 * ($0 - 1) }
            pads = total.map { $0 / 2 } + total.map { $0 - $0 / 2 }
        }
        var input = xn
        if c.paddingMode != .zeros && pads.contains(where: { $0 != 0 }) {
            let mode: String
            switch c.paddingMode {
            case .reflect: mode = "reflect"
            case .replicate: mode = "edge"
            case .circular:
                guard s.opset >= 19 else {
                    return s.unsupported("aten::circular_pad", "circular padding needs Pad's wrap mode (opset 19 or newer)")
                }
                mode = "wrap"
            case .zeros: mode = "constant"
            }
            let half = pads.count / 2
            let full = [0, 0] + pads[..<half] + [0, 0] + pads[half...]
            input = s.node("Pad", [xn, s.constInts(Array(full))], [attr("mode", mode)])[0]
            pads = [Int](repeating: 0, count: 2 * dims)
        }
        var ins = [input, s.weight(c.weight)]
        if let b = c.bias { ins.append(s.weight(b)) }
        let kernel = per(c.kernelSize, dims, 1), dilation = per(c.dilation, dims, 1)
        var attrs = [attr("kernel_shape", kernel), attr("strides", per(c.stride, dims, 1)), attr("pads", pads),
                     attr("dilations", dilation), attr("group", c.groups)]
        if c.transposed {
            if c.outputPadding.contains(where: { $0 != 0 }) { attrs.append(attr("output_padding", per(c.outputPadding, dims, 0))) }
            s.emit("ConvTranspose", ins, y, attrs)
        } else {
            s.emit("Conv", ins, y, attrs)
        }
    }

    static func adaptivePool(_ p: nn.AdaptivePoolNd, _ x: Tensor, _ xn: String, _ y: Tensor, _ s: ExportSession) {
        let spatial = Array(x.shape.suffix(p.dims))
        let sizes = p.outputSize.count == p.dims ? p.outputSize : [Int?](repeating: p.outputSize.first ?? nil, count: p.dims)
        let out = zip(sizes, spatial).map { $0.0 ?? $0.1 }
        s.bind(y, adaptivePool(isMax: p.isMax, x, xn, out, s))
    }

    /// Adaptive pooling of `x`'s last `out.count` dims to sizes `out`; returns the result's value name. Sizes that
    /// divide the input's are one MaxPool or AveragePool (all 1: the global pools), PyTorch's form. Other sizes give
    /// windows of unequal size, which no ONNX pool has; both poolings are separable, so each resized axis is pooled
    /// on its own: average as a MatMul with the constant out × in matrix of 1/window weights, max as a Slice and a
    /// ReduceMax per output position, concatenated. (PyTorch's exporter stops at such sizes.)
    static func adaptivePool(isMax: Bool, _ x: Tensor, _ xn: String, _ out: [Int], _ s: ExportSession) -> String {
        let rank = x.dim, spatial = Array(x.shape.suffix(out.count))
        if rank == out.count + 2 {
            if out.allSatisfy({ $0 == 1 }) { return s.node(isMax ? "GlobalMaxPool" : "GlobalAveragePool", [xn])[0] }
            if zip(spatial, out).allSatisfy({ $0.1 > 0 && $0.0 % $0.1 == 0 }) {
                let k = zip(spatial, out).map { $0.0 / $0.1 }
                return s.node(isMax ? "MaxPool" : "AveragePool", [xn], [attr("kernel_shape", k), attr("strides", k)])[0]
            }
        }
        var v = xn
        for (i, (n, m)) in zip(spatial, out).enumerated() where n != m {
            let axis = rank - out.count + i
            // Window o of the axis: [⌊o·n/m⌋, ⌈(o + 1)·n/m⌉).
            let windows = (0..<m).map { o in (o * n / m, ((o + 1) * n + m - 1) / m) }
            if isMax {
                let parts = windows.map { lo, hi -> String in
                    let window = s.node("Slice", [v, s.constInts([lo]), s.constInts([hi]), s.constInts([axis])])[0]
                    return s.opset >= 18
                        ? s.node("ReduceMax", [window, s.constInts([axis])], [attr("keepdims", 1)])[0]
                        : s.node("ReduceMax", [window], [attr("axes", [axis]), attr("keepdims", 1)])[0]
                }
                v = parts.count == 1 ? parts[0] : s.node("Concat", parts, [attr("axis", axis)])[0]
                continue
            }
            var weights = [Double](repeating: 0, count: m * n)
            for (o, (lo, hi)) in windows.enumerated() {
                for j in lo..<hi { weights[o * n + j] = 1 / Double(hi - lo) }
            }
            let averaging = torch.tensor(weights).reshape([m, n]).to(x.dtype)
            if axis == rank - 2 {
                v = s.node("MatMul", [s.constant(averaging), v])[0]
            } else {
                // The axis moved last (a swap, its own inverse), multiplied by the transposed weights, moved back.
                var perm = Array(0..<rank)
                perm.swapAt(axis, rank - 1)
                let moved = axis == rank - 1 ? v : s.node("Transpose", [v], [attr("perm", perm)])[0]
                let pooled = s.node("MatMul", [moved, s.constant(averaging.t().contiguous())])[0]
                v = axis == rank - 1 ? pooled : s.node("Transpose", [pooled], [attr("perm", perm)])[0]
            }
        }
        return v
    }

    /// GroupNorm as PyTorch's exporter writes it: reshape to (N, G, -1), InstanceNormalization, reshape back,
    /// then the per-channel affine.
    static func groupNorm(_ g: nn.GroupNorm, _ x: Tensor, _ xn: String, _ y: Tensor, _ s: ExportSession) {
        let dt = x.dtype, groups = g.numGroups
        let grouped = s.node("Reshape", [xn, s.constInts([0, groups, -1])])[0]
        let normed = s.node("InstanceNormalization", [grouped, s.constant(torch.ones(groups, dtype: dt)),
                                                      s.constant(torch.zeros(groups, dtype: dt))],
                            [attr("epsilon", g.eps)])[0]
        var v = s.node("Reshape", [normed, s.node("Shape", [xn])[0]])[0]
        let affineShape = [g.numChannels] + [Int](repeating: 1, count: Swift.max(0, x.dim - 2))
        if let w = g.weight {
            v = s.node("Mul", [v, s.constant(w.detach().reshape(affineShape))])[0]
        }
        if let b = g.bias {
            v = s.node("Add", [v, s.constant(b.detach().reshape(affineShape))])[0]
        }
        s.bind(y, v)
    }
}
