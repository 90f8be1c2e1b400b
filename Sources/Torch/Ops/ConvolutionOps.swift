/// Convolution ops with autograd: `torch.convolution` (1-, 2- and 3-D, transposed or not, groups, dilation),
/// behind `F.conv1d/2d/3d` and `F.convTranspose1d/2d/3d`.
///
/// Three kernels (`CPUConvolution` / `CUDAConvolution`) make every convolution and every derivative of one: a forward
/// convolution (`smallFromBig`), its adjoint (`bigFromSmall`, the transposed convolution) and the weight
/// gradient. Each is recorded with a backward written in the other two, so the set is closed under
/// differentiation and second derivatives (`createGraph`) work like PyTorch's `ConvolutionBackwardBackward0`.

/// One convolution problem: its 3-D geometry and how many spatial dims the user's tensors have.
struct ConvProblem {
    var geometry: ConvGeometry
    /// 1, 2 or 3.
    var spatialDims: Int

    private func spatial(_ s: [Int]) -> [Int] { Array(s.suffix(spatialDims)) }
    func bigShape(batch: Int) -> [Int] { [batch, geometry.bigChannels] + spatial(geometry.big) }
    func smallShape(batch: Int) -> [Int] { [batch, geometry.smallChannels] + spatial(geometry.small) }
    var weightShape: [Int] { [geometry.smallChannels, geometry.bigChannels / geometry.groups] + spatial(geometry.kernel) }
    /// The dims a bias gradient sums over (all but the channels).
    var reducedDims: [Int] { [0] + Array(2..<(2 + spatialDims)) }
}

/// `t`'s values as a contiguous tensor of `t`'s dtype, not recorded (t itself when already contiguous).
private func contiguousOperand(_ t: Tensor) -> Tensor { t.isContiguous ? t : t.contiguousCopy() }

/// Y = conv(X, W) + bias. Recorded as `name`.
/// `outputPadding` is given for `torch.convolution`'s own node, which lists PyTorch's `_saved_` attributes.
/// `crop` is `weight`'s crop for `p` when the caller has it (the kernel then reads it instead of cropping again).
func convSmallFromBig(_ big: Tensor, _ weight: Tensor, bias: Tensor?, _ p: ConvProblem,
                      name: String = "ConvolutionBackwardBackward0", outputPadding: [Int]? = nil,
                      crop: ConvWeightCrop? = nil) -> Tensor {
    let n = big.shape[0]
    let x = contiguousOperand(big), w = contiguousOperand(weight), b = bias.map(contiguousOperand)
    var crop = crop
    let out: Tensor
    checkSameDevice(x, w)
    switch x.device {
    case .cpu: out = CPUConvolution.smallFromBig(x, w, bias: b, p.geometry, outShape: p.smallShape(batch: n), crop: &crop)
    case .cuda: out = torch.noGrad { CUDAConvolution.smallFromBig(x, w, bias: b, p.geometry, outShape: p.smallShape(batch: n)) }
    }
    var inputs = [big, weight]
    if let bias { inputs.append(bias) }
    if anyNeedsGrad(inputs) {
        let needs = inputs.map { $0._requiresGrad }
        let sx = needs[1] ? SavedTensor(big) : nil, sw = needs[0] ? SavedTensor(weight) : nil
        let saved = outputPadding.map { convolutionAttributes(p, transposed: false, outputPadding: $0, big, weight, bias) }
        let inputCrop = needs[0] ? crop : nil
        record(name, out, inputs: inputs, saved: saved) { node, g in
            var grads: [Tensor?] = [
                needs[0] ? convBigFromSmall(g, sw!.unpack(node), bias: nil, p, crop: inputCrop) : nil,
                needs[1] ? convWeightGrad(g, sx!.unpack(node), p) : nil,
            ]
            if needs.count == 3 { grads.append(needs[2] ? g.sum(dim: p.reducedDims) : nil) }
            return grads
        }
    }
    return out
}

