/// Normalisation layers: `nn.BatchNorm1d`, `nn.BatchNorm2d`, `nn.BatchNorm3d`, `nn.LayerNorm`,
/// `nn.GroupNorm`, their `F` twins, and the fused ops behind them (one forward kernel and one
/// backward kernel each, with PyTorch's node names `NativeBatchNormBackward0` and
/// `NativeLayerNormBackward0`).

// MARK: - Fused ops with autograd

/// PyTorch's `_check_dims_match_num_input_features` message.
func batchNormFeatureMismatchMessage(_ name: String, expected: Int, actual: Int) -> String {
    "\(name) should contain \(expected) elements not \(actual)"
}

/// PyTorch's `_verify_batch_size` message, or nil when the batch is large enough to train on.
func batchNormBatchSizeMessage(_ shape: [Int]) -> String? {
    guard shape.count >= 2 else { return nil }
    var prod = shape[0]
    for d in shape.dropFirst(2) { prod *= d }
    return prod == 1 ? "Expected more than 1 value per channel when training, got input size torch.Size(\(shapeString(shape)))" : nil
}

/// Broadcasts a per-channel vector `[C]` against an `(N, C, *)` tensor of rank `rank`.
func channelView(_ t: Tensor, rank: Int) -> Tensor {
    var shape = [Int](repeating: 1, count: rank)
    shape[1] = t.numel
    return t.reshape(shape)
}

/// Batch norm over dim 1 of an `(N, C, *)` input (PyTorch's `native_batch_norm`): batch
/// statistics when `training` (updating the running statistics in place when given), the
/// running statistics otherwise. Records `NativeBatchNormBackward0`.
func nativeBatchNorm(_ input: Tensor, weight: Tensor?, bias: Tensor?, runningMean: Tensor?, runningVar: Tensor?,
                     training: Bool, momentum: Double, eps: Double) -> Tensor {
    precondition(input.dim >= 2, "batch_norm: expected an input of shape (N, C, *) with at least 2 dims, got a \(input.dim)-D input of shape \(shapeString(input.shape))")
    precondition(input.dtype.isFloatingPoint, "batch_norm: expected a floating point input, got \(input.dtype)")
    let c = input.shape[1]
    func check(_ name: String, _ t: Tensor?) {
        if let t, t.numel != c { preconditionFailure(batchNormFeatureMismatchMessage(name, expected: c, actual: t.numel)) }
    }
    check("running_mean", runningMean); check("running_var", runningVar); check("weight", weight); check("bias", bias)
    if !training {
        precondition(runningMean != nil, "running_mean must be defined in evaluation mode")
        precondition(runningVar != nil, "running_var must be defined in evaluation mode")
    }
    if input.numel == 0 {
        var out = input.clone()
        if let weight { out = out * channelView(weight, rank: input.dim) }
        if let bias { out = out + channelView(bias, rank: input.dim) }
        return out
    }
    checkSameDevice(input, [weight, bias, runningMean, runningVar])
    let result: Tensor, mean: Tensor, invstd: Tensor
    switch input.device {
    case .cpu:
        (result, mean, invstd) = CPUNormalization.batchNorm(input, weight: weight, bias: bias, runningMean: runningMean,
                                                            runningVar: runningVar, training: training, momentum: momentum, eps: eps)
    case .cuda:
        // One launch (`CUDAFused.batchNorm`) when the running statistics can be updated in place in the input's
        // dtype; otherwise (say float32 statistics for a float16 input) the composition of device ops.
        let inPlace = [runningMean, runningVar].allSatisfy { s in s.map { $0.dtype == input.dtype && $0.isContiguous } ?? true }
        guard inPlace else {
            return deviceBatchNorm(input, weight: weight, bias: bias, runningMean: runningMean, runningVar: runningVar,
                                   training: training, momentum: momentum, eps: eps)
        }
        (result, mean, invstd) = CUDAFused.batchNorm(deviceOperand(input, input.dtype), weight: weight.map { deviceOperand($0, input.dtype) },
                                                     bias: bias.map { deviceOperand($0, input.dtype) }, runningMean: runningMean,
                                                     runningVar: runningVar, training: training, momentum: momentum, eps: eps)
        if training { runningMean?.storage.bumpVersion(); runningVar?.storage.bumpVersion() }
    }
    recordNormalization("NativeBatchNormBackward0", result, input: input, weight: weight, bias: bias,
                        saved: { // PyTorch's saved batch statistics are empty outside training.
        let stat = { (t: Tensor) in training ? t : Tensor(uninitializedShape: [0], dtype: t.dtype) }
        return [.float("eps", eps), .tensor("input", input), .tensor("result1", stat(mean)), .tensor("result2", stat(invstd)),
                .tensor("running_mean", runningMean), .tensor("running_var", runningVar), .bool("training", training),
                .tensor("weight", weight)]
    }) { g, xs, ws, needs in
        batchNormBackward(g, xs, ws, mean: mean, invstd: invstd, training: training, eps: eps, needs: needs)
    }
    return result
}

