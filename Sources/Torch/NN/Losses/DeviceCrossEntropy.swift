/// CrossEntropy with class-index targets on a GPU (`F.crossEntropy` checked the devices): log-softmax and NLL
/// fused into one node named like PyTorch's NLL node, like the CPU's `fusedCrossEntropyOp`. Forward: per-row
/// losses and one reducing block (`CUDAFused.crossEntropy`, two launches); backward: `k · (softmax − one-hot)` in
/// one launch, recomputed from the logits and the saved per-row log-sum-exp. The total weight stays on the
/// device, so nothing waits for the GPU. Under `createGraph` the backward is composed from differentiable device
/// ops.
func deviceCrossEntropyOp(_ input: Tensor, _ target: Tensor, weight: Tensor?, ignoreIndex: Int,
                          reduction: nn.Reduction, geometry geo: ClassLossGeometry) -> Tensor {
    let x = input.contiguous()
    let t = torch.noGrad { (target.dtype == .int64 ? target : target.to(.int64)).contiguous() }
    let w = weight.map { v in torch.noGrad { v.reshape(-1).contiguous() } }
    let (loss, saved) = CUDAFused.crossEntropy(x, target: t, weight: w, ignoreIndex: ignoreIndex, reduction: reduction, geometry: geo)
    if x.needsGrad {
        let sx = SavedTensor(x)
        let inputShape = x.shape
        record(geo.nodeName, loss, inputs: [x], saved: {
            [.int("ignore_index", ignoreIndex), .reduction(reduction), .tensor("self", x), .tensor("target", target),
             .tensor("total_weight", saved.totalWeight.to(x.dtype)), .tensor("weight", weight)]
        }) { node, g in
            if GradMode.isEnabled {
                // create_graph: (softmax(x) − one-hot) · k from differentiable ops.
                let p = F.softmax(sx.unpack(node).reshape([geo.n, geo.c, geo.s]), dim: 1)
                let rows = t.reshape([geo.n, 1, geo.s])
                let (oneHot, coef) = torch.noGrad { () -> (Tensor, Tensor) in
                    let classes = torch.arange(0, geo.c, device: x.device).reshape([1, geo.c, 1])
                    let counted = (rows .!= Double(ignoreIndex)).to(x.dtype)
                    let picked = w.map { $0.indexSelect(0, rows.clamp(min: 0, max: Double(geo.c - 1)).reshape(-1)).reshape([geo.n, 1, geo.s]) }
                    var k = picked.map { $0 * counted } ?? counted
                    if reduction == .mean { k = k / saved.totalWeight.to(x.dtype) }
                    return ((classes .== rows).to(x.dtype) * counted, k)
                }
                let gb = reduction == .none ? g.reshape([geo.n, 1, geo.s]) : g
                return [((p - oneHot) * coef * gb).reshape(inputShape)]
            }
            return [CUDAFused.crossEntropyBackward(g, x: x, target: t, weight: w, ignoreIndex: ignoreIndex,
                                                   reduction: reduction, geometry: geo, saved: saved)]
        }
    }
    if reduction == .none, let v = geo.viewShape { return loss.view(v) }
    return loss
}
