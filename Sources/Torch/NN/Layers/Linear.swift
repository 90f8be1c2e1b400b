/// Linear layers and shape helpers: `nn.Linear`, `nn.Bilinear`, `nn.Identity`, `nn.Flatten`, `nn.Unflatten`.

extension nn {
    /// y = x Wᵀ + b (PyTorch's `nn.Linear`), with PyTorch's initialisation: W and b uniform in
    /// (−1/√inFeatures, 1/√inFeatures), drawn from the default generator like PyTorch.
    ///
    /// ```swift
    /// torch.manualSeed(0)
    /// let fc = nn.Linear(2, 8)      // fc.weight: [8, 2], fc.bias: [8], PyTorch's values
    /// let y = fc(torch.randn(4, 2)) // [4, 8], grad_fn=<AddmmBackward0>
    /// ```
    public final class Linear: Module {
        /// Size of each input sample.
        public let inFeatures: Int
        /// Size of each output sample.
        public let outFeatures: Int
        /// `[outFeatures, inFeatures]`.
        public var weight: Parameter
        /// `[outFeatures]`, nil when built with `bias: false`.
        public var bias: Parameter?

        /// - Parameters:
        ///   - inFeatures: size of each input sample.
        ///   - outFeatures: size of each output sample.
        ///   - bias: whether to learn an additive bias.
        ///   - dtype: parameter dtype (default: `torch.defaultDType`).
        public init(_ inFeatures: Int, _ outFeatures: Int, bias: Bool = true, dtype: DType? = nil) {
            precondition(inFeatures >= 0 && outFeatures >= 0,
                         "Linear: in_features and out_features must be non-negative (got \(inFeatures), \(outFeatures))")
            self.inFeatures = inFeatures
            self.outFeatures = outFeatures
            weight = Parameter(torch.empty(outFeatures, inFeatures, dtype: dtype))
            self.bias = bias ? Parameter(torch.empty(outFeatures, dtype: dtype)) : nil
            super.init()
            resetParameters()
        }

        /// Re-draws the weight (kaiming_uniform_ with a = √5) and the bias, as PyTorch does.
        public func resetParameters() {
            nn.`init`.kaimingUniform_(weight, a: 5.0.squareRoot())
            if let bias {
                let (fanIn, _) = nn.`init`.calculateFanInAndFanOut(weight)
                let bound = fanIn > 0 ? 1 / Double(fanIn).squareRoot() : 0
                nn.`init`.uniform_(bias, -bound, bound)
            }
        }

        public override func forward(_ x: Tensor) -> Tensor { F.linear(x, weight, bias) }

        public override func extraRepr() -> String {
            "in_features=\(inFeatures), out_features=\(outFeatures), bias=\(pyBool(bias != nil))"
        }
    }

    /// y = x1ᵀ A x2 + b (PyTorch's `nn.Bilinear`); weight `[out, in1, in2]`, all parameters
    /// uniform in (−1/√in1, 1/√in1).
    ///
    /// ```swift
    /// let m = nn.Bilinear(20, 30, 40)
    /// let y = m(torch.randn(128, 20), torch.randn(128, 30))   // [128, 40]
    /// ```
    public final class Bilinear: Module {
        /// Size of each first input sample.
        public let in1Features: Int
        /// Size of each second input sample.
        public let in2Features: Int
        /// Size of each output sample.
        public let outFeatures: Int
        /// `[outFeatures, in1Features, in2Features]`.
        public var weight: Parameter
        /// `[outFeatures]`, nil when built with `bias: false`.
        public var bias: Parameter?

        /// A bilinear layer from `in1Features` × `in2Features` inputs to `outFeatures` outputs.
        public init(_ in1Features: Int, _ in2Features: Int, _ outFeatures: Int, bias: Bool = true, dtype: DType? = nil) {
            self.in1Features = in1Features
            self.in2Features = in2Features
            self.outFeatures = outFeatures
            weight = Parameter(torch.empty(outFeatures, in1Features, in2Features, dtype: dtype))
            self.bias = bias ? Parameter(torch.empty(outFeatures, dtype: dtype)) : nil
            super.init()
            resetParameters()
        }

        /// Re-draws weight and bias uniform in (−1/√in1, 1/√in1).
        public func resetParameters() {
            let bound = in1Features > 0 ? 1 / Double(in1Features).squareRoot() : 0
            nn.`init`.uniform_(weight, -bound, bound)
            if let bias { nn.`init`.uniform_(bias, -bound, bound) }
        }

        /// Applies the bilinear map to two inputs.
        public func forward(_ x1: Tensor, _ x2: Tensor) -> Tensor { F.bilinear(x1, x2, weight, bias) }

        /// `forward(x1, x2)`.
        public func callAsFunction(_ x1: Tensor, _ x2: Tensor) -> Tensor { forward(x1, x2) }

        public override func forward(_ x: Tensor) -> Tensor {
            preconditionFailure("Bilinear.forward() missing 1 required positional argument: 'input2'")
        }

        public override func extraRepr() -> String {
            "in1_features=\(in1Features), in2_features=\(in2Features), out_features=\(outFeatures), bias=\(pyBool(bias != nil))"
        }
    }

    /// Returns its input unchanged (PyTorch's `nn.Identity`).
    public final class Identity: Module {
        public override init() { super.init() }
        public override func forward(_ x: Tensor) -> Tensor { x }
    }

    /// Flattens dims `startDim...endDim` into one (PyTorch's `nn.Flatten`, default from dim 1).
    public final class Flatten: Module {
        /// First dim to flatten.
        public let startDim: Int
        /// Last dim to flatten (negative counts from the end).
        public let endDim: Int
        /// Flattens dims `startDim...endDim` (default: all but the batch dim).
        public init(startDim: Int = 1, endDim: Int = -1) {
            self.startDim = startDim
            self.endDim = endDim
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor { x.flatten(startDim: startDim, endDim: endDim) }
        public override func extraRepr() -> String { "start_dim=\(startDim), end_dim=\(endDim)" }
    }

    /// Expands dim `dim` into `unflattenedSize` (PyTorch's `nn.Unflatten`).
    public final class Unflatten: Module {
        /// The dim to expand.
        public let dim: Int
        /// The sizes it expands into.
        public let unflattenedSize: [Int]
        /// Expands dim `dim` into `unflattenedSize`.
        public init(_ dim: Int, _ unflattenedSize: [Int]) {
            self.dim = dim
            self.unflattenedSize = unflattenedSize
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor { x.unflatten(dim, unflattenedSize) }
        public override func extraRepr() -> String { "dim=\(dim), unflattened_size=\(pyTuple(unflattenedSize))" }
    }
}

/// Python's spelling of a Bool.
func pyBool(_ b: Bool) -> String { b ? "True" : "False" }

/// Python's repr of a tuple of ints: `(2, 3)`, `(5,)`.
func pyTuple(_ v: [Int]) -> String { pyTuple(strings: v.map(String.init)) }

/// Python's repr of a tuple of already formatted items: `(a, b)`, `(a,)`, `()`.
func pyTuple(strings v: [String]) -> String {
    v.count == 1 ? "(\(v[0]),)" : "(" + v.joined(separator: ", ") + ")"
}

/// Python's repr of a float: `1.0`, `0.01`, `1e-05`.
func pyFloat(_ v: Double) -> String {
    if v.isNaN { return "nan" }
    if v.isInfinite { return v > 0 ? "inf" : "-inf" }
    let s = "\(v)"
    // Swift writes 1e-05 as "1e-05" and 1e+16 as "1e+16", like Python.
    return s
}
