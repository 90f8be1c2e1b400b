/// ONNX element types that SwiftTorch tensors have no dtype for (int8, int16, uint16, uint32, uint64, the 4- and
/// 2-bit integers, the float8 formats and float4): the importer carries such a value as a wider *storage* tensor
/// (int64 for the integers, float32 for the small floats, holding exactly the values the narrow type can hold)
/// together with its ONNX element type. Only the ops in `ONNXEmulated.kernels` accept such values; any other op
/// given one reports the data type as unsupported, so a result is never silently computed in the wider type.
enum ONNXEmulated {
    /// A signed or unsigned integer of `bits` bits.
    struct IntFormat { let bits: Int; let signed: Bool }
    /// A small binary float: exponent and mantissa bits, bias, largest finite value; `hasInf` for E5M2,
    /// `fnuz` where the only NaN is the negative zero pattern (no -0, no infinity).
    struct FloatFormat { let ebits: Int; let mbits: Int; let bias: Int; let maxValue: Double; let hasInf: Bool; let fnuz: Bool }

    static func intFormat(_ t: Int32) -> IntFormat? {
        switch t {
        case 3: return IntFormat(bits: 8, signed: true)
        case 4: return IntFormat(bits: 16, signed: false)
        case 5: return IntFormat(bits: 16, signed: true)
        case 12: return IntFormat(bits: 32, signed: false)
        case 13: return IntFormat(bits: 64, signed: false)
        case 21: return IntFormat(bits: 4, signed: false)
        case 22: return IntFormat(bits: 4, signed: true)
        case 25: return IntFormat(bits: 2, signed: false)
        case 26: return IntFormat(bits: 2, signed: true)
        // Native integer types, for casts and wrapping.
        case 2: return IntFormat(bits: 8, signed: false)
        case 6: return IntFormat(bits: 32, signed: true)
        case 7: return IntFormat(bits: 64, signed: true)
        default: return nil
        }
    }

    static func floatFormat(_ t: Int32) -> FloatFormat? {
        switch t {
        case 17: return FloatFormat(ebits: 4, mbits: 3, bias: 7, maxValue: 448, hasInf: false, fnuz: false)
        case 18: return FloatFormat(ebits: 4, mbits: 3, bias: 8, maxValue: 240, hasInf: false, fnuz: true)
        case 19: return FloatFormat(ebits: 5, mbits: 2, bias: 15, maxValue: 57344, hasInf: true, fnuz: false)
        case 20: return FloatFormat(ebits: 5, mbits: 2, bias: 16, maxValue: 57344, hasInf: false, fnuz: true)
        case 23: return FloatFormat(ebits: 2, mbits: 1, bias: 1, maxValue: 6, hasInf: false, fnuz: false)
        default: return nil
        }
    }

    static let float8E8M0: Int32 = 24

    /// True for the element types carried in a storage tensor.
    static func isEmulated(_ t: Int32) -> Bool {
        switch t {
        case 3, 4, 5, 12, 13, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26: return true
        default: return false
        }
    }

    /// The storage dtype of an emulated type.
    static func storage(of t: Int32) -> DType { floatFormat(t) != nil || t == float8E8M0 ? .float32 : .int64 }

    /// The ONNX type of a value: its emulated type, or that of its dtype.
    static func type(_ t: Tensor, _ emulated: Int32?) -> Int32 { emulated ?? ONNXTensorCodec.dataType(of: t.dtype) }

    static func isFloat(_ t: Int32) -> Bool {
        floatFormat(t) != nil || t == float8E8M0 || [1, 10, 11, 16].contains(t)
    }

    static func unsupported(_ what: String, _ node: ONNXNode) -> ONNXError {
        .invalidNode(field: node.field, reason: "\(what) is not supported")
    }

    // MARK: - Values

    /// `v` wrapped into the range of `f` (two's complement, as a C cast or numpy's astype does).
    @inline(__always) static func wrap(_ v: Int64, _ f: IntFormat) -> Int64 {
        if f.bits == 64 { return v }
        let m = Int64(1) << f.bits
        var r = v & (m - 1)
        if f.signed && r >= m >> 1 { r -= m }
        return r
    }

    /// Checks that uint64 values fit the int64 storage (values of 2^63 and above are not supported).
    static func checkUInt64(_ v: [Int64], _ t: Int32, field: String) throws {
        if t == 13, v.contains(where: { $0 < 0 }) {
            throw ONNXError.invalidTensor(field: field, reason: "uint64 values of 2^63 or more are not supported")
        }
    }

