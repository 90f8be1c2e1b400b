/// Elementwise math, comparisons and logic: ONNX's multidirectional broadcasting is Torch's, and an ONNX op's
/// result has its inputs' type, so results Torch would promote (integer division, integer powers) are cast back.
extension ONNXOps {
    static var elementwise: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]

        // Binary arithmetic.
        func binary(_ name: String, _ f: @escaping (Tensor, Tensor) -> Tensor) {
            t[name] = { node, ins in
                let a = try ins.x(0), b = try ins.x(1)
                _ = try broadcastShape(a.shape, b.shape, node)
                guard a.dtype == b.dtype else { throw node.fail("input types differ: \(a.dtype) and \(b.dtype)") }
                let r = f(a, b)
                return [r.dtype == a.dtype ? r : r.to(a.dtype)]
            }
        }
        binary("Add") { $0 + $1 }
        binary("Sub") { $0 - $1 }
        binary("Mul") { $0 * $1 }
        binary("Div") { a, b in
            if a.isFloatingPoint { return a / b }
            // Integer division truncates toward zero, in exact integer arithmetic.
            let q = a.floorDivide(b)
            let fix = (a.remainder(b) .!= 0).logicalAnd((a .< 0).logicalXor(b .< 0))
            return torch.where(fix, q + 1, q)
        }
        t["Pow"] = { node, ins in
            let a = try ins.x(0), b = try ins.x(1)
            _ = try broadcastShape(a.shape, b.shape, node)
            let r: Tensor
            if a.isFloatingPoint || b.isFloatingPoint {
                r = a.to(.float64).pow(b.to(.float64))
            } else {
                r = a.to(.int64).pow(b.to(.int64))
            }
            return [r.to(a.dtype)]
        }
        t["Mod"] = { node, ins in
            let a = try ins.x(0), b = try ins.x(1)
            _ = try broadcastShape(a.shape, b.shape, node)
            let fmod = try node.int("fmod", 0)
            if a.isFloatingPoint && fmod == 0 { throw node.fail("fmod must be 1 for floating-point inputs") }
            return [(fmod == 1 ? a.fmod(b) : a.remainder(b)).to(a.dtype)]
        }
        func variadic(_ name: String, _ f: @escaping (Tensor, Tensor) -> Tensor, mean: Bool = false) {
            t[name] = { node, ins in
                guard ins.count > 0 else { throw node.fail("needs at least one input") }
                var acc = try ins.x(0)
                for i in 1..<max(ins.count, 1) {
                    let b = try ins.x(i)
                    _ = try broadcastShape(acc.shape, b.shape, node)
                    acc = f(acc, b)
                }
                if ins.count == 1 { acc = acc.clone() }
                if mean { acc = acc / Double(ins.count) }
                let d = try ins.x(0).dtype
                return [acc.dtype == d ? acc : acc.to(d)]
            }
        }
        variadic("Sum") { $0 + $1 }
        variadic("Mean", { $0 + $1 }, mean: true)
        variadic("Max") { $0.maximum($1) }
        variadic("Min") { $0.minimum($1) }

        // Unary math.
        func unary(_ name: String, floatOnly: Bool = true, _ f: @escaping (Tensor) -> Tensor) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                if floatOnly && !x.isFloatingPoint { throw node.fail("expects a floating-point input, got \(x.dtype)") }
                let r = f(x)
                return [r.dtype == x.dtype ? r : r.to(x.dtype)]
            }
        }
        unary("Abs", floatOnly: false) { $0.abs() }
        unary("Neg", floatOnly: false) { $0.neg() }
        unary("Sign", floatOnly: false) { $0.sign() }
        unary("Exp") { $0.exp() }
        unary("Log") { $0.log() }
        unary("Sqrt") { $0.sqrt() }
        unary("Reciprocal") { $0.reciprocal() }
        unary("Floor") { $0.floor() }
        unary("Ceil") { $0.ceil() }
        unary("Round") { $0.round() }
        unary("Sin") { $0.sin() }
        unary("Cos") { $0.cos() }
        unary("Tan") { $0.tan() }
        unary("Asin") { $0.asin() }
        unary("Acos") { $0.acos() }
        unary("Atan") { $0.atan() }
        unary("Sinh") { $0.sinh() }
        unary("Cosh") { $0.cosh() }
        unary("Asinh") { x in (x + (x * x + 1).sqrt()).log() }
        unary("Acosh") { x in (x + (x * x - 1).sqrt()).log() }
        unary("Atanh") { x in ((x + 1) / (1 - x)).log() * 0.5 }
        unary("Erf") { $0.erf() }
        t["IsNaN"] = { node, ins in
            let x = try ins.x(0)
            return [x.isnan()]
        }
        t["IsInf"] = { node, ins in
            let x = try ins.x(0)
            let pos = try node.int("detect_positive", 1), neg = try node.int("detect_negative", 1)
            var r = x.isinf()
            if pos == 0 { r = r.logicalAnd(x .< 0) }
            if neg == 0 { r = r.logicalAnd(x .> 0) }
            return [r]
        }
        t["Clip"] = { node, ins in
            let x = try ins.x(0)
            var lo: Double?, hi: Double?
            if node.opset < 11 {
                lo = try node.float("min"); hi = try node.float("max")
            } else {
                lo = try ins.scalar(1); hi = try ins.scalar(2)
            }
            var r = x
            if let lo { r = r.maximum(scalar(lo, x.dtype, x.device)) }
            if let hi { r = r.minimum(scalar(hi, x.dtype, x.device)) }
            return [r === x ? x.clone() : r]
        }

        // Comparisons and logic.
        func compare(_ name: String, _ f: @escaping (Tensor, Tensor) -> Tensor) {
            t[name] = { node, ins in
                let a = try ins.x(0), b = try ins.x(1)
                _ = try broadcastShape(a.shape, b.shape, node)
                return [f(a, b)]
            }
        }
        compare("Equal") { $0 .== $1 }
        compare("Less") { $0 .< $1 }
        compare("LessOrEqual") { $0 .<= $1 }
        compare("Greater") { $0 .> $1 }
        compare("GreaterOrEqual") { $0 .>= $1 }
        compare("And") { $0.logicalAnd($1) }
        compare("Or") { $0.logicalOr($1) }
        compare("Xor") { $0.logicalXor($1) }
        t["Not"] = { _, ins in [try ins.x(0).logicalNot()] }
        return t
    }
}
