import CTorchKernels

/// Kernels for the class-index losses: NLL (`NllLossBackward0` / `NllLoss2DBackward0`) and the
/// fused log-softmax + NLL of CrossEntropy, one kernel forward and one backward
/// (`coef · (softmax − one-hot)`). Inputs are handled as `[N, C, S]` (S = the product of the
/// spatial dims, 1 for `N×C` and `C` inputs) with targets `[N, S]`, following PyTorch's
/// `nll_loss_nd` checks and messages.

/// The shape of an NLL/CrossEntropy problem once PyTorch's checks passed.
struct ClassLossGeometry: Equatable {
    /// Batch (1 for an unbatched `C` input).
    let n: Int
    /// Classes.
    let c: Int
    /// Product of the spatial dims (1 for `N×C` and `C` inputs).
    let s: Int
    /// PyTorch's node name (`NllLossBackward0` for 1-D/2-D inputs, else `NllLoss2DBackward0`).
    let nodeName: String
    /// Shape of the node's unreduced output.
    let nodeOutShape: [Int]
    /// The shape PyTorch views the unreduced loss to afterwards (3-D and ≥5-D inputs), or nil.
    let viewShape: [Int]?

    /// Number of (sample, position) targets.
    var rows: Int { n * s }
}

/// A failed class-loss check: PyTorch's message.
struct ClassLossError: Error, Equatable {
    let message: String
}

/// PyTorch's `nll_loss_nd` / `nll_loss` / `nll_loss2d` checks of shapes and dtypes, in PyTorch's
/// order: the geometry, or the message PyTorch raises.
func classLossGeometry(input: [Int], target: [Int], targetDType: DType,
                       weightShape: [Int]?) -> Result<ClassLossGeometry, ClassLossError> {
    func fail(_ m: String) -> Result<ClassLossGeometry, ClassLossError> { .failure(ClassLossError(message: m)) }
    let d = input.count
    if d < 1 { return fail("Expected 1 or more dimensions (got \(d))") }
    let targetBatch = target.isEmpty ? 0 : target[0]
    if d != 1 && input[0] != targetBatch {
        return fail("Expected input batch_size (\(input[0])) to match target batch_size (\(targetBatch)).")
    }
    let dtypeError = targetDType == .int64 || targetDType == .uint8 ? nil
        : "expected target dtype to be Long or Byte, but got \(scalarTypeName(targetDType))"
    let c = input[d == 1 ? 0 : 1]
    if d <= 2 {
        if target.count > 1 { return fail("0D or 1D target tensor expected, multi-target not supported") }
        if d == 1 && target.count == 1 && target[0] != 1 {
            return fail("For 1D input, 1D target must have size 1, but got target size: \(target[0])")
        }
        if let w = weightShape, !(w.count == 1 && w[0] == c) {
            return fail("weight tensor should be defined either for all \(c) classes or no classes but got weight tensor of shape: \(shapeString(w))")
        }
        if let e = dtypeError { return fail(e) }
        let n = d == 1 ? 1 : input[0]
        return .success(ClassLossGeometry(n: n, c: c, s: 1, nodeName: "NllLossBackward0",
                                          nodeOutShape: d == 1 ? [] : [n], viewShape: nil))
    }
    let weightOK = weightShape.map { shapeNumel($0) == c } ?? true
    let spatial = Array(input[2...])
    let s = shapeNumel(spatial)
    if d == 4 {
        if target.count != 3 {
            return fail("only batches of spatial targets supported (3D tensors) but got targets of dimension: \(target.count)")
        }
        if !weightOK { return fail("weight tensor should be defined either for all or no classes") }
        if target != [input[0]] + spatial {
            return fail("size mismatch (got input: \(shapeString(input)) , target: \(shapeString(target))")
        }
        if let e = dtypeError { return fail(e) }
        return .success(ClassLossGeometry(n: input[0], c: c, s: s, nodeName: "NllLoss2DBackward0",
                                          nodeOutShape: target, viewShape: nil))
    }
    let outSize = [input[0]] + spatial
    if Array(target.dropFirst()) != spatial {
        return fail("Expected target size \(shapeString(outSize)), got \(shapeString(target))")
    }
    if !weightOK { return fail("weight tensor should be defined either for all or no classes") }
    if let e = dtypeError { return fail(e) }
    return .success(ClassLossGeometry(n: input[0], c: c, s: s, nodeName: "NllLoss2DBackward0",
                                      nodeOutShape: [input[0], 1, s], viewShape: outSize))
}

