/// Losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss with weights, ignore_index and the three
/// reductions) and the normalizations that are formulas of reductions (RMSNormalization, LpNormalization,
/// MeanVarianceNormalization).
extension ONNXOps {
    static var losses: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]

        /// −input[n, target, d…]·weight[target], ignored targets 0; reduced as ONNX's reference does.
        func nll(_ node: ONNXNode, _ input: Tensor, _ target: Tensor, _ weight: Tensor?) throws -> Tensor {
            guard input.dim >= 2, target.dim == input.dim - 1, target.shape[0] == input.shape[0],
                  Array(target.shape.dropFirst()) == Array(input.shape.dropFirst(2)) else {
                throw node.fail("input \(input.shape) and target \(target.shape) disagree")
            }
            guard !target.isFloatingPoint else { throw node.fail("target must be integer") }
            let c = input.shape[1]
            if let weight { guard weight.dim == 1, weight.numel == c else { throw node.fail("weight must hold \(c) values") } }
            let reduction = try node.string("reduction", "mean")
            guard ["mean", "sum", "none"].contains(reduction) else { throw node.fail("reduction '\(reduction)'") }
            let tgt = target.to(.int64)
            var valid = torch.onesLike(tgt, dtype: .bool)
            if let ii = try node.int("ignore_index") { valid = tgt .!= Double(ii) }
            let safe = torch.where(valid, tgt, torch.zerosLike(tgt))
            if safe.numel > 0 {
                guard safe.min().item() >= 0, safe.max().item() < Double(c) else { throw node.fail("target values out of [0, \(c))") }
            }
            let picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
            var w = weight.map { $0.indexSelect(0, safe.reshape([-1])).reshape(safe.shape) } ?? torch.onesLike(picked)
            w = torch.where(valid, w, torch.zerosLike(w))
            let loss = picked.neg() * w
            switch reduction {
            case "none": return loss
            case "sum": return loss.sum()
            default: return loss.sum() / w.sum()
            }
        }
        t["NegativeLogLikelihoodLoss"] = { node, ins in
            let x = try ins.x(0)
            return [try nll(node, x, try ins.x(1), ins.opt(2)).to(x.dtype)]
        }
        t["SoftmaxCrossEntropyLoss"] = { node, ins in
            let x = try ins.x(0)
            guard x.dim >= 2, x.isFloatingPoint else { throw node.fail("scores must be floating point of rank ≥ 2") }
            let logp = x.logSoftmax(dim: 1)
            let loss = try nll(node, logp, try ins.x(1), ins.opt(2)).to(x.dtype)
            return [loss, logp]
        }

        t["RMSNormalization"] = { node, ins in
            let x = try ins.x(0), scale = try ins.x(1)
            let axis = try node.axis(try node.int("axis", -1), rank: x.dim)
            let eps = try node.float("epsilon", 1e-5)
            let stash: DType = try node.int("stash_type", 1) == 1 ? (x.dtype == .float64 ? .float64 : .float32) : x.dtype
            _ = try broadcastShape(Array(x.shape[axis...]), scale.shape, node)
            let xs = x.to(stash)
            let inv = ((xs * xs).mean(dim: Array(axis..<x.dim), keepdim: true) + eps).rsqrt()
            return [(xs * inv).to(x.dtype) * scale]
        }
        t["LpNormalization"] = { node, ins in
            let x = try ins.x(0)
            let axis = try node.axis(try node.int("axis", -1), rank: x.dim)
            let p = try node.int("p", 2)
            guard p == 1 || p == 2 else { throw node.fail("p must be 1 or 2") }
            let norm = p == 1 ? x.abs().sum(dim: [axis], keepdim: true) : (x * x).sum(dim: [axis], keepdim: true).sqrt()
            return [torch.where(norm .== 0, torch.zerosLike(x), x / norm)]
        }
        t["MeanVarianceNormalization"] = { node, ins in
            let x = try ins.x(0)
            let axes = try (node.ints("axes") ?? [0, 2, 3]).map { try node.axis($0, rank: x.dim) }
            let m = x.mean(dim: axes, keepdim: true)
            let d = x - m
            return [d / ((d * d).mean(dim: axes, keepdim: true)).sqrt().add(1e-9)]
        }

        // Indexing extras.
        t["TopK"] = { node, ins in
            let x = try ins.x(0)
            guard let kk = try ins.ints(1), kk.count == 1 else { throw node.fail("K must be one value") }
            let axis = try node.axis(try node.int("axis", -1), rank: x.dim)
            guard kk[0] >= 0, kk[0] <= x.shape[axis] else { throw node.fail("K \(kk[0]) out of range") }
            let largest = try node.int("largest", 1) != 0
            let (v, i) = x.topk(kk[0], dim: axis, largest: largest, sorted: true)
            return [v, i]
        }
        t["ScatterElements"] = { node, ins in
            let x = try ins.x(0), idx = try ins.x(1), upd = try ins.x(2)
            guard idx.dim == x.dim, upd.shape == idx.shape else { throw node.fail("indices/updates shapes disagree with data") }
            let axis = try node.axis(try node.int("axis", 0), rank: x.dim)
            let red = try node.string("reduction", "none")
            let n = x.shape[axis]
            let i64 = idx.to(.int64)
            if i64.numel > 0 {
                guard i64.min().item() >= Double(-n), i64.max().item() < Double(n) else { throw node.fail("indices out of range") }
            }
            let fixed = wrapIndices(i64, n)
            switch red {
            case "none": return [x.scatter(axis, fixed, upd)]
            case "add": return [x.scatterAdd(axis, fixed, upd)]
            case "mul", "min", "max":
                // Each update's flat offset: its own position with the axis coordinate replaced by its index.
                let idxV = fixed.toArray(as: Int64.self)
                let iStrides = contiguousStrides(idx.shape), xStrides = contiguousStrides(x.shape)
                let targets: [Int] = (0..<idxV.count).map { p in
                    var off = 0
                    for k in 0..<x.dim { off += (k == axis ? Int(idxV[p]) : (p / iStrides[k]) % idx.shape[k]) * xStrides[k] }
                    return off
                }
                return [try scatterReduce(x, targets: targets, updates: upd, block: 1, reduction: red, node)]
            default: throw ONNXError.unsupportedOperator(op: "ScatterElements (reduction \(red))", domain: "", opset: node.opset, node: node.label)
            }
        }
        /// The row numbers of `indices`' last-dim tuples into `data` flattened over its first k dims.
        func linearIndices(_ node: ONNXNode, _ data: Tensor, _ indices: Tensor) throws -> (Tensor, Int) {
            guard indices.dim >= 1, !indices.isFloatingPoint else { throw node.fail("indices must be integer of rank ≥ 1") }
            let k = indices.shape[indices.dim - 1]
            guard k >= 1, k <= data.dim else { throw node.fail("indices' last dim \(k) exceeds data rank \(data.dim)") }
            let idx = indices.to(.int64).reshape([-1, k])
            var lin = torch.zeros([idx.shape[0]], dtype: .int64, device: data.device)
            for j in 0..<k {
                let n = data.shape[j]
                let col = wrapIndices(idx.narrow(1, j, 1).reshape([-1]), n)
                if col.numel > 0 { guard col.min().item() >= 0, col.max().item() < Double(n) else { throw node.fail("indices out of range") } }
                lin = lin * torch.full([], n, dtype: .int64, device: data.device) + col
            }
            return (lin, k)
        }
        t["GatherND"] = { node, ins in
            let x = try ins.x(0), i = try ins.x(1)
            let bd = try node.int("batch_dims", 0)
            guard bd >= 0, bd < Swift.min(x.dim, i.dim), x.shape[..<bd] == i.shape[..<bd] else {
                throw ONNXError.invalidAttribute(field: node.attrField("batch_dims"), reason: "\(bd) leading dims must be shared by data \(x.shape) and indices \(i.shape)")
            }
            func gather(_ x: Tensor, _ i: Tensor) throws -> Tensor {
                let (lin, k) = try linearIndices(node, x, i)
                let rest = Array(x.shape[k...])
                let flat = x.reshape([-1] + rest)
                return flat.indexSelect(0, lin).reshape(Array(i.shape.dropLast()) + rest)
            }
            if bd == 0 { return [try gather(x, i)] }
            // Each batch entry gathers from its own slice.
            let batch = Array(x.shape[..<bd]), nb = batch.reduce(1, *)
            let xs = x.reshape([nb] + Array(x.shape[bd...])), idx = i.reshape([nb] + Array(i.shape[bd...]))
            let parts = try (0..<nb).map { try gather(xs.select(0, $0), idx.select(0, $0)) }
            guard let first = parts.first else { throw node.fail("an empty batch") }
            return [torch.stack(parts, dim: 0).reshape(batch + first.shape)]
        }
        t["ScatterND"] = { node, ins in
            let x = try ins.x(0), i = try ins.x(1), u = try ins.x(2)
            let (lin, k) = try linearIndices(node, x, i)
            let rest = Array(x.shape[k...])
            guard u.shape == Array(i.shape.dropLast()) + rest else { throw node.fail("updates \(u.shape) do not fit") }
            let red = try node.string("reduction", "none")
            guard ["none", "add", "mul", "min", "max"].contains(red) else { throw ONNXError.unsupportedOperator(op: "ScatterND (reduction \(red))", domain: "", opset: node.opset, node: node.label) }
            if red != "none" && red != "add" {
                let block = rest.reduce(1, *)
                return [try scatterReduce(x, targets: lin.toArray(as: Int64.self).map { Int($0) * block }, updates: u, block: block, reduction: red, node)]
            }
            let flat = x.reshape([-1] + rest)
            return [flat.indexPut([lin], u.reshape([-1] + rest), accumulate: red == "add").reshape(x.shape)]
        }
        t["OneHot"] = { node, ins in
            let idx = try ins.x(0), depthT = try ins.x(1), values = try ins.x(2)
            guard depthT.numel == 1, values.numel == 2 else { throw node.fail("depth must be one value, values two") }
            let depth = Int(depthT.item())
            guard depth > 0, depth <= 1 << 20 else { throw node.fail("depth \(depth)") }
            let rank = idx.dim + 1
            let axis = try node.axis(try node.int("axis", -1), rank: rank)
            try checkShape(idx.shape + [depth], node)
            let i = idx.to(.float64).trunc().to(.int64)
            let fixed = wrapIndices(i, depth)
            let valid = (fixed .>= 0).logicalAnd(fixed .< Double(depth))
            let classes = torch.arange(depth, dtype: .int64, device: idx.device)
            var hot = fixed.unsqueeze(idx.dim) .== classes
            hot = hot.logicalAnd(valid.unsqueeze(idx.dim))
            let off = values.reshape([2]).narrow(0, 0, 1).reshape([]), on = values.reshape([2]).narrow(0, 1, 1).reshape([])
            let r = torch.where(hot, on, off)
            return [r.movedim(rank - 1, axis).contiguous()]
        }
        t["Einsum"] = { node, ins in
            guard let eq = try node.string("equation") else { throw node.fail("equation is required") }
            let xs = try (0..<ins.count).map { try ins.x($0) }
            guard !xs.isEmpty else { throw node.fail("no inputs") }
            let operands = xs[0].isFloatingPoint ? xs : xs.map { $0.to(.float64) }
            return [torch.einsum(eq.replacing(" ", with: ""), operands).to(xs[0].dtype)]
        }
        return t
    }
}
