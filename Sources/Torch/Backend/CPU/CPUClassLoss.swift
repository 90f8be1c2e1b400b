import CTorchKernels

/// The class-index losses on the CPU: NLL and the fused log-softmax + NLL of CrossEntropy, one kernel forward and
/// one backward (`coef · (softmax − one-hot)`), over inputs seen as `[N, C, S]` (S = the product of the spatial
/// dims, 1 for `N×C` and `C` inputs) with targets `[N, S]`. `nllLossOp` and `fusedCrossEntropyOp`
/// (NN/Losses/ClassLoss.swift) keep the checks, dtypes and autograd and call these; on CUDA, `F.crossEntropy`
/// goes to `CUDAFused.crossEntropy` and `F.nllLoss` to a composition of device ops.
enum CPUClassLoss {
    /// NLL of contiguous log-probabilities `x` (compute dtype) into `out`: per row for `.none`, else reduced.
    static func nll(_ x: Tensor, _ targets: ClassTargets, reduction: nn.Reduction, into out: Tensor) {
        let geo = targets.geometry
        func forward<T: FloatElement>(_: T.Type) {
            let xp = UnsafePointer(x.pointer(T.self)), tp = UnsafePointer(targets.target.pointer(Int64.self))
            let w = targets.weight.map { UnsafePointer($0.pointer(T.self)) }
            let c = geo.c, s = geo.s
            withUnsafeTemporaryAllocation(of: T.self, capacity: max(geo.rows, 1)) { buf in
                let rowLoss = buf.baseAddress!
                for i in 0..<geo.rows {
                    let wt: T = targets.rowWeight(i, tp, w)
                    rowLoss[i] = wt == 0 ? 0 : -xp[((i / s) * c + Int(tp[i])) * s + i % s] * wt
                }
                targets.reduce(UnsafePointer(rowLoss), reduction, into: out)
            }
        }
        if x.dtype == .float32 { forward(Float.self) } else { forward(Double.self) }
    }

    /// NLL's input gradient `[N, C, S]` from the contiguous loss gradient `g` (compute dtype).
    static func nllBackward(_ g: Tensor, _ targets: ClassTargets, reduction: nn.Reduction) -> Tensor {
        let geo = targets.geometry
        let grad = torch.zeros([geo.n, geo.c, geo.s], dtype: g.dtype)
        func backward<T: FloatElement>(_: T.Type) {
            let gp = UnsafePointer(g.pointer(T.self)), tp = UnsafePointer(targets.target.pointer(Int64.self))
            let o = grad.pointer(T.self)
            withUnsafeTemporaryAllocation(of: T.self, capacity: max(geo.rows, 1)) { buf in
                let coef = buf.baseAddress!
                targets.coefficients(gp, gScalar: reduction != .none, reduction: reduction, into: coef)
                for i in 0..<geo.rows where tp[i] != targets.ignoreIndex {
                    o[((i / geo.s) * geo.c + Int(tp[i])) * geo.s + i % geo.s] = -coef[i]
                }
            }
        }
        if g.dtype == .float32 { backward(Float.self) } else { backward(Double.self) }
        return grad
    }

    /// log_softmax + NLL of contiguous logits `x` (compute dtype) into `out`; `probs` (`[N, C, S]`) receives the
    /// softmax when `keepProbs`, else serves as scratch.
    static func crossEntropy(_ x: Tensor, _ targets: ClassTargets, reduction: nn.Reduction, probs: Tensor, keepProbs: Bool,
                             into out: Tensor) {
        func forward<T: FloatElement>(_: T.Type) {
            withUnsafeTemporaryAllocation(of: T.self, capacity: max(targets.geometry.rows, 1)) { buf in
                crossEntropyForwardKernel(targets, UnsafePointer(x.pointer(T.self)), probs.pointer(T.self), buf.baseAddress!,
                                          keepProbs: keepProbs)
                targets.reduce(UnsafePointer(buf.baseAddress!), reduction, into: out)
            }
        }
        if x.dtype == .float32 { forward(Float.self) } else { forward(Double.self) }
    }