    /// The value of the bit pattern `b` of a small float format.
    static func decodeFloat(_ b: UInt32, _ t: Int32) -> Double {
        if t == float8E8M0 { return b == 0xFF ? .nan : Double(sign: .plus, exponent: Int(b) - 127, significand: 1) }
        let f = floatFormat(t)!
        let mmask = UInt32(1 << f.mbits) - 1, emask = UInt32(1 << f.ebits) - 1
        let s = (b >> UInt32(f.ebits + f.mbits)) & 1, e = (b >> UInt32(f.mbits)) & emask, m = b & mmask
        if f.fnuz && s == 1 && e == 0 && m == 0 { return .nan }
        if t == 17 && e == emask && m == mmask { return .nan }
        if f.hasInf && e == emask { return m == 0 ? (s == 1 ? -.infinity : .infinity) : .nan }
        let frac = Double(m) / Double(1 << f.mbits)
        let v = e == 0 ? frac * Double(sign: .plus, exponent: 1 - f.bias, significand: 1)
                       : (1 + frac) * Double(sign: .plus, exponent: Int(e) - f.bias, significand: 1)
        return s == 1 ? -v : v
    }

    /// `x` rounded to the nearest value of the small float format `t` (ties to even), as ONNX's Cast does:
    /// with `saturate`, values beyond the largest finite one (infinities included) become it; without, they become
    /// infinity (E5M2) or NaN. Float4 always saturates, and its NaN becomes -0 (as the reference does).
    static func roundFloat(_ x: Double, _ t: Int32, saturate: Bool, roundMode: String = "up") -> Double {
        if t == float8E8M0 { return roundE8M0(x, saturate: saturate, mode: roundMode) }
        let f = floatFormat(t)!
        let sat = saturate || t == 23
        if x.isNaN { return t == 23 ? -0.0 : .nan }
        if x.isInfinite {
            if sat { return x < 0 ? -f.maxValue : f.maxValue }
            return f.hasInf ? x : .nan
        }
        if x == 0 { return f.fnuz ? 0 : x }
        let a = Swift.abs(x)
        let e = Swift.max(Int(a.exponent), 1 - f.bias)
        let q = Double(sign: .plus, exponent: e - f.mbits, significand: 1)
        var r = (a / q).rounded(.toNearestOrEven) * q
        if r > f.maxValue {
            if sat { r = f.maxValue } else { return f.hasInf ? (x < 0 ? -.infinity : .infinity) : .nan }
        }
        if r == 0 && f.fnuz { return 0 }
        return x < 0 ? -r : r
    }

    /// E8M0 (a power of two, 2^-127 … 2^127, NaN): rounding `up`, `down` or to `nearest` in the exponent.
    static func roundE8M0(_ x: Double, saturate: Bool, mode: String) -> Double {
        if x.isNaN || x <= 0 && !saturate { return .nan }
        if x.isInfinite { return saturate ? Double(sign: .plus, exponent: 127, significand: 1) : .nan }
        let a = Swift.abs(x)
        if a == 0 { return Double(sign: .plus, exponent: -127, significand: 1) }
        var e = Int(a.exponent)
        let isPow2 = a.significand == 1
        switch mode {
        case "up": if !isPow2 { e += 1 }
        case "nearest":
            // Round the significand: ≥ 1.5 goes up (ties away, as the reference's bit test does).
            if a.significand >= 1.5 { e += 1 }
        default: break
        }
        if e > 127 { return saturate ? Double(sign: .plus, exponent: 127, significand: 1) : .nan }
        if e < -127 { e = -127 }
        return Double(sign: .plus, exponent: e, significand: 1)
    }

    // MARK: - Codec

    /// The bytes of a TensorProto's data for `count` elements of `size` bytes (`perByte` elements a byte for the
    /// sub-byte types).
    static func rawBytes(_ p: Onnx_TensorProto, field: String, baseDirectory: String?, byteCount: Int) throws -> [UInt8] {
        if p.dataLocation == .external {
            var buf = [UInt8](repeating: 0, count: byteCount)
            try buf.withUnsafeMutableBytes { b in
                if byteCount > 0 {
                    try ONNXTensorCodec.readExternal(p, field: field, baseDirectory: baseDirectory, byteCount: byteCount, into: b.baseAddress!)
                }
            }
            return buf
        }
        if p.hasRawData {
            guard p.rawData.count == byteCount else {
                throw ONNXError.invalidTensor(field: "\(field).raw_data",
                                              reason: "\(p.rawData.count) bytes where dims \(p.dims) of \(onnx.dataTypeName(p.dataType)) need \(byteCount)")
            }
            return [UInt8](p.rawData)
        }
        return []
    }

