import CMPIShim

/// A tensor's elements as one MPI buffer: the tensor's own memory when it is a contiguous CPU tensor of a
/// type MPI reduces, otherwise a contiguous host staging copy (float32 for float16/bfloat16 when reducing)
/// that `writeBack()` copies into the tensor after the call, so views and non-contiguous tensors are updated
/// in place as in PyTorch.
///
/// CUDA tensors always go through a staging copy in pinned host memory: MPI reads and writes host memory
/// only (a CUDA-aware MPI is not assumed), and pinned memory makes the copy back to the device an
/// asynchronous DMA transfer ordered on the device's stream before any later kernel that reads the tensor.
struct StagedBuffer {
    let tensor: Tensor
    let staged: Tensor
    let mpiType: stmpi_dtype_t
    /// Number of `mpiType` elements.
    let count: Int32

    /// - Parameters:
    ///   - reducing: the buffer goes through a reduction (needs a real MPI arithmetic type).
    ///   - copyIn: the call reads the tensor's values (false for receive-only buffers).
    init(_ tensor: Tensor, op: String, reducing: Bool, copyIn: Bool = true) {
        self.tensor = tensor
        let halfType = tensor.dtype == .float16 || tensor.dtype == .bfloat16
        let stageType: DType = reducing && halfType ? .float32 : tensor.dtype
        if tensor.device == .cpu && tensor.isContiguous && stageType == tensor.dtype {
            staged = tensor
        } else if tensor.device != .cpu {
            // Device → pinned host: the download waits for the kernels that wrote `tensor`.
            let host = Tensor(storage: Storage(pinnedByteCount: tensor.numel * stageType.itemSize), shape: tensor.shape,
                              strides: contiguousStrides(tensor.shape), offset: 0, dtype: stageType)
            if copyIn { CUDAElementwise.copy(from: tensor.detach(), into: host) }
            staged = host
        } else if copyIn {
            staged = torch.noGrad { tensor.detach().to(stageType).contiguousCopy() }
        } else {
            staged = Tensor(uninitializedShape: tensor.shape, dtype: stageType)
        }
        var n = staged.numel
        switch staged.dtype {
        case .float32: mpiType = STMPI_FLOAT
        case .float64: mpiType = STMPI_DOUBLE
        case .int64: mpiType = STMPI_INT64
        case .int32: mpiType = STMPI_INT32
        case .uint8: mpiType = STMPI_UINT8
        case .bool: mpiType = reducing ? STMPI_BOOL : STMPI_BYTE
        case .float16, .bfloat16: mpiType = STMPI_BYTE; n *= 2
        }
        precondition(n <= Int(Int32.max), "dist.\(op): tensors of more than \(Int32.max) elements are not supported (got \(tensor.numel))")
        count = Int32(n)
    }

    /// Where MPI reads and writes.
    var pointer: UnsafeMutableRawPointer { staged.rawPointer }

    /// Whether `writeBack()` copies to a GPU: it must then run on a thread that may use the device (the caller's),
    /// not on the communication thread.
    var writesToDevice: Bool { tensor.device != .cpu }

    /// Divides the staged values by `n` (ReduceOp.AVG).
    func divide(by n: Int) {
        torch.noGrad { _ = staged.detach().div_(Double(n)) }
    }

    /// Copies the result into the tensor (when staged) and bumps its version counter.
    func writeBack() {
        if staged !== tensor {
            copyAcrossDevices(from: staged, into: tensor)
        }
        tensor.storage.bumpVersion()
    }
}

/// `dst = src` where the two may sit on different devices (the collectives' host results into CUDA tensors).
func copyAcrossDevices(from src: Tensor, into dst: Tensor) {
    if src.device == dst.device {
        copyKernel(from: src, into: dst)
    } else {
        CUDAElementwise.copy(from: src, into: dst)
    }
}

/// `t` in host memory for MPI to read: itself on the CPU, else a copy.
func onHost(_ t: Tensor) -> Tensor {
    t.device == .cpu ? t : t.contiguousCopyToHost()
}
