/// The element type of a tensor, with PyTorch's names and promotion rules.
///
/// ```swift
/// let x = torch.tensor([1, 2, 3])          // int64
/// let y = x + 0.5                           // float32, as in PyTorch
/// print(y.dtype)                            // torch.float32
/// ```
public enum DType: Int, Sendable, CaseIterable, CustomStringConvertible {
    case bool
    case uint8
    case int32
    case int64
    case float16
    case bfloat16
    case float32
    case float64

    /// Bytes per element.
    @inlinable public var itemSize: Int {
        switch self {
        case .bool, .uint8: return 1
        case .float16, .bfloat16: return 2
        case .int32, .float32: return 4
        case .int64, .float64: return 8
        }
    }

    /// True for float16, bfloat16, float32 and float64.
    @inlinable public var isFloatingPoint: Bool {
        switch self {
        case .float16, .bfloat16, .float32, .float64: return true
        default: return false
        }
    }

    /// True for the integer types and bool.
    @inlinable public var isIntegral: Bool { !isFloatingPoint }

    /// PyTorch's spelling, e.g. `torch.float32`.
    public var description: String { "torch." + name }

    /// The bare name, e.g. `float32`.
    public var name: String {
        switch self {
        case .bool: return "bool"
        case .uint8: return "uint8"
        case .int32: return "int32"
        case .int64: return "int64"
        case .float16: return "float16"
        case .bfloat16: return "bfloat16"
        case .float32: return "float32"
        case .float64: return "float64"
        }
    }

    /// PyTorch's aliases.
    public static let float = DType.float32
    public static let double = DType.float64
    public static let long = DType.int64
    public static let int = DType.int32
    public static let half = DType.float16

    /// The category used by type promotion: bool < integer < floating.
    @usableFromInline var category: Int {
        switch self {
        case .bool: return 0
        case .uint8, .int32, .int64: return 1
        default: return 2
        }
    }

    /// The result type of combining two tensors of these types (torch.promote_types).
    public static func promote(_ a: DType, _ b: DType) -> DType {
        if a == b { return a }
        if a == .bool { return b }
        if b == .bool { return a }
        if a.isFloatingPoint != b.isFloatingPoint { return a.isFloatingPoint ? a : b }
        if a.isFloatingPoint {
            // float16 + bfloat16 -> float32; otherwise the wider one.
            if (a == .float16 && b == .bfloat16) || (a == .bfloat16 && b == .float16) { return .float32 }
            return a.itemSize >= b.itemSize ? a : b
        }
        // Integers: uint8 with a signed type goes to the signed type (int32/int64).
        return a.itemSize >= b.itemSize ? (a == .uint8 ? b : a) : b
    }

    /// The type a floating operation (division, exp, mean) produces from this type.
    @inlinable public var floatingResult: DType { isFloatingPoint ? self : torch.defaultDType }

    /// The type used for arithmetic on elements of this type (float16/bfloat16 compute in float32).
    @inlinable var computeType: DType {
        switch self {
        case .float16, .bfloat16: return .float32
        default: return self
        }
    }
}

/// A Swift scalar type that can live in a tensor.
public protocol TensorScalar: Sendable {
    static var dtype: DType { get }
    /// Exact conversion where possible, PyTorch-style truncation otherwise.
    init(torchDouble v: Double)
    var torchDouble: Double { get }
}

extension Float: TensorScalar {
    public static var dtype: DType { .float32 }
    @inlinable public init(torchDouble v: Double) { self = Float(v) }
    @inlinable public var torchDouble: Double { Double(self) }
}
extension Double: TensorScalar {
    public static var dtype: DType { .float64 }
    @inlinable public init(torchDouble v: Double) { self = v }
    @inlinable public var torchDouble: Double { self }
}
extension Int64: TensorScalar {
    public static var dtype: DType { .int64 }
    @inlinable public init(torchDouble v: Double) { self = v.isFinite ? Int64(clamping: Int64(exactly: v.rounded(.towardZero)) ?? (v < 0 ? Int64.min : Int64.max)) : (v.isNaN ? Int64.min : (v < 0 ? Int64.min : Int64.max)) }
    @inlinable public var torchDouble: Double { Double(self) }
}
extension Int: TensorScalar {
    public static var dtype: DType { .int64 }
    @inlinable public init(torchDouble v: Double) { self = Int(Int64(torchDouble: v)) }
    @inlinable public var torchDouble: Double { Double(self) }
}
extension Int32: TensorScalar {
    public static var dtype: DType { .int32 }
    @inlinable public init(torchDouble v: Double) { self = Int32(truncatingIfNeeded: Int64(torchDouble: v)) }
    @inlinable public var torchDouble: Double { Double(self) }
}
extension UInt8: TensorScalar {
    public static var dtype: DType { .uint8 }
    @inlinable public init(torchDouble v: Double) { self = UInt8(truncatingIfNeeded: Int64(torchDouble: v)) }
    @inlinable public var torchDouble: Double { Double(self) }
}
extension Bool: TensorScalar {
    public static var dtype: DType { .bool }
    @inlinable public init(torchDouble v: Double) { self = v != 0 }
    @inlinable public var torchDouble: Double { self ? 1 : 0 }
}

/// PyTorch's C++ scalar-type name used in loss and linalg messages (`Float`, `Long`, ...).
func scalarTypeName(_ d: DType) -> String {
    switch d {
    case .float32: return "Float"
    case .float64: return "Double"
    case .float16: return "Half"
    case .bfloat16: return "BFloat16"
    case .int64: return "Long"
    case .int32: return "Int"
    case .uint8: return "Byte"
    case .bool: return "Bool"
    }
}
