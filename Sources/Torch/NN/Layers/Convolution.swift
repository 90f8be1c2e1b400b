/// Convolution layers: `nn.Conv1d`, `nn.Conv2d`, `nn.Conv3d`, `nn.ConvTranspose1d`, `nn.ConvTranspose2d`,
/// `nn.ConvTranspose3d`, with PyTorch's arguments, initialisation, repr and state-dict keys.

extension nn {
    /// How a convolution layer pads its input (PyTorch's `padding_mode`).
    public enum PaddingMode: String, Sendable {
        case zeros, reflect, replicate, circular
    }

    /// What the convolution layers share (PyTorch's `_ConvNd`): the weight `[Cout, Cin/groups, *kernel]`
    /// (`[Cin, Cout/groups, *kernel]` when transposed), the optional bias `[Cout]`, and their initialisation
    /// (kaiming-uniform with a = √5, bias uniform in ±1/√fanIn).
    public class ConvNd: Module {
        public let inChannels: Int
        public let outChannels: Int
        /// One size per spatial dim.
        public let kernelSize: [Int]
        public let stride: [Int]
        /// Explicit padding per spatial dim, or `.same` / `.valid`.
        public let padding: ConvPadding
        public let dilation: [Int]
        /// Only for transposed convolutions: extra size added to one side of the output.
        public let outputPadding: [Int]
        public let groups: Int
        public let paddingMode: PaddingMode
        /// True for `ConvTranspose*d`.
        public let transposed: Bool
        public var weight: Parameter
        public var bias: Parameter?

        /// Spatial dims (1, 2 or 3).
        var spatialDims: Int { kernelSize.count }

        init(dims: Int, _ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple,
             padding: any ConvPaddingSpec, dilation: any IntOrTuple, transposed: Bool, outputPadding: any IntOrTuple,
             groups: Int, bias: Bool, paddingMode: PaddingMode, dtype: DType?) {
            let name = transposed ? "ConvTranspose\(dims)d" : "Conv\(dims)d"
            precondition(groups > 0, "groups must be a positive integer")
            precondition(inChannels % groups == 0, "in_channels must be divisible by groups")
            precondition(outChannels % groups == 0, "out_channels must be divisible by groups")
            self.inChannels = inChannels
            self.outChannels = outChannels
            self.kernelSize = expandParameter(kernelSize.intTupleValues, dims, "kernel_size", op: name)
            self.stride = expandParameter(stride.intTupleValues, dims, "stride", op: name)
            self.dilation = expandParameter(dilation.intTupleValues, dims, "dilation", op: name)
            self.outputPadding = expandParameter(outputPadding.intTupleValues, dims, "output_padding", op: name)
            let pad = padding.convPadding
            switch pad {
            case .explicit(let p): self.padding = .explicit(expandParameter(p, dims, "padding", op: name))
            case .same:
                precondition(self.stride.allSatisfy { $0 == 1 }, "padding='same' is not supported for strided convolutions")
                self.padding = .same
            case .valid: self.padding = .valid
            }
            precondition(!transposed || self.padding != .same && self.padding != .valid,
                         "\(name): only int or tuple padding is supported")
            precondition(!transposed || paddingMode == .zeros, "Only \"zeros\" padding mode is supported for \(name)")
            self.transposed = transposed
            self.groups = groups
            self.paddingMode = paddingMode
            let wShape = transposed ? [inChannels, outChannels / groups] + self.kernelSize
                                    : [outChannels, inChannels / groups] + self.kernelSize
            weight = Parameter(torch.empty(wShape, dtype: dtype))
            self.bias = bias ? Parameter(torch.empty([outChannels], dtype: dtype)) : nil
            super.init()
            resetParameters()
        }

        /// Re-draws the weight (kaiming-uniform, a = √5) and the bias (uniform in ±1/√fanIn), as PyTorch does.
        public func resetParameters() {
            nn.`init`.kaimingUniform_(weight, a: 5.0.squareRoot())
            if let bias {
                let (fanIn, _) = nn.`init`.calculateFanInAndFanOut(weight)
                if fanIn != 0 {
                    let bound = 1 / Double(fanIn).squareRoot()
                    nn.`init`.uniform_(bias, -bound, bound)
                }
            }
        }

        /// The explicit padding per spatial dim (for `.same`: the symmetric part, `.valid`: zeros).
        var symmetricPadding: [Int] {
            switch padding {
            case .explicit(let p): return p
            case .valid: return [Int](repeating: 0, count: spatialDims)
            case .same: return nn.functional.samePadding(kernel: kernelSize, dilation: dilation).symmetric
            }
        }

