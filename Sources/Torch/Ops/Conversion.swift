/// Dtype conversion, copies, and getting values out of a tensor.
extension Tensor {
    /// This tensor converted to `dtype` (self when it already has it). Differentiable between floating types.
    ///
    /// ```swift
    /// let x = torch.tensor([1, 2, 3]).to(.float32)
    /// ```
    public func to(_ dtype: DType) -> Tensor {
        if dtype == self.dtype { return self }
        let out = Tensor(uninitializedShape: shape, dtype: dtype, device: device)
        copyKernel(from: self, into: out)
        if needsGrad && dtype.isFloatingPoint {
            let src = self.dtype
            record("ToCopyBackward0", out, inputs: [self]) { _, g in [g.to(src)] }
        }
        return out
    }

    /// This tensor on `device` (self when it is already there), optionally converted to `dtype`; differentiable
    /// (the gradient moves back). A copy from a GPU waits for it; a copy to a GPU from pinned memory does not.
    ///
    /// ```swift
    /// let device = torch.cuda.isAvailable() ? Device.cuda(0) : .cpu
    /// let x = torch.randn(64, 784).to(device)
    /// ```
    public func to(_ device: Device, dtype: DType? = nil) -> Tensor {
        let target = dtype ?? self.dtype
        if device == self.device { return to(target) }
        if case .cuda(let i) = device { _ = CUDARuntime.device(i) }   // PyTorch's errors for unusable devices
        let out = Tensor(uninitializedShape: shape, dtype: target, device: device)
        CUDAElementwise.copy(from: self, into: out)
        if needsGrad {
            let src = self.device, srcType = self.dtype
            record("ToCopyBackward0", out, inputs: [self]) { _, g in [g.to(src, dtype: srcType)] }
        }
        return out
    }

    /// Moves to a device given by name ("cpu", "cuda", "cuda:1").
    public func to(_ device: String) -> Tensor { to(Device(device)) }

    /// PyTorch's `x.cpu()`: self when already on the CPU.
    public func cpu() -> Tensor { to(Device.cpu) }
    /// PyTorch's `x.cuda()`: this tensor on GPU `index` (nil: the current device, `torch.cuda.currentDevice()`).
    public func cuda(_ index: Int? = nil) -> Tensor { to(Device.cuda(index ?? CUDACurrentDevice.index)) }
    /// PyTorch's `x.is_pinned()`: true for page-locked host memory.
    public func isPinned() -> Bool { storage.isPinned }
    /// PyTorch's `x.pin_memory()`: a copy in page-locked host memory (fast, asynchronous copies to a GPU).
    public func pinMemory() -> Tensor {
        precondition(device == .cpu, "pin_memory: cannot pin '\(device)' memory, only CPU tensors")
        if isPinned() { return self }
        let out = Tensor(storage: Storage(pinnedByteCount: numel * dtype.itemSize), shape: shape,
                         strides: contiguousStrides(shape), offset: 0, dtype: dtype)
        copyKernel(from: self, into: out)
        return out
    }

    public func float() -> Tensor { to(.float32) }
    public func double() -> Tensor { to(.float64) }
    public func half() -> Tensor { to(.float16) }
    public func bfloat16() -> Tensor { to(.bfloat16) }
    public func long() -> Tensor { to(.int64) }
    public func int() -> Tensor { to(.int32) }
    public func byte() -> Tensor { to(.uint8) }
    public func bool() -> Tensor { to(.bool) }

    /// A contiguous tensor with the same values (self when already contiguous).
    public func contiguous() -> Tensor {
        if isContiguous { return self }
        return clone()
    }