/// Batch norm on a GPU, composed from the device's reductions and pointwise ops (autograd differentiates the
/// composition); the running statistics are updated in place with the unbiased batch variance, as PyTorch does.
/// The fused kernel (`CUDAFused.batchNorm`) takes every other case.
private func deviceBatchNorm(_ input: Tensor, weight: Tensor?, bias: Tensor?, runningMean: Tensor?, runningVar: Tensor?,
                             training: Bool, momentum: Double, eps: Double) -> Tensor {
    let rank = input.dim
    let dims = [0] + Array(2..<rank)
    let xhat: Tensor
    if training {
        let mean = input.mean(dim: dims)
        let centered = input - channelView(mean, rank: rank)
        let variance = (centered * centered).mean(dim: dims)
        xhat = centered * channelView((variance + eps).rsqrt(), rank: rank)
        let count = Double(input.numel / Swift.max(input.shape[1], 1))
        torch.noGrad {
            if let rm = runningMean { rm.mul_(1 - momentum).add_(mean.detach().to(rm.dtype) * momentum) }
            if let rv = runningVar {
                rv.mul_(1 - momentum).add_(variance.detach().to(rv.dtype) * (momentum * count / Swift.max(count - 1, 1)))
            }
        }
    } else {
        xhat = (input - channelView(runningMean!, rank: rank)) * channelView((runningVar! + eps).rsqrt(), rank: rank)
    }
    var out = xhat
    if let weight { out = out * channelView(weight, rank: rank) }
    if let bias { out = out + channelView(bias, rank: rank) }
    return out
}

/// `t`'s values as a contiguous device tensor of dtype `dt`, outside autograd (t itself when it already is one).
private func deviceOperand(_ t: Tensor, _ dt: DType) -> Tensor {
    if t.dtype == dt && t.isContiguous { return t }
    return torch.noGrad { t.to(dt).contiguous() }
}