        /// Folded weight and bias for eval-mode convolution + batch norm (EvalFusion.swift); nil until used.
        var batchNormFold: ConvBatchNormFold?

        public override func forward(_ x: Tensor) -> Tensor { convolve(x, weight: weight, bias: bias) }

        /// This layer's convolution of `x` with the given weight and bias.
        func convolve(_ x: Tensor, weight: Tensor, bias: Tensor?) -> Tensor {
            precondition(!transposed, "ConvTranspose forward is overridden")
            if paddingMode == .zeros {
                return nn.functional.convNd(x, weight, bias, stride: stride, padding: padding, dilation: dilation,
                                            groups: groups, dims: spatialDims)
            }
            // PyTorch's _reversed_padding_repeated_twice: (before, after) per dim from the last.
            var amounts: [(Int, Int)] = []
            switch padding {
            case .same:
                let (sym, extra) = nn.functional.samePadding(kernel: kernelSize, dilation: dilation)
                amounts = zip(sym, extra).map { ($0, $0 + $1) }
            default:
                amounts = symmetricPadding.map { ($0, $0) }
            }
            let padded = nn.functional.pad(x, amounts.reversed().flatMap { [$0.0, $0.1] },
                                           mode: nn.functional.PadMode(rawValue: paddingMode.rawValue)!)
            return nn.functional.convNd(padded, weight, bias, stride: stride, padding: 0, dilation: dilation,
                                        groups: groups, dims: spatialDims)
        }

        public override func extraRepr() -> String {
            var s = "\(inChannels), \(outChannels), kernel_size=\(pyTuple(kernelSize)), stride=\(pyTuple(stride))"
            if padding != .explicit([Int](repeating: 0, count: spatialDims)) { s += ", padding=\(padding.repr(spatialDims))" }
            if dilation != [Int](repeating: 1, count: spatialDims) { s += ", dilation=\(pyTuple(dilation))" }
            if outputPadding != [Int](repeating: 0, count: spatialDims) { s += ", output_padding=\(pyTuple(outputPadding))" }
            if groups != 1 { s += ", groups=\(groups)" }
            if bias == nil { s += ", bias=False" }
            if paddingMode != .zeros { s += ", padding_mode=\(paddingMode.rawValue)" }
            return s
        }
    }