/// X = convᵀ(Y, W) + bias (the transposed convolution). Recorded as `name`; `crop` as for `convSmallFromBig`.
func convBigFromSmall(_ small: Tensor, _ weight: Tensor, bias: Tensor?, _ p: ConvProblem,
                      name: String = "ConvolutionBackwardBackward0", outputPadding: [Int]? = nil,
                      crop: ConvWeightCrop? = nil) -> Tensor {
    let n = small.shape[0]
    let y = contiguousOperand(small), w = contiguousOperand(weight), b = bias.map(contiguousOperand)
    var crop = crop
    let out: Tensor
    checkSameDevice(y, w)
    switch y.device {
    case .cpu: out = CPUConvolution.bigFromSmall(y, w, bias: b, p.geometry, outShape: p.bigShape(batch: n), crop: &crop)
    case .cuda: out = torch.noGrad { CUDAConvolution.bigFromSmall(y, w, bias: b, p.geometry, outShape: p.bigShape(batch: n)) }
    }
    var inputs = [small, weight]
    if let bias { inputs.append(bias) }
    if anyNeedsGrad(inputs) {
        let needs = inputs.map { $0._requiresGrad }
        let sy = needs[1] ? SavedTensor(small) : nil, sw = needs[0] ? SavedTensor(weight) : nil
        let saved = outputPadding.map { convolutionAttributes(p, transposed: true, outputPadding: $0, small, weight, bias) }
        let inputCrop = needs[0] ? crop : nil
        record(name, out, inputs: inputs, saved: saved) { node, g in
            var grads: [Tensor?] = [
                needs[0] ? convSmallFromBig(g, sw!.unpack(node), bias: nil, p, crop: inputCrop) : nil,
                needs[1] ? convWeightGrad(sy!.unpack(node), g, p) : nil,
            ]
            if needs.count == 3 { grads.append(needs[2] ? g.sum(dim: p.reducedDims) : nil) }
            return grads
        }
    }
    return out
}

/// `ConvolutionBackward0`'s `_saved_` attributes. PyTorch keeps `input` and `weight` whichever
/// gradients are wanted, so they are listed (and kept alive with the node) even where the backward
/// closure does not need one of them.
private func convolutionAttributes(_ p: ConvProblem, transposed: Bool, outputPadding: [Int],
                                   _ input: Tensor, _ weight: Tensor, _ bias: Tensor?) -> () -> [SavedAttribute] {
    let biasSizes = bias.map { $0.shape } ?? [0]
    return {
        let g = p.geometry, n = p.spatialDims
        return [.ints("bias_sym_sizes_opt", biasSizes), .ints("dilation", Array(g.dilation.suffix(n))), .int("groups", g.groups),
                .tensor("input", input), .ints("output_padding", outputPadding), .ints("padding", Array(g.padding.suffix(n))),
                .ints("stride", Array(g.stride.suffix(n))), .bool("transposed", transposed), .tensor("weight", weight)]
    }
}

/// dW = Σₙ Y[n] · im2col(X[n])ᵀ: the weight gradient of both convolutions, itself differentiable.
func convWeightGrad(_ small: Tensor, _ big: Tensor, _ p: ConvProblem) -> Tensor {
    let y = contiguousOperand(small), x = contiguousOperand(big)
    let out: Tensor
    checkSameDevice(y, x)
    switch y.device {
    case .cpu: out = CPUConvolution.weightGrad(y, x, p.geometry, weightShape: p.weightShape)
    case .cuda: out = torch.noGrad { CUDAConvolution.weightGrad(y, x, p.geometry, weightShape: p.weightShape) }
    }
    if anyNeedsGrad(small, big) {
        let needY = small._requiresGrad, needX = big._requiresGrad
        let sy = needX ? SavedTensor(small) : nil, sx = needY ? SavedTensor(big) : nil
        record("ConvolutionBackwardBackward0", out, inputs: [small, big]) { node, g in
            [needY ? convSmallFromBig(sx!.unpack(node), g, bias: nil, p) : nil,
             needX ? convBigFromSmall(sy!.unpack(node), g, bias: nil, p) : nil]
        }
    }
    return out
}

/// Expands an int or a per-dim list to `n` values (PyTorch's `_single/_pair/_triple`).
func expandParameter(_ v: [Int], _ n: Int, _ name: String, op: String) -> [Int] {
    if v.count == 1 { return [Int](repeating: v[0], count: n) }
    precondition(v.count == n, "\(op): expected \(name) to be a single integer value or a list of \(n) values to match the convolution dimensions, but got \(name)=\(v)")
    return v
}

