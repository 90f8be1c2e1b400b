// SwiftTorch tensor ops → ONNX nodes, for the ops a custom `forward` calls (view, flatten, +, relu through F,
// softmax, matmul, cat, ...). Layers with a direct ONNX form are mapped whole in ExportModuleMappings.swift.
// An op or an argument with no ONNX form stops the export with `ONNXExportError.unsupportedOperator`.

enum ExportOpMappings {
    static func emit(_ op: TracedOp, _ inputs: [Tensor], _ ins: [String], _ out: Tensor, _ s: ExportSession) {
        let x = inputs[0]
        switch op {
        case .binary(let b):
            binary(b, ins, out, s)
        case .compare(let c):
            let dt = resultType(inputs[0], inputs[1])
            let a = s.cast(ins[0], to: dt), b = s.cast(ins[1], to: dt)
            switch c {
            case .eq: s.emit("Equal", [a, b], out)
            case .ne: s.emit("Not", [s.node("Equal", [a, b])[0]], out)
            case .lt: s.emit("Less", [a, b], out)
            case .le: s.emit("LessOrEqual", [a, b], out)
            case .gt: s.emit("Greater", [a, b], out)
            case .ge: s.emit("GreaterOrEqual", [a, b], out)
            }
        case .alias:
            s.bind(out, ins[0])
        case .unary(let u):
            unary(u, s.cast(ins[0], to: out.dtype), out, s, name: op.name)
        case .activation(let k):
            ExportActivations.emit(k, ins[0], out, s, name: op.name)
        case .reshape(let requested):
            reshape(x, ins[0], requested, out, s)
        case .flatten(let start, let end):
            if x.dim == 0 { return reshape(x, ins[0], [1], out, s) }
            let a = start < 0 ? start + x.dim : start, e = end < 0 ? end + x.dim : end
            if a == e { return s.bind(out, ins[0]) }
            if a == 1 && e == x.dim - 1 { return s.emit("Flatten", ins, out, [attr("axis", 1)]) }
            // Leading dims copied (0), the merged run inferred (-1), trailing dims as they are.
            reshape(x, ins[0], [Int](repeating: 0, count: a) + [-1] + Array(x.shape[(e + 1)...]), out, s, literal: true)
        case .squeeze(let dims):
            let ds = dims.map { $0.map { $0 < 0 ? $0 + x.dim : $0 } } ?? Array(0..<x.dim)
            let axes = ds.filter { $0 >= 0 && $0 < x.dim && x.shape[$0] == 1 }.sorted()
            if axes.isEmpty { return s.bind(out, ins[0]) }
            s.emit("Squeeze", [ins[0], s.constInts(axes)], out)
        case .unsqueeze(let d):
            s.emit("Unsqueeze", [ins[0], s.constInts([d < 0 ? d + x.dim + 1 : d])], out)
        case .transpose(let d0, let d1):
            if x.dim < 2 { return s.bind(out, ins[0]) }
            var perm = Array(0..<x.dim)
            perm.swapAt(d0 < 0 ? d0 + x.dim : d0, d1 < 0 ? d1 + x.dim : d1)
            s.emit("Transpose", ins, out, [attr("perm", perm)])
        case .t:
            if x.dim < 2 { return s.bind(out, ins[0]) }
            s.emit("Transpose", ins, out, [attr("perm", [1, 0])])
        case .permute(let dims):
            s.emit("Transpose", ins, out, [attr("perm", dims.map { $0 < 0 ? $0 + x.dim : $0 })])
        case .softmax(let dim, let log):
            s.emit(log ? "LogSoftmax" : "Softmax", [s.cast(ins[0], to: out.dtype)], out, [attr("axis", dim)])
        case .matmul:
            s.emit("MatMul", ins, out)
        case .cat(let dim):
            let d = dim < 0 ? dim + x.dim : dim
            // PyTorch skips empty 1-D tensors in cat.
            let kept = zip(inputs, ins).filter { !($0.0.dim == 1 && $0.0.numel == 0) }.map { s.cast($0.1, to: out.dtype) }
            s.emit("Concat", kept, out, [attr("axis", d)])
        case .sum(let dims, let keepdim):
            reduce("ReduceSum", x, s.cast(ins[0], to: out.dtype), dims, keepdim, out, s, axesAsInput: true)
        case .mean(let dims, let keepdim):
            reduce("ReduceMean", x, ins[0], dims, keepdim, out, s, axesAsInput: s.opset >= 18)
        case .split, .stack, .slice, .select, .index, .gather, .extremum, .argExtremum, .pad, .where, .resize, .clamp,
             .cumsum, .unbind:
            ExportTensorOps.emit(op, inputs, ins, out, s)
        }
    }

