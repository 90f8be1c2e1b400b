// Tensor ops that pick, split, pad or resample → ONNX: split/chunk (Split), stack (Unsqueeze + Concat), slicing and
// narrow (Slice), select and integer indexing (Gather), indexing by a tensor of positions (Gather) or by a mask
// (NonZero + GatherND), gather (GatherElements), max/min/amax/amin (ReduceMax/ReduceMin), max(dim:) with
// indices (+ ArgMax), argmax/argmin (ArgMax/ArgMin), F.pad (Pad), torch.where (Where), clamp (Clip), cumsum
// (CumSum), unbind (Split + Squeeze) and F.interpolate (Resize), in the forms PyTorch's TorchScript exporter
// writes.

enum ExportTensorOps {
    /// The one-output ops of this family.
    static func emit(_ op: TracedOp, _ inputs: [Tensor], _ ins: [String], _ out: Tensor, _ s: ExportSession) {
        let x = inputs[0], xn = ins[0]
        switch op {
        case .stack(let dim):
            let d = dim < 0 ? dim + x.dim + 1 : dim
            let axis = s.constInts([d])
            let parts = ins.map { s.cast(s.node("Unsqueeze", [$0, axis])[0], to: out.dtype) }
            s.emit("Concat", parts, out, [attr("axis", d)])
        case .slice(let dim, let start, let end, let step):
            // An end at the dim's size is written as INT64_MAX, as PyTorch does, so the file works at other sizes.
            let e = end >= x.shape[dim] ? Int(Int64.max) : end
            if start == 0 && e == Int(Int64.max) && step == 1 { return s.bind(out, xn) }
            s.emit("Slice", [xn, s.constInts([start]), s.constInts([e]), s.constInts([dim]), s.constInts([step])], out)
        case .select(let dim, let index):
            let d = dim < 0 ? dim + x.dim : dim
            s.emit("Gather", [xn, s.constant(torch.tensor([Int64(index)], dtype: .int64).reshape([]))], out, [attr("axis", d)])
        case .index(let dims):
            index(x, xn, dims, Array(inputs.dropFirst()), Array(ins.dropFirst()), out, s, name: op.name)
        case .gather(let dim):
            s.emit("GatherElements", [xn, ins[1]], out, [attr("axis", dim)])
        case .extremum(let isMax, let dims, let keepdim, _):
            reduceExtremum(isMax, x, xn, dims ?? [], keepdim, out, s)
        case .argExtremum(let isMax, let dim, let keepdim):
            let op = isMax ? "ArgMax" : "ArgMin"
            guard let dim else {
                let flat = s.node("Reshape", [xn, s.constInts([-1])])[0]
                return s.emit(op, [flat], out, [attr("axis", 0), attr("keepdims", 0)])
            }
            s.emit(op, [xn], out, [attr("axis", dim < 0 ? dim + Swift.max(x.dim, 1) : dim), attr("keepdims", keepdim ? 1 : 0)])
        case .pad(let pad, let mode, let value):
            emitPad(x, xn, pad, mode, value, out, s, name: op.name)
        case .where:
            let cond = s.cast(ins[0], to: .bool)
            s.emit("Where", [cond, s.cast(ins[1], to: out.dtype), s.cast(ins[2], to: out.dtype)], out)
        case .clamp(let lo, let hi):
            // Clip with the absent bound left out, as PyTorch writes clamp, clamp_min and clamp_max.
            var ins = [xn, lo.map { s.constScalar($0, out.dtype) } ?? "", hi.map { s.constScalar($0, out.dtype) } ?? ""]
            while ins.last == "" { ins.removeLast() }
            s.emit("Clip", ins, out)
        case .cumsum(let dim):
            let axis = s.constant(torch.tensor([Int64(dim)], dtype: .int64).reshape([]))
            s.emit("CumSum", [s.cast(xn, to: out.dtype), axis], out)
        case .resize(let mode, let alignCorners, let sizes, let scales, let antialias):
            resize(x, xn, mode, alignCorners, sizes, scales, antialias, out, s, name: op.name)
        default:
            s.unsupported(op.name, "no ONNX mapping")
        }
    }

