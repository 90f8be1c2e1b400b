/// PyTorch's `torch.nn`: modules, layers, losses, `nn.functional` and `nn.init`.
///
/// ```swift
/// final class Net: nn.Module {
///     let fc = nn.Linear(2, 8)
///     let act = nn.ReLU()
///     override func forward(_ x: Tensor) -> Tensor { act(fc(x)) }
/// }
/// ```
public enum nn {}

extension nn {
    /// PyTorch's `torch.nn.functional` (also available as `F`): the stateless twins of the layers.
    ///
    /// ```swift
    /// let y = F.relu(F.linear(x, w, b))
    /// ```
    public enum functional {}
}

/// Alias of `nn.functional`, as in `import torch.nn.functional as F`.
public typealias F = nn.functional