/// The 3-D form of a spatial list: leading 1s (or `fill`) before the `count` given values.
private func threeD(_ v: [Int], fill: Int) -> [Int] { [Int](repeating: fill, count: 3 - v.count) + v }

extension torch {
    /// The general convolution behind every `F.conv*` and `F.convTranspose*` (PyTorch's
    /// `torch.convolution`): `input` is `[N, C, *spatial]` (or unbatched `[C, *spatial]`) with 1–3 spatial
    /// dims, `weight` `[Cout, Cin/groups, *kernel]` (`[Cin, Cout/groups, *kernel]` when `transposed`).
    /// grad_fn `ConvolutionBackward0`, with second derivatives.
    public static func convolution(_ input: Tensor, _ weight: Tensor, _ bias: Tensor?, stride: [Int], padding: [Int],
                                   dilation: [Int], transposed: Bool, outputPadding: [Int], groups: Int) -> Tensor {
        let sd = weight.dim - 2
        let op = transposed ? "conv_transpose\(sd)d" : "conv\(sd)d"
        precondition(sd >= 1 && sd <= 3, "\(op): expected a weight with 3, 4 or 5 dims, got \(weight.dim)-D weight of size \(shapeString(weight.shape))")
        if _slowPath(Autocast.isActive), let r = Autocast.run(AutocastOp(rawValue: op)!, [input, weight, bias], {
            convolution($0[0]!, $0[1]!, $0[2], stride: stride, padding: padding, dilation: dilation, transposed: transposed,
                        outputPadding: outputPadding, groups: groups)
        }) { return r }
        if input.dim == sd + 1 {
            // Unbatched input, as PyTorch accepts it.
            return convolution(input.unsqueeze(0), weight, bias, stride: stride, padding: padding, dilation: dilation,
                               transposed: transposed, outputPadding: outputPadding, groups: groups).squeeze(0)
        }
        precondition(input.dim == sd + 2, "Expected \(sd + 1)D (unbatched) or \(sd + 2)D (batched) input to \(op), but got input of size: \(shapeString(input.shape))")
        precondition(input.dtype == weight.dtype, "Input type (\(input.legacyTypeName)) and weight type (\(weight.legacyTypeName)) should be the same")
        if let bias {
            precondition(bias.dtype == input.dtype, "Input type (\(input.legacyTypeName)) and bias type (\(bias.legacyTypeName)) should be the same")
        }
        precondition(groups > 0, "\(op): non-positive groups is not supported")
        if input.device == .cpu && (input.dtype == .float16 || input.dtype == .bfloat16) {
            // The CPU kernels are float32/float64: half-precision convolutions (autocast's) run in float32 and round
            // the result, so accumulation is float32 as in PyTorch's. (CUDA runs them in cuDNN, or likewise widened:
            // CUDAConvolution.)
            return convolution(input.to(.float32), weight.to(.float32), bias?.to(.float32), stride: stride, padding: padding,
                               dilation: dilation, transposed: transposed, outputPadding: outputPadding, groups: groups)
                .to(input.dtype)
        }
        let s = expandParameter(stride, sd, "stride", op: op), pd = expandParameter(padding, sd, "padding", op: op)
        let dl = expandParameter(dilation, sd, "dilation", op: op)
        let op0 = expandParameter(outputPadding, sd, "output_padding", op: op)
        precondition(s.allSatisfy { $0 > 0 }, "\(op): non-positive stride is not supported")
        precondition(pd.allSatisfy { $0 >= 0 }, "\(op): negative padding is not supported")
        precondition(dl.allSatisfy { $0 > 0 }, "\(op): dilation should be greater than zero")
        let cin = input.shape[1]
        let kernel = Array(weight.shape.suffix(sd))
        let inSpatial = Array(input.shape.suffix(sd))
        let geometry: ConvGeometry
        if transposed {
            if let m = convChannelMismatchMessage(input: input.shape, weight: weight.shape, groups: groups, transposed: true) {
                preconditionFailure(m)
            }
            precondition(cin % groups == 0, "\(op): in_channels (\(cin)) must be divisible by groups (\(groups))")
            for i in 0..<sd {
                precondition(op0[i] < s[i] || op0[i] < dl[i],
                             "\(op): output padding must be smaller than either stride or dilation, but got output_padding=\(op0), stride=\(s), dilation=\(dl)")
            }
            let outSpatial: [Int] = (0..<sd).map { (i: Int) -> Int in
                let span: Int = dl[i] * (kernel[i] - 1) + op0[i] + 1
                return (inSpatial[i] - 1) * s[i] - 2 * pd[i] + span
            }
            precondition(outSpatial.allSatisfy { $0 > 0 }, "\(op): calculated output size \(shapeString(outSpatial)) is too small")
            geometry = ConvGeometry(big: threeD(outSpatial, fill: 1), small: threeD(inSpatial, fill: 1),
                                    kernel: threeD(kernel, fill: 1), stride: threeD(s, fill: 1),
                                    padding: threeD(pd, fill: 0), dilation: threeD(dl, fill: 1), groups: groups,
                                    bigChannels: weight.shape[1] * groups, smallChannels: cin)
            if let bias {
                precondition(bias.dim == 1 && bias.numel == geometry.bigChannels,
                             "Given transposed=1, weight of size \(shapeString(weight.shape)), expected bias to be 1-dimensional with \(geometry.bigChannels) elements, but got bias of size \(shapeString(bias.shape)) instead")
            }
        } else {
            if let m = convChannelMismatchMessage(input: input.shape, weight: weight.shape, groups: groups, transposed: false) {
                preconditionFailure(m)
            }
            precondition(weight.shape[0] % groups == 0,
                         "Given groups=\(groups), expected weight to be divisible by \(groups) at dimension 0, but got weight of size \(shapeString(weight.shape)) instead")
            for i in 0..<sd {
                precondition(inSpatial[i] + 2 * pd[i] >= dl[i] * (kernel[i] - 1) + 1,
                             "\(op): calculated padded input size per channel: \(pyTupleX(inSpatial.indices.map { inSpatial[$0] + 2 * pd[$0] })). Kernel size: \(pyTupleX(kernel.indices.map { dl[$0] * (kernel[$0] - 1) + 1 })). Kernel size can't be greater than actual input size")
            }
            let outSpatial: [Int] = (0..<sd).map { (i: Int) -> Int in
                ConvGeometry.outputSize(input: inSpatial[i], kernel: kernel[i], stride: s[i], padding: pd[i], dilation: dl[i])
            }
            geometry = ConvGeometry(big: threeD(inSpatial, fill: 1), small: threeD(outSpatial, fill: 1),
                                    kernel: threeD(kernel, fill: 1), stride: threeD(s, fill: 1),
                                    padding: threeD(pd, fill: 0), dilation: threeD(dl, fill: 1), groups: groups,
                                    bigChannels: cin, smallChannels: weight.shape[0])
            if let bias {
                precondition(bias.dim == 1 && bias.numel == geometry.smallChannels,
                             "Given weight of size \(shapeString(weight.shape)), expected bias to be 1-dimensional with \(geometry.smallChannels) elements, but got bias of size \(shapeString(bias.shape)) instead")
            }
        }
        let problem = ConvProblem(geometry: geometry, spatialDims: sd)
        return transposed
            ? convBigFromSmall(input, weight, bias: bias, problem, name: "ConvolutionBackward0", outputPadding: op0)
            : convSmallFromBig(input, weight, bias: bias, problem, name: "ConvolutionBackward0", outputPadding: op0)
    }
}

/// PyTorch's message when `input`'s channels do not fit `weight`, or nil when they do.
func convChannelMismatchMessage(input: [Int], weight: [Int], groups: Int, transposed: Bool) -> String? {
    let cin = input[1]
    if transposed {
        return weight[0] == cin ? nil
            : "Given transposed=1, weight of size \(shapeString(weight)), expected input\(shapeString(input)) to have \(weight[0]) channels, but got \(cin) channels instead"
    }
    return cin == weight[1] * groups ? nil
        : "Given groups=\(groups), weight of size \(shapeString(weight)), expected input\(shapeString(input)) to have \(weight[1] * groups) channels, but got \(cin) channels instead"
}

/// PyTorch's `(a x b x c)` size notation in convolution messages.
private func pyTupleX(_ v: [Int]) -> String { "(" + v.map(String.init).joined(separator: " x ") + ")" }
