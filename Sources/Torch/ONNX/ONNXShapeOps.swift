/// Shape and data-movement ops (Reshape, Transpose, Concat, Split, Slice, Gather, Squeeze/Unsqueeze, Flatten,
/// Expand, Shape, Constant, ConstantOfShape, Range, Tile, Pad, Where, Cast …) onto Torch views and copies. Shapes
/// read from tensors are checked before anything is allocated.
extension ONNXOps {
    /// Negative indices counted from the end (int64 throughout).
    static func wrapIndices(_ idx: Tensor, _ n: Int) -> Tensor {
        torch.where(idx .< 0, idx + torch.full([], n, dtype: .int64, device: idx.device), idx)
    }

    static var shapeOps: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]

        t["Identity"] = { _, ins in [try ins.x(0)] }
        t["Cast"] = { node, ins in
            let x = try ins.x(0)
            guard let to = try node.int("to") else { throw node.fail("attribute 'to' is required") }
            guard let d = ONNXTensorCodec.dtype(of: Int32(clamping: to)) else {
                throw ONNXError.unsupportedDataType(field: node.attrField("to"), dataType: Int32(clamping: to))
            }
            return [x.to(d)]
        }
        t["CastLike"] = { _, ins in [try ins.x(0).to(try ins.x(1).dtype)] }

        t["Shape"] = { node, ins in
            let x = try ins.x(0)
            let r = x.dim
            func clampAxis(_ a: Int) -> Int { Swift.min(Swift.max(a < 0 ? a + r : a, 0), r) }
            let s = clampAxis(try node.int("start", 0)), e = clampAxis(try node.int("end", r))
            return [int64s(Array(x.shape[s..<Swift.max(s, e)]), device: x.device)]
        }
        t["Size"] = { _, ins in
            let x = try ins.x(0)
            return [torch.full([], x.numel, dtype: .int64, device: x.device)]
        }
        t["Constant"] = { node, ins in
            if let v = try node.tensor("value") { return [v] }
            if let f = try node.float("value_float") { return [scalar(f, .float32)] }
            if let f = try node.floats("value_floats") { return [Tensor(f.map { Float($0) }, shape: [f.count])] }
            if let i = try node.int("value_int") { return [torch.full([], i, dtype: .int64)] }
            if let i = try node.ints("value_ints") { return [int64s(i)] }
            if node.has("sparse_value") || node.has("value_string") || node.has("value_strings") {
                throw ONNXError.unsupportedOperator(op: "Constant (sparse or string value)", domain: "", opset: node.opset, node: node.label)
            }
            throw node.fail("no value attribute")
        }
        t["ConstantOfShape"] = { node, ins in
            let shape = try ins.ints(0) ?? []
            try checkShape(shape, node)
            let v = try node.tensor("value")
            guard v == nil || v!.numel == 1 else { throw node.fail("value must hold one element") }
            let dtype = v?.dtype ?? .float32
            let device = ins.opt(0)?.device ?? .cpu
            return [torch.full(shape, v?.item() ?? 0, dtype: dtype, device: device)]
        }
        t["Reshape"] = { node, ins in
            let x = try ins.x(0)
            guard var shape = try ins.ints(1) else { throw node.fail("the shape input is required") }
            let allowZero = try node.int("allowzero", 0) != 0
            var infer = -1
            for (i, d) in shape.enumerated() {
                if d == 0 && !allowZero {
                    guard i < x.dim else { throw node.fail("shape \(shape): 0 at \(i) copies a dim the input (rank \(x.dim)) lacks") }
                    shape[i] = x.shape[i]
                } else if d == -1 {
                    guard infer < 0 else { throw node.fail("shape \(shape) has more than one -1") }
                    infer = i
                } else if d < 0 { throw node.fail("shape \(shape) has a negative dim") }
            }
            if infer >= 0 {
                var rest = 1
                for (i, d) in shape.enumerated() where i != infer { rest = rest.multipliedReportingOverflow(by: d).partialValue }
                guard rest > 0, x.numel % rest == 0 else { throw node.fail("cannot reshape \(x.shape) to \(shape)") }
                shape[infer] = x.numel / rest
            }
            try checkShape(shape, node)
            guard shape.reduce(1, *) == x.numel else { throw node.fail("cannot reshape \(x.shape) to \(shape)") }
            return [x.reshape(shape)]
        }
        t["Flatten"] = { node, ins in
            let x = try ins.x(0)
            let a = try node.int("axis", 1)
            let axis = a < 0 ? a + x.dim : a
            guard axis >= 0 && axis <= x.dim else { throw node.fail("axis \(a) out of range for rank \(x.dim)") }
            return [x.reshape([x.shape[..<axis].reduce(1, *), x.shape[axis...].reduce(1, *)])]
        }
        t["Transpose"] = { node, ins in
            let x = try ins.x(0)
            let perm = try node.ints("perm") ?? Array((0..<x.dim).reversed())
            guard perm.count == x.dim, Set(perm) == Set(0..<x.dim) else { throw node.fail("perm \(perm) is not a permutation of rank \(x.dim)") }
            return [x.permute(perm).contiguous()]
        }
        t["Squeeze"] = { node, ins in
            let x = try ins.x(0)
            let given = node.opset >= 13 ? try ins.ints(1) : try node.ints("axes")
            guard let given else { return [x.squeeze()] }
            let axes = try given.map { try node.axis($0, rank: x.dim) }
            for a in axes where x.shape[a] != 1 { throw node.fail("cannot squeeze axis \(a) of size \(x.shape[a])") }
            var shape: [Int] = []
            for (i, d) in x.shape.enumerated() where !axes.contains(i) { shape.append(d) }
            return [x.reshape(shape)]
        }
        t["Unsqueeze"] = { node, ins in
            let x = try ins.x(0)
            guard let given = node.opset >= 13 ? try ins.ints(1) : try node.ints("axes") else { throw node.fail("axes are required") }
            let rank = x.dim + given.count
            let axes = try given.map { try node.axis($0, rank: rank) }
            guard Set(axes).count == axes.count else { throw node.fail("repeated axes \(given)") }
            var shape: [Int] = []
            var it = x.shape.makeIterator()
            for i in 0..<rank { shape.append(axes.contains(i) ? 1 : it.next()!) }
            return [x.reshape(shape)]
        }
        t["Concat"] = { node, ins in
            let xs = try (0..<ins.count).map { try ins.x($0) }
            guard let first = xs.first else { throw node.fail("needs at least one input") }
            let axis = try node.axis(try node.int("axis", 0), rank: first.dim)
            for x in xs {
                guard x.dim == first.dim, x.dtype == first.dtype else { throw node.fail("inputs of different rank or type") }
                for d in 0..<x.dim where d != axis && x.shape[d] != first.shape[d] {
                    throw node.fail("shapes \(first.shape) and \(x.shape) differ outside axis \(axis)")
                }
            }
            return [torch.cat(xs, dim: axis)]
        }
        t["Split"] = { node, ins in
            let x = try ins.x(0)
            let axis = try node.axis(try node.int("axis", 0), rank: x.dim)
            let n = x.shape[axis]
            var sizes = node.opset >= 13 ? try ins.ints(1) : try node.ints("split")
            if sizes == nil {
                let parts = try node.int("num_outputs") ?? node.outputs.count
                guard parts > 0 else { throw node.fail("no outputs to split into") }
                let chunk = (n + parts - 1) / parts
                sizes = (0..<parts).map { i in Swift.max(0, Swift.min(chunk, n - i * chunk)) }
            }
            guard let s = sizes, s.allSatisfy({ $0 >= 0 }), s.reduce(0, +) == n else {
                throw node.fail("split sizes \(sizes ?? []) do not add up to \(n)")
            }
            var out: [Tensor] = []
            var start = 0
            for len in s { out.append(x.narrow(axis, start, len)); start += len }
            return out
        }
        t["Slice"] = { node, ins in
            let x = try ins.x(0)
            let starts: [Int], ends: [Int], axesG: [Int]?, stepsG: [Int]?
            if node.opset < 10 {
                starts = try node.ints("starts") ?? []; ends = try node.ints("ends") ?? []
                axesG = try node.ints("axes"); stepsG = nil
            } else {
                starts = try ins.ints(1) ?? []; ends = try ins.ints(2) ?? []
                axesG = try ins.ints(3); stepsG = try ins.ints(4)
            }
            let axes = try (axesG ?? Array(0..<starts.count)).map { try node.axis($0, rank: x.dim) }
            let steps = stepsG ?? [Int](repeating: 1, count: starts.count)
            guard starts.count == ends.count, axes.count == starts.count, steps.count == starts.count else {
                throw node.fail("starts, ends, axes and steps differ in length")
            }
            var r = x
            for (k, a) in axes.enumerated() {
                let n = x.shape[a], step = steps[k]
                guard step != 0 else { throw node.fail("step 0") }
                var s = starts[k], e = ends[k]
                if s < 0 { s += n }
                if e < 0 { e += n }
                if step > 0 {
                    s = Swift.min(Swift.max(s, 0), n); e = Swift.min(Swift.max(e, 0), n)
                } else {
                    s = Swift.min(Swift.max(s, -1), n - 1); e = Swift.min(Swift.max(e, -1), n - 1)
                }
                let count = step > 0 ? Swift.max(0, (e - s + step - 1) / step) : Swift.max(0, (s - e + (-step) - 1) / (-step))
                if step == 1 { r = r.narrow(a, s, count); continue }
                let idx = int64s((0..<count).map { s + $0 * step }, device: x.device)
                r = r.indexSelect(a, idx)
            }
            return [r]
        }
        t["Gather"] = { node, ins in
            let x = try ins.x(0), i = try ins.x(1)
            let axis = try node.axis(try node.int("axis", 0), rank: x.dim)
            let n = x.shape[axis]
            let idx = i.to(.int64)
            if idx.numel > 0 {
                let lo = idx.min().item(), hi = idx.max().item()
                guard lo >= Double(-n), hi < Double(n) else { throw node.fail("indices out of range [-\(n), \(n))") }
            }
            let fixed = wrapIndices(idx, n)
            let flat = x.indexSelect(axis, fixed.reshape([-1]))
            var shape = Array(x.shape[..<axis]) + i.shape
            shape += x.shape[(axis + 1)...]
            return [flat.reshape(shape)]
        }
        t["GatherElements"] = { node, ins in
            let x = try ins.x(0), i = try ins.x(1)
            guard i.dim == x.dim else { throw node.fail("indices rank \(i.dim) differs from data rank \(x.dim)") }
            let axis = try node.axis(try node.int("axis", 0), rank: x.dim)
            let n = x.shape[axis]
            let idx = i.to(.int64)
            if idx.numel > 0 {
                guard idx.min().item() >= Double(-n), idx.max().item() < Double(n) else { throw node.fail("indices out of range") }
            }
            return [x.gather(axis, wrapIndices(idx, n))]
        }
        t["Expand"] = { node, ins in
            let x = try ins.x(0)
            guard let shape = try ins.ints(1) else { throw node.fail("the shape input is required") }
            let target = try broadcastShape(x.shape, shape, node)
            try checkShape(target, node)
            let padded = [Int](repeating: 1, count: target.count - x.dim) + x.shape
            return [x.reshape(padded).expand(target).contiguous()]
        }
        t["Tile"] = { node, ins in
            let x = try ins.x(0)
            guard let reps = try ins.ints(1), reps.count == x.dim, reps.allSatisfy({ $0 >= 0 }) else {
                throw node.fail("repeats must hold one non-negative value per input dim")
            }
            try checkShape(zip(x.shape, reps).map { $0.multipliedReportingOverflow(by: $1).partialValue }, node)
            return [x.tile(reps)]
        }
        t["Range"] = { node, ins in
            let s = try ins.x(0), l = try ins.x(1), d = try ins.x(2)
            let start = s.item(), limit = l.item(), delta = d.item()
            guard delta != 0, delta.isFinite, start.isFinite, limit.isFinite else { throw node.fail("bad range \(start), \(limit), \(delta)") }
            let n = Swift.max(0, Int(((limit - start) / delta).rounded(.up)))
            try checkShape([n], node)
            if s.isFloatingPoint {
                let v = (0..<n).map { start + Double($0) * delta }
                return [Tensor(v, shape: [n]).to(s.device, dtype: s.dtype)]
            }
            let a = Int64(s.item(as: Int64.self)), st = Int64(d.item(as: Int64.self))
            return [Tensor((0..<n).map { a + Int64($0) * st }, shape: [n]).to(s.device, dtype: s.dtype)]
        }
        t["Where"] = { node, ins in
            let c = try ins.x(0), a = try ins.x(1), b = try ins.x(2)
            _ = try broadcastShape(try broadcastShape(c.shape, a.shape, node), b.shape, node)
            guard a.dtype == b.dtype else { throw node.fail("X and Y differ in type") }
            return [torch.where(c, a, b)]
        }
        t["Pad"] = { node, ins in
            let x = try ins.x(0)
            let mode = try node.string("mode", "constant")
            let pads: [Int], value: Double
            var axes = Array(0..<x.dim)
            if node.opset < 11 {
                pads = try node.ints("pads") ?? []; value = try node.float("value", 0)
            } else {
                pads = try ins.ints(1) ?? []
                value = try ins.opt(2).map { c -> Double in
                    guard c.numel == 1 else { throw node.fail("constant_value must hold one value") }
                    return c.item()
                } ?? 0
                if let a = try ins.ints(3) { axes = try a.map { try node.axis($0, rank: x.dim) } }
            }
            guard pads.count == 2 * axes.count else { throw node.fail("pads \(pads) needs \(2 * axes.count) values") }
            var before = [Int](repeating: 0, count: x.dim), after = before
            for (k, a) in axes.enumerated() { before[a] = pads[k]; after[a] = pads[k + axes.count] }
            var outShape = x.shape
            for d in 0..<x.dim { outShape[d] += before[d] + after[d] }
            try checkShape(outShape, node)
            switch mode {
            case "constant":
                var flat: [Int] = []
                for d in (0..<x.dim).reversed() { flat += [before[d], after[d]] }
                return [F.pad(x, flat, mode: .constant, value: value)]
            case "edge", "reflect", "wrap":
                // Per axis, as gathers of indices: works for any rank and any dtype.
                var r = x
                for d in 0..<x.dim where before[d] != 0 || after[d] != 0 {
                    let n = r.shape[d]
                    guard n > 0 else { throw node.fail("cannot \(mode)-pad an empty axis") }
                    var idx: [Int] = []
                    for o in -before[d]..<(n + after[d]) {
                        switch mode {
                        case "edge": idx.append(Swift.min(Swift.max(o, 0), n - 1))
                        case "wrap": idx.append(((o % n) + n) % n)
                        default:
                            if n == 1 { idx.append(0); continue }
                            let p = 2 * (n - 1)
                            var m = ((o % p) + p) % p
                            if m >= n { m = p - m }
                            idx.append(m)
                        }
                    }
                    r = r.indexSelect(d, int64s(idx, device: x.device))
                }
                return [r]
            default: throw node.fail("pad mode '\(mode)'")
            }
        }
        t["CenterCropPad"] = { node, ins in
            let x = try ins.x(0)
            guard let shape = try ins.ints(1) else { throw node.fail("shape is required") }
            let axes = try (node.ints("axes") ?? Array(0..<x.dim)).map { try node.axis($0, rank: x.dim) }
            guard shape.count == axes.count, shape.allSatisfy({ $0 >= 0 }) else { throw node.fail("shape \(shape) for axes \(axes)") }
            var outShape = x.shape
            for (k, a) in axes.enumerated() { outShape[a] = shape[k] }
            try checkShape(outShape, node)
            var r = x
            for (k, a) in axes.enumerated() {
                let n = r.shape[a], m = shape[k]
                if n > m {
                    r = r.narrow(a, (n - m) / 2, m)
                } else if n < m {
                    let before = (m - n) / 2
                    var padList = [Int](repeating: 0, count: 2 * r.dim)
                    padList[2 * (r.dim - 1 - a)] = before
                    padList[2 * (r.dim - 1 - a) + 1] = m - n - before
                    r = F.pad(r, padList)
                }
            }
            return [r.contiguous()]
        }
        t["Trilu"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2 else { throw node.fail("needs rank ≥ 2") }
            let k = try ins.scalar(1).map { Int($0) } ?? 0
            return [try node.int("upper", 1) != 0 ? x.triu(diagonal: k) : x.tril(diagonal: k)]
        }
        t["DepthToSpace"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim == 4, let b = try node.int("blocksize"), b > 0, x.shape[1] % (b * b) == 0 else { throw node.fail("needs NCHW and a blocksize dividing C") }
            let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
            if try node.string("mode", "DCR") == "DCR" {
                return [x.reshape([n, b, b, c / (b * b), h, w]).permute([0, 3, 4, 1, 5, 2]).reshape([n, c / (b * b), h * b, w * b])]
            }
            return [x.reshape([n, c / (b * b), b, b, h, w]).permute([0, 1, 4, 2, 5, 3]).reshape([n, c / (b * b), h * b, w * b])]
        }
        t["SpaceToDepth"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim == 4, let b = try node.int("blocksize"), b > 0, x.shape[2] % b == 0, x.shape[3] % b == 0 else { throw node.fail("needs NCHW and a blocksize dividing H and W") }
            let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
            return [x.reshape([n, c, h / b, b, w / b, b]).permute([0, 3, 5, 1, 2, 4]).reshape([n, c * b * b, h / b, w / b])]
        }
        t["NonZero"] = { _, ins in
            let x = try ins.x(0)
            if x.dim == 0 { return [torch.zeros([0, x.item() != 0 ? 1 : 0], dtype: .int64)] }
            return [x.nonzero().t().contiguous()]
        }
        t["EyeLike"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim == 2 else { throw node.fail("needs a 2-D input") }
            let k = try node.int("k", 0)
            let dtype = try node.int("dtype").map { v -> DType in
                guard let d = ONNXTensorCodec.dtype(of: Int32(clamping: v)) else { throw ONNXError.unsupportedDataType(field: node.attrField("dtype"), dataType: Int32(clamping: v)) }
                return d
            } ?? x.dtype
            let ones = torch.ones(x.shape, dtype: .float64, device: x.device)
            return [ones.triu(diagonal: k).tril(diagonal: k).to(dtype)]
        }
        return t
    }
}
