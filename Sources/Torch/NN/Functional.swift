/// `nn.functional` (alias `F`): linear maps, activations, softmax family, dropout, one-hot and
/// normalisation — the stateless twins of the layers.

extension nn.functional {
    // MARK: Linear maps

    /// `input @ weight.T + bias` (PyTorch's `F.linear`). A 2-D input with a bias is one GEMM
    /// (`addmm`, grad_fn `AddmmBackward0`, like PyTorch).
    ///
    /// - Parameters:
    ///   - input: `[*, in]`.
    ///   - weight: `[out, in]`.
    ///   - bias: `[out]` or nil.
    public static func linear(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.linear, [input, weight, bias], { linear($0[0]!, $0[1]!, $0[2]) }) { return r }
        if weight.dim == 2, let bias {
            if input.dim == 2 { return torch.addmm(bias, input, weight.t()) }
            if input.dim == 1 { return torch.addmm(bias, input.unsqueeze(0), weight.t()).squeeze(0) }
            if input.dim >= 3 && input.isContiguous {
                let k = input.shape[input.dim - 1]
                let r = torch.addmm(bias, input.view(-1, k), weight.t())
                return r.view(Array(input.shape.dropLast()) + [weight.shape[0]])
            }
        }
        let out = input.matmul(weight.t())
        if let bias { return out + bias }
        return out
    }

    /// `x1ᵀ A x2 + b` for each of `out` weight slices (PyTorch's `F.bilinear`).
    ///
    /// - Parameters:
    ///   - input1: `[*, in1]`.
    ///   - input2: `[*, in2]` with the same leading dims.
    ///   - weight: `[out, in1, in2]`.
    ///   - bias: `[out]` or nil.
    public static func bilinear(_ input1: Tensor, _ input2: Tensor, _ weight: Tensor, _ bias: Tensor? = nil) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.bilinear, [input1, input2, weight, bias], { bilinear($0[0]!, $0[1]!, $0[2]!, $0[3]) }) { return r }
        precondition(weight.dim == 3, "bilinear(): weight must be 3-dimensional, got \(weight.dim)-D")
        precondition(input1.dim >= 1 && input1.dim == input2.dim && Array(input1.shape.dropLast()) == Array(input2.shape.dropLast()),
                     "bilinear(): input batch dimensions do not match: got \(shapeString(Array(input1.shape.dropLast()))) and \(shapeString(Array(input2.shape.dropLast())))")
        let o = weight.shape[0], i1 = weight.shape[1], i2 = weight.shape[2]
        precondition(input1.shape[input1.dim - 1] == i1,
                     "bilinear(): input1 size does not match weight size: got \(input1.shape[input1.dim - 1]) but expected \(i1)")
        precondition(input2.shape[input2.dim - 1] == i2,
                     "bilinear(): input2 size does not match weight size: got \(input2.shape[input2.dim - 1]) but expected \(i2)")
        let lead = Array(input1.shape.dropLast())
        let a = input1.reshape(-1, i1), b = input2.reshape(-1, i2)
        let t = a.mm(weight.permute(1, 0, 2).reshape(i1, o * i2)).view(-1, o, i2)
        var y = (t * b.unsqueeze(1)).sum(dim: 2)
        if let bias { y = y + bias }
        return y.reshape(lead + [o])
    }

    // MARK: Activations

    /// max(x, 0).
    public static func relu(_ x: Tensor, inplace: Bool = false) -> Tensor { inplace ? x.relu_() : x.relu() }
    /// In-place `relu`.
    @discardableResult public static func relu_(_ x: Tensor) -> Tensor { x.relu_() }

    /// min(max(x, 0), 6).
    public static func relu6(_ x: Tensor, inplace: Bool = false) -> Tensor {
        hardtanh(x, minVal: 0, maxVal: 6, inplace: inplace)
    }

    /// x for x > 0, else `negativeSlope` · x.
    public static func leakyRelu(_ x: Tensor, negativeSlope: Double = 0.01, inplace: Bool = false) -> Tensor {
        run(.leakyRelu(slope: negativeSlope), x, inplace)
    }

    /// x for x > 0, else weight · x, with one weight per channel (dim 1) or one shared weight.
    public static func prelu(_ x: Tensor, _ weight: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.prelu, [x, weight], { prelu($0[0]!, $0[1]!) }) { return r }
        let n = weight.numel
        var w = weight
        if n != 1 {
            precondition(x.dim > 0, "Not allow zero-dim input tensor.")
            let channels = x.dim > 1 ? x.shape[1] : 1
            precondition(channels == n, "Mismatch of parameter numbers and input channel size. Found parameter numbers = \(n) and channel size = \(channels).")
            if x.dim >= 2 {
                var shape = [Int](repeating: 1, count: x.dim)
                shape[1] = n
                w = weight.reshape(shape)
            }
        } else {
            w = weight.reshape([])
        }
        return torch.where(x .> 0, x, w * x)
    }

    /// x for x > 0, else alpha · (exp(x) − 1).
    public static func elu(_ x: Tensor, alpha: Double = 1, inplace: Bool = false) -> Tensor {
        run(.elu(alpha: alpha, scale: 1, inputScale: 1), x, inplace)
    }

    /// scale · elu(x, alpha) with the self-normalising constants.
    public static func selu(_ x: Tensor, inplace: Bool = false) -> Tensor {
        run(.elu(alpha: 1.6732632423543772848170429916717, scale: 1.0507009873554804934193349852946, inputScale: 1), x, inplace)
    }

    /// max(0, x) + min(0, alpha · (exp(x / alpha) − 1)).
    public static func celu(_ x: Tensor, alpha: Double = 1, inplace: Bool = false) -> Tensor {
        precondition(alpha != 0, "ZeroDivisionError: alpha cannot be 0 for CELU")
        return run(.celu(alpha: alpha), x, inplace)
    }

    /// x · Φ(x); `approximate: "tanh"` uses the tanh approximation.
    public static func gelu(_ x: Tensor, approximate: String = "none") -> Tensor {
        precondition(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.")
        return activation(approximate == "tanh" ? .geluTanh : .gelu, x)
    }

    /// x · sigmoid(x) (swish).
    public static func silu(_ x: Tensor, inplace: Bool = false) -> Tensor { run(.silu, x, inplace) }

    /// x · tanh(softplus(x)).
    public static func mish(_ x: Tensor, inplace: Bool = false) -> Tensor { run(.mish, x, inplace) }

    /// 1 / (1 + exp(−x)).
    public static func sigmoid(_ x: Tensor) -> Tensor { x.sigmoid() }

    /// tanh(x).
    public static func tanh(_ x: Tensor) -> Tensor { x.tanh() }

    /// x clamped to [minVal, maxVal].
    public static func hardtanh(_ x: Tensor, minVal: Double = -1, maxVal: Double = 1, inplace: Bool = false) -> Tensor {
        precondition(maxVal >= minVal, "max_val must be greater than or equal to min_val")
        return run(.hardtanh(min: minVal, max: maxVal), x, inplace)
    }

    /// relu6(x + 3) / 6.
    public static func hardsigmoid(_ x: Tensor, inplace: Bool = false) -> Tensor { run(.hardsigmoid, x, inplace) }

    /// x · relu6(x + 3) / 6.
    public static func hardswish(_ x: Tensor, inplace: Bool = false) -> Tensor { run(.hardswish, x, inplace) }

    /// log(1 + exp(beta · x)) / beta, linear above `threshold`.
    public static func softplus(_ x: Tensor, beta: Double = 1, threshold: Double = 20) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.softplus, [x], { softplus($0[0]!, beta: beta, threshold: threshold) }) { return r }
        return activation(.softplus(beta: beta, threshold: threshold), x)
    }

    /// x / (1 + |x|).
    public static func softsign(_ x: Tensor) -> Tensor { x / (x.abs() + 1) }

    /// log(sigmoid(x)).
    public static func logsigmoid(_ x: Tensor) -> Tensor { -softplus(-x) }

    private static func run(_ kind: ActivationKind, _ x: Tensor, _ inplace: Bool) -> Tensor {
        if inplace { activationInPlace(kind, x); return x }
        return activation(kind, x)
    }

    // MARK: Softmax family

    /// exp(x) / sum(exp(x)) along `dim` (PyTorch's implicit dim when nil: 0 for 0-, 1- and 3-D
    /// inputs, else 1), optionally computed in `dtype`.
    public static func softmax(_ x: Tensor, dim: Int? = nil, dtype: DType? = nil) -> Tensor {
        x.softmax(dim: dim ?? implicitSoftmaxDim(x.dim), dtype: dtype)
    }

    /// log(softmax(x)) along `dim`, computed stably.
    public static func logSoftmax(_ x: Tensor, dim: Int? = nil, dtype: DType? = nil) -> Tensor {
        x.logSoftmax(dim: dim ?? implicitSoftmaxDim(x.dim), dtype: dtype)
    }

    /// softmax(−x) along `dim`.
    public static func softmin(_ x: Tensor, dim: Int? = nil, dtype: DType? = nil) -> Tensor {
        x.softmin(dim: dim ?? implicitSoftmaxDim(x.dim), dtype: dtype)
    }

    /// PyTorch's `_get_softmax_dim`.
    static func implicitSoftmaxDim(_ ndim: Int) -> Int { (ndim == 0 || ndim == 1 || ndim == 3) ? 0 : 1 }

    // MARK: One-hot, normalize (dropout: Layers/Dropout.swift)

    /// One-hot encoding of int64 class indices: shape `x.shape + [numClasses]`, int64
    /// (`numClasses: -1` infers max + 1).
    public static func oneHot(_ x: Tensor, numClasses: Int = -1) -> Tensor {
        precondition(x.dtype == .int64, "one_hot is only applicable to index tensor of type LongTensor.")
        let values = x.toArray(as: Int64.self)
        var n = numClasses
        if n == -1 {
            precondition(!values.isEmpty, "Can not infer total number of classes from empty tensor.")
            n = Int(values.max()!) + 1
        }
        if let lo = values.min() { precondition(lo >= 0, "Class values must be non-negative.") }
        if let hi = values.max() { precondition(hi < Int64(n), "Class values must be smaller than num_classes.") }
        return (x.unsqueeze(-1) .== torch.arange(0, n, device: x.device)).to(.int64)
    }

    /// x / max(‖x‖_p, eps) along `dim`.
    public static func normalize(_ x: Tensor, p: Double = 2, dim: Int = 1, eps: Double = 1e-12) -> Tensor {
        let denom = x.norm(p: p, dim: dim, keepdim: true).clamp(min: eps).expandAs(x)
        return x / denom
    }
}