    /// CrossEntropy's input gradient into `grad` from the contiguous loss gradient `g` and the kept softmax.
    static func crossEntropyBackward(_ g: Tensor, _ targets: ClassTargets, reduction: nn.Reduction, probs: Tensor,
                                     into grad: Tensor) {
        func backward<T: FloatElement>(_: T.Type) {
            withUnsafeTemporaryAllocation(of: T.self, capacity: max(targets.geometry.rows, 1)) { buf in
                targets.coefficients(UnsafePointer(g.pointer(T.self)), gScalar: reduction != .none,
                                     reduction: reduction, into: buf.baseAddress!)
                crossEntropyBackwardKernel(targets, UnsafePointer(probs.pointer(T.self)), UnsafePointer(buf.baseAddress!),
                                           grad.pointer(T.self))
            }
        }
        if g.dtype == .float32 { backward(Float.self) } else { backward(Double.self) }
    }
}

/// The targets, weights and options of one class-loss call, laid out for the kernels.
struct ClassTargets {
    let geometry: ClassLossGeometry
    /// Contiguous int64 targets, `rows` of them.
    let target: Tensor
    /// Contiguous `[C]` weights in the compute dtype, or nil.
    let weight: Tensor?
    let ignoreIndex: Int64
    /// Σ weight[target] over non-ignored targets (their count without weights).
    let totalWeight: Double

    /// Prepares and validates targets ("Target 7 is out of bounds."); `weight` is converted to `dtype`.
    init(_ geometry: ClassLossGeometry, target: Tensor, weight: Tensor?, ignoreIndex: Int, dtype: DType) {
        self.geometry = geometry
        self.target = lossContiguous(target.dtype == .int64 ? target : target.to(.int64))
        self.weight = weight.map { w in
            torch.noGrad { lossContiguous((w.dtype == dtype ? w : w.to(dtype)).reshape(-1)) }
        }
        self.ignoreIndex = Int64(ignoreIndex)
        let tp = UnsafePointer(self.target.pointer(Int64.self))
        let c = Int64(geometry.c), ignore = self.ignoreIndex
        var tw = 0.0
        let w = self.weight
        for i in 0..<geometry.rows {
            let t = tp[i]
            if t == ignore { continue }
            precondition(t >= 0 && t < c, targetOutOfBoundsMessage(t))
            tw += w.map { $0.element(atLinearIndex: Int(t)) } ?? 1
        }
        totalWeight = tw
    }

    /// The weight of row i's target (0 when ignored).
    @inline(__always)
    func rowWeight<T: FloatElement>(_ i: Int, _ tp: UnsafePointer<Int64>, _ w: UnsafePointer<T>?) -> T {
        let t = tp[i]
        if t == ignoreIndex { return 0 }
        return w.map { $0[Int(t)] } ?? 1
    }

    /// Per-row backward coefficients: weight[target] · g (· 1/totalWeight for the mean), 0 where
    /// ignored. `g` is one value (mean/sum) or `rows` values (none).
    func coefficients<T: FloatElement>(_ g: UnsafePointer<T>, gScalar: Bool, reduction: nn.Reduction,
                                       into coef: UnsafeMutablePointer<T>) {
        let tp = UnsafePointer(target.pointer(Int64.self))
        let w = weight.map { UnsafePointer($0.pointer(T.self)) }
        let scale = reduction == .mean ? T(1 / totalWeight) : 1
        for i in 0..<geometry.rows {
            // Ignored rows get exactly 0 (also when every row is ignored and the scale is inf).
            coef[i] = tp[i] == ignoreIndex ? 0 : rowWeight(i, tp, w) * (gScalar ? g[0] : g[i]) * scale
        }
    }

    /// The reduced loss from per-row losses (or the per-row losses themselves for `.none`).
    func reduce<T: FloatElement>(_ rowLoss: UnsafePointer<T>, _ reduction: nn.Reduction, into out: Tensor) {
        let o = out.pointer(T.self)
        let rows = geometry.rows
        if reduction == .none {
            o.update(from: rowLoss, count: rows)
            return
        }
        var s = 0.0
        for i in 0..<rows { s += Double(rowLoss[i]) }
        o[0] = T(reduction == .mean ? s / totalWeight : s)
    }

