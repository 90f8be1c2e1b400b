/// Pooling ops with autograd: max pooling (with indices), average pooling, adaptive average/max pooling,
/// max unpooling and LP pooling over 1–3 spatial dims, as `F.maxPool*d`, `F.avgPool*d`, `F.adaptive*Pool*d`,
/// `F.maxUnpool2d`, `F.lpPool*d`.
///
/// Each kernel comes with its adjoint (max: scatter at the indices ↔ gather at the indices; average: spread over
/// the window ↔ average over the window), each recorded with the other as its backward, so second derivatives
/// work as in PyTorch.

/// A pooling problem: geometry in 3-D form, the user's spatial rank and the average-pooling divisor rules.
struct PoolSpec {
    var geometry: PoolGeometry
    var spatialDims: Int
    var countIncludePad = true
    var divisorOverride: Int? = nil
    /// As the caller gave them, for the node's `_saved_` attributes: PyTorch keeps an omitted stride as `()`.
    var ceilMode = false
    var givenStride: [Int] = []
    /// PyTorch's node-name suffix: `2D`, `3D`.
    var nameDims: String { spatialDims == 3 ? "3D" : "2D" }

    func outputShape(_ inputShape: [Int]) -> [Int] { Array(inputShape.dropLast(spatialDims)) + geometry.output.suffix(spatialDims) }
    func planes(_ inputShape: [Int]) -> Int { inputShape.dropLast(spatialDims).reduce(1, *) }
}

/// `t`'s values contiguous (t itself when it is), not recorded.
private func contiguousValues(_ t: Tensor) -> Tensor { t.isContiguous ? t : t.contiguousCopy() }

/// A pooling kernel's output of `shape` from `x`: `kernel(x, out)` writes it for float32/float64; float16 and
/// bfloat16 run the kernel on float32 copies and round the result (exact for max pooling; float32 sums for
/// average pooling, as PyTorch accumulates).
private func poolKernelOutput(_ x: Tensor, shape: [Int], _ kernel: (Tensor, Tensor) -> Void) -> Tensor {
    guard x.dtype == .float16 || x.dtype == .bfloat16 else {
        let out = Tensor(uninitializedShape: shape, dtype: x.dtype, device: x.device)
        kernel(x, out)
        return out
    }
    let wide = Tensor(uninitializedShape: shape, dtype: .float32, device: x.device)
    kernel(torch.noGrad { x.to(.float32) }, wide)
    return torch.noGrad { wide.to(x.dtype) }
}

/// PyTorch's `pooling_output_shape`: floor or ceil division, and in ceil mode the last window must start inside
/// the input or its left padding.
func poolingOutputSize(input: Int, kernel: Int, stride: Int, padding: Int, dilation: Int, ceilMode: Bool) -> Int {
    let num = input + 2 * padding - dilation * (kernel - 1) - 1 + (ceilMode ? stride - 1 : 0)
    var out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1
    if ceilMode && (out - 1) * stride >= input + padding { out -= 1 }
    return out
}