    /// A copy with its own contiguous storage; differentiable.
    public func clone() -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.alias("aten::clone"), [self], { clone() }) { return r }
        let out = contiguousCopy()
        if needsGrad { record("CloneBackward0", out, inputs: [self]) { _, g in [g] } }
        return out
    }

    /// A contiguous copy, not recorded by autograd.
    func contiguousCopy() -> Tensor {
        let out = Tensor(uninitializedShape: shape, dtype: dtype, device: device)
        copyKernel(from: self, into: out)
        return out
    }

    /// Copies `src` (broadcast to this shape, converted to this dtype) into this tensor, in place.
    @discardableResult
    public func copy_(_ src: Tensor) -> Tensor {
        _ = broadcastShapes(shape, src.shape, op: "copy_")
        checkInPlace("copy_")
        if src.device != device && !(src.device == .cpu && src.dim == 0) { CUDAElementwise.copy(from: src, into: self) }
        else { copyKernel(from: src, into: self) }
        storage.bumpVersion()
        if anyNeedsGrad(self, src) {
            let srcShape = src.shape, srcType = src.dtype
            rebaseHistory("CopyBackwards", inputs: [src]) { _, g in [nil, g.sumToSize(srcShape).to(srcType)] }
        }
        return self
    }

    // MARK: Values out

    /// The single value of a one-element tensor, as a Double.
    public func item() -> Double {
        precondition(numel == 1, "item: a Tensor with \(numel) elements cannot be converted to Scalar")
        return element(atOffset: storageOffset)
    }

    /// The single value as `T` (e.g. `item(as: Int.self)`).
    public func item<T: TensorScalar>(as: T.Type) -> T {
        precondition(numel == 1, "item: a Tensor with \(numel) elements cannot be converted to Scalar")
        if case .cuda = device { return cpu().item(as: T.self) }
        if T.self == Int64.self || T.self == Int.self, dtype == .int64 {
            let v = CPUElementwise.int64(atOffset: storageOffset, of: self)
            return (T.self == Int.self ? Int(v) as! T : v as! T)
        }
        return T(torchDouble: element(atOffset: storageOffset))
    }

    /// All elements in row-major order, converted to `T`.
    ///
    /// ```swift
    /// let v = torch.arange(4).toArray(as: Int.self)   // [0, 1, 2, 3]
    /// ```
    public func toArray<T: TensorScalar>(as: T.Type) -> [T] {
        let n = numel
        if n == 0 { return [] }
        let src = self.to(T.dtype).contiguous().cpu()
        return [T](unsafeUninitializedCapacity: n) { buf, count in
            if T.self == Int.self {
                // Int and Int64 share a layout on 64-bit platforms.
                UnsafeMutableRawPointer(buf.baseAddress!).copyMemory(from: src.rawPointer, byteCount: n * 8)
            } else {
                UnsafeMutableRawPointer(buf.baseAddress!).copyMemory(from: src.rawPointer, byteCount: n * MemoryLayout<T>.stride)
            }
            count = n
        }
    }

    /// Element at a storage offset, as Double.
    func element(atOffset off: Int) -> Double {
        if case .cuda = device {
            let one = Tensor(storage: storage, shape: [], strides: [], offset: off, dtype: dtype)
            return one.contiguousCopyToHost().element(atOffset: 0)
        }
        let p = storage.data
        switch dtype {
        case .float32: return Double(p.assumingMemoryBound(to: Float.self)[off])
        case .float64: return p.assumingMemoryBound(to: Double.self)[off]
        case .float16: return Double(Float(p.assumingMemoryBound(to: Float16.self)[off]))
        case .bfloat16: return Double(p.assumingMemoryBound(to: BFloat16.self)[off].float)
        case .int64: return Double(p.assumingMemoryBound(to: Int64.self)[off])
        case .int32: return Double(p.assumingMemoryBound(to: Int32.self)[off])
        case .uint8: return Double(p.assumingMemoryBound(to: UInt8.self)[off])
        case .bool: return p.assumingMemoryBound(to: Bool.self)[off] ? 1 : 0
        }
    }

    /// Element at a logical row-major index, as Double (used by printing).
    func element(atLinearIndex i: Int) -> Double {
        element(atOffset: storageOffset(ofLinearIndex: i))
    }

    func storageOffset(ofLinearIndex i: Int) -> Int {
        var rem = i
        var off = storageOffset
        var d = shape.count - 1
        while d >= 0 {
            let s = shape[d]
            off += (rem % s) * strides[d]
            rem /= s
            d -= 1
        }
        return off
    }
}

/// Copies `src` (broadcastable to `dst`, on its device or a CPU scalar) into `dst`, converting element types.
/// Between devices only through `to(device)` and `copy_`: an op whose output landed on another device than its
/// input would otherwise move data silently (docs/architecture.md §7).
func copyKernel(from src: Tensor, into dst: Tensor) {
    let device = commonDevice(src, dst)
    if _slowPath(device != dst.device) {
        preconditionFailure("internal: copy from \(src.device) into \(dst.device) outside to(device)/copy_ (an op allocated its output on the wrong device)")
    }
    switch device {
    case .cpu: CPUElementwise.copy(from: src, into: dst)
    case .cuda: CUDAElementwise.copy(from: src, into: dst)
    }
}
