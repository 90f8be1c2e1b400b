/// Autograd bookkeeping for in-place ops: refusing illegal ones with PyTorch's messages and
/// rebasing the tensor's history onto a new node.
extension Tensor {
    /// Stops when an in-place change to this tensor would corrupt autograd.
    func checkInPlace(_ op: String) {
        guard GradMode.isEnabled else { return }
        if _requiresGrad && gradFn == nil && viewBase == nil {
            preconditionFailure("\(op): " + AutogradMessage.leafInPlace)
        }
        if let base = viewBase, base._requiresGrad {
            if base.gradFn == nil {
                preconditionFailure("\(op): " + AutogradMessage.viewOfLeafInPlace)
            }
            preconditionFailure("\(op): in-place operations on views of tensors that require grad are not supported yet; use an out-of-place op (e.g. torch.where) or clone() first.")
        }
    }

    /// Makes this tensor the output of a new node after an in-place op.
    /// `backward(node, g)` returns the gradients for [this tensor's previous value] + `inputs`.
    func rebaseHistory(_ name: String, inputs: [Tensor], backward: @escaping (FunctionNode, Tensor) -> [Tensor?]) {
        let oldEdge = gradientEdge()
        let node = FunctionNode(name: name, nextEdges: [oldEdge] + inputs.map { $0.gradientEdge() }) { node, grads in
            guard let g = grads[0] else { return [Tensor?](repeating: nil, count: node.nextEdges.count) }
            return backward(node, g)
        }
        gradFn = node
        outputNr = 0
        _requiresGrad = true
    }
}