    /// Differentiable-free tensors for the create-graph backward: the per-row coefficients as
    /// `[N, 1, S]` (g = 1) and the one-hot targets as `[N, C, S]`.
    func coefficientTensors(dtype: DType, reduction: nn.Reduction) -> (coef: Tensor, oneHot: Tensor) {
        let g = geometry
        let coef = Tensor(uninitializedShape: [g.n, 1, g.s], dtype: dtype)
        let oneHot = torch.zeros([g.n, g.c, g.s], dtype: dtype)
        let tp = UnsafePointer(target.pointer(Int64.self))
        func fill<T: FloatElement>(_: T.Type) {
            var one: T = 1
            withUnsafePointer(to: &one) { coefficients($0, gScalar: true, reduction: reduction, into: coef.pointer(T.self)) }
            let oh = oneHot.pointer(T.self)
            for n in 0..<g.n {
                for s in 0..<g.s {
                    let t = tp[n * g.s + s]
                    if t != ignoreIndex { oh[(n * g.c + Int(t)) * g.s + s] = 1 }
                }
            }
        }
        if dtype == .float32 { fill(Float.self) } else { fill(Double.self) }
        return (coef, oneHot)
    }
}

// MARK: - Kernels

/// y = log(x) over `n` contiguous elements (vectorized for float32).
@inline(__always)
private func lossLog<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, _ n: Int) {
    if T.self == Float.self {
        ct_vlog_f32(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self),
                    UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), Int64(n))
    } else {
        for i in 0..<n { y[i] = T.log(x[i]) }
    }
}

/// Largest of `n` contiguous values (NaN skipped), in four independent lanes.
@inline(__always)
private func rowMaximum<T: FloatElement>(_ p: UnsafePointer<T>, _ n: Int) -> T {
    var m0 = -T.infinity, m1 = -T.infinity, m2 = -T.infinity, m3 = -T.infinity
    var j = 0
    while j + 4 <= n {
        let a = p[j], b = p[j + 1], c = p[j + 2], d = p[j + 3]
        m0 = a > m0 ? a : m0; m1 = b > m1 ? b : m1; m2 = c > m2 ? c : m2; m3 = d > m3 ? d : m3
        j += 4
    }
    while j < n { let a = p[j]; m0 = a > m0 ? a : m0; j += 1 }
    m0 = m1 > m0 ? m1 : m0
    m2 = m3 > m2 ? m3 : m2
    return m2 > m0 ? m2 : m0
}

/// Sum of `n` contiguous values in four independent lanes.
@inline(__always)
private func rowTotal<T: FloatElement>(_ p: UnsafePointer<T>, _ n: Int) -> T {
    var a0: T = 0, a1: T = 0, a2: T = 0, a3: T = 0
    var j = 0
    while j + 4 <= n { a0 += p[j]; a1 += p[j + 1]; a2 += p[j + 2]; a3 += p[j + 3]; j += 4 }
    while j < n { a0 += p[j]; j += 1 }
    return (a0 + a1) + (a2 + a3)
}