    /// The ops with several outputs: split/chunk and max(dim:)/min(dim:).
    static func emitSeveral(_ op: TracedOp, _ inputs: [Tensor], _ ins: [String], _ outs: [Tensor], _ s: ExportSession) {
        let x = inputs[0], xn = ins[0]
        switch op {
        case .split(let sizes, let dim):
            if outs.count == 1 { return s.bind(outs[0], xn) }
            // The split sizes as an input (opset 13 and newer), as PyTorch writes them.
            let names = s.node("Split", [xn, s.constInts(sizes)], outputs: outs.count, [attr("axis", dim)])
            for (t, n) in zip(outs, names) { s.bind(t, n) }
        case .unbind(let dim):
            // Split into pieces of 1, each squeezed (PyTorch's form).
            let axes = s.constInts([dim])
            let pieces = outs.count == 1 ? [xn]
                : s.node("Split", [xn, s.constInts([Int](repeating: 1, count: outs.count))], outputs: outs.count, [attr("axis", dim)])
            for (t, p) in zip(outs, pieces) { s.bind(t, s.node("Squeeze", [p, axes])[0]) }
        case .extremum(let isMax, let dims, let keepdim, _):
            guard outs.count == 2, x.dim > 0, let d = dims?.first else {
                if outs.count == 2, x.dim == 0 {
                    s.bind(outs[0], xn)
                    _ = s.constant(outs[1])
                    return
                }
                return s.unsupported(op.name, "no ONNX mapping for these arguments")
            }
            let axis = d < 0 ? d + x.dim : d
            reduceExtremum(isMax, x, xn, [axis], keepdim, outs[0], s)
            s.emit(isMax ? "ArgMax" : "ArgMin", [xn], outs[1], [attr("axis", axis), attr("keepdims", keepdim ? 1 : 0)])
        default:
            if outs.count == 1 { return emit(op, inputs, ins, outs[0], s) }
            s.unsupported(op.name, "no ONNX mapping")
        }
    }

    /// `x[...]` with one index tensor at dim `d` of `x`: positions (any shape, negative ones counting from the end)
    /// are a Gather on that axis; a Bool mask over dims d ..< d + k is GatherND on the coordinates NonZero finds,
    /// with those dims moved to the front and the result's new dim moved back to d (PyTorch's order). Several
    /// position tensors are `indexSeveral`.
    static func index(_ x: Tensor, _ xn: String, _ dims: [Int], _ indices: [Tensor], _ names: [String], _ out: Tensor,
                      _ s: ExportSession, name: String) {
        guard dims.count == 1, let t = indices.first else {
            return indexSeveral(x, xn, dims, indices, names, out, s, name: name)
        }
        let d = dims[0]
        guard t.dtype == .bool || t.dtype == .uint8 else {
            return s.emit("Gather", [xn, names[0]], out, [attr("axis", d)])
        }
        let k = t.dim, rank = x.dim
        let front = d == 0 ? xn
            : s.node("Transpose", [xn], [attr("perm", Array(d..<(d + k)) + Array(0..<d) + Array((d + k)..<rank))])[0]
        let coordinates = s.node("Transpose", [s.node("NonZero", [s.cast(names[0], to: .bool)])[0]], [attr("perm", [1, 0])])[0]
        if d == 0 { return s.emit("GatherND", [front, coordinates], out) }
        let gathered = s.node("GatherND", [front, coordinates])[0]
        let outRank = rank - k + 1
        s.emit("Transpose", [gathered], out, [attr("perm", Array(1...d) + [0] + Array((d + 1)..<outRank))])
    }

    /// `x[...]` with several position tensors at `dims` (numpy's rules, as PyTorch's): they broadcast to one shape B,
    /// each is expanded to B and they are stacked on a new last axis as GatherND's coordinates, with the indexed dims
    /// of `x` moved to the front in order. GatherND gives B followed by the other dims; when the indexed dims were
    /// adjacent, B goes back where they were. (Masks among them are not mapped: their coordinates' count depends on
    /// the data.)
    static func indexSeveral(_ x: Tensor, _ xn: String, _ dims: [Int], _ indices: [Tensor], _ names: [String],
                             _ out: Tensor, _ s: ExportSession, name: String) {
        guard indices.allSatisfy({ $0.dtype == .int64 || $0.dtype == .int32 }) else {
            return s.unsupported(name, "a mask together with other index tensors")
        }
        let b = indices.map(\.shape).reduce([Int]()) { broadcastShapes($0, $1, op: "index") }
        let others = (0..<x.dim).filter { !dims.contains($0) }
        let front = dims == Array(0..<dims.count) ? xn : s.node("Transpose", [xn], [attr("perm", dims + others)])[0]
        let bAxes = s.constInts(b + [1])
        let columns = names.map { s.node("Reshape", [s.node("Expand", [s.cast($0, to: .int64), s.constInts(b)])[0], bAxes])[0] }
        let coordinates = s.node("Concat", columns, [attr("axis", b.count)])[0]
        let adjacent = dims == Array(dims[0]..<(dims[0] + dims.count))
        guard adjacent, dims[0] > 0 else { return s.emit("GatherND", [front, coordinates], out) }
        // Adjacent dims after d0 others: [B, pre, post] → [pre, B, post].
        let gathered = s.node("GatherND", [front, coordinates])[0]
        let d0 = dims[0], rb = b.count, rank = rb + x.dim - dims.count
        s.emit("Transpose", [gathered], out, [attr("perm", Array(rb..<(rb + d0)) + Array(0..<rb) + Array((rb + d0)..<rank))])
    }

    /// ReduceMax / ReduceMin over `dims` (empty: every dim); axes as an input from opset 18.
    static func reduceExtremum(_ isMax: Bool, _ x: Tensor, _ xn: String, _ dims: [Int], _ keepdim: Bool, _ out: Tensor,
                               _ s: ExportSession) {
        if x.dim == 0 { return s.bind(out, xn) }
        ExportOpMappings.reduce(isMax ? "ReduceMax" : "ReduceMin", x, xn, dims, keepdim, out, s, axesAsInput: s.opset >= 18)
    }

