#if canImport(Glibc)
import Glibc
#endif

/// Element types arithmetic kernels are specialised for (float32, float64, int64, int32, uint8).
protocol NumericElement: TensorScalar, Numeric, Comparable {
    static var zeroValue: Self { get }
    static var oneValue: Self { get }
    static var lowest: Self { get }
    static var highest: Self { get }
}

/// Floating element types (float32, float64) with their libm functions.
protocol FloatElement: NumericElement, BinaryFloatingPoint {
    static func exp(_ x: Self) -> Self
    static func log(_ x: Self) -> Self
    static func log1p(_ x: Self) -> Self
    static func expm1(_ x: Self) -> Self
    static func sin(_ x: Self) -> Self
    static func cos(_ x: Self) -> Self
    static func tan(_ x: Self) -> Self
    static func tanh(_ x: Self) -> Self
    static func asin(_ x: Self) -> Self
    static func acos(_ x: Self) -> Self
    static func atan(_ x: Self) -> Self
    static func sinh(_ x: Self) -> Self
    static func cosh(_ x: Self) -> Self
    static func erf(_ x: Self) -> Self
    static func pow(_ x: Self, _ y: Self) -> Self
    static func atan2(_ y: Self, _ x: Self) -> Self
    static func fmod(_ x: Self, _ y: Self) -> Self
    static func rint(_ x: Self) -> Self
}

extension Float: NumericElement, FloatElement {
    static var zeroValue: Float { 0 }
    static var oneValue: Float { 1 }
    static var lowest: Float { -.infinity }
    static var highest: Float { .infinity }
    @inline(__always) static func exp(_ x: Float) -> Float { expf(x) }
    @inline(__always) static func log(_ x: Float) -> Float { logf(x) }
    @inline(__always) static func log1p(_ x: Float) -> Float { log1pf(x) }
    @inline(__always) static func expm1(_ x: Float) -> Float { expm1f(x) }
    @inline(__always) static func sin(_ x: Float) -> Float { sinf(x) }
    @inline(__always) static func cos(_ x: Float) -> Float { cosf(x) }
    @inline(__always) static func tan(_ x: Float) -> Float { tanf(x) }
    @inline(__always) static func tanh(_ x: Float) -> Float { tanhf(x) }
    @inline(__always) static func asin(_ x: Float) -> Float { asinf(x) }
    @inline(__always) static func acos(_ x: Float) -> Float { acosf(x) }
    @inline(__always) static func atan(_ x: Float) -> Float { atanf(x) }
    @inline(__always) static func sinh(_ x: Float) -> Float { sinhf(x) }
    @inline(__always) static func cosh(_ x: Float) -> Float { coshf(x) }
    @inline(__always) static func erf(_ x: Float) -> Float { erff(x) }
    @inline(__always) static func pow(_ x: Float, _ y: Float) -> Float { powf(x, y) }
    @inline(__always) static func atan2(_ y: Float, _ x: Float) -> Float { atan2f(y, x) }
    @inline(__always) static func fmod(_ x: Float, _ y: Float) -> Float { fmodf(x, y) }
    @inline(__always) static func rint(_ x: Float) -> Float { rintf(x) }
}

extension Double: NumericElement, FloatElement {
    static var zeroValue: Double { 0 }
    static var oneValue: Double { 1 }
    static var lowest: Double { -.infinity }
    static var highest: Double { .infinity }
    @inline(__always) static func exp(_ x: Double) -> Double { Glibc.exp(x) }
    @inline(__always) static func log(_ x: Double) -> Double { Glibc.log(x) }
    @inline(__always) static func log1p(_ x: Double) -> Double { Glibc.log1p(x) }
    @inline(__always) static func expm1(_ x: Double) -> Double { Glibc.expm1(x) }
    @inline(__always) static func sin(_ x: Double) -> Double { Glibc.sin(x) }
    @inline(__always) static func cos(_ x: Double) -> Double { Glibc.cos(x) }
    @inline(__always) static func tan(_ x: Double) -> Double { Glibc.tan(x) }
    @inline(__always) static func tanh(_ x: Double) -> Double { Glibc.tanh(x) }
    @inline(__always) static func asin(_ x: Double) -> Double { Glibc.asin(x) }
    @inline(__always) static func acos(_ x: Double) -> Double { Glibc.acos(x) }
    @inline(__always) static func atan(_ x: Double) -> Double { Glibc.atan(x) }
    @inline(__always) static func sinh(_ x: Double) -> Double { Glibc.sinh(x) }
    @inline(__always) static func cosh(_ x: Double) -> Double { Glibc.cosh(x) }
    @inline(__always) static func erf(_ x: Double) -> Double { Glibc.erf(x) }
    @inline(__always) static func pow(_ x: Double, _ y: Double) -> Double { Glibc.pow(x, y) }
    @inline(__always) static func atan2(_ y: Double, _ x: Double) -> Double { Glibc.atan2(y, x) }
    @inline(__always) static func fmod(_ x: Double, _ y: Double) -> Double { Glibc.fmod(x, y) }
    @inline(__always) static func rint(_ x: Double) -> Double { Glibc.rint(x) }
}

extension Int64: NumericElement {
    static var zeroValue: Int64 { 0 }
    static var oneValue: Int64 { 1 }
    static var lowest: Int64 { .min }
    static var highest: Int64 { .max }
}
extension Int32: NumericElement {
    static var zeroValue: Int32 { 0 }
    static var oneValue: Int32 { 1 }
    static var lowest: Int32 { .min }
    static var highest: Int32 { .max }
}
extension UInt8: NumericElement {
    static var zeroValue: UInt8 { 0 }
    static var oneValue: UInt8 { 1 }
    static var lowest: UInt8 { .min }
    static var highest: UInt8 { .max }
}