/// Records an affine normalization (batch/layer norm) of `input` with optional `weight` and `bias`:
/// `backward(g, input, weight, needs)` returns the three gradients, `needs` saying which are wanted.
/// `saved` lists the node's PyTorch `_saved_` attributes (see `record`); it is built only when recording.
func recordNormalization(_ name: String, _ result: Tensor, input: Tensor, weight: Tensor?, bias: Tensor?,
                                 saved: @autoclosure () -> () -> [SavedAttribute],
                                 backward: @escaping (Tensor, Tensor, Tensor?, (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?)) {
    var inputs = [input]
    if let weight { inputs.append(weight) }
    if let bias { inputs.append(bias) }
    guard anyNeedsGrad(inputs) else { return }
    let sx = SavedTensor(input), sw = weight.map { SavedTensor($0) }
    let needs = (input._requiresGrad, weight?._requiresGrad ?? false, bias?._requiresGrad ?? false)
    let hasW = weight != nil, hasB = bias != nil
    record(name, result, inputs: inputs, saved: saved()) { node, g in
        let grads = backward(g, sx.unpack(node), sw?.unpack(node), needs)
        var r: [Tensor?] = [grads.0]
        if hasW { r.append(grads.1) }
        if hasB { r.append(grads.2) }
        return r
    }
}

/// Gradients of batch norm: fused kernel, or differentiable ops when the backward is recorded.
private func batchNormBackward(_ g: Tensor, _ x: Tensor, _ weight: Tensor?, mean: Tensor, invstd: Tensor,
                               training: Bool, eps: Double, needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
    let rank = x.dim
    let dims = [0] + Array(2..<rank)
    if GradMode.isEnabled {
        let w = weight.map { channelView($0, rank: rank) }
        if training {
            let (dx, xhat) = normalizationBackwardComposite(g, x, w, dims: dims, eps: eps)
            return (needs.0 ? dx : nil,
                    needs.1 ? (g * xhat).sum(dim: dims) : nil,
                    needs.2 ? g.sum(dim: dims) : nil)
        }
        let istd = channelView(invstd.to(x.dtype), rank: rank)
        let xhat = (x - channelView(mean.to(x.dtype), rank: rank)) * istd
        var dx = g * istd
        if let w { dx = dx * w }
        return (needs.0 ? dx : nil, needs.1 ? (g * xhat).sum(dim: dims) : nil, needs.2 ? g.sum(dim: dims) : nil)
    }
    checkSameDevice(g, x)
    switch x.device {
    case .cpu:
        return CPUNormalization.batchNormBackward(g, x, weight: weight, mean: mean, invstd: invstd, training: training, needs: needs)
    case .cuda:
        let r = CUDAFused.batchNormBackward(g, x, weight: weight, mean: mean, invstd: invstd, training: training, needs: needs)
        return (r.0, r.1.map { $0.to(weight!.dtype) }, r.2.map { $0.to(weight?.dtype ?? x.dtype) })
    }
}

/// The input gradient of normalising over `dims` (mean and biased variance recomputed from x
/// with differentiable ops, so the result can be differentiated again), and x̂.
private func normalizationBackwardComposite(_ g: Tensor, _ x: Tensor, _ w: Tensor?, dims: [Int], eps: Double) -> (Tensor, Tensor) {
    let mu = x.mean(dim: dims, keepdim: true)
    let xc = x - mu
    let rstd = ((xc * xc).mean(dim: dims, keepdim: true) + eps).rsqrt()
    let xhat = xc * rstd
    let gx = w.map { g * $0 } ?? g
    let dx = rstd * (gx - gx.mean(dim: dims, keepdim: true) - xhat * (gx * xhat).mean(dim: dims, keepdim: true))
    return (dx, xhat)
}

/// PyTorch's layer_norm shape-check message, or nil when `inputShape` ends with `normalizedShape`.
func layerNormShapeMessage(_ inputShape: [Int], _ normalizedShape: [Int]) -> String? {
    let k = normalizedShape.count
    if k <= inputShape.count && Array(inputShape.suffix(k)) == normalizedShape { return nil }
    let expected = "[*, " + normalizedShape.map(String.init).joined(separator: ", ") + "]"
    return "Given normalized_shape=\(shapeString(normalizedShape)), expected input with shape \(expected), but got input of size\(shapeString(inputShape))"
}

/// Layer norm over the trailing `normalizedShape` dims (PyTorch's `native_layer_norm`).
/// Records `NativeLayerNormBackward0`.
func nativeLayerNorm(_ input: Tensor, _ normalizedShape: [Int], weight: Tensor?, bias: Tensor?, eps: Double) -> Tensor {
    precondition(!normalizedShape.isEmpty, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []")
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let t {
            precondition(t.shape == normalizedShape, "Expected \(name) to be of same shape as normalized_shape, but got \(name) of shape \(shapeString(t.shape)) and normalized_shape = \(shapeString(normalizedShape))")
        }
    }
    if let msg = layerNormShapeMessage(input.shape, normalizedShape) { preconditionFailure(msg) }
    precondition(input.dtype.isFloatingPoint, "layer_norm: expected a floating point input, got \(input.dtype)")
    let n = shapeNumel(normalizedShape), m = n == 0 ? 0 : input.numel / n
    checkSameDevice(input, [weight, bias])
    let result: Tensor, mean: Tensor, rstd: Tensor
    switch input.device {
    case .cpu:
        (result, mean, rstd) = CPUNormalization.layerNorm(input, rows: m, length: n, weight: weight, bias: bias, eps: eps)
    case .cuda:
        // One launch forward (`CUDAFused.layerNorm`), two backward (dx by rows, dγ/dβ by columns).
        (result, mean, rstd) = CUDAFused.layerNorm(deviceOperand(input, input.dtype), rows: m, length: n,
                                                   weight: weight.map { deviceOperand($0, input.dtype) },
                                                   bias: bias.map { deviceOperand($0, input.dtype) }, eps: eps)
    }
    let hasB = bias != nil
    recordNormalization("NativeLayerNormBackward0", result, input: input, weight: weight, bias: bias,
                        saved: { // PyTorch's statistics have the input's shape with the normalized dims as 1s.
        let statShape = Array(input.shape.dropLast(normalizedShape.count)) + [Int](repeating: 1, count: normalizedShape.count)
        return [.tensor("bias", bias), .tensor("input", input), .ints("normalized_shape", normalizedShape),
                .tensor("result1", mean.view(statShape)), .tensor("result2", rstd.view(statShape)), .tensor("weight", weight)]
    }) { g, xs, ws, needs in
        layerNormBackward(g, xs, ws, hasBias: hasB, normalizedRank: normalizedShape.count, mean: mean,
                          rstd: rstd, eps: eps, needs: needs)
    }
    return result
}

/// Gradients of layer norm: fused kernel, or differentiable ops when the backward is recorded.
private func layerNormBackward(_ g: Tensor, _ x: Tensor, _ weight: Tensor?, hasBias: Bool, normalizedRank: Int,
                               mean: Tensor, rstd: Tensor, eps: Double,
                               needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
    let rank = x.dim
    let dims = Array((rank - normalizedRank)..<rank), lead = Array(0..<(rank - normalizedRank))
    if GradMode.isEnabled {
        let (dx, xhat) = normalizationBackwardComposite(g, x, weight, dims: dims, eps: eps)
        func reduceLead(_ t: Tensor) -> Tensor { lead.isEmpty ? t : t.sum(dim: lead) }
        return (needs.0 ? dx : nil, needs.1 ? reduceLead(g * xhat) : nil, needs.2 ? reduceLead(g) : nil)
    }
    let paramShape = Array(x.shape.suffix(normalizedRank))
    let n = shapeNumel(paramShape), m = n == 0 ? 0 : x.numel / n
    checkSameDevice(g, x)
    switch x.device {
    case .cpu:
        return CPUNormalization.layerNormBackward(g, x, rows: m, length: n, weight: weight, mean: mean, rstd: rstd,
                                                  paramShape: paramShape, needs: needs)
    case .cuda:
        let r = CUDAFused.layerNormBackward(g, deviceOperand(x, x.dtype), rows: m, length: n,
                                            weight: weight.map { deviceOperand($0, x.dtype) }, mean: mean, rstd: rstd,
                                            paramShape: paramShape, needs: needs)
        let pType = weight?.dtype ?? x.dtype
        return (r.0, r.1.map { $0.to(pType) }, r.2.map { $0.to(pType) })
    }
}

// MARK: - Functional

extension nn.functional {
    /// Batch normalisation over dim 1 of an `(N, C, *)` input (PyTorch's `F.batch_norm`).
    ///
    /// With `training`, normalises with the batch mean and biased variance and, when running
    /// statistics are given, updates them in place: `running = (1 − momentum) · running +
    /// momentum · batch`, with the unbiased variance. Otherwise normalises with the running
    /// statistics. Then scales by `weight` and shifts by `bias` (per channel).
    ///
    /// ```swift
    /// let rm = torch.zeros(3), rv = torch.ones(3)
    /// let y = F.batchNorm(x, rm, rv, training: true)   // x: [N, 3]; rm, rv updated
    /// ```
    public static func batchNorm(_ input: Tensor, _ runningMean: Tensor?, _ runningVar: Tensor?,
                                 weight: Tensor? = nil, bias: Tensor? = nil, training: Bool = false,
                                 momentum: Double = 0.1, eps: Double = 1e-5) -> Tensor {
        if training, let msg = batchNormBatchSizeMessage(input.shape) { preconditionFailure(msg) }
        precondition(!(training && eps <= 0), "batch_norm eps must be positive during training, but got \(pyFloat(eps))")
        precondition(eps >= 0, "batch_norm eps must be non-negative, but got \(pyFloat(eps))")
        return nativeBatchNorm(input, weight: weight, bias: bias, runningMean: runningMean, runningVar: runningVar,
                               training: training, momentum: momentum, eps: eps)
    }

    /// Layer normalisation over the trailing `normalizedShape` dims (PyTorch's `F.layer_norm`):
    /// (x − mean) / √(var + eps) · weight + bias, with the biased variance.
    ///
    /// ```swift
    /// let y = F.layerNorm(x, [x.size(-1)])
    /// ```
    public static func layerNorm(_ input: Tensor, _ normalizedShape: [Int], weight: Tensor? = nil,
                                 bias: Tensor? = nil, eps: Double = 1e-5) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.layer_norm, [input, weight, bias], {
            layerNorm($0[0]!, normalizedShape, weight: $0[1], bias: $0[2], eps: eps)
        }) { return r }
        return nativeLayerNorm(input, normalizedShape, weight: weight, bias: bias, eps: eps)
    }

    /// Group normalisation (PyTorch's `F.group_norm`): the channels of an `(N, C, *)` input are
    /// split into `numGroups` groups, each normalised over its channels and spatial positions,
    /// then scaled and shifted per channel.
    public static func groupNorm(_ input: Tensor, _ numGroups: Int, weight: Tensor? = nil, bias: Tensor? = nil,
                                 eps: Double = 1e-5) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.group_norm, [input, weight, bias], {
            groupNorm($0[0]!, numGroups, weight: $0[1], bias: $0[2], eps: eps)
        }) { return r }
        precondition(input.dim >= 2, "Expected at least 2 dimensions for input tensor but received \(input.dim)")
        let n = input.shape[0], c = input.shape[1]
        precondition(numGroups > 0 && c % numGroups == 0,
                     "Expected number of channels in input to be divisible by num_groups, but got input of shape \(shapeString(input.shape)) and num_groups=\(numGroups)")
        for (name, t) in [("weight", weight), ("bias", bias)] {
            if let t {
                precondition(t.dim == 1 && t.numel == c,
                             "Expected \(name) to be a vector of size equal to the number of channels in input, but got \(name) of shape \(shapeString(t.shape)) and input of shape \(shapeString(input.shape))")
            }
        }
        let grouped = input.reshape(n, numGroups, -1)
        var y = nativeLayerNorm(grouped, [grouped.shape[2]], weight: nil, bias: nil, eps: eps).reshape(input.shape)
        if let weight { y = y * channelView(weight, rank: input.dim) }
        if let bias { y = y + channelView(bias, rank: input.dim) }
        return y
    }
}