    static func binary(_ b: BinaryOp, _ ins: [String], _ out: Tensor, _ s: ExportSession) {
        let a = s.cast(ins[0], to: out.dtype), c = s.cast(ins[1], to: out.dtype)
        switch b {
        case .add: s.emit("Add", [a, c], out)
        case .sub: s.emit("Sub", [a, c], out)
        case .mul: s.emit("Mul", [a, c], out)
        case .div: s.emit("Div", [a, c], out)
        case .maximum: s.emit("Max", [a, c], out)
        case .minimum: s.emit("Min", [a, c], out)
        case .pow: s.emit("Pow", [a, c], out)
        case .fmod: s.emit("Mod", [a, c], out, [attr("fmod", 1)])
        case .remainder:
            if out.dtype.isFloatingPoint {
                // a − floor(a / b)·b, Python's sign rule.
                let q = s.node("Floor", [s.node("Div", [a, c])[0]])[0]
                s.emit("Sub", [a, s.node("Mul", [q, c])[0]], out)
            } else { s.emit("Mod", [a, c], out, [attr("fmod", 0)]) }
        case .floorDivide:
            if out.dtype.isFloatingPoint { s.emit("Floor", [s.node("Div", [a, c])[0]], out) }
            else { s.unsupported("aten::floor_divide", "integer floor division has no exact ONNX form") }
        case .atan2:
            // ONNX has no Atan2: atan(a / c), then ±π where c < 0 (+π for a ≥ 0), as PyTorch's exporter writes it,
            // and 0 where both are 0 (0 / 0 would give NaN; atan2(0, 0) is 0).
            let dt = out.dtype
            let zero = s.constScalar(0, dt), pi = s.constScalar(Double.pi, dt)
            let angle = s.node("Atan", [s.node("Div", [a, c])[0]])[0]
            let shifted = s.node("Where", [s.node("GreaterOrEqual", [a, zero])[0], s.node("Add", [angle, pi])[0],
                                           s.node("Sub", [angle, pi])[0]])[0]
            let quadrant = s.node("Where", [s.node("Less", [c, zero])[0], shifted, angle])[0]
            let origin = s.node("And", [s.node("Equal", [a, zero])[0], s.node("Equal", [c, zero])[0]])[0]
            s.emit("Where", [origin, zero, quadrant], out)
        }
    }

    static func unary(_ u: UnaryOp, _ x: String, _ out: Tensor, _ s: ExportSession, name: String) {
        let one = { s.constScalar(1, out.dtype) }
        switch u {
        case .abs: s.emit("Abs", [x], out)
        case .neg: s.emit("Neg", [x], out)
        case .sign: s.emit("Sign", [x], out)
        case .relu: s.emit("Relu", [x], out)
        case .round: s.emit("Round", [x], out)
        case .floor: s.emit("Floor", [x], out)
        case .ceil: s.emit("Ceil", [x], out)
        case .square: s.emit("Mul", [x, x], out)
        case .sqrt: s.emit("Sqrt", [x], out)
        case .rsqrt: s.emit("Reciprocal", [s.node("Sqrt", [x])[0]], out)
        case .exp: s.emit("Exp", [x], out)
        case .log: s.emit("Log", [x], out)
        case .log1p: s.emit("Log", [s.node("Add", [x, one()])[0]], out)
        case .expm1: s.emit("Sub", [s.node("Exp", [x])[0], one()], out)
        case .log2: s.emit("Div", [s.node("Log", [x])[0], s.constScalar(0.6931471805599453, out.dtype)], out)
        case .log10: s.emit("Div", [s.node("Log", [x])[0], s.constScalar(2.302585092994046, out.dtype)], out)
        case .sin: s.emit("Sin", [x], out)
        case .cos: s.emit("Cos", [x], out)
        case .tan: s.emit("Tan", [x], out)
        case .asin: s.emit("Asin", [x], out)
        case .acos: s.emit("Acos", [x], out)
        case .atan: s.emit("Atan", [x], out)
        case .sinh: s.emit("Sinh", [x], out)
        case .cosh: s.emit("Cosh", [x], out)
        case .tanh: s.emit("Tanh", [x], out)
        case .sigmoid: s.emit("Sigmoid", [x], out)
        case .reciprocal: s.emit("Reciprocal", [x], out)
        case .erf: s.emit("Erf", [x], out)
        case .trunc, .frac:
            // trunc(x) = sign(x)·floor(|x|) (ONNX has no Trunc); frac(x) = x − trunc(x).
            guard out.dtype.isFloatingPoint else { return u == .trunc ? s.bind(out, x) : s.unsupported(name, "frac of an integer tensor") }
            let t = s.node("Mul", [s.node("Sign", [x])[0], s.node("Floor", [s.node("Abs", [x])[0]])[0]])[0]
            if u == .trunc { s.bind(out, t) } else { s.emit("Sub", [x, t], out) }
        }
    }

