/// The fused pointwise losses (MSE, SmoothL1, Huber, BCE, BCE-with-logits) on the CPU: one pass computes the
/// elementwise losses and their reduction, one pass the gradients of input and target. `pointwiseLoss`
/// (NN/Losses/PointwiseLoss.swift) keeps shapes, dtypes and the autograd node, picks the device once and calls
/// these for CPU tensors; on CUDA the loss is composed from device ops.
enum CPUPointwiseLoss {
    /// The losses of contiguous `x` and `t` (with dense weights `w`, `pw` of their shape and dtype, float32 or
    /// float64) into `out`: elementwise for `.none`, else their mean or sum as a 0-d tensor.
    static func forward(_ kind: PointwiseLossKind, _ x: Tensor, _ t: Tensor, weight w: Tensor?, posWeight pw: Tensor?,
                        reduction: nn.Reduction, into out: Tensor) {
        let n = x.numel
        func run<T: FloatElement>(_: T.Type) {
            let ops = LossOperands(n: n, x: UnsafePointer(x.pointer(T.self)), t: UnsafePointer(t.pointer(T.self)),
                                   w: w.map { UnsafePointer($0.pointer(T.self)) }, pw: pw.map { UnsafePointer($0.pointer(T.self)) })
            let o = out.pointer(T.self)
            if reduction == .none {
                _ = pointwiseLossForward(kind, ops, o)
            } else {
                let s = pointwiseLossForward(kind, ops, nil)
                o[0] = T(reduction == .mean ? s / Double(n) : s)
            }
        }
        if x.dtype == .float32 { run(Float.self) } else { run(Double.self) }
    }

    /// The gradients of input (into `dx`) and target (into `dt`), when given, from the loss gradient `g` (one value
    /// for a reduced loss, else one per element) scaled by `norm`.
    static func backward(_ kind: PointwiseLossKind, _ x: Tensor, _ t: Tensor, weight w: Tensor?, posWeight pw: Tensor?,
                         _ g: Tensor, reduction: nn.Reduction, norm: Double, dx: Tensor?, dt: Tensor?) {
        let n = x.numel
        func run<T: FloatElement>(_: T.Type) {
            let ops = LossOperands(n: n, x: UnsafePointer(x.pointer(T.self)), t: UnsafePointer(t.pointer(T.self)),
                                   w: w.map { UnsafePointer($0.pointer(T.self)) }, pw: pw.map { UnsafePointer($0.pointer(T.self)) })
            let gp = UnsafePointer(g.pointer(T.self))
            let gScalar = reduction != .none
            if let dx { pointwiseLossInputGrad(kind, ops, gp, gScalar, T(norm), dx.pointer(T.self)) }
            if let dt {
                pointwiseLossTargetGrad(kind, ops, gp, gScalar, T(norm), dx.map { UnsafePointer($0.pointer(T.self)) }, dt.pointer(T.self))
            }
        }
        if x.dtype == .float32 { run(Float.self) } else { run(Double.self) }
    }
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
