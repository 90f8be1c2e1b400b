/// Fused kernels for the pointwise losses (MSE, SmoothL1, Huber, BCE, BCE-with-logits): one pass
/// computes the elementwise losses and their reduction, one pass computes the gradients of input
/// and target. When the backward pass is itself recorded (create_graph) the gradients are built
/// from differentiable tensor ops instead.

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
private let bceLogFloor = -100.0
/// PyTorch's floor of x(1 − x) in the BCE gradient.
private let bceGradEpsilon = 1e-12

/// The message PyTorch stops with for BCE inputs or targets outside [0, 1].
func bceRangeMessage(target: Bool) -> String {
    "all elements of \(target ? "target" : "input") should be between 0 and 1"
}

/// PyTorch's message for a BCE target whose dtype differs from the input's.
func bceDTypeMessage(input: DType, target: DType) -> String {
    "Found dtype \(scalarTypeName(target)) but expected \(scalarTypeName(input))"
}

// MARK: - Loops

/// Calls `f(i)` for i in 0..<n: writes the values into `out` when given, else returns their sum
/// (accumulated in Double over fixed chunks, so the result does not depend on the thread count).
@inline(__always)
private func lossMap<T: FloatElement>(_ n: Int, _ out: UnsafeMutablePointer<T>?, _ f: (Int) -> T) -> Double {
    if let out {
        parallelFor(n, grain: elementwiseGrain) { lo, hi in for i in lo..<hi { out[i] = f(i) } }
        return 0
    }
    @inline(__always) func chunkSum(_ lo: Int, _ hi: Int) -> Double {
        var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
        var i = lo
        while i + 4 <= hi {
            s0 += Double(f(i)); s1 += Double(f(i + 1)); s2 += Double(f(i + 2)); s3 += Double(f(i + 3))
            i += 4
        }
        while i < hi { s0 += Double(f(i)); i += 1 }
        return (s0 + s1) + (s2 + s3)
    }
    let grain = elementwiseGrain
    if n <= grain { return chunkSum(0, n) }
    let chunks = (n + grain - 1) / grain
    let partial = UnsafeMutablePointer<Double>.allocate(capacity: chunks)
    defer { partial.deallocate() }
    parallelFor(chunks, grain: 1) { lo, hi in
        for c in lo..<hi { partial[c] = chunkSum(c * grain, Swift.min(n, (c + 1) * grain)) }
    }
    var s = 0.0
    for c in 0..<chunks { s += partial[c] }
    return s
}

/// out[i] = f(i, g_i) where g is one value (`gScalar`) or n values.
@inline(__always)
private func lossGradMap<T: FloatElement>(_ n: Int, _ g: UnsafePointer<T>, _ gScalar: Bool,
                                          _ out: UnsafeMutablePointer<T>, _ f: (Int, T) -> T) {
    if gScalar {
        let gv = g[0]
        parallelFor(n, grain: elementwiseGrain) { lo, hi in for i in lo..<hi { out[i] = f(i, gv) } }
    } else {
        parallelFor(n, grain: elementwiseGrain) { lo, hi in for i in lo..<hi { out[i] = f(i, g[i]) } }
    }
}

@inline(__always) private func logSigmoid<T: FloatElement>(_ x: T) -> T {
    Swift.min(x, 0) - T.log1p(T.exp(-Swift.abs(x)))
}

/// Contiguous operands of one pointwise loss, all of the same shape and dtype.
private struct LossOperands<T> {
    let n: Int
    let x: UnsafePointer<T>
    let t: UnsafePointer<T>
    let w: UnsafePointer<T>?
    let pw: UnsafePointer<T>?
}

// MARK: - Forward

/// Elementwise losses into `out`, or their sum when `out` is nil.
private func pointwiseLossForward<T: FloatElement>(_ kind: PointwiseLossKind, _ o: LossOperands<T>,
                                                   _ out: UnsafeMutablePointer<T>?) -> Double {
    let x = o.x, t = o.t, n = o.n
    switch kind {
    case .mse:
        return lossMap(n, out) { i in let d = x[i] - t[i]; return d * d }
    case .smoothL1(let b):
        let beta = T(b), half = T(0.5)
        return lossMap(n, out) { i in
            let z = Swift.abs(x[i] - t[i])
            return z < beta ? half * z * z / beta : z - half * beta
        }
    case .huber(let dl):
        let delta = T(dl), half = T(0.5)
        return lossMap(n, out) { i in
            let z = Swift.abs(x[i] - t[i])
            return z < delta ? half * z * z : delta * (z - half * delta)
        }
    case .binaryCrossEntropy:
        for i in 0..<n {
            precondition(x[i] >= 0 && x[i] <= 1, bceRangeMessage(target: false))
            precondition(t[i] >= 0 && t[i] <= 1, bceRangeMessage(target: true))
        }
        let floor = T(bceLogFloor)
        if let w = o.w {
            return lossMap(n, out) { i in
                let v = x[i], y = t[i]
                return ((y - 1) * Swift.max(T.log1p(-v), floor) - y * Swift.max(T.log(v), floor)) * w[i]
            }
        }
        return lossMap(n, out) { i in
            let v = x[i], y = t[i]
            return (y - 1) * Swift.max(T.log1p(-v), floor) - y * Swift.max(T.log(v), floor)
        }
    case .binaryCrossEntropyWithLogits:
        switch (o.w, o.pw) {
        case (nil, nil):
            return lossMap(n, out) { i in (1 - t[i]) * x[i] - logSigmoid(x[i]) }
        case (let w?, nil):
            return lossMap(n, out) { i in ((1 - t[i]) * x[i] - logSigmoid(x[i])) * w[i] }
        case (nil, let pw?):
            return lossMap(n, out) { i in
                (1 - t[i]) * x[i] - logSigmoid(x[i]) * ((pw[i] - 1) * t[i] + 1)
            }
        case (let w?, let pw?):
            return lossMap(n, out) { i in
                ((1 - t[i]) * x[i] - logSigmoid(x[i]) * ((pw[i] - 1) * t[i] + 1)) * w[i]
            }
        }
    }
}

