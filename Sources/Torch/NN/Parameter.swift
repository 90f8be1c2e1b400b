extension nn {
    /// A tensor that is a module's learnable parameter (PyTorch's `nn.Parameter`).
    ///
    /// Stored properties of type `nn.Parameter` (or `nn.Parameter?`) of an `nn.Module` are found
    /// by reflection and returned by `parameters()`, `namedParameters()` and `stateDict()`.
    /// A parameter is a leaf sharing the given tensor's storage; it requires grad by default.
    ///
    /// ```swift
    /// let w = nn.Parameter(torch.randn(3, 2))
    /// print(w)   // Parameter containing:
    ///            // tensor([[...]], requires_grad=True)
    /// ```
    public final class Parameter: Tensor {
        /// Wraps `data` (detached, sharing its storage) as a parameter.
        public init(_ data: Tensor, requiresGrad: Bool = true) {
            super.init(storage: data.storage, shape: data.shape, strides: data.strides,
                       offset: data.storageOffset, dtype: data.dtype)
            if requiresGrad {
                precondition(data.dtype.isFloatingPoint,
                             "Parameter: only Tensors of floating point and complex dtype can require gradients (got \(data.dtype))")
                _requiresGrad = true
            }
        }

        /// An empty float parameter (PyTorch's `nn.Parameter()`).
        public convenience init() {
            self.init(torch.empty(0))
        }
    }
}
