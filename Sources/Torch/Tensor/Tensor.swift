/// A multi-dimensional array with PyTorch's semantics: a strided view of a shared `Storage`,
/// an element type, and autograd state.
///
/// ```swift
/// let x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requiresGrad: true)
/// let y = (x * x).sum()
/// y.backward()
/// print(x.grad!)   // tensor([[2., 4.],
///                  //         [6., 8.]])
/// ```
///
/// `Tensor` is a class (PyTorch's aliasing semantics need reference identity). It is public but not
/// open: the only subclass is `nn.Parameter`, defined in this module.
public class Tensor {
    /// The shared memory this tensor views.
    @exclusivity(unchecked) final public internal(set) var storage: Storage
    /// Sizes of each dimension.
    @exclusivity(unchecked) final public internal(set) var shape: [Int]
    /// Steps, in elements, between neighbours of each dimension.
    @exclusivity(unchecked) final public internal(set) var strides: [Int]
    /// First element's offset, in elements, into `storage`.
    @exclusivity(unchecked) final public internal(set) var storageOffset: Int
    /// Element type.
    @exclusivity(unchecked) final public internal(set) var dtype: DType

    // Autograd state (see Autograd/).
    @exclusivity(unchecked) @usableFromInline final var _requiresGrad = false
    /// Accumulated gradient of a leaf (or of a tensor that called `retainGrad()`).
    @exclusivity(unchecked) final public var grad: Tensor?
    /// The node that produced this tensor, nil for leaves.
    @exclusivity(unchecked) final public internal(set) var gradFn: Node?
    /// Which output of `gradFn` this tensor is.
    final var outputNr = 0
    /// A leaf's gradient accumulator (held weakly: the graph owns it).
    final weak var gradAccumulator: AccumulateGrad?
    /// True after `retainGrad()` on a non-leaf.
    final public internal(set) var retainsGrad = false
    /// Hooks registered with `registerHook`, run on the gradient before it is used.
    final var hooks: [(Tensor) -> Tensor?] = []
    /// Hooks registered with `registerPostAccumulateGradHook`, run after `.grad` was updated.
    final var postAccumulateGradHooks: [(id: Int, hook: (Tensor) -> Void)] = []
    /// The tensor this one is a view of (nil when it owns its storage alone).
    @exclusivity(unchecked) final var viewBase: Tensor?
    /// For a view with autograd history: the storage version when that history was recorded
    /// (see `refreshViewHistory`).
    @exclusivity(unchecked) final var viewHistoryVersion = 0
    /// True for a 0-d tensor made from a Swift number operand (lowest priority in type promotion).
    @exclusivity(unchecked) final var isWrappedNumber = false

    /// Creates a tensor over `storage` (no copy).
    init(storage: Storage, shape: [Int], strides: [Int], offset: Int, dtype: DType) {
        self.storage = storage
        self.shape = shape
        self.strides = strides
        self.storageOffset = offset
        self.dtype = dtype
    }

    /// Allocates an uninitialized contiguous tensor on `device`.
    convenience init(uninitializedShape shape: [Int], dtype: DType, device: Device = .cpu) {
        let n = shapeNumel(shape)
        self.init(storage: Storage(byteCount: n * dtype.itemSize, device: device), shape: shape,
                  strides: contiguousStrides(shape), offset: 0, dtype: dtype)
    }

    /// Creates a tensor of `shape` from a flat array, converting to `dtype` (default: the array's type).
    ///
    /// ```swift
    /// let t = Tensor([1, 2, 3, 4] as [Float], shape: [2, 2])
    /// ```
    public convenience init<T: TensorScalar>(_ values: [T], shape: [Int], dtype: DType? = nil) {
        let n = shapeNumel(shape)
        precondition(values.count == n, "Tensor(_:shape:): \(values.count) values cannot fill shape \(shape) (\(n) elements)")
        self.init(uninitializedShape: shape, dtype: T.dtype)
        values.withUnsafeBufferPointer { src in
            if n > 0 { storage.data.copyMemory(from: src.baseAddress!, byteCount: n * MemoryLayout<T>.stride) }
        }
        if let d = dtype, d != T.dtype {
            let c = self.to(d)
            self.storage = c.storage; self.strides = c.strides; self.dtype = d; self.storageOffset = 0
        }
    }

    deinit {
        if gradFn != nil { DeferredRelease.release(gradFn.take()!) }
    }

    /// A new tensor sharing this one's storage with another shape/strides (a view).
    func makeView(shape: [Int], strides: [Int], offset: Int) -> Tensor {
        let t = Tensor(storage: storage, shape: shape, strides: strides, offset: offset, dtype: dtype)
        t.viewBase = viewBase ?? self
        return t
    }

