/// The pointwise losses (MSE, SmoothL1, Huber, BCE, BCE-with-logits) as one autograd node each, with PyTorch's
/// names. On the CPU a fused kernel (`CPUPointwiseLoss`) computes the losses and their reduction in one pass and
/// the gradients of input and target in another; when the backward pass is itself recorded (create_graph) the
/// gradients are built from differentiable tensor ops instead. On CUDA the loss is composed from device ops.

/// The losses that have a fused pointwise kernel.
enum PointwiseLossKind: Equatable {
    case mse
    case smoothL1(beta: Double)
    case huber(delta: Double)
    case binaryCrossEntropy
    case binaryCrossEntropyWithLogits

    /// PyTorch's backward node name.
    var nodeName: String {
        switch self {
        case .mse: return "MseLossBackward0"
        case .smoothL1: return "SmoothL1LossBackward0"
        case .huber: return "HuberLossBackward0"
        case .binaryCrossEntropy: return "BinaryCrossEntropyBackward0"
        case .binaryCrossEntropyWithLogits: return "BinaryCrossEntropyWithLogitsBackward0"
        }
    }

    /// PyTorch's `_saved_` attributes of the node (input `self`, `target`, the weights as passed).
    func savedAttributes(_ x: Tensor, _ t: Tensor, weight: Tensor?, posWeight: Tensor?,
                         _ reduction: nn.Reduction) -> () -> [SavedAttribute] {
        let kind = self
        return {
            var r: [SavedAttribute] = [.reduction(reduction), .tensor("self", x), .tensor("target", t)]
            switch kind {
            case .mse: break
            case .smoothL1(let beta): r.append(.float("beta", beta))
            case .huber(let delta): r.append(.float("delta", delta))
            case .binaryCrossEntropy: r.append(.tensor("weight", weight))
            case .binaryCrossEntropyWithLogits: r += [.tensor("pos_weight", posWeight), .tensor("weight", weight)]
            }
            return r
        }
    }

    /// PyTorch's kernel name, for dtype messages.
    var opName: String {
        switch self {
        case .mse: return "mse_cpu"
        case .smoothL1: return "smooth_l1_cpu"
        case .huber: return "huber_cpu"
        case .binaryCrossEntropy: return "binary_cross_entropy"
        case .binaryCrossEntropyWithLogits: return "binary_cross_entropy_with_logits"
        }
    }
}

/// PyTorch's clamp of the BCE log terms.
let bceLogFloor = -100.0
/// PyTorch's floor of x(1 − x) in the BCE gradient.
let bceGradEpsilon = 1e-12

/// The message PyTorch stops with for BCE inputs or targets outside [0, 1].
func bceRangeMessage(target: Bool) -> String {
    "all elements of \(target ? "target" : "input") should be between 0 and 1"
}

/// PyTorch's message for a BCE target whose dtype differs from the input's.
func bceDTypeMessage(input: DType, target: DType) -> String {
    "Found dtype \(scalarTypeName(target)) but expected \(scalarTypeName(input))"
}

/// (d loss/d input, d loss/d target) from differentiable tensor ops, before the g · norm scaling.
private func pointwiseLossDerivatives(_ kind: PointwiseLossKind, _ x: Tensor, _ t: Tensor,
                                      _ w: Tensor?, _ pw: Tensor?, needTarget: Bool) -> (Tensor, Tensor?) {
    func weighted(_ v: Tensor) -> Tensor { w.map { v * $0 } ?? v }
    switch kind {
    case .mse:
        let dx = (x - t) * 2
        return (dx, needTarget ? -dx : nil)
    case .smoothL1(let beta):
        let dx = ((x - t) / beta).clamp(min: -1, max: 1)
        return (dx, needTarget ? -dx : nil)
    case .huber(let delta):
        let dx = (x - t).clamp(min: -delta, max: delta)
        return (dx, needTarget ? -dx : nil)
    case .binaryCrossEntropy:
        let dx = weighted((x - t) / ((1 - x) * x).clamp(min: bceGradEpsilon))
        return (dx, needTarget ? weighted((-x).log1p() - x.log()) : nil)
    case .binaryCrossEntropyWithLogits:
        let s = x.sigmoid()
        if let pw {
            let p = pw * t
            let dx = weighted((p + 1 - t) * s - p)
            return (dx, needTarget ? weighted(F.logsigmoid(-x) - F.logsigmoid(x) * pw) : nil)
        }
        return (weighted(s - t), needTarget ? weighted(-x) : nil)
    }
}

// MARK: - The op

/// `weight` converted to `dtype` and laid out densely in `shape` (it must broadcast to it).
private func denseOperand(_ w: Tensor, _ shape: [Int], _ dtype: DType, op: String) -> Tensor {
    torch.noGrad {
        let b = broadcastShapes(w.shape, shape, op: op)
        precondition(b == shape, "\(op): the weight of shape \(shapeString(w.shape)) cannot be broadcast to the input shape \(shapeString(shape))")
        let v = w.dtype == dtype ? w : w.to(dtype)
        return v.shape == shape ? lossContiguous(v) : v.expand(shape).contiguousCopy()
    }
}

