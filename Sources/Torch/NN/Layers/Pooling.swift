/// Pooling layers: `nn.MaxPool1d/2d/3d`, `nn.AvgPool1d/2d/3d`, `nn.AdaptiveAvgPool1d/2d/3d`,
/// `nn.AdaptiveMaxPool1d/2d/3d`, `nn.MaxUnpool2d`, `nn.LPPool1d/2d`, with PyTorch's arguments and repr.
///
/// PyTorch users write the kernel size and stride positionally or by keyword; all of these compile:
/// `nn.MaxPool2d(2)`, `nn.MaxPool2d(2, 2, ceilMode: true)`, `nn.MaxPool2d(3, stride: 2, padding: 1)`,
/// `nn.MaxPool2d(kernelSize: 2, stride: 2)`.

/// Python's repr of an int-or-tuple argument as the user gave it (`2`, `(2, 3)`).
private func pyIntOrTuple(_ v: [Int]) -> String { v.count == 1 ? "\(v[0])" : pyTuple(v) }

extension nn {
    /// What the max-pooling layers share (PyTorch's `_MaxPoolNd`).
    public class MaxPoolNd: Module {
        public let kernelSize: [Int]
        /// Defaults to `kernelSize`.
        public let stride: [Int]
        public let padding: [Int]
        public let dilation: [Int]
        /// Whether windows may start past the last full window (the output size is rounded up).
        public let ceilMode: Bool
        /// Whether `forwardWithIndices` is the intended call (kept for the repr and PyTorch parity).
        public let returnIndices: Bool
        let dims: Int

        init(dims: Int, kernelSize: any IntOrTuple, stride: (any IntOrTuple)?, padding: any IntOrTuple,
             dilation: any IntOrTuple, returnIndices: Bool, ceilMode: Bool) {
            self.dims = dims
            self.kernelSize = kernelSize.intTupleValues
            self.stride = stride?.intTupleValues ?? kernelSize.intTupleValues
            self.padding = padding.intTupleValues
            self.dilation = dilation.intTupleValues
            self.returnIndices = returnIndices
            self.ceilMode = ceilMode
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.maxPoolValues(x, dims: dims, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
        }

        /// The pooled values and the flat index of each maximum in its input plane (PyTorch's
        /// `return_indices=True`): `let (y, indices) = pool.forwardWithIndices(x)`.
        public func forwardWithIndices(_ x: Tensor) -> (Tensor, Tensor) {
            F.maxPoolWithIndices(x, dims: dims, kernelSize: kernelSize, stride: stride, padding: padding,
                                 dilation: dilation, ceilMode: ceilMode)
        }

        public override func extraRepr() -> String {
            "kernel_size=\(pyIntOrTuple(kernelSize)), stride=\(pyIntOrTuple(stride)), padding=\(pyIntOrTuple(padding)), dilation=\(pyIntOrTuple(dilation)), ceil_mode=\(pyBool(ceilMode))"
        }
    }

    /// 1-D max pooling.
    public final class MaxPool1d: MaxPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            super.init(dims: 1, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation,
                       returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
    }

    /// 2-D max pooling, as LeNet-5 and ResNet use it.
    ///
    /// ```swift
    /// let pool = nn.MaxPool2d(2, 2)                          // MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    /// let stem = nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1)
    /// ```
    public final class MaxPool2d: MaxPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            super.init(dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation,
                       returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
    }

    /// 3-D max pooling.
    public final class MaxPool3d: MaxPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            super.init(dims: 3, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation,
                       returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
        public convenience init(kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                                dilation: any IntOrTuple = 1, returnIndices: Bool = false, ceilMode: Bool = false) {
            self.init(kernelSize, stride: stride, padding: padding, dilation: dilation, returnIndices: returnIndices, ceilMode: ceilMode)
        }
    }

    /// What the average-pooling layers share (PyTorch's `_AvgPoolNd`).
    public class AvgPoolNd: Module {
        public let kernelSize: [Int]
        public let stride: [Int]
        public let padding: [Int]
        public let ceilMode: Bool
        /// Whether the zero padding counts in the divisor.
        public let countIncludePad: Bool
        /// Replaces the divisor when set (2-D and 3-D only).
        public let divisorOverride: Int?
        let dims: Int

