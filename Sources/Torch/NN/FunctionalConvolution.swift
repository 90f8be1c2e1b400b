/// `F.conv1d/2d/3d` and `F.convTranspose1d/2d/3d`, and the argument types that let kernel sizes, strides
/// and paddings be written as PyTorch users write them: `3`, `[3, 5]`, `"same"`.

/// A size PyTorch accepts as one int or one per spatial dim (`kernel_size=3` or `kernel_size=(3, 5)`).
public protocol IntOrTuple {
    /// The values as written: one, or one per dim.
    var intTupleValues: [Int] { get }
}

extension Int: IntOrTuple {
    public var intTupleValues: [Int] { [self] }
}

extension Array: IntOrTuple where Element == Int {
    public var intTupleValues: [Int] { self }
}

/// A convolution's `padding`: an int, one int per spatial dim, or the strings `"same"` and `"valid"`.
public protocol ConvPaddingSpec {
    /// The padding this value asks for.
    var convPadding: ConvPadding { get }
}

/// What a convolution's `padding` argument means.
public enum ConvPadding: Equatable, Sendable, ConvPaddingSpec {
    /// Zero padding on both sides of each spatial dim (one value, or one per dim).
    case explicit([Int])
    /// Output as large as the input (stride 1 only); odd total padding puts the extra element last, like PyTorch.
    case same
    /// No padding.
    case valid

    public var convPadding: ConvPadding { self }

    /// PyTorch's repr of the value in a module's extra_repr (`(1, 1)`, `same`).
    func repr(_ dims: Int) -> String {
        switch self {
        case .explicit(let v): return pyTuple(expandParameter(v, dims, "padding", op: "conv"))
        case .same: return "same"
        case .valid: return "valid"
        }
    }
}

extension Int: ConvPaddingSpec {
    public var convPadding: ConvPadding { .explicit([self]) }
}

extension Array: ConvPaddingSpec where Element == Int {
    public var convPadding: ConvPadding { .explicit(self) }
}

extension String: ConvPaddingSpec {
    /// `"same"` or `"valid"`; anything else stops with PyTorch's message.
    public var convPadding: ConvPadding {
        switch self {
        case "same": return .same
        case "valid": return .valid
        default: preconditionFailure("Invalid padding string '\(self)', should be one of {'valid', 'same'}")
        }
    }
}

