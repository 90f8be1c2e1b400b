/// Autograd bookkeeping for in-place ops: refusing illegal ones with PyTorch's messages and
/// rebasing the tensor's history onto a new node.
///
/// An in-place op on a view changes its base too. As in PyTorch, the base's history is rebased
/// onto a `CopySlices` node (the base's gradient with the view's region sent through the op's
/// backward), and the view's own history becomes an `AsStridedBackward0` of the base. Views whose
/// base changed after their history was recorded regenerate it the same way when next used.
extension Tensor {
    /// Stops when an in-place change to this tensor would corrupt autograd.
    func checkInPlace(_ op: String) {
        guard GradMode.isEnabled else { return }
        if _requiresGrad && gradFn == nil && viewBase == nil {
            preconditionFailure("\(op): " + AutogradMessage.leafInPlace)
        }
        if let base = viewBase, base._requiresGrad, base.gradFn == nil {
            preconditionFailure("\(op): " + AutogradMessage.viewOfLeafInPlace)
        }
    }

    /// Makes this tensor the output of a new node after an in-place op.
    /// `backward(node, g)` returns the gradients for [this tensor's previous value] + `inputs`.
    /// `saved` lists the node's PyTorch `_saved_` attributes, as for `record`.
    func rebaseHistory(_ name: String, inputs: [Tensor], saved: (() -> [SavedAttribute])? = nil,
                       backward: @escaping (FunctionNode, Tensor) -> [Tensor?]) {
        if let base = viewBase {
            rebaseViewHistory(base: base, name: name, inputs: inputs, backward: backward)
            return
        }
        let oldEdge = gradientEdge()
        let node = FunctionNode(name: name, nextEdges: [oldEdge] + inputs.map { $0.gradientEdge() }, describe: saved,
                                single: backward)
        gradFn = node
        outputNr = 0
        _requiresGrad = true
    }

    /// The in-place op on this view, recorded on its base as `CopySlices`.
    private func rebaseViewHistory(base: Tensor, name: String, inputs: [Tensor],
                                   backward: @escaping (FunctionNode, Tensor) -> [Tensor?]) {
        let region = regionInBase(base, op: name)
        let baseShape = base.shape
        let node = FunctionNode(name: "CopySlices", nextEdges: [base.gradientEdge()] + inputs.map { $0.gradientEdge() }) { node, grads in
            guard let gBase = grads[0] else { return [Tensor?](repeating: nil, count: node.nextEdges.count) }
            let g = gBase.contiguous()
            let gView = region(g)
            let opGrads = backward(node, gView.contiguous())
            let baseGrad: Tensor
            if GradMode.isEnabled {
                // create_graph: the same result from differentiable ops.
                let kept = g - embedGradient(gView, into: baseShape, region: region)
                baseGrad = opGrads[0].map { kept + embedGradient($0, into: baseShape, region: region) } ?? kept
            } else {
                baseGrad = g.clone()
                let slot = region(baseGrad)
                if let gOld = opGrads[0] { slot.copy_(gOld) } else { slot.zero_() }
            }
            return [baseGrad] + opGrads.dropFirst()
        }
        base.gradFn = node
        base.outputNr = 0
        base._requiresGrad = true
        setHistoryFromBase(base, region: region)
    }

    /// This view's region of a contiguous tensor shaped like `base` (`base` itself must be contiguous,
    /// so the view's strides and offset describe the same elements in any contiguous copy).
    private func regionInBase(_ base: Tensor, op: String) -> (Tensor) -> Tensor {
        precondition(base.isContiguous,
                     "\(op): an in-place operation on a view of a non-contiguous tensor of shape \(shapeString(base.shape)) that requires grad is not supported; call .contiguous() on that tensor first")
        let size = shape, stride = strides, rel = storageOffset - base.storageOffset
        return { $0.asStrided(size, stride, storageOffset: $0.storageOffset + rel) }
    }

    /// Makes this view's history `AsStridedBackward0` of its base's current history.
    private func setHistoryFromBase(_ base: Tensor, region: @escaping (Tensor) -> Tensor) {
        let baseShape = base.shape
        gradFn = FunctionNode(name: "AsStridedBackward0", nextEdges: [base.gradientEdge()]) { node, grads in
            guard let g = grads[0] else { return [nil] }
            return [embedGradient(g, into: baseShape, region: region)]
        }
        outputNr = 0
        _requiresGrad = true
        viewHistoryVersion = storage.version
    }

    /// Regenerates a view's history when its storage changed in place after it was recorded (the
    /// base, or another view of it, was modified): the old history would miss that change.
    func refreshViewHistory() {
        guard let base = viewBase, gradFn != nil, viewHistoryVersion != storage.version,
              GradMode.isEnabled, base.isContiguous else { return }
        // A view with repeated elements (expand) cannot have been written in place; keep its history.
        for (n, s) in zip(shape, strides) where n > 1 && s == 0 { return }
        setHistoryFromBase(base, region: regionInBase(base, op: "view"))
    }
}