        init(dims: Int, kernelSize: any IntOrTuple, stride: (any IntOrTuple)?, padding: any IntOrTuple, ceilMode: Bool,
             countIncludePad: Bool, divisorOverride: Int?) {
            self.dims = dims
            self.kernelSize = kernelSize.intTupleValues
            self.stride = stride?.intTupleValues ?? kernelSize.intTupleValues
            self.padding = padding.intTupleValues
            self.ceilMode = ceilMode
            self.countIncludePad = countIncludePad
            self.divisorOverride = divisorOverride
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.avgPool(x, dims: dims, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                      countIncludePad: countIncludePad, divisorOverride: divisorOverride)
        }

        public override func extraRepr() -> String {
            // PyTorch's AvgPool1d prints its tuples as one-element tuples.
            let show: ([Int]) -> String = { [dims] v in dims == 1 ? pyTuple(v) : pyIntOrTuple(v) }
            return "kernel_size=\(show(kernelSize)), stride=\(show(stride)), padding=\(show(padding))"
        }
    }

    /// 1-D average pooling.
    public final class AvgPool1d: AvgPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    ceilMode: Bool = false, countIncludePad: Bool = true) {
            super.init(dims: 1, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                       countIncludePad: countIncludePad, divisorOverride: nil)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                ceilMode: Bool = false, countIncludePad: Bool = true) {
            self.init(kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad)
        }
        public convenience init(kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                                ceilMode: Bool = false, countIncludePad: Bool = true) {
            self.init(kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad)
        }
    }

    /// 2-D average pooling.
    public final class AvgPool2d: AvgPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    ceilMode: Bool = false, countIncludePad: Bool = true, divisorOverride: Int? = nil) {
            super.init(dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                       countIncludePad: countIncludePad, divisorOverride: divisorOverride)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                ceilMode: Bool = false, countIncludePad: Bool = true, divisorOverride: Int? = nil) {
            self.init(kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad,
                      divisorOverride: divisorOverride)
        }
        public convenience init(kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                                ceilMode: Bool = false, countIncludePad: Bool = true, divisorOverride: Int? = nil) {
            self.init(kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad,
                      divisorOverride: divisorOverride)
        }
    }

    /// 3-D average pooling.
    public final class AvgPool3d: AvgPoolNd {
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0,
                    ceilMode: Bool = false, countIncludePad: Bool = true, divisorOverride: Int? = nil) {
            super.init(dims: 3, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                       countIncludePad: countIncludePad, divisorOverride: divisorOverride)
        }
        public convenience init(_ kernelSize: any IntOrTuple, _ stride: any IntOrTuple, padding: any IntOrTuple = 0,
                                ceilMode: Bool = false, countIncludePad: Bool = true, divisorOverride: Int? = nil) {
            self.init(kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad,
                      divisorOverride: divisorOverride)
        }
    }

    /// What the adaptive poolings share: the target output size (nil entries keep the input's size).
    public class AdaptivePoolNd: Module {
        public let outputSize: [Int?]
        let dims: Int
        let isMax: Bool
        init(dims: Int, outputSize: [Int?], isMax: Bool) {
            self.dims = dims
            self.outputSize = outputSize
            self.isMax = isMax
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor {
            isMax ? F.adaptiveMaxPoolWithIndices(x, dims: dims, outputSize: outputSize).0
                  : F.adaptiveAvgPool(x, dims: dims, outputSize: outputSize)
        }
        public override func extraRepr() -> String {
            let v = outputSize.map { $0.map(String.init) ?? "None" }
            let s = v.count == 1 ? v[0] : "(" + v.joined(separator: ", ") + ")"
            return "output_size=\(s)"
        }
    }

    /// `[N, C, L]` → `[N, C, outputSize]` by averaging.
    public final class AdaptiveAvgPool1d: AdaptivePoolNd {
        public init(_ outputSize: Int) { super.init(dims: 1, outputSize: [outputSize], isMax: false) }
        public convenience init(outputSize: Int) { self.init(outputSize) }
    }

    /// `[N, C, H, W]` → `[N, C, *outputSize]` by averaging: `nn.AdaptiveAvgPool2d(1)`, `nn.AdaptiveAvgPool2d([7, 7])`.
    public final class AdaptiveAvgPool2d: AdaptivePoolNd {
        public init(_ outputSize: any IntOrTuple) { super.init(dims: 2, outputSize: outputSize.intTupleValues, isMax: false) }
        public convenience init(outputSize: any IntOrTuple) { self.init(outputSize) }
        /// Sizes where nil keeps the input's size (PyTorch's `(None, 7)`).
        public init(_ outputSize: [Int?]) { super.init(dims: 2, outputSize: outputSize, isMax: false) }
    }

    /// `[N, C, D, H, W]` → `[N, C, *outputSize]` by averaging.
    public final class AdaptiveAvgPool3d: AdaptivePoolNd {
        public init(_ outputSize: any IntOrTuple) { super.init(dims: 3, outputSize: outputSize.intTupleValues, isMax: false) }
        public convenience init(outputSize: any IntOrTuple) { self.init(outputSize) }
    }

    /// `[N, C, L]` → `[N, C, outputSize]` by maxima.
    public final class AdaptiveMaxPool1d: AdaptivePoolNd {
        public init(_ outputSize: Int) { super.init(dims: 1, outputSize: [outputSize], isMax: true) }
    }

    /// `[N, C, H, W]` → `[N, C, *outputSize]` by maxima.
    public final class AdaptiveMaxPool2d: AdaptivePoolNd {
        public init(_ outputSize: any IntOrTuple) { super.init(dims: 2, outputSize: outputSize.intTupleValues, isMax: true) }
    }

    /// `[N, C, D, H, W]` → `[N, C, *outputSize]` by maxima.
    public final class AdaptiveMaxPool3d: AdaptivePoolNd {
        public init(_ outputSize: any IntOrTuple) { super.init(dims: 3, outputSize: outputSize.intTupleValues, isMax: true) }
    }

    /// The partial inverse of `MaxPool2d`: `unpool(y, indices)` puts values back at their max positions.
    public final class MaxUnpool2d: Module {
        public let kernelSize: [Int]
        public let stride: [Int]
        public let padding: [Int]
        public init(_ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0) {
            self.kernelSize = expandParameter(kernelSize.intTupleValues, 2, "kernel_size", op: "MaxUnpool2d")
            self.stride = expandParameter((stride ?? kernelSize).intTupleValues, 2, "stride", op: "MaxUnpool2d")
            self.padding = expandParameter(padding.intTupleValues, 2, "padding", op: "MaxUnpool2d")
            super.init()
        }
        /// Unpools `x` with the `indices` a `MaxPool2d` returned; `outputSize` picks among ambiguous sizes.
        public func callAsFunction(_ x: Tensor, _ indices: Tensor, outputSize: [Int]? = nil) -> Tensor {
            F.maxUnpool(x, indices, dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, outputSize: outputSize)
        }
        public override func forward(_ x: Tensor) -> Tensor {
            preconditionFailure("MaxUnpool2d.forward() missing 1 required positional argument: 'indices'")
        }
        public override func extraRepr() -> String {
            "kernel_size=\(pyTuple(kernelSize)), stride=\(pyTuple(stride)), padding=\(pyTuple(padding))"
        }
    }

    /// Power-average pooling over 2-D windows: `(Σ xᵖ)^(1/p)`.
    public final class LPPool2d: Module {
        public let normType: Double
        public let kernelSize: [Int]
        public let stride: [Int]?
        public let ceilMode: Bool
        public init(_ normType: Double, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil, ceilMode: Bool = false) {
            self.normType = normType
            self.kernelSize = kernelSize.intTupleValues
            self.stride = stride?.intTupleValues
            self.ceilMode = ceilMode
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor {
            F.lpPool2d(x, normType, kernelSize, stride: stride, ceilMode: ceilMode)
        }
        public override func extraRepr() -> String {
            "norm_type=\(normType == normType.rounded() && abs(normType) < 1e15 ? String(Int(normType)) : pyFloat(normType)), kernel_size=\(pyIntOrTuple(kernelSize)), stride=\(stride.map(pyIntOrTuple) ?? "None"), ceil_mode=\(pyBool(ceilMode))"
        }
    }
}