    /// F.pad: PyTorch's (before, after) pairs from the last dim become ONNX's begins-then-ends over every dim.
    static func emitPad(_ x: Tensor, _ xn: String, _ pad: [Int], _ mode: nn.functional.PadMode, _ value: Double,
                        _ out: Tensor, _ s: ExportSession, name: String) {
        var begins = [Int](repeating: 0, count: x.dim), ends = begins
        for i in 0..<(pad.count / 2) {
            begins[x.dim - 1 - i] = pad[2 * i]
            ends[x.dim - 1 - i] = pad[2 * i + 1]
        }
        let onnxMode: String
        switch mode {
        case .constant:
            return s.emit("Pad", [xn, s.constInts(begins + ends), s.constScalar(value, x.dtype)], out,
                          [attr("mode", "constant")])
        case .reflect: onnxMode = "reflect"
        case .replicate: onnxMode = "edge"
        case .circular:
            guard s.opset >= 19 else {
                return s.unsupported(name, "circular padding needs Pad's wrap mode (opset 19 or newer, asked for \(s.opset))")
            }
            guard pad.allSatisfy({ $0 >= 0 }) else { return s.unsupported(name, "negative circular padding") }
            onnxMode = "wrap"
        }
        s.emit("Pad", [xn, s.constInts(begins + ends)], out, [attr("mode", onnxMode)])
    }

    /// F.interpolate as Resize: nearest → asymmetric coordinates with floor (PyTorch's nearest), nearest-exact →
    /// half_pixel with round_prefer_ceil, linear modes and bicubic → align_corners or pytorch_half_pixel (A = −0.75
    /// for cubic). Antialiased bilinear/bicubic (opset 18 and newer) → `antialias` with half_pixel, `exclude_outside`
    /// (PyTorch normalizes each output's weights over the taps inside the input) and A = −0.5 for cubic (PyTorch's
    /// antialiased bicubic, PIL's). A scale factor used as such is written as scales, else the output sizes, N and
    /// C taken from the input's shape (Shape → Slice → Concat, as PyTorch writes it) so the batch stays free.
    static func resize(_ x: Tensor, _ xn: String, _ mode: nn.functional.InterpolationMode, _ alignCorners: Bool,
                       _ sizes: [Int], _ scales: [Double]?, _ antialias: Bool, _ out: Tensor, _ s: ExportSession,
                       name: String) {
        var attrs: [Onnx_AttributeProto]
        if antialias {
            guard s.opset >= 18 else { return s.unsupported(name, "antialiased Resize needs opset 18 or newer (asked for \(s.opset))") }
            guard mode == .bilinear || mode == .bicubic, !alignCorners else {
                return s.unsupported(name, "antialiasing with align_corners or a mode other than bilinear and bicubic")
            }
            attrs = [attr("mode", mode == .bicubic ? "cubic" : "linear"), attr("coordinate_transformation_mode", "half_pixel"),
                     attr("antialias", 1), attr("exclude_outside", 1)]
            if mode == .bicubic { attrs.append(attr("cubic_coeff_a", -0.5)) }
            return emitResize(xn, sizes, scales, attrs, out, s)
        }
        switch mode {
        case .nearest:
            attrs = [attr("mode", "nearest"), attr("coordinate_transformation_mode", "asymmetric"), attr("nearest_mode", "floor")]
        case .nearestExact:
            attrs = [attr("mode", "nearest"), attr("coordinate_transformation_mode", "half_pixel"),
                     attr("nearest_mode", "round_prefer_ceil")]
        case .linear, .bilinear, .trilinear, .bicubic:
            attrs = [attr("mode", mode == .bicubic ? "cubic" : "linear"),
                     attr("coordinate_transformation_mode", alignCorners ? "align_corners" : "pytorch_half_pixel")]
            if mode == .bicubic { attrs.append(attr("cubic_coeff_a", -0.75)) }
        case .area:
            // PyTorch's area mode is adaptive average pooling to the output size.
            return s.bind(out, ExportModuleMappings.adaptivePool(isMax: false, x, xn, sizes, s))
        }
        emitResize(xn, sizes, alignCorners ? nil : scales, attrs, out, s)
    }

    /// A Resize node with `scales` when given, else the output `sizes` after the input's N and C.
    private static func emitResize(_ xn: String, _ sizes: [Int], _ scales: [Double]?, _ attrs: [Onnx_AttributeProto],
                                   _ out: Tensor, _ s: ExportSession) {
        if let scales {
            let sc = s.constant(torch.tensor([1, 1] + scales).to(.float32))
            return s.emit("Resize", [xn, "", sc], out, attrs)
        }
        let nc = s.node("Slice", [s.node("Shape", [xn])[0], s.constInts([0]), s.constInts([2])])[0]
        let full = s.node("Concat", [nc, s.constInts(sizes)], [attr("axis", 0)])[0]
        s.emit("Resize", [xn, "", "", full], out, attrs)
    }
}