/// Checks the arguments of a fixed-window pooling and builds its spec.
func poolSpec(_ input: Tensor, dims: Int, kernel: [Int], stride: [Int]?, padding: [Int], dilation: [Int], ceilMode: Bool,
              op: String) -> PoolSpec {
    precondition(input.dim == dims + 1 || input.dim == dims + 2,
                 "\(op): Expected \(dims + 1)D or \(dims + 2)D (batch mode) tensor for input, but got: \(shapeString(input.shape))")
    precondition(input.shape.dropFirst().allSatisfy { $0 > 0 },
                 "\(op): Expected input's non-batch dimensions to have positive length, but input has a shape of \(shapeString(input.shape))")
    let k = expandParameter(kernel, dims, "kernel_size", op: op)
    let s = stride.map { $0.isEmpty ? k : expandParameter($0, dims, "stride", op: op) } ?? k
    let p = expandParameter(padding, dims, "padding", op: op), d = expandParameter(dilation, dims, "dilation", op: op)
    precondition(k.allSatisfy { $0 > 0 }, "\(op): kernel_size must be greater than zero, but got \(k)")
    precondition(s.allSatisfy { $0 > 0 }, "\(op): stride must be greater than zero, but got \(s)")
    precondition(d.allSatisfy { $0 > 0 }, "\(op): dilation must be greater than zero, but got \(d)")
    for i in 0..<dims {
        precondition(p[i] >= 0 && p[i] <= k[i] / 2,
                     "pad should be at most half of effective kernel size, but got pad=\(p[i]), kernel_size=\(k[i]) and dilation=\(d[i])")
    }
    let inSpatial = Array(input.shape.suffix(dims))
    let outSpatial = (0..<dims).map {
        poolingOutputSize(input: inSpatial[$0], kernel: k[$0], stride: s[$0], padding: p[$0], dilation: d[$0], ceilMode: ceilMode)
    }
    let lead = input.shape.dropLast(dims)
    precondition(outSpatial.allSatisfy { $0 > 0 },
                 "Given input size: (\((lead.suffix(1) + inSpatial).map(String.init).joined(separator: "x"))). Calculated output size: (\((lead.suffix(1) + outSpatial).map(String.init).joined(separator: "x"))). Output size is too small")
    let pad3 = [Int](repeating: 1, count: 3 - dims)
    let inp = pad3 + inSpatial, outp = pad3 + outSpatial
    let k3 = pad3 + k, s3 = pad3 + s, d3 = pad3 + d, p3 = [Int](repeating: 0, count: 3 - dims) + p
    let axes = (0..<3).map {
        PoolAxis(input: inp[$0], output: outp[$0], kernel: k3[$0], stride: s3[$0], padding: p3[$0], dilation: d3[$0])
    }
    var spec = PoolSpec(geometry: PoolGeometry(axes: axes, input: inp, output: outp), spatialDims: dims)
    spec.ceilMode = ceilMode
    spec.givenStride = stride.map { $0.isEmpty ? [] : s } ?? []
    return spec
}

/// PyTorch's `_saved_` attributes of a max (given `indices`) or average pooling node over `spec`.
private func poolingAttributes(_ spec: PoolSpec, input: Tensor, indices: Tensor?) -> () -> [SavedAttribute] {
    {
        let axes = spec.geometry.axes.suffix(spec.spatialDims)
        let fixed = axes.compactMap { $0.fixed }
        guard fixed.count == spec.spatialDims else {
            // Adaptive pooling keeps its input and, for max pooling, the indices.
            return (indices.map { [.tensor("result1", $0)] } ?? []) + [.tensor("self", input)]
        }
        var r: [SavedAttribute] = [.bool("ceil_mode", spec.ceilMode)]
        if let indices {
            r += [.ints("dilation", axes.map { $0.step }), .tensor("result1", indices)]
        } else {
            r += [.bool("count_include_pad", spec.countIncludePad),
                  spec.divisorOverride.map { .int("divisor_override", $0) } ?? .none("divisor_override")]
        }
        return r + [.ints("kernel_size", fixed.map { $0.kernel }), .ints("padding", fixed.map { $0.padding }),
                    .tensor("self", input), .ints("stride", spec.givenStride)]
    }
}