    /// Decodes a TensorProto of an emulated type into its storage tensor.
    static func decode(_ p: Onnx_TensorProto, field: String, baseDirectory: String?) throws -> Tensor {
        let t = p.dataType
        if p.hasSegment { throw ONNXError.invalidTensor(field: "\(field).segment", reason: "segmented tensors are not supported") }
        let n = try ONNXTensorCodec.checkedNumel(p.dims, field: field)
        let shape = p.dims.map { Int($0) }
        let bits: Int
        if let f = intFormat(t) { bits = f.bits } else if t == 23 { bits = 4 } else { bits = 8 }
        let byteCount = bits >= 8 ? n * bits / 8 : (n * bits + 7) / 8
        let perByte = bits >= 8 ? 1 : 8 / bits
        // Element patterns as UInt64.
        var patterns = [UInt64](repeating: 0, count: n)
        if p.dataLocation == .external || p.hasRawData {
            let bytes = try rawBytes(p, field: field, baseDirectory: baseDirectory, byteCount: byteCount)
            if bits < 8 {
                let mask = UInt64((1 << bits) - 1)
                for i in 0..<n { patterns[i] = (UInt64(bytes[i / perByte]) >> UInt64((i % perByte) * bits)) & mask }
            } else {
                let size = bits / 8
                for i in 0..<n {
                    var v: UInt64 = 0
                    for k in 0..<size { v |= UInt64(bytes[i * size + k]) << UInt64(8 * k) }
                    patterns[i] = v
                }
            }
        } else if t == 12 || t == 13 {
            guard p.uint64Data.count == n else {
                throw ONNXError.invalidTensor(field: "\(field).uint64_data", reason: "\(p.uint64Data.count) values where dims \(p.dims) need \(n)")
            }
            patterns = p.uint64Data
        } else if bits < 8 {
            // Packed bytes, one per int32.
            let need = (n + perByte - 1) / perByte
            guard p.int32Data.count == need else {
                throw ONNXError.invalidTensor(field: "\(field).int32_data", reason: "\(p.int32Data.count) values where dims \(p.dims) need \(need)")
            }
            let mask = UInt64((1 << bits) - 1)
            for i in 0..<n { patterns[i] = (UInt64(UInt32(bitPattern: p.int32Data[i / perByte])) >> UInt64((i % perByte) * bits)) & mask }
        } else {
            guard p.int32Data.count == n else {
                throw ONNXError.invalidTensor(field: "\(field).int32_data", reason: "\(p.int32Data.count) values where dims \(p.dims) need \(n)")
            }
            let mask: UInt64 = bits == 64 ? ~0 : (1 << UInt64(bits)) - 1
            for i in 0..<n { patterns[i] = UInt64(UInt32(bitPattern: p.int32Data[i])) & mask }
        }
        if let f = intFormat(t) {
            let v = patterns.map { wrap(Int64(bitPattern: $0), f) }
            try checkUInt64(v, t, field: field)
            return Tensor(v, shape: shape)
        }
        return Tensor(patterns.map { Float(decodeFloat(UInt32(truncatingIfNeeded: $0), t)) }, shape: shape)
    }

    /// Decodes any TensorProto: the tensor and, for an emulated type, that type.
    static func decodeTyped(_ p: Onnx_TensorProto, field: String, baseDirectory: String?) throws -> (Tensor, Int32?) {
        if isEmulated(p.dataType) { return (try decode(p, field: field, baseDirectory: baseDirectory), p.dataType) }
        return (try ONNXTensorCodec.decode(p, field: field, baseDirectory: baseDirectory), nil)
    }

    // MARK: - Conversion

    /// `x` (of ONNX type `from`) converted to ONNX type `to`: the tensor and its emulated type (nil when native).
    static func convert(_ x: Tensor, from: Int32, to: Int32, saturate: Bool = true, roundMode: String = "up",
                        node: ONNXNode) throws -> (Tensor, Int32?) {
        if let d = ONNXTensorCodec.dtype(of: to) {
            // Native target. From an integer source to a narrower integer: wrap, as a C cast does.
            if let f = intFormat(to), !isFloat(from), from != 9 {
                let v = x.toArray(as: Int64.self).map { wrap($0, f) }
                return (Tensor(v, shape: x.shape).to(d), nil)
            }
            return (x.to(d), nil)
        }
        guard isEmulated(to) else { throw ONNXError.unsupportedDataType(field: node.attrField("to"), dataType: to) }
        if floatFormat(to) != nil || to == float8E8M0 {
            let v = x.toArray(as: Double.self).map { Float(roundFloat($0, to, saturate: saturate, roundMode: roundMode)) }
            return (Tensor(v, shape: x.shape), to)
        }
        let f = intFormat(to)!
        let v: [Int64]
        if isFloat(from) {
            v = x.toArray(as: Double.self).map { wrap(Int64(torchDouble: $0), f) }
        } else {
            v = x.toArray(as: Int64.self).map { wrap($0, f) }
        }
        try checkUInt64(v, to, field: node.field)
        return (Tensor(v, shape: x.shape), to)
    }
}