// MARK: - Modules

extension nn {
    /// The shared implementation of `BatchNorm1d`, `BatchNorm2d` and `BatchNorm3d` (PyTorch's
    /// `_BatchNorm`): learnable per-channel `weight` (ones) and `bias` (zeros) when `affine`,
    /// and the buffers `running_mean` (zeros), `running_var` (ones) and `num_batches_tracked`
    /// (int64 0-d) when `trackRunningStats`.
    ///
    /// In training mode a forward pass normalises with the batch statistics and updates the
    /// running ones (`momentum: nil` keeps a cumulative average); in eval mode it normalises
    /// with the running statistics.
    public class BatchNormBase: NormBase {
        /// - Parameters:
        ///   - numFeatures: C, the number of channels.
        ///   - eps: added to the variance.
        ///   - momentum: weight of the batch statistics in the running update; nil: cumulative average.
        ///   - affine: learn per-channel `weight` and `bias`.
        ///   - trackRunningStats: keep running statistics (and use them in eval mode).
        ///   - bias: learn a `bias` (with `affine`).
        ///   - dtype: parameter and buffer dtype (default: `torch.defaultDType`).
        public init(_ numFeatures: Int, eps: Double = 1e-5, momentum: Double? = 0.1, affine: Bool = true,
                    trackRunningStats: Bool = true, bias: Bool = true, dtype: DType? = nil) {
            super.init(numFeatures, eps: eps, momentum: momentum, affine: affine, trackRunningStats: trackRunningStats,
                       bias: bias, dtype: dtype, layer: "BatchNorm")
        }

