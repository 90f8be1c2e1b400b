/// Activation layers; each calls its `F` twin and prints like PyTorch.

extension nn {
    /// max(x, 0). `ReLU(inplace: true)` overwrites its input.
    public final class ReLU: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.relu(x, inplace: inplace) }
        public override func extraRepr() -> String { inplace ? "inplace=True" : "" }
    }

    /// min(max(x, 0), 6).
    public final class ReLU6: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.relu6(x, inplace: inplace) }
        public override func extraRepr() -> String { inplace ? "inplace=True" : "" }
    }

    /// x for x > 0, else negativeSlope · x.
    public final class LeakyReLU: Module {
        public let negativeSlope: Double
        public let inplace: Bool
        public init(negativeSlope: Double = 0.01, inplace: Bool = false) {
            self.negativeSlope = negativeSlope
            self.inplace = inplace
            super.init()
        }
        /// PyTorch's positional form `nn.LeakyReLU(0.2)`.
        public convenience init(_ negativeSlope: Double, inplace: Bool = false) {
            self.init(negativeSlope: negativeSlope, inplace: inplace)
        }
        public override func forward(_ x: Tensor) -> Tensor { F.leakyRelu(x, negativeSlope: negativeSlope, inplace: inplace) }
        public override func extraRepr() -> String {
            "negative_slope=\(pyFloat(negativeSlope))" + (inplace ? ", inplace=True" : "")
        }
    }

    /// x for x > 0, else a · x with a learnable `a` (one shared, or one per channel).
    public final class PReLU: Module {
        public let numParameters: Int
        /// `[numParameters]`, initialised to `init`.
        public var weight: Parameter
        public init(numParameters: Int = 1, init initValue: Double = 0.25, dtype: DType? = nil) {
            self.numParameters = numParameters
            weight = Parameter(torch.full([numParameters], initValue, dtype: dtype))
            super.init()
        }
        /// PyTorch's positional spelling: `nn.PReLU(10)` learns one slope per channel of 10.
        public convenience init(_ numParameters: Int, init initValue: Double = 0.25, dtype: DType? = nil) {
            self.init(numParameters: numParameters, init: initValue, dtype: dtype)
        }
        public override func forward(_ x: Tensor) -> Tensor { F.prelu(x, weight) }
        public override func extraRepr() -> String { "num_parameters=\(numParameters)" }
    }

    /// x for x > 0, else alpha · (exp(x) − 1).
    public final class ELU: Module {
        public let alpha: Double
        public let inplace: Bool
        public init(alpha: Double = 1, inplace: Bool = false) { self.alpha = alpha; self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.elu(x, alpha: alpha, inplace: inplace) }
        public override func extraRepr() -> String { "alpha=\(pyFloat(alpha))" + (inplace ? ", inplace=True" : "") }
    }

    /// Scaled ELU with the self-normalising constants.
    public final class SELU: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.selu(x, inplace: inplace) }
        public override func extraRepr() -> String { inplace ? "inplace=True" : "" }
    }

    /// max(0, x) + min(0, alpha · (exp(x / alpha) − 1)).
    public final class CELU: Module {
        public let alpha: Double
        public let inplace: Bool
        public init(alpha: Double = 1, inplace: Bool = false) { self.alpha = alpha; self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.celu(x, alpha: alpha, inplace: inplace) }
        public override func extraRepr() -> String { "alpha=\(pyFloat(alpha))" + (inplace ? ", inplace=True" : "") }
    }

    /// x · Φ(x), exact (`approximate: "none"`) or with the tanh approximation (`"tanh"`).
    public final class GELU: Module {
        public let approximate: String
        public init(approximate: String = "none") {
            precondition(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.")
            self.approximate = approximate
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor { F.gelu(x, approximate: approximate) }
        public override func extraRepr() -> String { "approximate='\(approximate)'" }
    }

    /// x · sigmoid(x).
    public final class SiLU: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.silu(x, inplace: inplace) }
        public override func extraRepr() -> String { inplace ? "inplace=True" : "" }
    }

    /// x · tanh(softplus(x)).
    public final class Mish: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.mish(x, inplace: inplace) }
        public override func extraRepr() -> String { inplace ? "inplace=True" : "" }
    }

    /// 1 / (1 + exp(−x)).
    public final class Sigmoid: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor { x.sigmoid() }
    }

    /// tanh(x).
    public final class Tanh: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor { x.tanh() }
    }

    /// x clamped to [minVal, maxVal].
    public final class Hardtanh: Module {
        public let minVal: Double
        public let maxVal: Double
        public let inplace: Bool
        public init(minVal: Double = -1, maxVal: Double = 1, inplace: Bool = false) {
            precondition(maxVal > minVal, "Hardtanh: max_val must be larger than min_val")
            self.minVal = minVal
            self.maxVal = maxVal
            self.inplace = inplace
            super.init()
        }
        /// PyTorch's positional form `nn.Hardtanh(-2, 2)`.
        public convenience init(_ minVal: Double, _ maxVal: Double, inplace: Bool = false) {
            self.init(minVal: minVal, maxVal: maxVal, inplace: inplace)
        }
        public override func forward(_ x: Tensor) -> Tensor { F.hardtanh(x, minVal: minVal, maxVal: maxVal, inplace: inplace) }
        public override func extraRepr() -> String {
            "min_val=\(pyFloat(minVal)), max_val=\(pyFloat(maxVal))" + (inplace ? ", inplace=True" : "")
        }
    }

    /// relu6(x + 3) / 6.
    public final class Hardsigmoid: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.hardsigmoid(x, inplace: inplace) }
        // PyTorch's Hardsigmoid has no extra_repr: `Hardsigmoid()` even with inplace=True.
    }

    /// x · relu6(x + 3) / 6.
    public final class Hardswish: Module {
        public let inplace: Bool
        public init(inplace: Bool = false) { self.inplace = inplace; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.hardswish(x, inplace: inplace) }
        // PyTorch's Hardswish has no extra_repr: `Hardswish()` even with inplace=True.
    }

    /// log(1 + exp(beta · x)) / beta, linear where beta · x > threshold.
    public final class Softplus: Module {
        public let beta: Double
        public let threshold: Double
        public init(beta: Double = 1, threshold: Double = 20) {
            self.beta = beta
            self.threshold = threshold
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor { F.softplus(x, beta: beta, threshold: threshold) }
        public override func extraRepr() -> String { "beta=\(pyFloat(beta)), threshold=\(pyFloat(threshold))" }
    }

    /// x / (1 + |x|).
    public final class Softsign: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.softsign(x) }
    }

    /// exp(x) / sum(exp(x)) along `dim` (nil: PyTorch's implicit choice).
    public final class Softmax: Module {
        public let dim: Int?
        public init(dim: Int? = nil) { self.dim = dim; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.softmax(x, dim: dim) }
        public override func extraRepr() -> String { "dim=\(dim.map(String.init) ?? "None")" }
    }

    /// log(softmax(x)) along `dim`.
    public final class LogSoftmax: Module {
        public let dim: Int?
        public init(dim: Int? = nil) { self.dim = dim; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.logSoftmax(x, dim: dim) }
        public override func extraRepr() -> String { "dim=\(dim.map(String.init) ?? "None")" }
    }

    /// softmax(−x) along `dim`.
    public final class Softmin: Module {
        public let dim: Int?
        public init(dim: Int? = nil) { self.dim = dim; super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.softmin(x, dim: dim) }
        public override func extraRepr() -> String { "dim=\(dim.map(String.init) ?? "None")" }
    }

    /// Softmax over the channel dim of a `[C, H, W]` or `[N, C, H, W]` input.
    public final class Softmax2d: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor {
            precondition(x.dim == 3 || x.dim == 4, "Softmax2d: expected input to be 3D or 4D, got \(x.dim)D instead")
            return F.softmax(x, dim: -3)
        }
    }
}

extension nn {
    /// log(sigmoid(x)).
    public final class LogSigmoid: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor { F.logsigmoid(x) }
    }
}
