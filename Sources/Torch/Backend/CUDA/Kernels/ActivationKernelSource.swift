/// The `nn` activations' kernels on CUDA: for each activation a forward `y = f(x)` and a backward `g · f'(x)`, as C
/// expressions for the one elementwise template (`ElementwiseKernelSource`), the same formulas as the CPU's
/// (ActivationKernels.swift). Parameters travel in the launch arguments: `F0` and `F1` (`args.f[2]`, `args.f[3]`),
/// and `P2` (`args.f[1]`, the scalar slot of a second operand these kernels never take as a scalar: forwards have
/// one tensor, backwards two).
///
/// In a backward kernel the template's `x` is the incoming gradient and `y` the forward's input.
enum ActivationKernelOp: Int, CaseIterable {
    case leakyRelu, elu, gelu, geluTanh, silu, mish, hardtanh, hardsigmoid, hardswish, softplus
    case leakyReluBackward, eluBackward, geluBackward, geluTanhBackward, siluBackward, mishBackward
    case hardtanhBackward, hardsigmoidBackward, hardswishBackward, softplusBackward

    var name: String { "\(self)" }
    var isBackward: Bool { rawValue >= ActivationKernelOp.leakyReluBackward.rawValue }

    /// The expression (math type `M`).
    var expression: String {
        // 1/√2, 1/√(2π), √(2/π) and GELU's tanh coefficient, as the CPU kernels use them.
        let sqrt1_2 = "(M)0.70710678118654752440", invSqrt2Pi = "(M)0.39894228040143267794"
        let beta = "(M)0.79788456080286535588", kappa = "(M)0.044715"
        let softplus1 = "(v > (M)20 ? v : st_log1p(st_exp(v)))"
        switch self {
        case .leakyRelu: return "(x > 0 ? x : x * (M)F0)"
        case .elu: return "(x <= 0 ? st_expm1(x * (M)P2) * (M)F0 : x * (M)F1)"
        case .gelu: return "((M)0.5 * x * (1 + st_erf(x * \(sqrt1_2))))"
        case .geluTanh: return "((M)0.5 * x * (1 + st_tanh(\(beta) * (x + \(kappa) * x * x * x))))"
        case .silu: return "(x / (1 + st_exp(-x)))"
        case .mish: return "([&]() { M v = x; return x * st_tanh(\(softplus1)); }())"
        case .hardtanh: return "(x < (M)F0 ? (M)F0 : (x > (M)F1 ? (M)F1 : x))"
        case .hardsigmoid: return "(st_min_nan(st_max_nan(x + 3, (M)0), (M)6) / 6)"
        case .hardswish: return "(x * st_min_nan(st_max_nan(x + 3, (M)0), (M)6) / 6)"
        case .softplus: return "(x * (M)F0 > (M)F1 ? x : st_log1p(st_exp(x * (M)F0)) / (M)F0)"
        case .leakyReluBackward: return "(y > 0 ? x : x * (M)F0)"
        case .eluBackward: return "(y <= 0 ? x * (M)P2 * (M)F0 * st_exp(y * (M)P2) : x * (M)F1)"
        case .geluBackward:
            return "(x * ((M)0.5 * (1 + st_erf(y * \(sqrt1_2))) + y * st_exp((M)-0.5 * y * y) * \(invSqrt2Pi)))"
        case .geluTanhBackward:
            return "([&]() { M y2 = y * y; M t = st_tanh(\(beta) * (y + \(kappa) * y2 * y)); "
                + "return x * ((M)0.5 * (1 + t) + (M)0.5 * y * (1 - t * t) * \(beta) * (1 + 3 * \(kappa) * y2)); }())"
        case .siluBackward: return "([&]() { M s = 1 / (1 + st_exp(-y)); return x * s * (1 + y * (1 - s)); }())"
        case .mishBackward:
            return "([&]() { M v = y; M s = 1 / (1 + st_exp(-y)); M t = st_tanh(\(softplus1)); "
                + "return x * (t + y * s * (1 - t * t)); }())"
        case .hardtanhBackward: return "((y <= (M)F0 || y >= (M)F1) ? (M)0 : x)"
        // PyTorch multiplies by the float constant 1/6.
        case .hardsigmoidBackward: return "((y > -3 && y < 3) ? x * (M)(1.0f / 6.0f) : (M)0)"
        case .hardswishBackward: return "(y <= -3 ? (M)0 : (y < 3 ? x * (y / 3 + (M)0.5) : x))"
        case .softplusBackward:
            return "([&]() { M z = st_exp(y * (M)F0); return y * (M)F0 > (M)F1 ? x : x * z / (z + 1); }())"
        }
    }

    /// The module's kernel for floating dtype `d`.
    static func kernel(_ op: ActivationKernelOp, _ d: DType) -> (name: String, source: String) {
        let name = "activation_\(op.name)_\(KernelPrelude.tag(d))"
        let body = ElementwiseKernelSource.kernel(name: name, output: d, inputs: op.isBackward ? [d, d] : [d],
                                                  mathType: KernelPrelude.mathType(d), expression: op.expression)
        return (name, "#define P2 args.f[1]\n" + body + "#undef P2\n")
    }
}
