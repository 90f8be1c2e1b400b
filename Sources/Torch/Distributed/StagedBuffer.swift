import CMPIShim

/// A tensor's elements as one MPI buffer: the tensor's own memory when it is contiguous and of a
/// type MPI reduces, otherwise a contiguous staging copy (float32 for float16/bfloat16 when
/// reducing) that `writeBack()` copies into the tensor after the call, so views and non-contiguous
/// tensors are updated in place as in PyTorch.
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
        precondition(tensor.device == .cpu, "dist.\(op): only CPU tensors are supported, got a tensor on \(tensor.device)")
        self.tensor = tensor
        let halfType = tensor.dtype == .float16 || tensor.dtype == .bfloat16
        let stageType: DType = reducing && halfType ? .float32 : tensor.dtype
        if tensor.isContiguous && stageType == tensor.dtype {
            staged = tensor
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

    /// Divides the staged values by `n` (ReduceOp.AVG).
    func divide(by n: Int) {
        torch.noGrad { _ = staged.detach().div_(Double(n)) }
    }

    /// Copies the result into the tensor (when staged) and bumps its version counter.
    func writeBack() {
        if staged !== tensor {
            copyKernel(from: staged, into: tensor)
        }
        tensor.storage.bumpVersion()
    }
}
