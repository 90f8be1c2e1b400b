/// The second spelling of arguments PyTorch accepts both positionally and by keyword:
/// `x.sum(1)` / `x.sum(dim: 1)`, `torch.max(x, 1)` / `torch.max(x, dim: 1)`,
/// `torch.unsqueeze(x, 1)` / `torch.unsqueeze(x, dim: 1)`, `x.sum(1, true)` / `x.sum(1, keepdim: true)`.
/// Each form forwards to the labelled one, so semantics live in one place.

extension Tensor {
    /// `x.sum(1)`, `x.sum(1, keepdim: true)`.
    public func sum(_ dim: Int, keepdim: Bool = false, dtype: DType? = nil) -> Tensor { sum(dim: dim, keepdim: keepdim, dtype: dtype) }
    /// `x.sum(1, true)`.
    public func sum(_ dim: Int, _ keepdim: Bool) -> Tensor { sum(dim: dim, keepdim: keepdim) }
    /// `x.sum([0, 1])`.
    public func sum(_ dim: [Int], keepdim: Bool = false, dtype: DType? = nil) -> Tensor { sum(dim: dim, keepdim: keepdim, dtype: dtype) }
    /// `x.mean(1)`, `x.mean(1, keepdim: true)`.
    public func mean(_ dim: Int, keepdim: Bool = false, dtype: DType? = nil) -> Tensor { mean(dim: dim, keepdim: keepdim, dtype: dtype) }
    /// `x.mean(1, true)`.
    public func mean(_ dim: Int, _ keepdim: Bool) -> Tensor { mean(dim: dim, keepdim: keepdim) }
    /// `x.mean([0, 1])`.
    public func mean(_ dim: [Int], keepdim: Bool = false, dtype: DType? = nil) -> Tensor { mean(dim: dim, keepdim: keepdim, dtype: dtype) }
    /// `let (values, indices) = x.max(1)`.
    public func max(_ dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { max(dim: dim, keepdim: keepdim) }
    /// `x.max(1, true)`.
    public func max(_ dim: Int, _ keepdim: Bool) -> (values: Tensor, indices: Tensor) { max(dim: dim, keepdim: keepdim) }
    /// `let (values, indices) = x.min(1)`.
    public func min(_ dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { min(dim: dim, keepdim: keepdim) }
    /// `x.min(1, true)`.
    public func min(_ dim: Int, _ keepdim: Bool) -> (values: Tensor, indices: Tensor) { min(dim: dim, keepdim: keepdim) }
    /// `x.argmax(1)`.
    public func argmax(_ dim: Int, keepdim: Bool = false) -> Tensor { argmax(dim: dim, keepdim: keepdim) }
    /// `x.argmax(1, true)`.
    public func argmax(_ dim: Int, _ keepdim: Bool) -> Tensor { argmax(dim: dim, keepdim: keepdim) }
    /// `x.argmin(1)`.
    public func argmin(_ dim: Int, keepdim: Bool = false) -> Tensor { argmin(dim: dim, keepdim: keepdim) }
    /// `x.argmin(1, true)`.
    public func argmin(_ dim: Int, _ keepdim: Bool) -> Tensor { argmin(dim: dim, keepdim: keepdim) }
    /// `x.softmax(1)`.
    public func softmax(_ dim: Int, dtype: DType? = nil) -> Tensor { softmax(dim: dim, dtype: dtype) }
    /// `x.logSoftmax(1)` (PyTorch's `log_softmax(1)`).
    public func logSoftmax(_ dim: Int, dtype: DType? = nil) -> Tensor { logSoftmax(dim: dim, dtype: dtype) }
    /// `x.cumsum(0)`.
    public func cumsum(_ dim: Int, dtype: DType? = nil) -> Tensor { cumsum(dim: dim, dtype: dtype) }
    /// `x.unsqueeze(dim: 1)`.
    public func unsqueeze(dim: Int) -> Tensor { unsqueeze(dim) }
    /// `x.squeeze(dim: 1)`.
    public func squeeze(dim: Int) -> Tensor { squeeze(dim: [dim]) }
    /// `x.squeeze([0, 2])`.
    public func squeeze(_ dims: [Int]) -> Tensor { squeeze(dim: dims) }
    /// `x.flatten(1)`, `x.flatten(1, 2)`.
    public func flatten(_ startDim: Int, _ endDim: Int = -1) -> Tensor { flatten(startDim: startDim, endDim: endDim) }
    /// `x.transpose(dim0: 0, dim1: 1)`.
    public func transpose(dim0: Int, dim1: Int) -> Tensor { transpose(dim0, dim1) }
}

extension torch {
    /// `torch.sum(x, 1)`, `torch.sum(x, 1, keepdim: true)`.
    public static func sum(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> Tensor { x.sum(dim: dim, keepdim: keepdim) }
    /// `torch.sum(x, 1, true)`.
    public static func sum(_ x: Tensor, _ dim: Int, _ keepdim: Bool) -> Tensor { x.sum(dim: dim, keepdim: keepdim) }
    /// `torch.sum(x, [0, 1])`.
    public static func sum(_ x: Tensor, _ dim: [Int], keepdim: Bool = false) -> Tensor { x.sum(dim: dim, keepdim: keepdim) }
    /// `torch.mean(x, 1)`, `torch.mean(x, 1, keepdim: true)`.
    public static func mean(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> Tensor { x.mean(dim: dim, keepdim: keepdim) }
    /// `torch.mean(x, 1, true)`.
    public static func mean(_ x: Tensor, _ dim: Int, _ keepdim: Bool) -> Tensor { x.mean(dim: dim, keepdim: keepdim) }
    /// `torch.mean(x, [0, 1])`.
    public static func mean(_ x: Tensor, _ dim: [Int], keepdim: Bool = false) -> Tensor { x.mean(dim: dim, keepdim: keepdim) }
    /// `let (_, predicted) = torch.max(outputs.data, 1)` (tutorial evaluation loops).
    public static func max(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { x.max(dim: dim, keepdim: keepdim) }
    /// `torch.max(x, 1, true)`.
    public static func max(_ x: Tensor, _ dim: Int, _ keepdim: Bool) -> (values: Tensor, indices: Tensor) { x.max(dim: dim, keepdim: keepdim) }
    /// `torch.min(x, 1)`.
    public static func min(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { x.min(dim: dim, keepdim: keepdim) }
    /// `torch.min(x, 1, true)`.
    public static func min(_ x: Tensor, _ dim: Int, _ keepdim: Bool) -> (values: Tensor, indices: Tensor) { x.min(dim: dim, keepdim: keepdim) }
    /// `torch.argmax(x, 1)`.
    public static func argmax(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> Tensor { x.argmax(dim: dim, keepdim: keepdim) }
    /// `torch.argmax(x, 1, true)`.
    public static func argmax(_ x: Tensor, _ dim: Int, _ keepdim: Bool) -> Tensor { x.argmax(dim: dim, keepdim: keepdim) }
    /// `torch.argmin(x, 1)`.
    public static func argmin(_ x: Tensor, _ dim: Int, keepdim: Bool = false) -> Tensor { x.argmin(dim: dim, keepdim: keepdim) }
    /// `torch.softmax(x, 1)`.
    public static func softmax(_ x: Tensor, _ dim: Int, dtype: DType? = nil) -> Tensor { x.softmax(dim: dim, dtype: dtype) }
    /// `torch.logSoftmax(x, 1)`.
    public static func logSoftmax(_ x: Tensor, _ dim: Int, dtype: DType? = nil) -> Tensor { x.logSoftmax(dim: dim, dtype: dtype) }
    /// `torch.cumsum(x, 0)`.
    public static func cumsum(_ x: Tensor, _ dim: Int, dtype: DType? = nil) -> Tensor { x.cumsum(dim: dim, dtype: dtype) }
    /// `torch.cat([a, b], 1)`.
    public static func cat(_ tensors: [Tensor], _ dim: Int) -> Tensor { cat(tensors, dim: dim) }
    /// `torch.stack([a, b], 1)`.
    public static func stack(_ tensors: [Tensor], _ dim: Int) -> Tensor { stack(tensors, dim: dim) }
    /// `torch.unsqueeze(x, dim: 1)` (tutorial 001).
    public static func unsqueeze(_ x: Tensor, dim: Int) -> Tensor { x.unsqueeze(dim) }
    /// `torch.squeeze(x, dim: 1)`.
    public static func squeeze(_ x: Tensor, dim: Int) -> Tensor { x.squeeze(dim) }
    /// `torch.squeeze(x, [0, 2])`.
    public static func squeeze(_ x: Tensor, _ dims: [Int]) -> Tensor { x.squeeze(dim: dims) }
    /// `torch.flatten(x, 1)`, `torch.flatten(x, 1, 2)`.
    public static func flatten(_ x: Tensor, _ startDim: Int, _ endDim: Int = -1) -> Tensor { x.flatten(startDim: startDim, endDim: endDim) }
    /// `torch.transpose(x, dim0: 0, dim1: 1)`.
    public static func transpose(_ x: Tensor, dim0: Int, dim1: Int) -> Tensor { x.transpose(dim0, dim1) }
}

extension nn.functional {
    /// `F.softmax(x, 1)`.
    public static func softmax(_ x: Tensor, _ dim: Int, dtype: DType? = nil) -> Tensor { x.softmax(dim: dim, dtype: dtype) }
    /// `F.logSoftmax(x, 1)`.
    public static func logSoftmax(_ x: Tensor, _ dim: Int, dtype: DType? = nil) -> Tensor { x.logSoftmax(dim: dim, dtype: dtype) }
}