    /// Reshape to `requested`. Leading sizes equal to the input's become 0 (copy the input's dim), so a
    /// `view(x.size(0), -1)` keeps working with another batch size.
    static func reshape(_ x: Tensor, _ xn: String, _ requested: [Int], _ out: Tensor, _ s: ExportSession,
                        literal: Bool = false) {
        var shape = requested
        if !literal {
            var i = 0
            while i < shape.count && i < x.dim && shape[i] == x.shape[i] && shape[i] != -1 && shape[i] != 0 {
                shape[i] = 0
                i += 1
            }
        }
        if shape.isEmpty, x.dim > 0 {
            s.emit("Reshape", [xn, s.constInts([])], out)
            return
        }
        s.emit("Reshape", [xn, s.constInts(shape)], out)
    }

    static func reduce(_ op: String, _ x: Tensor, _ xn: String, _ dims: [Int], _ keepdim: Bool, _ out: Tensor,
                       _ s: ExportSession, axesAsInput: Bool) {
        let axes = (dims.isEmpty ? Array(0..<x.dim) : dims.map { $0 < 0 ? $0 + x.dim : $0 }).sorted()
        if axesAsInput {
            s.emit(op, [xn, s.constInts(axes)], out, [attr("keepdims", keepdim ? 1 : 0)])
        } else {
            s.emit(op, [xn], out, [attr("axes", axes), attr("keepdims", keepdim ? 1 : 0)])
        }
    }
}

/// The activation family (`ActivationKind`, the kernels behind F.gelu, F.silu, F.hardswish, nn.LeakyReLU ...).
enum ExportActivations {
    static func emit(_ k: ActivationKind, _ x: String, _ out: Tensor, _ s: ExportSession, name: String) {
        let dt = out.dtype
        switch k {
        case .leakyRelu(let slope): s.emit("LeakyRelu", [x], out, [attr("alpha", slope)])
        case .elu(let alpha, let scale, let inputScale):
            if scale == 1 && inputScale == 1 { s.emit("Elu", [x], out, [attr("alpha", alpha)]) }
            else if inputScale == 1 { s.emit("Selu", [x], out, [attr("alpha", alpha), attr("gamma", scale)]) }
            else { s.unsupported(name, "ELU with input_scale ≠ 1 is not mapped") }
        case .celu(let alpha): s.emit("Celu", [x], out, [attr("alpha", alpha)])
        case .gelu:
            if s.opset >= 20 { s.emit("Gelu", [x], out) } else {
                // x · 0.5 · (1 + erf(x / √2))
                let e = s.node("Erf", [s.node("Div", [x, s.constScalar(1.4142135623730951, dt)])[0]])[0]
                let h = s.node("Mul", [x, s.node("Add", [e, s.constScalar(1, dt)])[0]])[0]
                s.emit("Mul", [h, s.constScalar(0.5, dt)], out)
            }
        case .geluTanh:
            if s.opset >= 20 { s.emit("Gelu", [x], out, [attr("approximate", "tanh")]) } else {
                // 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
                let x3 = s.node("Mul", [s.node("Mul", [x, x])[0], x])[0]
                let inner = s.node("Add", [x, s.node("Mul", [x3, s.constScalar(0.044715, dt)])[0]])[0]
                let t = s.node("Tanh", [s.node("Mul", [inner, s.constScalar(0.7978845608028654, dt)])[0]])[0]
                let h = s.node("Mul", [x, s.node("Add", [t, s.constScalar(1, dt)])[0]])[0]
                s.emit("Mul", [h, s.constScalar(0.5, dt)], out)
            }
        case .silu: s.emit("Mul", [x, s.node("Sigmoid", [x])[0]], out)
        case .mish:
            if s.opset >= 18 { s.emit("Mish", [x], out) }
            else { s.emit("Mul", [x, s.node("Tanh", [s.node("Softplus", [x])[0]])[0]], out) }
        case .hardtanh(let lo, let hi):
            s.emit("Clip", [x, s.constScalar(lo, dt), s.constScalar(hi, dt)], out)
        case .hardsigmoid: s.emit("HardSigmoid", [x], out, [attr("alpha", 1.0 / 6), attr("beta", 0.5)])
        case .hardswish: s.emit("HardSwish", [x], out)
        case .softplus(let beta, _):
            // ONNX's Softplus has no beta or threshold: softplus(beta·x)/beta (the threshold only avoids overflow).
            if beta == 1 { s.emit("Softplus", [x], out) } else {
                let b = s.constScalar(beta, dt)
                s.emit("Div", [s.node("Softplus", [s.node("Mul", [x, b])[0]])[0], b], out)
            }
        }
    }
}