    // MARK: - Size queries

    /// Number of dimensions.
    @inlinable public var dim: Int { shape.count }
    /// Number of dimensions (PyTorch's `ndim`).
    @inlinable public var ndim: Int { shape.count }
    /// Number of elements.
    public var numel: Int { shapeNumel(shape) }
    /// Where the tensor's memory lives (`x.device` in PyTorch).
    public var device: Device { storage.device }
    /// True when the tensor lives on a CUDA device (`x.is_cuda`).
    public var isCuda: Bool { !storage.isHost }
    /// Size of dimension `d` (negative counts from the end).
    public func size(_ d: Int) -> Int { shape[normalizeDim(d, dim, op: "size")] }
    /// The shape (PyTorch's `x.size()`).
    public func size() -> [Int] { shape }
    /// Stride of dimension `d`.
    public func stride(_ d: Int) -> Int { strides[normalizeDim(d, dim, op: "stride")] }
    /// Bytes per element.
    public var elementSize: Int { dtype.itemSize }
    /// The address of the first element (PyTorch's `x.data_ptr()`): views of one storage differ by their
    /// offset in bytes, e.g. `x.narrow(0, 1, 2).dataPtr() - x.dataPtr() == x.stride(0) * x.elementSize`.
    public func dataPtr() -> Int { storage.isHost ? Int(bitPattern: rawPointer) : Int(truncatingIfNeeded: deviceAddress) }
    /// True for floating dtypes.
    public var isFloatingPoint: Bool { dtype.isFloatingPoint }

    /// True when elements are laid out densely in row-major order.
    public var isContiguous: Bool {
        var expected = 1
        for d in Swift.stride(from: shape.count - 1, through: 0, by: -1) {
            let s = shape[d]
            if s == 1 { continue }
            if strides[d] != expected { return false }
            expected *= s
        }
        return true
    }

    /// Pointer to the first element, for host code: stops when the tensor lives on a GPU, so an op
    /// without a CUDA kernel fails loudly instead of reading device memory (docs/architecture.md §7).
    @inline(__always) var rawPointer: UnsafeMutableRawPointer {
        if _slowPath(!storage.isHost) { hostAccessOnDevice() }
        return storage.data + storageOffset * dtype.itemSize
    }

    @inline(__always) func pointer<T>(_: T.Type) -> UnsafeMutablePointer<T> {
        if _slowPath(!storage.isHost) { hostAccessOnDevice() }
        return (storage.data + storageOffset * dtype.itemSize).assumingMemoryBound(to: T.self)
    }

    /// The first element's device address (CUDA tensors; the kernels' launch arguments).
    @inline(__always) var deviceAddress: UInt64 {
        storage.deviceAddress &+ UInt64(storageOffset * dtype.itemSize)
    }

    /// Stops an op without a CUDA kernel (its dispatch's `case .cuda`, or a host access) with a pointer to docs/cuda.md.
    @inline(never) func hostAccessOnDevice() -> Never {
        preconditionFailure("NotImplementedError: an operation without a 'CUDA' kernel was called on a tensor on \(device) "
            + "(shape \(shapeString(shape)), \(dtype)); move it with .cpu() first. docs/cuda.md lists the ops that run on CUDA.")
    }
}

// MARK: - Shape helpers shared by every op

@inline(__always) func shapeNumel(_ shape: [Int]) -> Int {
    var n = 1
    for s in shape { n &*= s }
    return n
}

/// Row-major strides for `shape`.
func contiguousStrides(_ shape: [Int]) -> [Int] {
    var strides = [Int](repeating: 1, count: shape.count)
    var acc = 1
    var d = shape.count - 1
    while d >= 0 {
        strides[d] = acc
        acc *= max(shape[d], 1)
        d -= 1
    }
    return strides
}

/// Wraps a possibly negative dim into `0..<rank`, stopping with PyTorch's message when out of range.
@inline(__always) func normalizeDim(_ d: Int, _ rank: Int, op: String) -> Int {
    let r = max(rank, 1)
    if d >= -r && d < r { return d < 0 ? d + r : d }
    preconditionFailure(dimErrorMessage(op: op, dim: d, rank: rank))
}

/// The message PyTorch gives for an out-of-range dim.
func dimErrorMessage(op: String, dim: Int, rank: Int) -> String {
    let r = max(rank, 1)
    return "\(op): Dimension out of range (expected to be in range of [\(-r), \(r - 1)], but got \(dim))"
}

/// PyTorch's formatting of a shape in messages: `[2, 3]`.
func shapeString(_ s: [Int]) -> String { "[" + s.map(String.init).joined(separator: ", ") + "]" }