/// Forward of log-softmax + NLL over `[N, C, S]`: fills `probs` with softmax(x) along C (when
/// `keepProbs`; else it is scratch holding exp(x − max)) and `rowLoss` with
/// −weight[t] · log_softmax(x)[t] per row (0 where ignored). Each pass covers all rows, so exp and
/// log run as single vectorized calls.
private func crossEntropyForwardKernel<T: FloatElement>(_ targets: ClassTargets, _ x: UnsafePointer<T>,
                                                        _ probs: UnsafeMutablePointer<T>, _ rowLoss: UnsafeMutablePointer<T>,
                                                        keepProbs: Bool) {
    let g = targets.geometry
    let c = g.c, s = g.s, rows = g.rows
    let tp = UnsafePointer(targets.target.pointer(Int64.self))
    let w = targets.weight.map { UnsafePointer($0.pointer(T.self)) }
    let block = c * s
    let grainRows = max(1, elementwiseGrain / max(block, 1))
    withUnsafeTemporaryAllocation(of: T.self, capacity: 3 * max(rows, 1)) { buf in
        let maxes = buf.baseAddress!, sums = maxes + max(rows, 1), logs = sums + max(rows, 1)
        // 1. Maxima along C and x − max. (A NaN is skipped by the max but still reaches x − max.)
        parallelFor(g.n, grain: grainRows) { lo, hi in
            for n in lo..<hi {
                let xb = x + n * block, pb = probs + n * block, mb = maxes + n * s
                if s == 1 {
                    let m = rowMaximum(xb, c)
                    mb[0] = m
                    for j in 0..<c { pb[j] = xb[j] - m }
                } else {
                    for k in 0..<s { mb[k] = -T.infinity }
                    for j in 0..<c {
                        for k in 0..<s { let v = xb[j * s + k]; mb[k] = v > mb[k] ? v : mb[k] }
                    }
                    for j in 0..<c { for k in 0..<s { pb[j * s + k] = xb[j * s + k] - mb[k] } }
                }
            }
        }
        // 2. exp(x − max) everywhere, then the sums along C and their logs.
        expInPlace(probs, g.n * block)
        parallelFor(g.n, grain: grainRows) { lo, hi in
            for n in lo..<hi {
                let pb = probs + n * block, sb = sums + n * s
                if s == 1 {
                    sb[0] = rowTotal(pb, c)
                } else {
                    for k in 0..<s { sb[k] = 0 }
                    for j in 0..<c { for k in 0..<s { sb[k] += pb[j * s + k] } }
                }
            }
        }
        lossLog(UnsafePointer(sums), logs, rows)
        // 3. Losses: log_softmax(x)[t] = (x[t] − max) − log Σ exp(x − max), as PyTorch computes it.
        for i in 0..<rows {
            let wt: T = targets.rowWeight(i, tp, w)
            let n = i / s, k = i - n * s
            rowLoss[i] = wt == 0 ? 0 : -((x[n * block + Int(tp[i]) * s + k] - maxes[i]) - logs[i]) * wt
        }
        // 4. Normalise into the softmax kept for the backward pass.
        if keepProbs {
            for i in 0..<rows { sums[i] = 1 / sums[i] }
            parallelFor(g.n, grain: grainRows) { lo, hi in
                for n in lo..<hi {
                    let pb = probs + n * block, rb = sums + n * s
                    if s == 1 {
                        let r = rb[0]
                        for j in 0..<c { pb[j] *= r }
                    } else {
                        for j in 0..<c { for k in 0..<s { pb[j * s + k] *= rb[k] } }
                    }
                }
            }
        }
    }
}

/// grad[n, c, s] = coef[n, s] · (probs[n, c, s] − [c == t]).
private func crossEntropyBackwardKernel<T: FloatElement>(_ targets: ClassTargets, _ probs: UnsafePointer<T>,
                                                         _ coef: UnsafePointer<T>, _ out: UnsafeMutablePointer<T>) {
    let g = targets.geometry
    let c = g.c, s = g.s, block = c * s
    let tp = UnsafePointer(targets.target.pointer(Int64.self))
    let ignore = targets.ignoreIndex
    parallelFor(g.n, grain: max(1, elementwiseGrain / max(block, 1))) { lo, hi in
        for n in lo..<hi {
            let pb = probs + n * block, ob = out + n * block, cb = coef + n * s
            if s == 1 {
                let k = cb[0]
                for j in 0..<c { ob[j] = k * pb[j] }
            } else {
                for j in 0..<c { for k in 0..<s { ob[j * s + k] = cb[k] * pb[j * s + k] } }
            }
            for k in 0..<s {
                let t = tp[n * s + k]
                if t != ignore { ob[Int(t) * s + k] -= cb[k] }
            }
        }
    }
}
