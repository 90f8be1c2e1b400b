/// `F.maxPool1d/2d/3d`, `F.avgPool1d/2d/3d`, `F.adaptiveAvgPool1d/2d/3d`, `F.adaptiveMaxPool1d/2d/3d`,
/// `F.maxUnpool1d/2d/3d` and `F.lpPool1d/2d`. Kernel sizes, strides and paddings take an int or one per dim;
/// `stride` defaults to the kernel size, as in PyTorch.

extension nn.functional {
    // MARK: Max pooling

    /// Max pooling and the flat index of each maximum within its input plane (`return_indices=True`).
    public static func maxPoolWithIndices(_ input: Tensor, dims: Int, kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                          padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1,
                                          ceilMode: Bool = false) -> (Tensor, Tensor) {
        let (y, i) = maxPool(input, dims: dims, kernel: kernelSize.intTupleValues, stride: stride?.intTupleValues,
                             padding: padding.intTupleValues, dilation: dilation.intTupleValues, ceilMode: ceilMode, indices: true)
        return (y, i!)
    }

    /// Max pooling over `dims` spatial dims; the indices are computed when asked for or when autograd needs them
    /// (inference skips them). `clamp` (inference only, no indices) is a ReLU/ReLU6/Hardtanh that preceded the
    /// pooling, applied to the pooled outputs instead (`nn.convBatchNorm`'s fused pooling).
    static func maxPool(_ input: Tensor, dims: Int, kernel: [Int], stride: [Int]?, padding: [Int], dilation: [Int],
                        ceilMode: Bool, indices: Bool, clamp: (lo: Double, hi: Double)? = nil) -> (Tensor, Tensor?) {
        if dims == 1 {
            // Like PyTorch: 1-D pooling is 2-D pooling of a height-1 view (grad_fn SqueezeBackward1).
            let (y, i) = maxPool(input.unsqueeze(-2), dims: 2, kernel: [1] + kernel, stride: stride.map { [1] + $0 },
                                 padding: [0] + padding, dilation: [1] + dilation, ceilMode: ceilMode, indices: indices, clamp: clamp)
            return (y.squeeze(-2), i?.squeeze(-2))
        }
        let spec = poolSpec(input, dims: dims, kernel: kernel, stride: stride, padding: padding, dilation: dilation,
                            ceilMode: ceilMode, op: "max_pool\(dims)d")
        if let clamp {
            precondition(!indices, "max_pool\(dims)d: a fused clamp computes values only")
            return (maxPoolClamped(input, spec, lo: clamp.lo, hi: clamp.hi), nil)
        }
        let name = "MaxPool\(spec.nameDims)WithIndicesBackward0"
        if indices { return maxPoolForward(input, spec, name: name) }
        return (maxPoolValuesOnly(input, spec, name: name), nil)
    }

    /// Max pooling's values (the `F.maxPool*d` functions and layers without `returnIndices`).
    static func maxPoolValues(_ input: Tensor, dims: Int, kernelSize: any IntOrTuple, stride: (any IntOrTuple)?,
                              padding: any IntOrTuple, dilation: any IntOrTuple, ceilMode: Bool) -> Tensor {
        maxPool(input, dims: dims, kernel: kernelSize.intTupleValues, stride: stride?.intTupleValues, padding: padding.intTupleValues,
                dilation: dilation.intTupleValues, ceilMode: ceilMode, indices: false).0
    }