/// The geometry, stopping with PyTorch's message when the checks fail.
func checkedClassLossGeometry(_ input: Tensor, _ target: Tensor, _ weight: Tensor?) -> ClassLossGeometry {
    switch classLossGeometry(input: input.shape, target: target.shape, targetDType: target.dtype, weightShape: weight?.shape) {
    case .success(let g): return g
    case .failure(let e): preconditionFailure(e.message)
    }
}

/// PyTorch's message for a class index outside `[0, C)`.
func targetOutOfBoundsMessage(_ t: Int64) -> String { "Target \(t) is out of bounds." }

/// PyTorch's message for a weight whose dtype differs from the input's.
func weightDTypeMessage(input: DType, weight: DType) -> String {
    "expected scalar type \(scalarTypeName(input)) but found \(scalarTypeName(weight))"
}

// MARK: - Shared pieces

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

/// The loss node's output viewed as PyTorch returns it (`ViewBackward0` for 3-D and ≥5-D
/// unreduced losses).
private func finishClassLoss(_ out: Tensor, _ g: ClassLossGeometry, _ reduction: nn.Reduction, resultDType: DType) -> Tensor {
    var r = out
    if reduction == .none, let v = g.viewShape { r = r.view(v) }
    return r.dtype == resultDType ? r : r.to(resultDType)
}

// MARK: - NLL

/// `NllLossBackward0`'s `_saved_` attributes. `self` is the node's input: the log-probabilities, or
/// for the fused cross entropy the logits (PyTorch saves the output of its separate
/// `LogSoftmaxBackward0` node, which the fused op does not have).
private func nllAttributes(_ x: Tensor, _ target: Tensor, _ weight: Tensor?, _ ignoreIndex: Int, _ reduction: nn.Reduction,
                           totalWeight: Double, dtype: DType) -> () -> [SavedAttribute] {
    {
        [.int("ignore_index", ignoreIndex), .reduction(reduction), .tensor("self", x), .tensor("target", target),
         .tensor("total_weight", torch.full([], totalWeight, dtype: dtype)), .tensor("weight", weight)]
    }
}

