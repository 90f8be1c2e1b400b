/// Reductions: axes from the attribute (before opset 13/18) or the second input, keepdims, and
/// noop_with_empty_axes; results keep the input's type (Torch's integer sums widen to int64 and are cast back).
extension ONNXOps {
    static var reductions: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]
        /// `axesInputSince`: the opset from which axes come as input 1.
        func reduce(_ name: String, axesInputSince: Int64, _ f: @escaping (Tensor, [Int], Bool) -> Tensor) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                let keep = try node.int("keepdims", 1) != 0
                let given = node.opset >= axesInputSince ? try ins.ints(1) : try node.ints("axes")
                var axes: [Int]
                if let given, !given.isEmpty {
                    axes = try given.map { try node.axis($0, rank: x.dim, "axes value") }
                    guard Set(axes).count == axes.count else { throw node.fail("repeated axes \(given)") }
                } else {
                    if try node.int("noop_with_empty_axes", 0) != 0 { return [x.clone()] }
                    axes = Array(0..<x.dim)
                }
                axes.sort()
                if x.dim == 0 { return [f(x.reshape([1]), [0], false).reshape([]).to(x.dtype)] }
                for a in axes where x.shape[a] == 0 && (name == "ReduceMax" || name == "ReduceMin" || name == "ReduceLogSumExp") {
                    _ = a
                    // Empty reductions: ±inf for floats, as the reference implementation.
                    var shape = x.shape
                    for b in axes.reversed() { if keep { shape[b] = 1 } else { shape.remove(at: b) } }
                    guard x.isFloatingPoint else { throw node.fail("\(name) of an empty integer tensor") }
                    return [torch.full(shape, name == "ReduceMin" ? Double.infinity : -Double.infinity, dtype: x.dtype, device: x.device)]
                }
                let r = f(x, axes, keep)
                return [r.dtype == x.dtype ? r : r.to(x.dtype)]
            }
        }
        func widened(_ x: Tensor) -> Tensor { x.isFloatingPoint ? x : x.to(.float64) }
        reduce("ReduceSum", axesInputSince: 13) { x, a, k in x.sum(dim: a, keepdim: k) }
        reduce("ReduceMean", axesInputSince: 18) { x, a, k in widened(x).mean(dim: a, keepdim: k) }
        reduce("ReduceMax", axesInputSince: 18) { x, a, k in x.dtype == .bool ? x.to(.uint8).amax(dim: a, keepdim: k) : x.amax(dim: a, keepdim: k) }
        reduce("ReduceMin", axesInputSince: 18) { x, a, k in x.dtype == .bool ? x.to(.uint8).amin(dim: a, keepdim: k) : x.amin(dim: a, keepdim: k) }
        reduce("ReduceProd", axesInputSince: 18) { x, a, k in
            var r = x
            for d in a.reversed() { r = r.prod(dim: d, keepdim: k) }
            if k == false && a.isEmpty { return r }
            return r
        }
        reduce("ReduceL1", axesInputSince: 18) { x, a, k in x.abs().sum(dim: a, keepdim: k) }
        reduce("ReduceL2", axesInputSince: 18) { x, a, k in widened(x * x).sum(dim: a, keepdim: k).sqrt() }
        reduce("ReduceSumSquare", axesInputSince: 18) { x, a, k in (x * x).sum(dim: a, keepdim: k) }
        reduce("ReduceLogSum", axesInputSince: 18) { x, a, k in widened(x).sum(dim: a, keepdim: k).log() }
        reduce("ReduceLogSumExp", axesInputSince: 18) { x, a, k in
            let w = widened(x).to(.float64)
            let m = w.amax(dim: a, keepdim: true)
            let m0 = torch.where(m.isinf(), torch.zerosLike(m), m)
            var r = (w - m0).exp().sum(dim: a, keepdim: true).log() + m0
            if !k { for d in a.reversed() { r = r.squeeze(d) } }
            return r
        }

        func arg(_ name: String, _ f: @escaping (Tensor, Int, Bool) -> Tensor) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                let axis = try node.axis(try node.int("axis", 0), rank: x.dim)
                let keep = try node.int("keepdims", 1) != 0
                guard x.dim > 0, x.shape[axis] > 0 else { throw node.fail("\(name) of an empty axis") }
                if try node.int("select_last_index", 0) != 0 {
                    let n = x.shape[axis]
                    let i = f(x.flip([axis]), axis, keep)
                    return [torch.full([], n - 1, dtype: .int64, device: i.device) - i]
                }
                return [f(x, axis, keep)]
            }
        }
        arg("ArgMax") { x, a, k in x.argmax(dim: a, keepdim: k) }
        arg("ArgMin") { x, a, k in x.argmin(dim: a, keepdim: k) }

        func cumulative(_ name: String, _ f: @escaping (Tensor, Int) -> Tensor, identity: Double) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                guard let a = try ins.ints(1), a.count == 1 else { throw node.fail("axis must be one value") }
                let axis = try node.axis(a[0], rank: x.dim)
                let reverse = try node.int("reverse", 0) != 0, exclusive = try node.int("exclusive", 0) != 0
                var v = reverse ? x.flip([axis]) : x
                if exclusive {
                    let n = v.shape[axis]
                    var padShape = v.shape; padShape[axis] = 1
                    let pad = torch.full(padShape, identity, dtype: v.dtype, device: v.device)
                    v = torch.cat([pad, v.narrow(axis, 0, max(n - 1, 0))], dim: axis)
                }
                var r = f(v, axis)
                if reverse { r = r.flip([axis]) }
                return [r.dtype == x.dtype ? r : r.to(x.dtype)]
            }
        }
        cumulative("CumSum", { $0.cumsum(dim: $1) }, identity: 0)
        cumulative("CumProd", { $0.cumprod(dim: $1) }, identity: 1)
        return t
    }
}
