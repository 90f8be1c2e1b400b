extension Tensor {
    /// Registers `hook(self)` to run after backward has accumulated a gradient into this leaf's
    /// `.grad` (PyTorch's `register_post_accumulate_grad_hook`). `DistributedDataParallel` uses it
    /// to start averaging a bucket of gradients as soon as the bucket is complete.
    ///
    /// ```swift
    /// let w = torch.randn(3, requiresGrad: true)
    /// let handle = w.registerPostAccumulateGradHook { p in print("grad ready:", p.grad!) }
    /// (w * w).sum().backward()
    /// handle.remove()
    /// ```
    @discardableResult
    public func registerPostAccumulateGradHook(_ hook: @escaping (Tensor) -> Void) -> TensorHookHandle {
        precondition(_requiresGrad, "cannot register a hook on a tensor that doesn't require gradient")
        precondition(gradFn == nil, "post accumulate grad hooks cannot be registered on non-leaf tensors")
        TensorHookHandle.lastID += 1
        let id = TensorHookHandle.lastID
        postAccumulateGradHooks.append((id, hook))
        return TensorHookHandle(tensor: self, id: id)
    }
}

/// Returned by `registerPostAccumulateGradHook`; `remove()` unregisters the hook (PyTorch's
/// `RemovableHandle`).
public final class TensorHookHandle {
    nonisolated(unsafe) static var lastID = 0
    private weak var tensor: Tensor?
    private let id: Int

    init(tensor: Tensor, id: Int) {
        self.tensor = tensor
        self.id = id
    }

    /// Unregisters the hook (no effect when already removed).
    public func remove() {
        tensor?.postAccumulateGradHooks.removeAll { $0.id == id }
    }
}