/// `nll_loss_nd`: −weight[t] · input[n, t, s], reduced (mean = weighted mean), `ignoreIndex`
/// skipped. `input` is floating, already checked against `geometry`.
func nllLossOp(_ input: Tensor, _ target: Tensor, weight: Tensor?, ignoreIndex: Int,
               reduction: nn.Reduction, geometry geo: ClassLossGeometry) -> Tensor {
    let dtype = input.dtype
    let compute = dtype.computeType
    let x = dtype == compute ? input : input.to(compute)
    let targets = ClassTargets(geo, target: target, weight: weight, ignoreIndex: ignoreIndex, dtype: compute)
    let xc = lossContiguous(x)
    let out = Tensor(uninitializedShape: reduction == .none ? geo.nodeOutShape : [], dtype: compute)
    func forward<T: FloatElement>(_: T.Type) {
        let xp = UnsafePointer(xc.pointer(T.self)), tp = UnsafePointer(targets.target.pointer(Int64.self))
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
    if compute == .float32 { forward(Float.self) } else { forward(Double.self) }

    if x.needsGrad {
        let inputShape = x.shape
        let saved = nllAttributes(x, target, weight, ignoreIndex, reduction, totalWeight: targets.totalWeight, dtype: compute)
        record(geo.nodeName, out, inputs: [x], saved: saved) { _, g in
            if GradMode.isEnabled {
                let (coef, oneHot) = torch.noGrad { targets.coefficientTensors(dtype: compute, reduction: reduction) }
                let gb = reduction == .none ? g.reshape([geo.n, 1, geo.s]) : g
                return [(oneHot * coef * -1 * gb).reshape(inputShape)]
            }
            let gc = lossContiguous(g.dtype == compute ? g : g.to(compute))
            let grad = torch.zeros([geo.n, geo.c, geo.s], dtype: compute)
            func backward<T: FloatElement>(_: T.Type) {
                let gp = UnsafePointer(gc.pointer(T.self)), tp = UnsafePointer(targets.target.pointer(Int64.self))
                let o = grad.pointer(T.self)
                withUnsafeTemporaryAllocation(of: T.self, capacity: max(geo.rows, 1)) { buf in
                    let coef = buf.baseAddress!
                    targets.coefficients(gp, gScalar: reduction != .none, reduction: reduction, into: coef)
                    for i in 0..<geo.rows where tp[i] != targets.ignoreIndex {
                        o[((i / geo.s) * geo.c + Int(tp[i])) * geo.s + i % geo.s] = -coef[i]
                    }
                }
            }
            if compute == .float32 { backward(Float.self) } else { backward(Double.self) }
            return [grad.view(inputShape)]
        }
    }
    return finishClassLoss(out, geo, reduction, resultDType: dtype)
}

// MARK: - Fused CrossEntropy

/// exp in place over `n` contiguous elements (vectorized for float32).
@inline(__always)
private func lossExpInPlace<T: FloatElement>(_ p: UnsafeMutablePointer<T>, _ n: Int) {
    if T.self == Float.self {
        let q = UnsafeMutableRawPointer(p).assumingMemoryBound(to: Float.self)
        ct_vexp_f32(q, q, Int64(n))
    } else {
        for i in 0..<n { p[i] = T.exp(p[i]) }
    }
}

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
        lossExpInPlace(probs, g.n * block)
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

/// CrossEntropy for class-index targets without label smoothing: log-softmax and NLL fused into
/// one node named like PyTorch's NLL node (the softmax is kept for the backward pass).
func fusedCrossEntropyOp(_ input: Tensor, _ target: Tensor, weight: Tensor?, ignoreIndex: Int,
                         reduction: nn.Reduction, geometry geo: ClassLossGeometry) -> Tensor {
    let dtype = input.dtype
    let compute = dtype.computeType
    let x = dtype == compute ? input : input.to(compute)
    let targets = ClassTargets(geo, target: target, weight: weight, ignoreIndex: ignoreIndex, dtype: compute)
    let xc = lossContiguous(x)
    let keep = x.needsGrad
    let probs = Tensor(uninitializedShape: [geo.n, geo.c, geo.s], dtype: compute)
    let out = Tensor(uninitializedShape: reduction == .none ? geo.nodeOutShape : [], dtype: compute)
    func forward<T: FloatElement>(_: T.Type) {
        withUnsafeTemporaryAllocation(of: T.self, capacity: max(geo.rows, 1)) { buf in
            crossEntropyForwardKernel(targets, UnsafePointer(xc.pointer(T.self)), probs.pointer(T.self), buf.baseAddress!, keepProbs: keep)
            targets.reduce(UnsafePointer(buf.baseAddress!), reduction, into: out)
        }
    }
    if compute == .float32 { forward(Float.self) } else { forward(Double.self) }

    if keep {
        let sx = SavedTensor(x)
        let inputShape = x.shape
        let saved = nllAttributes(x, target, weight, ignoreIndex, reduction, totalWeight: targets.totalWeight, dtype: compute)
        record(geo.nodeName, out, inputs: [x], saved: saved) { node, g in
            if GradMode.isEnabled {
                // create_graph: softmax(x) − one-hot from differentiable ops.
                let p = F.softmax(sx.unpack(node).reshape([geo.n, geo.c, geo.s]), dim: 1)
                let (coef, oneHot) = torch.noGrad { targets.coefficientTensors(dtype: compute, reduction: reduction) }
                let gb = reduction == .none ? g.reshape([geo.n, 1, geo.s]) : g
                return [((p - oneHot) * coef * gb).reshape(inputShape)]
            }
            let gc = lossContiguous(g.dtype == compute ? g : g.to(compute))
            let grad = Tensor(uninitializedShape: inputShape, dtype: compute)
            func backward<T: FloatElement>(_: T.Type) {
                withUnsafeTemporaryAllocation(of: T.self, capacity: max(geo.rows, 1)) { buf in
                    targets.coefficients(UnsafePointer(gc.pointer(T.self)), gScalar: reduction != .none,
                                         reduction: reduction, into: buf.baseAddress!)
                    crossEntropyBackwardKernel(targets, UnsafePointer(probs.pointer(T.self)), UnsafePointer(buf.baseAddress!),
                                               grad.pointer(T.self))
                }
            }
            if compute == .float32 { backward(Float.self) } else { backward(Double.self) }
            return [grad]
        }
    }
    return finishClassLoss(out, geo, reduction, resultDType: dtype)
}