        /// Stops with PyTorch's message when `input` has the wrong number of dims.
        func checkInputDim(_ input: Tensor) {
            if let msg = inputDimMessage(input.dim) { preconditionFailure(msg) }
        }

        /// The message for an input of `rank` dims, nil when accepted. Overridden per layer.
        func inputDimMessage(_ rank: Int) -> String? { nil }

        /// A layer with `other`'s settings that holds `other`'s very parameters and buffers (the same
        /// tensor objects, as PyTorch's `convert_sync_batchnorm` assigns them).
        init(adopting other: BatchNormBase) {
            super.init(adopting: other, layer: "BatchNorm")
        }

        public override func forward(_ input: Tensor) -> Tensor {
            checkInputDim(input)
            let step = beginForward()
            return F.batchNorm(input, step.runningMean, step.runningVar, weight: weight, bias: bias,
                               training: step.useBatchStats, momentum: step.momentum, eps: eps)
        }

        /// What one forward pass normalises with, PyTorch's `_BatchNorm.forward` preamble: counts the
        /// batch (`num_batches_tracked += 1` in training mode with running statistics) and gives the
        /// running-update weight (1/count when `momentum` is nil), whether batch statistics are used
        /// (training mode, or no running statistics) and the running statistics to use or update.
        func beginForward() -> (runningMean: Tensor?, runningVar: Tensor?, useBatchStats: Bool, momentum: Double) {
            var factor = momentum ?? 0
            if training && trackRunningStats, let nbt = numBatchesTracked {
                let count = incrementCounter(nbt)
                if momentum == nil { factor = 1 / Double(count) }
            }
            let bnTraining = training || (runningMean == nil && runningVar == nil)
            let useStats = !training || trackRunningStats
            return (useStats ? runningMean : nil, useStats ? runningVar : nil, bnTraining, factor)
        }