/// The spec of an adaptive pooling to `outputSize` (nil entries keep the input size).
func adaptivePoolSpec(_ input: Tensor, dims: Int, outputSize: [Int?], op: String) -> PoolSpec {
    precondition(input.dim == dims + 1 || input.dim == dims + 2,
                 "\(op): Expected \(dims + 1)D or \(dims + 2)D tensor, but got: \(shapeString(input.shape))")
    precondition(input.shape.dropFirst().allSatisfy { $0 > 0 },
                 "\(op): Expected input to have non-zero size for non-batch dimensions, but input has sizes \(shapeString(input.shape)) with dimension \(input.shape.dropFirst().firstIndex(of: 0) ?? 0) being empty")
    let inSpatial = Array(input.shape.suffix(dims))
    let sizes = outputSize.count == 1 ? [Int?](repeating: outputSize[0], count: dims) : outputSize
    precondition(sizes.count == dims, "\(op): output_size must have \(dims) elements")
    let outSpatial = zip(sizes, inSpatial).map { $0 ?? $1 }
    precondition(outSpatial.allSatisfy { $0 >= 0 }, "\(op): elements of output_size must be greater than or equal to 0 but received \(outSpatial)")
    let pad3 = [Int](repeating: 1, count: 3 - dims)
    let inp = pad3 + inSpatial, outp = pad3 + outSpatial
    let axes = (0..<3).map { PoolAxis(adaptiveInput: inp[$0], output: outp[$0]) }
    return PoolSpec(geometry: PoolGeometry(axes: axes, input: inp, output: outp), spatialDims: dims)
}

// MARK: - Max pooling and its adjoint pair

/// Max pooling: values and flat indices within each input plane (PyTorch's `max_pool*d_with_indices`).
func maxPoolForward(_ input: Tensor, _ spec: PoolSpec, name: String) -> (Tensor, Tensor) {
    let indices = Tensor(uninitializedShape: spec.outputShape(input.shape), dtype: .int64, device: input.device)
    let out = maxPoolCompute(input, spec, indices: indices)
    if input.needsGrad {
        let inShape = input.shape
        record(name, out, inputs: [input], saved: poolingAttributes(spec, input: input, indices: indices)) { _, g in
            [maxPoolScatter(g, indices, spec, inputShape: inShape)]
        }
    }
    return (out, indices)
}

/// Max pooling's values alone (`F.maxPool2d`, a layer without `returnIndices`): the indices are computed only
/// when autograd needs them for the backward pass.
func maxPoolValuesOnly(_ input: Tensor, _ spec: PoolSpec, name: String) -> Tensor {
    if input.needsGrad { return maxPoolForward(input, spec, name: name).0 }
    return maxPoolCompute(input, spec, indices: nil)
}

/// `clamp(maxPool(input))` with the clamp applied to each row of outputs as it is written (inference only: no
/// autograd). Equal to max pooling after the clamp (a ReLU, ReLU6 or Hardtanh), which commutes with the maximum.
func maxPoolClamped(_ input: Tensor, _ spec: PoolSpec, lo: Double, hi: Double) -> Tensor {
    precondition(!input.needsGrad, "max_pool: the fused clamp is for inference (no autograd)")
    return maxPoolCompute(input, spec, indices: nil, clamp: (lo, hi))
}

/// Runs the max-pooling kernel over `input`, writing the indices into `indices` when given.
private func maxPoolCompute(_ input: Tensor, _ spec: PoolSpec, indices: Tensor?, clamp: (lo: Double, hi: Double)? = nil) -> Tensor {
    let planes = spec.planes(input.shape)
    return poolKernelOutput(contiguousValues(input), shape: spec.outputShape(input.shape)) { x, out in
        switch x.device {
        case .cpu: CPUPooling.maxForward(x, into: out, indices: indices, planes: planes, spec.geometry, clamp: clamp)
        case .cuda:
            CUDAPooling.maxForward(x, into: out, indices: indices, planes: planes, spec.geometry)
            if let clamp { torch.noGrad { _ = out.clamp_(min: clamp.lo, max: clamp.hi) } }
        }
    }
}

/// Scatters `g` (output-shaped) to the max positions of an input of `inputShape`; its adjoint is `maxPoolGather`.
func maxPoolScatter(_ g: Tensor, _ indices: Tensor, _ spec: PoolSpec, inputShape: [Int]) -> Tensor {
    let gy = contiguousValues(g)
    let planes = spec.planes(inputShape)
    let out: Tensor
    checkSameDevice(g, indices)
    switch g.device {
    case .cpu:
        out = poolKernelOutput(gy, shape: inputShape) { gy, out in
            CPUPooling.maxBackward(gy, indices: indices, into: out, planes: planes, inPlane: spec.geometry.inPlane,
                                   outPlane: spec.geometry.outPlane)
        }
    case .cuda:
        let offsets = CUDAPooling.flatOffsets(indices, planes: planes, inPlane: spec.geometry.inPlane, outPlane: spec.geometry.outPlane)
        out = torch.noGrad {
            torch.zeros([shapeNumel(inputShape)], dtype: g.dtype, device: g.device).indexAdd_(0, offsets, gy.reshape([-1]))
                .view(inputShape)
        }
    }
    if g.needsGrad {
        record("MaxPool\(spec.nameDims)WithIndicesBackwardBackward0", out, inputs: [g]) { _, gg in
            [maxPoolGather(gg, indices, spec)]
        }
    }
    return out
}

