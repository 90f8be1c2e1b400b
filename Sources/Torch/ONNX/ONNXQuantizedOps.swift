/// Integer matrix ops over (u)int8 values, native or emulated: MatMulInteger and ConvInteger (exact int32
/// results), QLinearMatMul (the integer product rescaled by a_scale·b_scale/y_scale and requantized).
extension ONNXEmulated {
    static var quantizedKernels: [String: ONNXTypedKernel] {
        var t: [String: ONNXTypedKernel] = [:]
        t["MatMulInteger"] = { node, ins, types in
            let a = try shifted(ins, types, 0, 2, node), b = try shifted(ins, types, 1, 3, node)
            let y = try ONNXOps.table["MatMul"]!(node, ONNXInputs(values: [a, b], node: node))[0]
            return [(y.round().to(.int32), nil)]
        }
        t["ConvInteger"] = { node, ins, types in
            let x = try shifted(ins, types, 0, 2, node), w = try shifted(ins, types, 1, 3, node)
            let y = try ONNXOps.table["Conv"]!(node, ONNXInputs(values: [x, w], node: node))[0]
            return [(y.round().to(.int32), nil)]
        }
        t["QLinearConv"] = { node, ins, types in
            // The integer conv (plus the int32 bias) rescaled by x_scale·w_scale/y_scale per output channel.
            let x = try shifted(ins, types, 0, 2, node), w = try shifted(ins, types, 3, 5, node)
            let xScale = try ins.x(1), wScale = try ins.x(4), yScale = try ins.x(6)
            let cOut = w.shape[0]
            guard xScale.numel == 1, yScale.numel == 1, wScale.numel == 1 || wScale.numel == cOut else {
                throw unsupported("QLinearConv with scales of shapes \(xScale.shape), \(wScale.shape), \(yScale.shape)", node)
            }
            var acc = try ONNXOps.table["Conv"]!(node, ONNXInputs(values: [x, w], node: node))[0]
            if let b = ins.opt(8) {
                guard b.numel == cOut else { throw node.fail("B has \(b.numel) values for \(cOut) channels") }
                acc = acc + b.to(.float64).reshape([1, cOut] + [Int](repeating: 1, count: acc.dim - 2))
            }
            let outType = ins.opt(7) != nil ? types[7] : types[0]
            let f = try integerFormat(outType, node)
            let zp = try ins.opt(7).map { try one($0, node) } ?? 0
            let xs = Float(xScale.item()), ys = Float(yScale.item()), ws = wScale.toArray(as: Float.self)
            let (lo, hi) = bounds(f)
            let inner = acc.shape[2...].reduce(1, *)
            let q = acc.toArray(as: Double.self).enumerated().map { k, v -> Int64 in
                let m = xs * ws[ws.count == 1 ? 0 : (k / inner) % cOut] / ys
                let d = Double(Float(v) * m).rounded(.toNearestOrEven) + Double(zp)
                return Int64(Swift.min(Swift.max(d, lo), hi))
            }
            return [try result(q, acc.shape, outType, f)]
        }
        t["QLinearMatMul"] = { node, ins, types in
            let a = try shifted(ins, types, 0, 2, node), b = try shifted(ins, types, 3, 5, node)
            let aScale = try ins.x(1), bScale = try ins.x(4), yScale = try ins.x(6)
            guard aScale.numel == 1, bScale.numel == 1, yScale.numel == 1 else {
                throw unsupported("QLinearMatMul with per-axis scales", node)
            }
            let outType = ins.opt(7) != nil ? types[7] : types[0]
            let f = try integerFormat(outType, node)
            let zp = try ins.opt(7).map { try one($0, node) } ?? 0
            let y = try ONNXOps.table["MatMul"]!(node, ONNXInputs(values: [a, b], node: node))[0]
            // The rescale in the scales' precision (float32 or float16), as the reference computes it.
            let half = aScale.dtype == .float16
            func inPrecision(_ v: Float) -> Float { half ? Float(Tensor([v], shape: [1]).to(.float16).item()) : v }
            let sa = Float(aScale.item()), sb = Float(bScale.item()), sy = Float(yScale.item())
            let m = inPrecision(inPrecision(sa * sb) / sy)
            let (lo, hi) = bounds(f)
            let q = y.toArray(as: Double.self).map { v -> Int64 in
                let d = Double(inPrecision(Float(v) * m)).rounded(.toNearestOrEven) + Double(zp)
                return Int64(Swift.min(Swift.max(d, lo), hi))
            }
            return [try result(q, y.shape, outType, f)]
        }
        return t
    }

    /// Input `i` minus its zero point (input `z`, one value or one per row of a matrix), as float64 values.
    static func shifted(_ ins: ONNXInputs, _ types: [Int32], _ i: Int, _ z: Int, _ node: ONNXNode) throws -> Tensor {
        let x = try ins.x(i)
        guard intFormat(types[i]) != nil, types[i] == 2 || types[i] == 3 else {
            throw unsupported("\(node.opType) of \(onnx.dataTypeName(types[i]))", node)
        }
        let v = x.to(.float64)
        guard let zp = ins.opt(z) else { return v }
        guard types[z] == types[i] else { throw node.fail("input \(z) (zero point) must be of input \(i)'s type") }
        if zp.numel == 1 { return v - zp.to(.float64).reshape([]) }
        // Per output channel (a conv weight's dim 0, a matmul's rows of A or columns of B).
        let z = zp.to(.float64).reshape([zp.numel])
        if node.opType.contains("Conv"), i != 0, x.dim >= 2, zp.numel == x.shape[0] {
            return v - z.reshape([zp.numel] + [Int](repeating: 1, count: x.dim - 1))
        }
        if node.opType == "MatMulInteger", x.dim == 2 {
            if i == 0, zp.numel == x.shape[0] { return v - z.reshape([zp.numel, 1]) }
            if i == 1, zp.numel == x.shape[1] { return v - z }
        }
        throw unsupported("\(node.opType) with zero points of shape \(zp.shape)", node)
    }
}