        /// `num_batches_tracked += 1` in place; returns the new count.
        /// The count stays on the tensor's device (no wait per step on a GPU) unless `momentum: nil` needs its value.
        private func incrementCounter(_ t: Tensor) -> Int64 {
            torch.noGrad { _ = t.add_(Tensor.wrappedNumber(1)) }
            return momentum == nil ? Int64(t.item()) : 0
        }

        public override func extraRepr() -> String {
            "\(numFeatures), eps=\(pyFloat(eps)), momentum=\(momentum.map(pyFloat) ?? "None"), affine=\(pyBool(affine)), "
                + "bias=\(pyBool(bias != nil)), track_running_stats=\(pyBool(trackRunningStats))"
        }
    }

    /// Batch normalisation of `(N, C)` or `(N, C, L)` inputs over N (and L), per channel C.
    ///
    /// ```swift
    /// let bn = nn.BatchNorm1d(100)
    /// print(bn)   // BatchNorm1d(100, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    /// let y = bn(torch.randn(64, 100))   // grad_fn=<NativeBatchNormBackward0> when x requires grad
    /// bn.eval()                           // now normalises with running_mean / running_var
    /// ```
    public final class BatchNorm1d: BatchNormBase {
        override func inputDimMessage(_ rank: Int) -> String? {
            rank == 2 || rank == 3 ? nil : "expected 2D or 3D input (got \(rank)D input)"
        }
    }

    /// Batch normalisation of `(N, C, H, W)` inputs over N, H and W, per channel C.
    ///
    /// ```swift
    /// let bn = nn.BatchNorm2d(16)
    /// let y = bn(torch.randn(8, 16, 32, 32))
    /// ```
    public final class BatchNorm2d: BatchNormBase {
        override func inputDimMessage(_ rank: Int) -> String? {
            rank == 4 ? nil : "expected 4D input (got \(rank)D input)"
        }
    }

    /// Batch normalisation of `(N, C, D, H, W)` inputs over N, D, H and W, per channel C.
    public final class BatchNorm3d: BatchNormBase {
        override func inputDimMessage(_ rank: Int) -> String? {
            rank == 5 ? nil : "expected 5D input (got \(rank)D input)"
        }
    }

    /// Layer normalisation over the trailing `normalizedShape` dims, with learnable
    /// element-wise `weight` (ones) and `bias` (zeros) of that shape when `elementwiseAffine`.
    ///
    /// ```swift
    /// let ln = nn.LayerNorm(10)            // or nn.LayerNorm([3, 4])
    /// print(ln)   // LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)
    /// let y = ln(torch.randn(20, 5, 10))
    /// ```
    public final class LayerNorm: Module {
        /// The trailing dims normalised over.
        public let normalizedShape: [Int]
        /// Added to the variance.
        public var eps: Double
        /// Whether there are learnable `weight` (and `bias`).
        public let elementwiseAffine: Bool
        /// `normalizedShape`, ones at first; nil unless `elementwiseAffine`.
        public var weight: Parameter?
        /// `normalizedShape`, zeros at first; nil unless `elementwiseAffine` and `bias`.
        public var bias: Parameter?