extension nn.functional {
    /// 1-D convolution over `[N, Cin, L]` (or `[Cin, L]`) with weight `[Cout, Cin/groups, k]`.
    public static func conv1d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                              padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1) -> Tensor {
        convNd(input, weight, bias, stride: stride, padding: padding, dilation: dilation, groups: groups, dims: 1)
    }

    /// 2-D convolution over `[N, Cin, H, W]` (or `[Cin, H, W]`) with weight `[Cout, Cin/groups, kH, kW]`.
    ///
    /// ```swift
    /// let x = torch.randn(1, 1, 32, 32), w = torch.randn(6, 1, 3, 3)
    /// let y = F.conv2d(x, w, padding: 1)           // [1, 6, 32, 32], grad_fn=<ConvolutionBackward0>
    /// let z = F.conv2d(x, w, stride: 2, padding: "valid")
    /// ```
    public static func conv2d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                              padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1) -> Tensor {
        convNd(input, weight, bias, stride: stride, padding: padding, dilation: dilation, groups: groups, dims: 2)
    }

    /// 3-D convolution over `[N, Cin, D, H, W]` (or `[Cin, D, H, W]`) with weight `[Cout, Cin/groups, kD, kH, kW]`.
    public static func conv3d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                              padding: any ConvPaddingSpec = 0, dilation: any IntOrTuple = 1, groups: Int = 1) -> Tensor {
        convNd(input, weight, bias, stride: stride, padding: padding, dilation: dilation, groups: groups, dims: 3)
    }

    /// 1-D transposed convolution ("deconvolution") with weight `[Cin, Cout/groups, k]`.
    public static func convTranspose1d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                                       padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1,
                                       dilation: any IntOrTuple = 1) -> Tensor {
        torch.convolution(input, weight, bias, stride: stride.intTupleValues, padding: padding.intTupleValues,
                          dilation: dilation.intTupleValues, transposed: true, outputPadding: outputPadding.intTupleValues,
                          groups: groups)
    }

    /// 2-D transposed convolution with weight `[Cin, Cout/groups, kH, kW]`.
    ///
    /// ```swift
    /// let up = F.convTranspose2d(torch.randn(1, 16, 8, 8), torch.randn(16, 8, 4, 4), stride: 2, padding: 1)  // [1, 8, 16, 16]
    /// ```
    public static func convTranspose2d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                                       padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1,
                                       dilation: any IntOrTuple = 1) -> Tensor {
        torch.convolution(input, weight, bias, stride: stride.intTupleValues, padding: padding.intTupleValues,
                          dilation: dilation.intTupleValues, transposed: true, outputPadding: outputPadding.intTupleValues,
                          groups: groups)
    }

    /// 3-D transposed convolution with weight `[Cin, Cout/groups, kD, kH, kW]`.
    public static func convTranspose3d(_ input: Tensor, _ weight: Tensor, _ bias: Tensor? = nil, stride: any IntOrTuple = 1,
                                       padding: any IntOrTuple = 0, outputPadding: any IntOrTuple = 0, groups: Int = 1,
                                       dilation: any IntOrTuple = 1) -> Tensor {
        torch.convolution(input, weight, bias, stride: stride.intTupleValues, padding: padding.intTupleValues,
                          dilation: dilation.intTupleValues, transposed: true, outputPadding: outputPadding.intTupleValues,
                          groups: groups)
    }

    /// A forward convolution with `padding` resolved: `"same"` pads `dilation·(k−1)` in total per dim, the odd
    /// element after the input (PyTorch pads the input once more on that side).
    static func convNd(_ input: Tensor, _ weight: Tensor, _ bias: Tensor?, stride: any IntOrTuple, padding: any ConvPaddingSpec,
                       dilation: any IntOrTuple, groups: Int, dims: Int) -> Tensor {
        let op = "conv\(dims)d"
        precondition(weight.dim == dims + 2, "\(op): expected a \(dims + 2)-D weight, got a \(weight.dim)-D weight of size \(shapeString(weight.shape))")
        let s = expandParameter(stride.intTupleValues, dims, "stride", op: op)
        let d = expandParameter(dilation.intTupleValues, dims, "dilation", op: op)
        switch padding.convPadding {
        case .explicit(let p):
            return torch.convolution(input, weight, bias, stride: s, padding: p, dilation: d, transposed: false,
                                     outputPadding: [0], groups: groups)
        case .valid:
            return torch.convolution(input, weight, bias, stride: s, padding: [0], dilation: d, transposed: false,
                                     outputPadding: [0], groups: groups)
        case .same:
            precondition(s.allSatisfy { $0 == 1 }, "padding='same' is not supported for strided convolutions")
            let (symmetric, extra) = samePadding(kernel: Array(weight.shape.suffix(dims)), dilation: d)
            var x = input
            if extra.contains(where: { $0 > 0 }) {
                // F.pad lists (before, after) from the last dim.
                x = pad(x, extra.reversed().flatMap { [0, $0] })
            }
            return torch.convolution(x, weight, bias, stride: s, padding: symmetric, dilation: d, transposed: false,
                                     outputPadding: [0], groups: groups)
        }
    }

    /// `"same"` padding per dim: the symmetric part and the extra element after the input where the total is odd.
    static func samePadding(kernel: [Int], dilation: [Int]) -> (symmetric: [Int], extra: [Int]) {
        let total = zip(kernel, dilation).map { ($1 * ($0 - 1)) }
        return (total.map { $0 / 2 }, total.map { $0 - $0 / 2 * 2 })
    }
}