    /// 1-D max pooling over `[N, C, L]` (or `[C, L]`).
    public static func maxPool1d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPoolValues(input, dims: 1, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }
    /// `F.maxPool1d(x, 2, 2)`: the stride given positionally.
    public static func maxPool1d(_ input: Tensor, _ kernelSize: any IntOrTuple, _ stride: any IntOrTuple,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPool1d(input, kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }

    /// 2-D max pooling over `[N, C, H, W]` (or `[C, H, W]`).
    ///
    /// ```swift
    /// let y = F.maxPool2d(x, 2)                    // 2×2 windows, stride 2
    /// let z = F.maxPool2d(x, 3, 2, ceilMode: true)
    /// ```
    public static func maxPool2d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPoolValues(input, dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }
    /// `F.maxPool2d(x, 2, 2)`: the stride given positionally.
    public static func maxPool2d(_ input: Tensor, _ kernelSize: any IntOrTuple, _ stride: any IntOrTuple,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPool2d(input, kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }
    /// `F.maxPool2d(x, kernelSize: 2, stride: 2)`: all by keyword.
    public static func maxPool2d(_ input: Tensor, kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPool2d(input, kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }

    /// 3-D max pooling over `[N, C, D, H, W]` (or `[C, D, H, W]`).
    public static func maxPool3d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPoolValues(input, dims: 3, kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }
    /// `F.maxPool3d(x, 2, 2)`: the stride given positionally.
    public static func maxPool3d(_ input: Tensor, _ kernelSize: any IntOrTuple, _ stride: any IntOrTuple,
                                 padding: any IntOrTuple = 0, dilation: any IntOrTuple = 1, ceilMode: Bool = false) -> Tensor {
        maxPool3d(input, kernelSize, stride: stride, padding: padding, dilation: dilation, ceilMode: ceilMode)
    }

    // MARK: Average pooling

    /// Average pooling over `dims` spatial dims: `countIncludePad` counts the zero padding in the divisor,
    /// `divisorOverride` replaces the divisor.
    public static func avgPool(_ input: Tensor, dims: Int, kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                               padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true,
                               divisorOverride: Int? = nil) -> Tensor {
        if dims == 1 {
            return avgPool(input.unsqueeze(-2), dims: 2, kernelSize: [1] + kernelSize.intTupleValues,
                           stride: stride.map { [1] + $0.intTupleValues }, padding: [0] + padding.intTupleValues,
                           ceilMode: ceilMode, countIncludePad: countIncludePad, divisorOverride: divisorOverride).squeeze(-2)
        }
        var spec = poolSpec(input, dims: dims, kernel: kernelSize.intTupleValues, stride: stride?.intTupleValues,
                            padding: padding.intTupleValues, dilation: [1], ceilMode: ceilMode, op: "avg_pool\(dims)d")
        if let divisorOverride { precondition(divisorOverride != 0, "divisor must be not zero") }
        spec.countIncludePad = countIncludePad
        spec.divisorOverride = divisorOverride
        return averagePool(input, spec, name: "AvgPool\(spec.nameDims)Backward0")
    }

    /// 1-D average pooling.
    public static func avgPool1d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true) -> Tensor {
        avgPool(input, dims: 1, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad)
    }
    /// `F.avgPool1d(x, 2, 2)`: the stride given positionally.
    public static func avgPool1d(_ input: Tensor, _ kernelSize: any IntOrTuple, _ stride: any IntOrTuple,
                                 padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true) -> Tensor {
        avgPool1d(input, kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad)
    }

    /// 2-D average pooling.
    public static func avgPool2d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true,
                                 divisorOverride: Int? = nil) -> Tensor {
        avgPool(input, dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                countIncludePad: countIncludePad, divisorOverride: divisorOverride)
    }
    /// `F.avgPool2d(x, 2, 2)`: the stride given positionally.
    public static func avgPool2d(_ input: Tensor, _ kernelSize: any IntOrTuple, _ stride: any IntOrTuple,
                                 padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true,
                                 divisorOverride: Int? = nil) -> Tensor {
        avgPool2d(input, kernelSize, stride: stride, padding: padding, ceilMode: ceilMode, countIncludePad: countIncludePad,
                  divisorOverride: divisorOverride)
    }

    /// 3-D average pooling.
    public static func avgPool3d(_ input: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                 padding: any IntOrTuple = 0, ceilMode: Bool = false, countIncludePad: Bool = true,
                                 divisorOverride: Int? = nil) -> Tensor {
        avgPool(input, dims: 3, kernelSize: kernelSize, stride: stride, padding: padding, ceilMode: ceilMode,
                countIncludePad: countIncludePad, divisorOverride: divisorOverride)
    }

    // MARK: Adaptive pooling

    /// Adaptive average pooling to `outputSize` (one size, or one per dim; nil keeps the input's size).
    public static func adaptiveAvgPool(_ input: Tensor, dims: Int, outputSize: [Int?]) -> Tensor {
        if dims == 1 {
            return adaptiveAvgPool(input.unsqueeze(-2), dims: 2, outputSize: [1] + outputSize).squeeze(-2)
        }
        let spec = adaptivePoolSpec(input, dims: dims, outputSize: outputSize, op: "adaptive_avg_pool\(dims)d")
        if spec.geometry.output == [1, 1, 1] {
            // Global average pooling is a mean (PyTorch does the same: grad_fn MeanBackward1).
            return input.mean(dim: Array((input.dim - dims)..<input.dim), keepdim: true)
        }
        return averagePool(input, spec, name: "AdaptiveAvgPool\(spec.nameDims)Backward0")
    }

    /// Adaptive max pooling to `outputSize`, with the indices of the maxima.
    public static func adaptiveMaxPoolWithIndices(_ input: Tensor, dims: Int, outputSize: [Int?]) -> (Tensor, Tensor) {
        if dims == 1 {
            let (y, i) = adaptiveMaxPoolWithIndices(input.unsqueeze(-2), dims: 2, outputSize: [1] + outputSize)
            return (y.squeeze(-2), i.squeeze(-2))
        }
        let spec = adaptivePoolSpec(input, dims: dims, outputSize: outputSize, op: "adaptive_max_pool\(dims)d")
        return maxPoolForward(input, spec, name: "AdaptiveMaxPool\(spec.nameDims)Backward0")
    }

    /// `[N, C, L]` → `[N, C, outputSize]` by averaging.
    public static func adaptiveAvgPool1d(_ input: Tensor, _ outputSize: Int) -> Tensor {
        adaptiveAvgPool(input, dims: 1, outputSize: [outputSize])
    }
    /// `[N, C, H, W]` → `[N, C, *outputSize]` by averaging (`F.adaptiveAvgPool2d(x, 1)`, `F.adaptiveAvgPool2d(x, [7, 7])`).
    public static func adaptiveAvgPool2d(_ input: Tensor, _ outputSize: any IntOrTuple) -> Tensor {
        adaptiveAvgPool(input, dims: 2, outputSize: outputSize.intTupleValues)
    }
    /// `[N, C, D, H, W]` → `[N, C, *outputSize]` by averaging.
    public static func adaptiveAvgPool3d(_ input: Tensor, _ outputSize: any IntOrTuple) -> Tensor {
        adaptiveAvgPool(input, dims: 3, outputSize: outputSize.intTupleValues)
    }
    /// `[N, C, L]` → `[N, C, outputSize]` by maxima.
    public static func adaptiveMaxPool1d(_ input: Tensor, _ outputSize: Int) -> Tensor {
        adaptiveMaxPoolWithIndices(input, dims: 1, outputSize: [outputSize]).0
    }
    /// `[N, C, H, W]` → `[N, C, *outputSize]` by maxima.
    public static func adaptiveMaxPool2d(_ input: Tensor, _ outputSize: any IntOrTuple) -> Tensor {
        adaptiveMaxPoolWithIndices(input, dims: 2, outputSize: outputSize.intTupleValues).0
    }
    /// `[N, C, D, H, W]` → `[N, C, *outputSize]` by maxima.
    public static func adaptiveMaxPool3d(_ input: Tensor, _ outputSize: any IntOrTuple) -> Tensor {
        adaptiveMaxPoolWithIndices(input, dims: 3, outputSize: outputSize.intTupleValues).0
    }

    // MARK: Unpooling and LP pooling

    /// The partial inverse of max pooling: puts each value at its saved index in a zero tensor of the unpooled
    /// size (`outputSize` overrides the default `(in − 1)·stride − 2·padding + kernel`).
    public static func maxUnpool(_ input: Tensor, _ indices: Tensor, dims: Int, kernelSize: any IntOrTuple,
                                 stride: (any IntOrTuple)? = nil, padding: any IntOrTuple = 0, outputSize: [Int]? = nil) -> Tensor {
        let op = "max_unpool\(dims)d"
        let k = expandParameter(kernelSize.intTupleValues, dims, "kernel_size", op: op)
        let s = stride.map { expandParameter($0.intTupleValues, dims, "stride", op: op) } ?? k
        let p = expandParameter(padding.intTupleValues, dims, "padding", op: op)
        precondition(indices.dtype == .int64, "\(op): elements in indices should be type int64 but got: \(indices.dtype)")
        precondition(indices.shape == input.shape, "Expected shape of indices to be same as that of the input tensor (\(shapeString(input.shape))) but got indices tensor with shape: \(shapeString(indices.shape))")
        let inSpatial = Array(input.shape.suffix(dims))
        var outSpatial: [Int] = (0..<dims).map { (d: Int) -> Int in (inSpatial[d] - 1) * s[d] - 2 * p[d] + k[d] }
        if let outputSize { outSpatial = Array(outputSize.suffix(dims)) }
        // The pooling spec whose gather/scatter pair maps between the two planes.
        let pad3 = [Int](repeating: 1, count: 3 - dims)
        let dummyAxes = (0..<3).map { _ in PoolAxis(adaptiveInput: 1, output: 1) }
        let spec = PoolSpec(geometry: PoolGeometry(axes: dummyAxes, input: pad3 + outSpatial, output: pad3 + inSpatial), spatialDims: dims)
        let outShape = Array(input.shape.dropLast(dims)) + outSpatial
        let plane = outSpatial.reduce(1, *)
        let bad = indices.toArray(as: Int64.self).first { $0 < 0 || $0 >= Int64(plane) }
        precondition(bad == nil, "Found an invalid max index: \(bad ?? 0) (output volumes are of size \(outSpatial.map(String.init).joined(separator: "x"))")
        return maxPoolScatter(input, indices.isContiguous ? indices : indices.contiguous(), spec, inputShape: outShape)
    }

    /// `F.maxUnpool2d(x, indices, 2)`.
    public static func maxUnpool2d(_ input: Tensor, _ indices: Tensor, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                   padding: any IntOrTuple = 0, outputSize: [Int]? = nil) -> Tensor {
        maxUnpool(input, indices, dims: 2, kernelSize: kernelSize, stride: stride, padding: padding, outputSize: outputSize)
    }

    /// Power-average pooling: `(Σ xᵖ)^(1/p)` over each window (PyTorch's `lp_pool2d`).
    public static func lpPool2d(_ input: Tensor, _ normType: Double, _ kernelSize: any IntOrTuple, stride: (any IntOrTuple)? = nil,
                                ceilMode: Bool = false) -> Tensor {
        let k = expandParameter(kernelSize.intTupleValues, 2, "kernel_size", op: "lp_pool2d")
        let out = avgPool2d(input.pow(normType), k, stride: stride, padding: 0, ceilMode: ceilMode)
        return (out.sign() * out.abs().relu()).mul(Double(k[0] * k[1])).pow(1 / normType)
    }

    /// Power-average pooling over one dim (PyTorch's `lp_pool1d`).
    public static func lpPool1d(_ input: Tensor, _ normType: Double, _ kernelSize: Int, stride: Int? = nil,
                                ceilMode: Bool = false) -> Tensor {
        let out = avgPool1d(input.pow(normType), kernelSize, stride: stride.map { [$0] }, padding: 0, ceilMode: ceilMode)
        return (out.sign() * out.abs().relu()).mul(Double(kernelSize)).pow(1 / normType)
    }
}
