/// bfloat16: the upper 16 bits of a float32 (round-to-nearest-even on conversion).
public struct BFloat16: Sendable, Equatable {
    public var bits: UInt16
    public init(bits: UInt16) { self.bits = bits }
    @inline(__always) public init(_ f: Float) {
        let u = f.bitPattern
        if f.isNaN { bits = 0x7FC0; return }
        let rounding = ((u >> 16) & 1) &+ 0x7FFF
        bits = UInt16(truncatingIfNeeded: (u &+ rounding) >> 16)
    }
    @inline(__always) public var float: Float { Float(bitPattern: UInt32(bits) << 16) }
}

/// Every element type a storage can hold, with lossless-as-possible conversions used by `to(dtype)`.
protocol StorableElement {
    static var isFloatType: Bool { get }
    var asDouble: Double { get }
    var asInt64: Int64 { get }
    static func from(double: Double) -> Self
    static func from(int64: Int64) -> Self
}

/// Float → integer conversion that never traps (out-of-range values saturate, NaN → 0... as C casts
/// would be undefined; PyTorch's results there are unspecified too).
@inline(__always) func saturatingInt64(_ d: Double) -> Int64 {
    if d != d { return Int64.min }
    if d >= 9.2233720368547758e18 { return Int64.max }
    if d <= -9.2233720368547758e18 { return Int64.min }
    return Int64(d)
}

extension Float: StorableElement {
    static var isFloatType: Bool { true }
    @inline(__always) var asDouble: Double { Double(self) }
    @inline(__always) var asInt64: Int64 { saturatingInt64(Double(self)) }
    @inline(__always) static func from(double: Double) -> Float { Float(double) }
    @inline(__always) static func from(int64: Int64) -> Float { Float(int64) }
}
extension Double: StorableElement {
    static var isFloatType: Bool { true }
    @inline(__always) var asDouble: Double { self }
    @inline(__always) var asInt64: Int64 { saturatingInt64(self) }
    @inline(__always) static func from(double: Double) -> Double { double }
    @inline(__always) static func from(int64: Int64) -> Double { Double(int64) }
}
extension Float16: StorableElement {
    static var isFloatType: Bool { true }
    @inline(__always) var asDouble: Double { Double(Float(self)) }
    @inline(__always) var asInt64: Int64 { saturatingInt64(Double(Float(self))) }
    @inline(__always) static func from(double: Double) -> Float16 { Float16(Float(double)) }
    @inline(__always) static func from(int64: Int64) -> Float16 { Float16(Float(int64)) }
}
extension BFloat16: StorableElement {
    static var isFloatType: Bool { true }
    @inline(__always) var asDouble: Double { Double(float) }
    @inline(__always) var asInt64: Int64 { saturatingInt64(Double(float)) }
    @inline(__always) static func from(double: Double) -> BFloat16 { BFloat16(Float(double)) }
    @inline(__always) static func from(int64: Int64) -> BFloat16 { BFloat16(Float(int64)) }
}
extension Int64: StorableElement {
    static var isFloatType: Bool { false }
    @inline(__always) var asDouble: Double { Double(self) }
    @inline(__always) var asInt64: Int64 { self }
    @inline(__always) static func from(double: Double) -> Int64 { saturatingInt64(double) }
    @inline(__always) static func from(int64: Int64) -> Int64 { int64 }
}
extension Int32: StorableElement {
    static var isFloatType: Bool { false }
    @inline(__always) var asDouble: Double { Double(self) }
    @inline(__always) var asInt64: Int64 { Int64(self) }
    @inline(__always) static func from(double: Double) -> Int32 { Int32(truncatingIfNeeded: saturatingInt64(double)) }
    @inline(__always) static func from(int64: Int64) -> Int32 { Int32(truncatingIfNeeded: int64) }
}
extension UInt8: StorableElement {
    static var isFloatType: Bool { false }
    @inline(__always) var asDouble: Double { Double(self) }
    @inline(__always) var asInt64: Int64 { Int64(self) }
    @inline(__always) static func from(double: Double) -> UInt8 { UInt8(truncatingIfNeeded: saturatingInt64(double)) }
    @inline(__always) static func from(int64: Int64) -> UInt8 { UInt8(truncatingIfNeeded: int64) }
}
extension Bool: StorableElement {
    static var isFloatType: Bool { false }
    @inline(__always) var asDouble: Double { self ? 1 : 0 }
    @inline(__always) var asInt64: Int64 { self ? 1 : 0 }
    @inline(__always) static func from(double: Double) -> Bool { double != 0 }
    @inline(__always) static func from(int64: Int64) -> Bool { int64 != 0 }
}

@inline(__always) func convertElement<S: StorableElement, D: StorableElement>(_ s: S, to: D.Type) -> D {
    if S.isFloatType || D.isFloatType { return D.from(double: s.asDouble) }
    return D.from(int64: s.asInt64)
}

/// Calls `body` with the Swift type that stores `dtype`'s elements.
@inline(__always)
func withStorableType<R>(_ dtype: DType, _ body: (any StorableElement.Type) -> R) -> R {
    switch dtype {
    case .float32: return body(Float.self)
    case .float64: return body(Double.self)
    case .float16: return body(Float16.self)
    case .bfloat16: return body(BFloat16.self)
    case .int64: return body(Int64.self)
    case .int32: return body(Int32.self)
    case .uint8: return body(UInt8.self)
    case .bool: return body(Bool.self)
    }
}
