/// An op over values that may be of an emulated element type: the inputs' ONNX types in, each output with its
/// emulated type (nil for a native one) out.
typealias ONNXTypedKernel = (ONNXNode, ONNXInputs, [Int32]) throws -> [(Tensor, Int32?)]

/// The ops that accept values of emulated element types (see `ONNXEmulated`): casts, integer arithmetic,
/// comparison and bitwise ops in the exact wrap-around arithmetic of the narrow type, quantization, and the
/// data-movement ops that only rearrange elements (which run on the storage tensor and keep the type).
extension ONNXEmulated {
    /// Ops that always run through their typed kernel (their result type may be emulated even when no input is).
    static let alwaysTyped: Set<String> = [
        "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "BitCast",
        "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift", "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",
    ]

    /// Ops that only move elements: they run on the storage tensor and their first output keeps input 0's type.
    static let moving: Set<String> = [
        "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Slice", "Gather",
        "TopK", "Concat",
    ]

    static let kernels: [String: ONNXTypedKernel] = {
        var t: [String: ONNXTypedKernel] = [:]
        t["Cast"] = { node, ins, types in
            guard let to = try node.int("to") else { throw node.fail("attribute 'to' is required") }
            let target = Int32(clamping: to)
            return [try convert(try ins.x(0), from: types[0], to: target, saturate: try node.int("saturate", 1) != 0,
                                roundMode: try node.string("round_mode", "up"), node: node)]
        }
        t["CastLike"] = { node, ins, types in
            _ = try ins.x(1)
            return [try convert(try ins.x(0), from: types[0], to: types[1], saturate: try node.int("saturate", 1) != 0,
                                roundMode: try node.string("round_mode", "up"), node: node)]
        }
        for op in ["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift"] {
            t[op] = { node, ins, types in try arithmetic(node, ins, types) }
        }
        for op in ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"] {
            t[op] = { node, ins, types in try comparison(node, ins, types) }
        }
        t["BitwiseNot"] = { node, ins, types in
            let x = try ins.x(0)
            let f = try integerFormat(types[0], node)
            return [try result(x.toArray(as: Int64.self).map { ~$0 }, x.shape, types[0], f)]
        }
        t["Clip"] = { node, ins, types in
            let x = try ins.x(0)
            let f = try integerFormat(types[0], node)
            for k in 1..<Swift.max(ins.count, 1) where ins.opt(k) != nil && types[k] != types[0] {
                throw node.fail("input \(k) must be of the input's type")
            }
            let lo = try ins.opt(1).map { try one($0, node) } ?? Int64.min
            let hi = try ins.opt(2).map { try one($0, node) } ?? Int64.max
            return [try result(x.toArray(as: Int64.self).map { Swift.min(Swift.max($0, lo), hi) }, x.shape, types[0], f)]
        }
        for op in moving {
            t[op] = { node, ins, types in
                guard let k = ONNXOps.table[op] else { throw node.fail("no kernel") }
                if op == "Concat" {
                    guard Set(types.filter { $0 != 0 }).count == 1 else { throw node.fail("inputs of different types") }
                } else if types.dropFirst().contains(where: { isEmulated($0) }) {
                    throw unsupported("an emulated type in input 1 or later", node)
                }
                let r = try k(node, ins)
                return r.enumerated().map { i, v in (v, i == 0 ? (isEmulated(types[0]) ? types[0] : nil) : nil) }
            }
        }
        t["Pow"] = { node, ins, types in
            // Pow of a native float by an emulated integer exponent: the result is of the base's type.
            guard !isEmulated(types[0]), isFloat(types[0]), intFormat(types[1]) != nil else {
                throw unsupported("Pow of \(onnx.dataTypeName(types[0])) by \(onnx.dataTypeName(types[1]))", node)
            }
            let x = try ins.x(0)
            return [(try ONNXOps.table["Pow"]!(node, ONNXInputs(values: [x, try ins.x(1).to(x.dtype)], node: node))[0], nil)]
        }
        t["Where"] = { node, ins, types in
            guard types.count == 3, types[1] == types[2], !isEmulated(types[0]) else {
                throw unsupported("Where of \(types.map { onnx.dataTypeName($0) })", node)
            }
            let r = try ONNXOps.table["Where"]!(node, ins)[0]
            return [(r, isEmulated(types[1]) ? types[1] : nil)]
        }
        t["BitCast"] = { node, ins, types in try bitCast(node, ins, types) }
        t["DequantizeLinear"] = { node, ins, types in try dequantize(node, ins, types) }
        t["QuantizeLinear"] = { node, ins, types in try quantize(node, ins, types) }
        t["DynamicQuantizeLinear"] = { node, ins, types in try dynamicQuantize(node, ins) }
        t.merge(quantizedKernels) { a, _ in a }
        return t
    }()

    // MARK: - Helpers

    static func integerFormat(_ t: Int32, _ node: ONNXNode) throws -> IntFormat {
        guard let f = intFormat(t) else { throw unsupported("\(node.opType) on \(onnx.dataTypeName(t))", node) }
        return f
    }

    static func one(_ t: Tensor, _ node: ONNXNode) throws -> Int64 {
        guard t.numel == 1 else { throw node.fail("expected one value, got shape \(t.shape)") }
        return t.toArray(as: Int64.self)[0]
    }

    /// Values wrapped into type `t`: its storage tensor (emulated) or a tensor of its dtype.
    static func result(_ v: [Int64], _ shape: [Int], _ t: Int32, _ f: IntFormat) throws -> (Tensor, Int32?) {
        let w = v.map { wrap($0, f) }
        if isEmulated(t) {
            try checkUInt64(w, t, field: "result")
            return (Tensor(w, shape: shape), t)
        }
        return (Tensor(w, shape: shape).to(ONNXTensorCodec.dtype(of: t)!), nil)
    }

    /// The inputs broadcast to one shape, as int64 values.
    static func broadcast(_ xs: [Tensor], _ node: ONNXNode) throws -> ([[Int64]], [Int]) {
        var shape = xs[0].shape
        for x in xs.dropFirst() { shape = try ONNXOps.broadcastShape(shape, x.shape, node) }
        try ONNXOps.checkShape(shape, node)
        return (xs.map { $0.expand(shape).toArray(as: Int64.self) }, shape)
    }

    /// The inputs of an elementwise integer op, all of one integer type.
    static func operands(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> ([Tensor], Int32, IntFormat) {
        let xs = try (0..<ins.count).map { try ins.x($0) }
        guard !xs.isEmpty else { throw node.fail("needs an input") }
        guard Set(types).count == 1 else {
            throw node.fail("inputs of different types (\(types.map { onnx.dataTypeName($0) }))")
        }
        return (xs, types[0], try integerFormat(types[0], node))
    }

    static func arithmetic(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> [(Tensor, Int32?)] {
        let (xs, type, f) = try operands(node, ins, types)
        let (v, shape) = try broadcast(xs, node)
        let op = node.opType
        var r = v[0]
        if op == "Max" || op == "Min" {
            for o in v.dropFirst() { for i in r.indices { r[i] = op == "Max" ? Swift.max(r[i], o[i]) : Swift.min(r[i], o[i]) } }
            return [try result(r, shape, type, f)]
        }
        guard v.count == 2 else { throw node.fail("expects 2 inputs, got \(v.count)") }
        let b = v[1]
        switch op {
        case "Add": for i in r.indices { r[i] = r[i] &+ b[i] }
        case "Sub": for i in r.indices { r[i] = r[i] &- b[i] }
        case "Mul": for i in r.indices { r[i] = r[i] &* b[i] }
        case "Div", "Mod":
            guard !b.contains(0) else { throw node.fail("integer division by zero") }
            let fmod = try node.int("fmod", 0) != 0
            for i in r.indices {
                if op == "Div" { r[i] = r[i] / b[i]; continue }
                var m = r[i] % b[i]
                if !fmod && m != 0 && (m < 0) != (b[i] < 0) { m += b[i] }
                r[i] = m
            }
        case "BitwiseAnd": for i in r.indices { r[i] &= b[i] }
        case "BitwiseOr": for i in r.indices { r[i] |= b[i] }
        case "BitwiseXor": for i in r.indices { r[i] ^= b[i] }
        case "BitShift":
            let dir = try node.string("direction") ?? ""
            guard dir == "LEFT" || dir == "RIGHT" else {
                throw ONNXError.invalidAttribute(field: node.attrField("direction"), reason: "must be LEFT or RIGHT, got '\(dir)'")
            }
            guard !f.signed else { throw node.fail("BitShift needs an unsigned type") }
            for i in r.indices {
                let s = b[i]
                if s < 0 || s >= 64 { r[i] = 0; continue }
                r[i] = dir == "LEFT" ? r[i] << s : Int64(bitPattern: UInt64(bitPattern: r[i]) >> UInt64(s))
            }
        default: throw node.fail("not an integer op")
        }
        return [try result(r, shape, type, f)]
    }

    static func comparison(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> [(Tensor, Int32?)] {
        let (xs, _, _) = try operands(node, ins, types)
        guard xs.count == 2 else { throw node.fail("expects 2 inputs, got \(xs.count)") }
        let (v, shape) = try broadcast(xs, node)
        let a = v[0], b = v[1]
        let r: [Bool]
        switch node.opType {
        case "Equal": r = zip(a, b).map { $0 == $1 }
        case "Greater": r = zip(a, b).map { $0 > $1 }
        case "GreaterOrEqual": r = zip(a, b).map { $0 >= $1 }
        case "Less": r = zip(a, b).map { $0 < $1 }
        default: r = zip(a, b).map { $0 <= $1 }
        }
        return [(Tensor(r, shape: shape), nil)]
    }

    // MARK: - BitCast

    /// The bit patterns of a tensor's elements (native: its bytes; emulated integer: two's complement).
    static func bitPatterns(_ x: Tensor, _ t: Int32, _ node: ONNXNode) throws -> (patterns: [UInt64], bits: Int) {
        if isEmulated(t) {
            let f = try integerFormat(t, node)
            let mask: UInt64 = f.bits == 64 ? ~0 : (1 << UInt64(f.bits)) - 1
            return (x.toArray(as: Int64.self).map { UInt64(bitPattern: $0) & mask }, f.bits)
        }
        let c = x.contiguous().cpu()
        let size = c.dtype.itemSize
        let p = c.rawPointer.assumingMemoryBound(to: UInt8.self)
        var out = [UInt64](repeating: 0, count: c.numel)
        for i in 0..<c.numel {
            var v: UInt64 = 0
            for k in 0..<size { v |= UInt64(p[i * size + k]) << UInt64(8 * k) }
            out[i] = v
        }
        return (out, size * 8)
    }

    static func bitCast(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> [(Tensor, Int32?)] {
        let x = try ins.x(0)
        guard let toAttr = try node.int("to") else { throw node.fail("attribute 'to' is required") }
        let to = Int32(clamping: toAttr)
        let (patterns, bits) = try bitPatterns(x, types[0], node)
        if isEmulated(to) {
            let f = try integerFormat(to, node)
            guard f.bits == bits else { throw node.fail("BitCast between types of \(bits) and \(f.bits) bits") }
            let v = patterns.map { wrap(Int64(bitPattern: $0), f) }
            try checkUInt64(v, to, field: node.field)
            return [(Tensor(v, shape: x.shape), to)]
        }
        guard let d = ONNXTensorCodec.dtype(of: to) else { throw ONNXError.unsupportedDataType(field: node.attrField("to"), dataType: to) }
        guard d.itemSize * 8 == bits else { throw node.fail("BitCast between types of \(bits) and \(d.itemSize * 8) bits") }
        let out = Tensor(uninitializedShape: x.shape, dtype: d)
        let p = out.storage.data.assumingMemoryBound(to: UInt8.self)
        for (i, v) in patterns.enumerated() {
            for k in 0..<d.itemSize { p[i * d.itemSize + k] = UInt8(truncatingIfNeeded: v >> UInt64(8 * k)) }
        }
        if d == .bool { for i in 0..<patterns.count { p[i] = p[i] != 0 ? 1 : 0 } }
        return [(out, nil)]
    }

    // MARK: - Quantization

    /// For each element of a tensor of `shape`, the index of its scale/zero point: one for the tensor, one per
    /// index along `axis`, or one per block of `blockSize` along `axis`.
    static func paramIndex(_ shape: [Int], _ param: [Int], axis a: Int, blockSize: Int, _ node: ONNXNode) throws -> [Int] {
        let n = shape.reduce(1, *)
        let count = param.reduce(1, *)
        if count == 1 && blockSize == 0 { return [Int](repeating: 0, count: n) }
        guard !shape.isEmpty else { throw node.fail("a scalar input needs a single scale") }
        let axis = try node.axis(a, rank: shape.count)
        let inner = shape[(axis + 1)...].reduce(1, *)
        if blockSize == 0 {
            guard param.count == 1, param[0] == shape[axis] else {
                throw node.fail("scale of shape \(param) does not fit axis \(axis) of \(shape)")
            }
            return (0..<n).map { ($0 / inner) % shape[axis] }
        }
        guard blockSize > 0, param.count == shape.count else {
            throw ONNXError.invalidAttribute(field: node.attrField("block_size"), reason: "blocked quantization needs a scale of the input's rank")
        }
        for (k, d) in param.enumerated() where k != axis && d != shape[k] {
            throw node.fail("scale of shape \(param) does not fit \(shape)")
        }
        guard param[axis] == (shape[axis] + blockSize - 1) / blockSize else {
            throw node.fail("scale of shape \(param) does not fit \(shape) in blocks of \(blockSize)")
        }
        let pStrides = contiguousStrides(param), xStrides = contiguousStrides(shape)
        return (0..<n).map { i in
            var idx = 0
            for k in 0..<shape.count {
                var c = (i / xStrides[k]) % shape[k]
                if k == axis { c /= blockSize }
                idx += c * pStrides[k]
            }
            return idx
        }
    }

    static func dequantize(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> [(Tensor, Int32?)] {
        let x = try ins.x(0), scale = try ins.x(1)
        let zp = ins.opt(2)
        if let zp, types[2] != types[0] { throw node.fail("the zero point must be of the input's type") }
        let idx = try paramIndex(x.shape, scale.shape, axis: try node.int("axis", 1), blockSize: try node.int("block_size", 0), node)
        let xs = x.toArray(as: Double.self), s = scale.toArray(as: Float.self)
        let z = zp?.toArray(as: Double.self) ?? [Double](repeating: 0, count: s.count)
        guard z.count == s.count else { throw node.fail("zero point and scale differ in shape") }
        var outType = scale.dtype
        if let o = try node.int("output_dtype"), o != 0 {
            guard let d = ONNXTensorCodec.dtype(of: Int32(clamping: o)) else {
                throw ONNXError.unsupportedDataType(field: node.attrField("output_dtype"), dataType: Int32(clamping: o))
            }
            outType = d
        }
        let y = (0..<xs.count).map { i in (Float(xs[i]) - Float(z[idx[i]])) * s[idx[i]] }
        return [(Tensor(y, shape: x.shape).to(outType), nil)]
    }

    /// The range of an integer type for saturation.
    static func bounds(_ f: IntFormat) -> (Double, Double) {
        if f.signed { return (-Double(sign: .plus, exponent: f.bits - 1, significand: 1), Double(sign: .plus, exponent: f.bits - 1, significand: 1) - 1) }
        return (0, Double(sign: .plus, exponent: f.bits, significand: 1) - 1)
    }

    static func quantize(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32]) throws -> [(Tensor, Int32?)] {
        let x = try ins.x(0), scale = try ins.x(1)
        let zp = ins.opt(2)
        var outType: Int32 = zp != nil ? types[2] : 2
        if let o = try node.int("output_dtype"), o != 0 {
            if zp != nil && Int32(clamping: o) != outType {
                throw ONNXError.invalidAttribute(field: node.attrField("output_dtype"), reason: "differs from the zero point's type")
            }
            outType = Int32(clamping: o)
        }
        let idx = try paramIndex(x.shape, scale.shape, axis: try node.int("axis", 1), blockSize: try node.int("block_size", 0), node)
        let s = scale.toArray(as: Float.self)
        let z = zp?.toArray(as: Double.self) ?? [Double](repeating: 0, count: s.count)
        guard z.count == s.count else { throw node.fail("zero point and scale differ in shape") }
        let half = x.dtype == .float16
        // x / scale in the input's precision.
        let q: [Double] = x.toArray(as: Float.self).enumerated().map { i, v in
            let r = v / s[idx[i]]
            return half ? Tensor([r], shape: [1]).to(.float16).item() : Double(r)
        }
        if floatFormat(outType) != nil {
            let sat = try node.int("saturate", 1) != 0
            let y = (0..<q.count).map { i in Float(roundFloat(q[i] + z[idx[i]], outType, saturate: sat)) }
            return [(Tensor(y, shape: x.shape), outType)]
        }
        let f = try integerFormat(outType, node)
        let (lo, hi) = bounds(f)
        let y = (0..<q.count).map { i in Int64(Swift.min(Swift.max(q[i].rounded(.toNearestOrEven) + z[idx[i]], lo), hi)) }
        return [try result(y, x.shape, outType, f)]
    }

    static func dynamicQuantize(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [(Tensor, Int32?)] {
        let x = try ins.x(0)
        guard x.dtype == .float32 else { throw node.fail("input must be float32, got \(x.dtype)") }
        let v = x.toArray(as: Float.self)
        let maxx = Swift.max(0, v.max() ?? 0), minx = Swift.min(0, v.min() ?? 0)
        let scale: Float = (maxx - minx) / 255
        let zpF: Float = scale == 0 ? 0 : (0 - minx / scale)
        let zp = Swift.min(Swift.max(zpF, 0), 255).rounded(.toNearestOrEven)
        let y = v.map { e -> UInt8 in
            let q = scale == 0 ? 0 : (e / scale).rounded(.toNearestOrEven)
            return UInt8(Swift.min(Swift.max(q + zp, 0), 255))
        }
        return [(Tensor(y, shape: x.shape), nil), (Tensor([scale], shape: []), nil), (Tensor([UInt8(zp)], shape: []), nil)]
    }
}