/// A pointwise loss of `input` against `target` (broadcast together) with optional weights,
/// reduced by `reduction`, recorded as one node with PyTorch's name.
func pointwiseLoss(_ kind: PointwiseLossKind, _ input: Tensor, _ target: Tensor,
                   weight: Tensor? = nil, posWeight: Tensor? = nil, reduction: nn.Reduction) -> Tensor {
    checkBasicReduction(reduction)
    let dtype: DType
    if kind == .binaryCrossEntropy {
        precondition(input.dtype == target.dtype, bceDTypeMessage(input: input.dtype, target: target.dtype))
        dtype = input.dtype
    } else {
        dtype = resultType([input, target])
    }
    precondition(dtype.isFloatingPoint, lossDTypeMessage(op: kind.opName, dtype))
    switch commonDevice(input, target) {
    case .cpu: break
    case .cuda:
        return devicePointwiseLoss(kind, input.to(dtype), target.to(dtype), weight: weight, posWeight: posWeight, reduction: reduction)
    }
    let compute = dtype.computeType
    let shape = broadcastShapes(input.shape, target.shape, op: kind.opName)
    var x = input, t = target
    if x.shape != shape { x = x.expand(shape) }
    if t.shape != shape { t = t.expand(shape) }
    if x.dtype != compute { x = x.to(compute) }
    if t.dtype != compute { t = t.to(compute) }
    let xc = lossContiguous(x), tc = lossContiguous(t)
    let wc = weight.map { denseOperand($0, shape, compute, op: kind.opName) }
    let pwc = posWeight.map { denseOperand($0, shape, compute, op: kind.opName) }
    let n = shapeNumel(shape)
    let out = Tensor(uninitializedShape: reduction == .none ? shape : [], dtype: compute)

    CPUPointwiseLoss.forward(kind, xc, tc, weight: wc, posWeight: pwc, reduction: reduction, into: out)

    if anyNeedsGrad(x, t) {
        let needX = x._requiresGrad, needT = t._requiresGrad
        let sx = SavedTensor(xc), st = SavedTensor(tc)
        let norm = reduction == .mean ? 1 / Double(n) : 1
        record(kind.nodeName, out, inputs: [x, t],
               saved: kind.savedAttributes(x, t, weight: weight, posWeight: posWeight, reduction)) { node, g in
            let xs = sx.unpack(node), ts = st.unpack(node)
            if GradMode.isEnabled {
                let (dx, dt) = pointwiseLossDerivatives(kind, xs, ts, wc, pwc, needTarget: needT)
                let scale = norm == 1 ? g : g * norm
                return [needX ? dx * scale : nil, dt.map { $0 * scale }]
            }
            let gc = lossContiguous(g.dtype == compute ? g : g.to(compute))
            let dx: Tensor? = needX ? Tensor(uninitializedShape: shape, dtype: compute) : nil
            let dt: Tensor? = needT ? Tensor(uninitializedShape: shape, dtype: compute) : nil
            CPUPointwiseLoss.backward(kind, xs, ts, weight: wc, posWeight: pwc, gc, reduction: reduction, norm: norm, dx: dx, dt: dt)
            return [dx, dt]
        }
    }
    return compute == dtype ? out : out.to(dtype)
}

/// A pointwise loss on a GPU, composed from the device's ops (autograd differentiates the composition): the same
/// formulas as the fused CPU kernels, including BCE's log clamp at -100 and the stable form of BCE with logits.
private func devicePointwiseLoss(_ kind: PointwiseLossKind, _ x: Tensor, _ t: Tensor, weight: Tensor?, posWeight: Tensor?,
                                 reduction: nn.Reduction) -> Tensor {
    var loss: Tensor
    switch kind {
    case .mse:
        let d = x - t
        loss = d * d
    case .smoothL1(let beta):
        let z = (x - t).abs()
        loss = torch.where(z .< beta, z * z * (0.5 / beta), z - 0.5 * beta)
    case .huber(let delta):
        let z = (x - t).abs()
        loss = torch.where(z .< delta, z * z * 0.5, (z - 0.5 * delta) * delta)
    case .binaryCrossEntropy:
        loss = -(t * torch.clamp(x.log(), min: -100) + (1 - t) * torch.clamp((1 - x).log(), min: -100))
    case .binaryCrossEntropyWithLogits:
        // (1 - t)·x + (1 + (pw - 1)·t)·(log(1 + e^(-|x|)) + max(-x, 0))
        let softplus = ((-x.abs()).exp() + 1).log() + (-x).relu()
        let scale = posWeight.map { ($0 - 1) * t + 1 } ?? torch.onesLike(t)
        loss = (1 - t) * x + scale * softplus
    }
    if let weight { loss = loss * weight }
    return applyLossReduction(loss, reduction)
}
