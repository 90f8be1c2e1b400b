/// The class-index losses: NLL (`NllLossBackward0` / `NllLoss2DBackward0`) and the fused log-softmax + NLL of
/// CrossEntropy, with PyTorch's `nll_loss_nd` checks and messages. Inputs are handled as `[N, C, S]` (S = the
/// product of the spatial dims, 1 for `N×C` and `C` inputs) with targets `[N, S]`. The CPU kernels are
/// `CPUClassLoss`; the CUDA ones `CUDAFused.crossEntropy` (DeviceCrossEntropy.swift).

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

// MARK: - NLL

/// The loss node's output viewed as PyTorch returns it (`ViewBackward0` for 3-D and ≥5-D
/// unreduced losses).
private func finishClassLoss(_ out: Tensor, _ g: ClassLossGeometry, _ reduction: nn.Reduction, resultDType: DType) -> Tensor {
    var r = out
    if reduction == .none, let v = g.viewShape { r = r.view(v) }
    return r.dtype == resultDType ? r : r.to(resultDType)
}

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
    CPUClassLoss.nll(xc, targets, reduction: reduction, into: out)

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
            let grad = CPUClassLoss.nllBackward(gc, targets, reduction: reduction)
            return [grad.view(inputShape)]
        }
    }
    return finishClassLoss(out, geo, reduction, resultDType: dtype)
}

// MARK: - Fused CrossEntropy

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
    CPUClassLoss.crossEntropy(xc, targets, reduction: reduction, probs: probs, keepProbs: keep, into: out)

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
            CPUClassLoss.crossEntropyBackward(gc, targets, reduction: reduction, probs: probs, into: grad)
            return [grad]
        }
    }
    return finishClassLoss(out, geo, reduction, resultDType: dtype)
}