        /// - Parameters:
        ///   - normalizedShape: the trailing dims to normalise over.
        ///   - eps: added to the variance.
        ///   - elementwiseAffine: learn an element-wise `weight` and `bias`.
        ///   - bias: learn a `bias` (with `elementwiseAffine`).
        ///   - dtype: parameter dtype (default `torch.defaultDType`).
        public init(_ normalizedShape: [Int], eps: Double = 1e-5, elementwiseAffine: Bool = true, bias: Bool = true,
                    dtype: DType? = nil) {
            self.normalizedShape = normalizedShape
            self.eps = eps
            self.elementwiseAffine = elementwiseAffine
            weight = elementwiseAffine ? Parameter(torch.ones(normalizedShape, dtype: dtype)) : nil
            self.bias = elementwiseAffine && bias ? Parameter(torch.zeros(normalizedShape, dtype: dtype)) : nil
            super.init()
        }

        /// `LayerNorm(10)`: normalises over a last dim of size 10.
        public convenience init(_ normalizedShape: Int, eps: Double = 1e-5, elementwiseAffine: Bool = true,
                                bias: Bool = true, dtype: DType? = nil) {
            self.init([normalizedShape], eps: eps, elementwiseAffine: elementwiseAffine, bias: bias, dtype: dtype)
        }

        /// The keyword form `nn.LayerNorm(normalizedShape: [3, 4])`.
        public convenience init(normalizedShape: [Int], eps: Double = 1e-5, elementwiseAffine: Bool = true,
                                bias: Bool = true, dtype: DType? = nil) {
            self.init(normalizedShape, eps: eps, elementwiseAffine: elementwiseAffine, bias: bias, dtype: dtype)
        }

        /// Weight to ones, bias to zeros.
        public func resetParameters() {
            if let weight { nn.`init`.ones_(weight) }
            if let bias { nn.`init`.zeros_(bias) }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.layerNorm(x, normalizedShape, weight: weight, bias: bias, eps: eps)
        }

        public override func extraRepr() -> String {
            "\(pyTuple(normalizedShape)), eps=\(pyFloat(eps)), elementwise_affine=\(pyBool(elementwiseAffine)), bias=\(pyBool(bias != nil))"
        }
    }

    /// Group normalisation: the C channels of an `(N, C, *)` input are split into `numGroups`
    /// groups, each normalised over its channels and positions; learnable per-channel `weight`
    /// (ones) and `bias` (zeros) when `affine`.
    ///
    /// ```swift
    /// let gn = nn.GroupNorm(2, 4)
    /// let y = gn(torch.randn(8, 4, 5))
    /// ```
    public final class GroupNorm: Module {
        /// Number of groups the channels are split into.
        public let numGroups: Int
        /// C, the number of channels.
        public let numChannels: Int
        /// Added to the variance.
        public var eps: Double
        /// Whether there are learnable per-channel `weight` and `bias`.
        public let affine: Bool
        /// `[numChannels]`, ones at first; nil unless `affine`.
        public var weight: Parameter?
        /// `[numChannels]`, zeros at first; nil unless `affine` and `bias`.
        public var bias: Parameter?

        /// - Parameters:
        ///   - numGroups: number of groups; must divide `numChannels`.
        ///   - numChannels: C, the number of channels.
        ///   - eps: added to the variance.
        ///   - affine: learn per-channel `weight` and `bias`.
        ///   - bias: learn a `bias` (with `affine`).
        ///   - dtype: parameter dtype (default `torch.defaultDType`).
        public init(_ numGroups: Int, _ numChannels: Int, eps: Double = 1e-5, affine: Bool = true, bias: Bool = true,
                    dtype: DType? = nil) {
            precondition(numGroups > 0 && numChannels % numGroups == 0,
                         "num_channels (\(numChannels)) must be divisible by num_groups (\(numGroups))")
            self.numGroups = numGroups
            self.numChannels = numChannels
            self.eps = eps
            self.affine = affine
            weight = affine ? Parameter(torch.ones(numChannels, dtype: dtype)) : nil
            self.bias = affine && bias ? Parameter(torch.zeros(numChannels, dtype: dtype)) : nil
            super.init()
        }

        /// Weight to ones, bias to zeros.
        public func resetParameters() {
            if let weight { nn.`init`.ones_(weight) }
            if let bias { nn.`init`.zeros_(bias) }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.groupNorm(x, numGroups, weight: weight, bias: bias, eps: eps)
        }

        public override func extraRepr() -> String {
            "\(numGroups), \(numChannels), eps=\(pyFloat(eps)), affine=\(pyBool(affine)), bias=\(pyBool(bias != nil))"
        }
    }
}
