/// The tutorial spellings around devices: `torch.device("cuda")`, `device: "cpu"` string literals,
/// creation functions taking `device:` before `dtype:` as PyTorch code often writes them, and
/// `Tensor.data`.
///
/// ```swift
/// let device = torch.device(torch.cuda.isAvailable() ? "cuda" : "cpu")
/// let x = torch.randn(4, 3, device: device, dtype: torch.float64)
/// ```

extension Device: ExpressibleByStringLiteral {
    /// `device: "cpu"` as in PyTorch's `device="cpu"`.
    public init(stringLiteral value: String) { self.init(value) }
}

extension torch {
    /// PyTorch's `torch.device("cpu")`, `torch.device("cuda:1")`. Creating a CUDA device is allowed
    /// (as in PyTorch on a machine without a GPU); using it to create tensors stops with a message.
    public static func device(_ name: String) -> Device { Device(name) }

    /// `torch.device("cuda", 1)`.
    public static func device(_ type: String, _ index: Int) -> Device {
        switch type {
        case "cpu": return .cpu
        case "cuda": return .cuda(index)
        default: preconditionFailure("device: expected a device type of cpu or cuda but got '\(type)'")
        }
    }

    // Creation functions with `device:` written before `dtype:` (both labels required, so the
    // `dtype:`-first forms stay unambiguous).

    /// `torch.zeros(2, 3, device: device, dtype: dtype)`.
    public static func zeros(_ shape: Int..., device: Device, dtype: DType?, requiresGrad: Bool = false) -> Tensor {
        zeros(shape, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    /// `torch.ones(2, 3, device: device, dtype: dtype)`.
    public static func ones(_ shape: Int..., device: Device, dtype: DType?, requiresGrad: Bool = false) -> Tensor {
        ones(shape, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    /// `torch.empty(2, 3, device: device, dtype: dtype)`.
    public static func empty(_ shape: Int..., device: Device, dtype: DType?, requiresGrad: Bool = false) -> Tensor {
        empty(shape, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
    /// `torch.rand(2, 3, device: device, dtype: dtype)`.
    public static func rand(_ shape: Int..., device: Device, dtype: DType?, generator: Generator? = nil,
                            requiresGrad: Bool = false) -> Tensor {
        rand(shape, dtype: dtype, device: device, generator: generator, requiresGrad: requiresGrad)
    }
    /// `torch.randn(n, d, device: device, dtype: dtype)` (tutorial 003).
    public static func randn(_ shape: Int..., device: Device, dtype: DType?, generator: Generator? = nil,
                             requiresGrad: Bool = false) -> Tensor {
        randn(shape, dtype: dtype, device: device, generator: generator, requiresGrad: requiresGrad)
    }
    /// `torch.tensor([1, 2], device: device, dtype: dtype)`.
    public static func tensor<L: TensorLiteral>(_ data: L, device: Device, dtype: DType?, requiresGrad: Bool = false) -> Tensor {
        tensor(data, dtype: dtype, device: device, requiresGrad: requiresGrad)
    }
}

extension Tensor {
    /// PyTorch's `.data`: a view of the same storage cut from the autograd graph (reading it never
    /// records). Assigning `x.data = y` makes `x` use `y`'s storage, shape and dtype in place,
    /// without autograd noticing, as PyTorch does.
    ///
    /// ```swift
    /// let (_, predicted) = torch.max(outputs.data, 1)
    /// w.data = w.data - 0.1 * w.grad!
    /// ```
    public var data: Tensor {
        get { detach() }
        set {
            storage = newValue.storage
            shape = newValue.shape
            strides = newValue.strides
            storageOffset = newValue.storageOffset
            dtype = newValue.dtype
        }
    }
}
