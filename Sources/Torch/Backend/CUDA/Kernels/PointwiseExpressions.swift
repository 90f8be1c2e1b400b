/// Each pointwise op as a C expression for the kernel templates (docs/architecture.md §7). The switches are exhaustive:
/// a new op without a CUDA expression does not compile. Inputs are `x`, `y` (and `z`) in the math type
/// (`KernelPrelude.mathType`); `nil` means the op has no kernel for that kind of dtype (the CPU path
/// rejects those dtypes too, or routes them elsewhere, e.g. bool unary ops are copies).

extension UnaryOp {
    /// The expression for floating inputs.
    var floatingExpression: String {
        switch self {
        case .abs: return "st_fabs(x)"
        case .neg: return "-x"
        case .sign: return "(x > 0 ? 1 : (x < 0 ? -1 : 0))"
        case .relu: return "(x < 0 ? 0 : x)"
        case .round: return "st_rint(x)"
        case .floor: return "st_floor(x)"
        case .ceil: return "st_ceil(x)"
        case .trunc: return "st_trunc(x)"
        case .frac: return "(x - st_trunc(x))"
        case .square: return "(x * x)"
        case .sqrt: return "st_sqrt(x)"
        case .rsqrt: return "(1 / st_sqrt(x))"
        case .exp: return "st_exp(x)"
        case .log: return "st_log(x)"
        case .log1p: return "st_log1p(x)"
        case .expm1: return "st_expm1(x)"
        case .log2: return "(st_log(x) * (1 / st_log((M)2)))"
        case .log10: return "(st_log(x) * (1 / st_log((M)10)))"
        case .sin: return "st_sin(x)"
        case .cos: return "st_cos(x)"
        case .tan: return "st_tan(x)"
        case .asin: return "st_asin(x)"
        case .acos: return "st_acos(x)"
        case .atan: return "st_atan(x)"
        case .sinh: return "st_sinh(x)"
        case .cosh: return "st_cosh(x)"
        case .tanh: return "st_tanh(x)"
        case .sigmoid: return "(1 / (1 + st_exp(-x)))"
        case .reciprocal: return "(1 / x)"
        case .erf: return "st_erf(x)"
        }
    }

    /// The expression for integer inputs (ops that keep integer dtypes), nil for the others.
    var integerExpression: String? {
        switch self {
        case .abs: return "(x < 0 ? (M)(0 - x) : x)"
        case .neg: return "(M)(0 - x)"
        case .sign: return "(M)(x > 0 ? 1 : (x < 0 ? -1 : 0))"
        case .relu: return "(x > 0 ? x : (M)0)"
        case .square: return "(M)(x * x)"
        case .round, .floor, .ceil, .trunc: return "x"
        case .sqrt, .rsqrt, .exp, .log, .log1p, .expm1, .log2, .log10, .sin, .cos, .tan, .asin, .acos, .atan,
             .sinh, .cosh, .tanh, .sigmoid, .reciprocal, .erf, .frac:
            return nil
        }
    }
}

extension BinaryOp {
    var floatingExpression: String {
        switch self {
        case .add: return "(x + y)"
        case .sub: return "(x - y)"
        case .mul: return "(x * y)"
        case .div: return "(x / y)"
        case .maximum: return "st_max_nan(x, y)"
        case .minimum: return "st_min_nan(x, y)"
        case .pow: return "st_pow(x, y)"
        case .atan2: return "st_atan2(x, y)"
        case .remainder: return "st_remainder(x, y)"
        case .fmod: return "st_fmod(x, y)"
        case .floorDivide: return "st_floor_divide(x, y)"
        }
    }

    /// Integer expressions (nil where integers are promoted to floating first).
    var integerExpression: String? {
        switch self {
        case .add: return "(M)(x + y)"
        case .sub: return "(M)(x - y)"
        case .mul: return "(M)(x * y)"
        case .maximum: return "(x > y ? x : y)"
        case .minimum: return "(x < y ? x : y)"
        case .pow: return "st_int_pow(x, y)"
        case .remainder: return "st_int_remainder(x, y)"
        case .fmod: return "(M)(x % y)"
        case .floorDivide: return "st_int_floor_divide(x, y)"
        case .div, .atan2: return nil
        }
    }

    /// Bool tensors: add/maximum are `or`, mul/minimum are `and`, the rest are errors on the CPU too.
    var boolExpression: String? {
        switch self {
        case .add, .maximum: return "(x || y)"
        case .mul, .minimum: return "(x && y)"
        case .sub, .div, .pow, .atan2, .remainder, .fmod, .floorDivide: return nil
        }
    }
}

extension CompareOp {
    var expression: String {
        switch self {
        case .eq: return "(x == y)"
        case .ne: return "(x != y)"
        case .lt: return "(x < y)"
        case .le: return "(x <= y)"
        case .gt: return "(x > y)"
        case .ge: return "(x >= y)"
        }
    }
}

/// Pointwise ops with three operands (or parameters), run by the `ternary` kernel family.
enum TernaryOp: Int, CaseIterable {
    /// `torch.where(cond, x, y)`: operand 1 is bool.
    case `where`
    /// `clamp(x, min, max)` with scalar or tensor bounds (NaN bounds propagate like PyTorch's).
    case clamp
    /// `x + alpha * y * z` (addcmul), `x + alpha * y / z` (addcdiv), `x + w * (y - x)` (lerp).
    case addcmul, addcdiv, lerp
    /// Logical ops of two tensors of any dtype into bool: and, or, xor (operand 2 unused).
    case logicalAnd, logicalOr, logicalXor
    /// One-pass backward formulas of `FusedBinaryFormula` (x = incoming gradient, y = saved output, F0 = parameter).
    case thresholdBackward, tanhBackward, sigmoidBackward

    var name: String {
        switch self {
        case .where: return "where"
        case .clamp: return "clamp"
        case .addcmul: return "addcmul"
        case .addcdiv: return "addcdiv"
        case .lerp: return "lerp"
        case .logicalAnd: return "logical_and"
        case .logicalOr: return "logical_or"
        case .logicalXor: return "logical_xor"
        case .thresholdBackward: return "threshold_backward"
        case .tanhBackward: return "tanh_backward"
        case .sigmoidBackward: return "sigmoid_backward"
        }
    }

    /// Inputs are `x`, `y`, `z` (`c` is the bool condition of `where`); `F0`, `F1` the op's scalar parameters.
    var expression: String {
        switch self {
        case .where: return "(c ? y : z)"
        case .clamp: return "st_min_nan(st_max_nan(x, y), z)"
        case .addcmul: return "(x + (M)F0 * y * z)"
        case .addcdiv: return "(x + (M)F0 * y / z)"
        case .lerp: return "(x + z * (y - x))"
        case .logicalAnd: return "((x != 0) && (y != 0))"
        case .logicalOr: return "((x != 0) || (y != 0))"
        case .logicalXor: return "((x != 0) != (y != 0))"
        case .thresholdBackward: return "(y > (M)F0 ? x : (M)0)"
        case .tanhBackward: return "(x * (1 - y * y))"
        case .sigmoidBackward: return "(x * y * (1 - y))"
        }
    }

    var producesBool: Bool {
        switch self {
        case .logicalAnd, .logicalOr, .logicalXor: return true
        case .where, .clamp, .addcmul, .addcdiv, .lerp, .thresholdBackward, .tanhBackward, .sigmoidBackward: return false
        }
    }
}