/// Reads an input-shaped `t` at the max positions (output-shaped result); its adjoint is `maxPoolScatter`.
func maxPoolGather(_ t: Tensor, _ indices: Tensor, _ spec: PoolSpec) -> Tensor {
    let x = contiguousValues(t)
    let inShape = t.shape
    let planes = spec.planes(inShape), inPlane = spec.geometry.inPlane, outPlane = spec.geometry.outPlane
    let out: Tensor
    checkSameDevice(t, indices)
    switch t.device {
    case .cpu:
        out = poolKernelOutput(x, shape: indices.shape) { x, out in
            CPUPooling.maxGather(x, indices: indices, into: out, planes: planes, inPlane: inPlane, outPlane: outPlane)
        }
    case .cuda:
        let offsets = CUDAPooling.flatOffsets(indices, planes: planes, inPlane: inPlane, outPlane: outPlane)
        out = torch.noGrad { x.reshape([-1]).take(offsets).view(indices.shape) }
    }
    if t.needsGrad {
        record("GatherBackward0", out, inputs: [t]) { _, g in [maxPoolScatter(g, indices, spec, inputShape: inShape)] }
    }
    return out
}

// MARK: - Average pooling and its adjoint pair

/// Average pooling with `spec`'s divisor rules; recorded as `name`.
func averagePool(_ input: Tensor, _ spec: PoolSpec, name: String) -> Tensor {
    let planes = spec.planes(input.shape)
    let out = poolKernelOutput(contiguousValues(input), shape: spec.outputShape(input.shape)) { x, out in
        switch x.device {
        case .cpu:
            CPUPooling.averageForward(x, into: out, planes: planes, spec.geometry, countIncludePad: spec.countIncludePad,
                                      divisorOverride: spec.divisorOverride)
        case .cuda:
            CUDAPooling.averageForward(x, into: out, planes: planes, spec.geometry, countIncludePad: spec.countIncludePad,
                                       divisorOverride: spec.divisorOverride)
        }
    }
    if input.needsGrad {
        let inShape = input.shape
        record(name, out, inputs: [input], saved: poolingAttributes(spec, input: input, indices: nil)) { _, g in
            [averagePoolAdjoint(g, spec, inputShape: inShape)]
        }
    }
    return out
}

/// Spreads `g` over the windows (the gradient of `averagePool`); its adjoint is `averagePool`.
func averagePoolAdjoint(_ g: Tensor, _ spec: PoolSpec, inputShape: [Int]) -> Tensor {
    let planes = spec.planes(inputShape)
    let out = poolKernelOutput(contiguousValues(g), shape: inputShape) { gy, out in
        switch gy.device {
        case .cpu:
            CPUPooling.averageBackward(gy, into: out, planes: planes, spec.geometry, countIncludePad: spec.countIncludePad,
                                       divisorOverride: spec.divisorOverride)
        case .cuda:
            CUDAPooling.averageBackward(gy, into: out, planes: planes, spec.geometry, countIncludePad: spec.countIncludePad,
                                        divisorOverride: spec.divisorOverride)
        }
    }
    if g.needsGrad {
        record("AvgPool\(spec.nameDims)BackwardBackward0", out, inputs: [g]) { _, gg in
            [averagePool(gg, spec, name: "AvgPool\(spec.nameDims)Backward0")]
        }
    }
    return out
}