// MARK: - Backward

/// d loss / d input into `dx`, scaled by g · norm.
private func pointwiseLossInputGrad<T: FloatElement>(_ kind: PointwiseLossKind, _ o: LossOperands<T>,
                                                     _ g: UnsafePointer<T>, _ gScalar: Bool, _ norm: T,
                                                     _ dx: UnsafeMutablePointer<T>) {
    let x = o.x, t = o.t, n = o.n
    let w = o.w, pw = o.pw
    switch kind {
    case .mse:
        let two = 2 * norm
        lossGradMap(n, g, gScalar, dx) { i, gi in two * (x[i] - t[i]) * gi }
    case .smoothL1(let b):
        let beta = T(b)
        lossGradMap(n, g, gScalar, dx) { i, gi in
            let d = x[i] - t[i]
            return d < -beta ? -norm * gi : (d > beta ? norm * gi : norm * d * gi / beta)
        }
    case .huber(let dl):
        let delta = T(dl)
        lossGradMap(n, g, gScalar, dx) { i, gi in
            let d = x[i] - t[i]
            return d < -delta ? -norm * gi * delta : (d > delta ? norm * gi * delta : norm * d * gi)
        }
    case .binaryCrossEntropy:
        let eps = T(bceGradEpsilon)
        lossGradMap(n, g, gScalar, dx) { i, gi in
            let v = x[i]
            let r = norm * gi * (v - t[i]) / Swift.max((1 - v) * v, eps)
            return w.map { r * $0[i] } ?? r
        }
    case .binaryCrossEntropyWithLogits:
        lossGradMap(n, g, gScalar, dx) { i, gi in
            let s = 1 / (1 + T.exp(-x[i]))
            var r: T
            if let pw {
                let p = pw[i] * t[i]
                r = (p + 1 - t[i]) * s - p
            } else {
                r = s - t[i]
            }
            r = r * gi * norm
            return w.map { r * $0[i] } ?? r
        }
    }
}

/// d loss / d target into `dt`, scaled by g · norm (`dx` already holds the input gradient when
/// the kind's target gradient is its negation).
private func pointwiseLossTargetGrad<T: FloatElement>(_ kind: PointwiseLossKind, _ o: LossOperands<T>,
                                                      _ g: UnsafePointer<T>, _ gScalar: Bool, _ norm: T,
                                                      _ dx: UnsafePointer<T>?, _ dt: UnsafeMutablePointer<T>) {
    let x = o.x, n = o.n
    let w = o.w, pw = o.pw
    switch kind {
    case .mse, .smoothL1, .huber:
        if let dx {
            parallelFor(n, grain: elementwiseGrain) { lo, hi in for i in lo..<hi { dt[i] = -dx[i] } }
        } else {
            pointwiseLossInputGrad(kind, o, g, gScalar, norm, dt)
            parallelFor(n, grain: elementwiseGrain) { lo, hi in for i in lo..<hi { dt[i] = -dt[i] } }
        }
    case .binaryCrossEntropy:
        // −logit(x) · g · w
        lossGradMap(n, g, gScalar, dt) { i, gi in
            let v = x[i]
            let r = (T.log1p(-v) - T.log(v)) * gi * norm
            return w.map { r * $0[i] } ?? r
        }
    case .binaryCrossEntropyWithLogits:
        lossGradMap(n, g, gScalar, dt) { i, gi in
            var r: T
            if let pw {
                r = logSigmoid(-x[i]) - logSigmoid(x[i]) * pw[i]
            } else {
                r = -x[i]
            }
            r = r * gi * norm
            return w.map { r * $0[i] } ?? r
        }
    }
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
    if _slowPath(input.isCuda || target.isCuda) {
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

    func forward<T: FloatElement>(_: T.Type) {
        let ops = LossOperands(n: n, x: UnsafePointer(xc.pointer(T.self)), t: UnsafePointer(tc.pointer(T.self)),
                               w: wc.map { UnsafePointer($0.pointer(T.self)) }, pw: pwc.map { UnsafePointer($0.pointer(T.self)) })
        let o = out.pointer(T.self)
        if reduction == .none {
            _ = pointwiseLossForward(kind, ops, o)
        } else {
            let s = pointwiseLossForward(kind, ops, nil)
            o[0] = T(reduction == .mean ? s / Double(n) : s)
        }
    }
    if compute == .float32 { forward(Float.self) } else { forward(Double.self) }

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
            func backward<T: FloatElement>(_: T.Type) {
                let ops = LossOperands(n: n, x: UnsafePointer(xs.pointer(T.self)), t: UnsafePointer(ts.pointer(T.self)),
                                       w: wc.map { UnsafePointer($0.pointer(T.self)) }, pw: pwc.map { UnsafePointer($0.pointer(T.self)) })
                let gp = UnsafePointer(gc.pointer(T.self))
                let gScalar = reduction != .none
                if let dx { pointwiseLossInputGrad(kind, ops, gp, gScalar, T(norm), dx.pointer(T.self)) }
                if let dt {
                    pointwiseLossTargetGrad(kind, ops, gp, gScalar, T(norm), dx.map { UnsafePointer($0.pointer(T.self)) }, dt.pointer(T.self))
                }
            }
            if compute == .float32 { backward(Float.self) } else { backward(Double.self) }
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