    /// 1-D convolution over `[N, Cin, L]`.
    ///
    /// ```swift
    /// let conv = nn.Conv1d(16, 33, 3, stride: 2)
    /// let y = conv(torch.randn(20, 16, 50))       // [20, 33, 24]
    /// ```
    public final class Conv1d: ConvNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                    paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 1, inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation,
                       transposed: false, outputPadding: 0, groups: groups, bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
        /// Keyword form: `nn.Conv1d(inChannels: 16, outChannels: 33, kernelSize: 3)`.
        public convenience init(inChannels: Int, outChannels: Int, kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                                padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                                paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            self.init(inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation, groups: groups,
                      bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
    }

    /// 2-D convolution over `[N, Cin, H, W]`, as tutorial 004 and LeNet-5 use it.
    ///
    /// ```swift
    /// let conv1 = nn.Conv2d(1, 6, 3)                                        // Conv2d(1, 6, kernel_size=(3, 3), stride=(1, 1))
    /// let conv2 = nn.Conv2d(3, 64, kernelSize: 3, stride: 1, padding: 1)
    /// let same = nn.Conv2d(16, 16, 5, padding: "same", paddingMode: .reflect)
    /// ```
    public final class Conv2d: ConvNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                    paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 2, inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation,
                       transposed: false, outputPadding: 0, groups: groups, bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
        /// `nn.Conv2d(3, 64, kernelSize: 3, stride: 1, padding: 1)`: the kernel size by keyword.
        public convenience init(_ inChannels: Int, _ outChannels: Int, kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                                padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                                paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            self.init(inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation, groups: groups,
                      bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
        /// All by keyword: `nn.Conv2d(inChannels: 3, outChannels: 64, kernelSize: 3)`.
        public convenience init(inChannels: Int, outChannels: Int, kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                                padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                                paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            self.init(inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation, groups: groups,
                      bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
    }

    /// 3-D convolution over `[N, Cin, D, H, W]`.
    public final class Conv3d: ConvNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                    paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 3, inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation,
                       transposed: false, outputPadding: 0, groups: groups, bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
        /// The kernel size by keyword.
        public convenience init(_ inChannels: Int, _ outChannels: Int, kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                                padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1, bias: Bool = true,
                                paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            self.init(inChannels, outChannels, kernelSize, stride: stride, padding: padding, dilation: dilation, groups: groups,
                      bias: bias, paddingMode: paddingMode, dtype: dtype)
        }
    }

    /// What the transposed convolutions share: `forward(x, outputSize:)` picks the output padding that gives a
    /// requested size, like PyTorch's `output_size` argument.
    public class ConvTransposeNd: ConvNd {
        public override func forward(_ x: Tensor) -> Tensor { forward(x, outputSize: nil) }

        /// The transposed convolution; `outputSize` (the last spatial sizes, optionally with N and C) chooses the
        /// output padding as PyTorch's `_output_padding` does.
        public func forward(_ x: Tensor, outputSize: [Int]?) -> Tensor {
            var op = outputPadding
            let pad = symmetricPadding
            if var size = outputSize {
                let k = spatialDims
                if size.count == k + 2 || size.count == k + 1 { size = Array(size.suffix(k)) }
                precondition(size.count == k, "ConvTranspose\(k)d: output_size must have \(k) or \(k + 2) elements (got \(outputSize!.count))")
                let inSpatial = Array(x.shape.suffix(k))
                op = (0..<k).map { d in
                    let minSize = (inSpatial[d] - 1) * stride[d] - 2 * pad[d] + dilation[d] * (kernelSize[d] - 1) + 1
                    let maxSize = minSize + stride[d] - 1
                    precondition(size[d] >= minSize && size[d] <= maxSize,
                                 "requested an output size of \(size), but valid sizes range from \(minSize) to \(maxSize) (for an input of \(inSpatial))")
                    return size[d] - minSize
                }
            }
            return torch.convolution(x, weight, bias, stride: stride, padding: pad, dilation: dilation, transposed: true,
                                     outputPadding: op, groups: groups)
        }
    }

    /// 1-D transposed convolution (weight `[Cin, Cout/groups, k]`).
    public final class ConvTranspose1d: ConvTransposeNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1, bias: Bool = true,
                    dilation: any IntOrTuple = 1, paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 1, inChannels, outChannels, kernelSize, stride: stride, padding: padding.intTupleValues,
                       dilation: dilation, transposed: true, outputPadding: outputPadding, groups: groups, bias: bias,
                       paddingMode: paddingMode, dtype: dtype)
        }
    }

    /// 2-D transposed convolution (weight `[Cin, Cout/groups, kH, kW]`), the upsampling layer of decoders and GANs.
    ///
    /// ```swift
    /// let up = nn.ConvTranspose2d(16, 8, 4, stride: 2, padding: 1)
    /// let y = up(torch.randn(1, 16, 8, 8))         // [1, 8, 16, 16]
    /// ```
    public final class ConvTranspose2d: ConvTransposeNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1, bias: Bool = true,
                    dilation: any IntOrTuple = 1, paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 2, inChannels, outChannels, kernelSize, stride: stride, padding: padding.intTupleValues,
                       dilation: dilation, transposed: true, outputPadding: outputPadding, groups: groups, bias: bias,
                       paddingMode: paddingMode, dtype: dtype)
        }
        /// The kernel size by keyword.
        public convenience init(_ inChannels: Int, _ outChannels: Int, kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                                padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1, bias: Bool = true,
                                dilation: any IntOrTuple = 1, paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            self.init(inChannels, outChannels, kernelSize, stride: stride, padding: padding, outputPadding: outputPadding,
                      groups: groups, bias: bias, dilation: dilation, paddingMode: paddingMode, dtype: dtype)
        }
    }

    /// 3-D transposed convolution (weight `[Cin, Cout/groups, kD, kH, kW]`).
    public final class ConvTranspose3d: ConvTransposeNd {
        public init(_ inChannels: Int, _ outChannels: Int, _ kernelSize: any IntOrTuple, stride: any IntOrTuple = 1,
                    padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1, bias: Bool = true,
                    dilation: any IntOrTuple = 1, paddingMode: PaddingMode = .zeros, dtype: DType? = nil) {
            super.init(dims: 3, inChannels, outChannels, kernelSize, stride: stride, padding: padding.intTupleValues,
                       dilation: dilation, transposed: true, outputPadding: outputPadding, groups: groups, bias: bias,
                       paddingMode: paddingMode, dtype: dtype)
        }
    }
}
