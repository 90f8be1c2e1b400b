import CCUDAShim

/// Matrix products on CUDA through cuBLAS (column-major), for SwiftTorch's row-major tensors.
///
/// A row-major M×N product C = A·B is, read column-major, Cᵀ = Bᵀ·Aᵀ: cuBLAS gets the operands swapped, and
/// each operand's layout (row- or column-major 2-D view) becomes its `op` flag and leading dimension, so
/// transposed views such as a Linear layer's `weight.t()` need no copy.
enum CUDABlas {
    /// `out = alpha * a @ b + beta * out` for 2-D `a` (M×K) and `b` (K×N) of `out`'s floating dtype; `out`
    /// has contiguous rows, and each operand one unit stride (what `gemmOperand` prepares).
    static func gemm(_ a: Tensor, _ b: Tensor, into out: Tensor, alpha: Double, beta: Double) {
        guard case .cuda(let index) = out.device else { preconditionFailure("CUDABlas.gemm: output on \(out.device)") }
        precondition(a.device == out.device && b.device == out.device, sameDeviceMessage(a.isCuda ? b.device : a.device, out.device))
        let element = gemmElement(out.dtype, op: "addmm_cuda")
        let m = a.shape[0], k = a.shape[1], n = b.shape[1]
        if m == 0 || n == 0 { return }
        if k == 0 {
            if beta == 0 { CUDAElementwise.fill(out, 0) } else if beta != 1 { binaryKernel(.mul, out, Tensor.wrappedNumber(beta, isFloating: true), into: out) }
            return
        }
        let ctx = CUDARuntime.device(index)
        let handle = ctx.blasHandle()
        let (opA, lda) = operand(a.shape[0], a.shape[1], a.strides[0], a.strides[1])
        let (opB, ldb) = operand(b.shape[0], b.shape[1], b.strides[0], b.strides[1])
        let ldc = m == 1 ? Swift.max(n, 1) : out.strides[0]
        ctx.bind()
        CUDALaunchCounter.gemms &+= 1
        let r = stcu_dev_gemm(handle, opB, opA, Int32(n), Int32(m), Int32(k), alpha, b.deviceAddress, Int32(ldb),
                              a.deviceAddress, Int32(lda), beta, out.deviceAddress, Int32(ldc), element)
        if r != 0 {
            preconditionFailure("mm: CUDA error: cuBLAS \(String(cString: stcu_cublas_status_name(r))) when calling \(routine(out.dtype))")
        }
    }

    /// `out[i] = a[i] @ b[i]` for 3-D `a` (B×M×K), `b` (B×K×N) and a contiguous `out` (B×M×N) of float32 or
    /// float64, in one cuBLAS strided-batched call. Each operand's matrices need one unit stride (what
    /// `batchedGemmOperand` prepares); its batch stride may be 0 (an expanded operand).
    static func gemmBatched(_ a: Tensor, _ b: Tensor, into out: Tensor) {
        guard case .cuda(let index) = out.device else { preconditionFailure("CUDABlas.gemmBatched: output on \(out.device)") }
        precondition(a.device == out.device && b.device == out.device, sameDeviceMessage(a.isCuda ? b.device : a.device, out.device))
        let element = gemmElement(out.dtype, op: "bmm_cuda")
        precondition(out.isContiguous, "CUDABlas.gemmBatched: the output must be contiguous")
        let batch = out.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape[2]
        if batch == 0 || m == 0 || n == 0 { return }
        if k == 0 { CUDAElementwise.fill(out, 0); return }
        let ctx = CUDARuntime.device(index)
        let handle = ctx.blasHandle()
        let (opA, lda) = operand(m, k, a.strides[1], a.strides[2])
        let (opB, ldb) = operand(k, n, b.strides[1], b.strides[2])
        ctx.bind()
        CUDALaunchCounter.gemms &+= 1
        let r = stcu_dev_gemm_batched(handle, opB, opA, Int32(n), Int32(m), Int32(k), 1, b.deviceAddress, Int32(ldb),
                                      Int64(batch == 1 ? 0 : b.strides[0]), a.deviceAddress, Int32(lda),
                                      Int64(batch == 1 ? 0 : a.strides[0]), 0, out.deviceAddress, Int32(Swift.max(n, 1)),
                                      Int64(m * n), Int32(batch), element)
        if r != 0 {
            preconditionFailure("bmm: CUDA error: cuBLAS \(String(cString: stcu_cublas_status_name(r))) when calling \(routine(out.dtype))StridedBatched")
        }
    }

    /// The shim's element code for a GEMM of `dtype` (STCU_GEMM_*): float32, float64, and float16/bfloat16
    /// through cublasGemmEx (tensor cores, float32 accumulation).
    private static func gemmElement(_ dtype: DType, op: String) -> Int32 {
        switch dtype {
        case .float32: return Int32(STCU_GEMM_F32)
        case .float64: return Int32(STCU_GEMM_F64)
        case .float16: return Int32(STCU_GEMM_F16)
        case .bfloat16: return Int32(STCU_GEMM_BF16)
        default: preconditionFailure("\"\(op)\" not implemented for '\(dtype.name.capitalized)' (SwiftTorch's CUDA GEMMs take floating types)")
        }
    }

    /// The cuBLAS routine a GEMM of `dtype` calls, for error messages.
    private static func routine(_ dtype: DType) -> String {
        switch dtype {
        case .float64: return "cublasDgemm"
        case .float32: return "cublasSgemm"
        default: return "cublasGemmEx"
        }
    }

    /// cuBLAS's view of a row-major `rows`×`cols` operand with strides (`rowStride`, `colStride`): `N` with the
    /// row stride as leading dimension when its rows are contiguous (cuBLAS reads it as the transpose it
    /// needs), `T` with the column stride when its columns are.
    private static func operand(_ rows: Int, _ cols: Int, _ rowStride: Int, _ colStride: Int) -> (Int32, Int) {
        if rowMajorReadable(rows, cols, rowStride, colStride) {
            return (Int32(CUBLAS_OP_N), rows <= 1 ? Swift.max(cols, 1) : rowStride)
        }
        precondition(rowMajorReadable(cols, rows, colStride, rowStride),
                     "CUDABlas: a \(rows)x\(cols) operand with strides [\(rowStride), \(colStride)] is not a cuBLAS matrix")
        return (Int32(CUBLAS_OP_T), cols <= 1 ? Swift.max(rows, 1) : colStride)
    }

    /// Whether rows are contiguous with a leading dimension cuBLAS accepts (at least the row length; so an
    /// expanded operand, whose stride is 0, is not).
    private static func rowMajorReadable(_ rows: Int, _ cols: Int, _ rowStride: Int, _ colStride: Int) -> Bool {
        (colStride == 1 || cols <= 1) && (rows <= 1 || rowStride >= Swift.max(cols, 1))
    }

    /// Whether cuBLAS can read a `rows`×`cols` operand with these strides in place (else it needs a copy).
    static func readsInPlace(_ rows: Int, _ cols: Int, _ rowStride: Int, _ colStride: Int) -> Bool {
        rowMajorReadable(rows, cols, rowStride, colStride) || rowMajorReadable(cols, rows, colStride, rowStride)
    }
}

extension CUDADeviceContext {
    /// The device's cuBLAS handle on its stream, with TF32 as `torch.backends.cuda.matmul.allowTF32` says.
    func blasHandle() -> cublasHandle_t? {
        if CUDARuntime.isEmulated { return nil }
        bind()
        if cublas == nil {
            if let why = CUDARuntime.status.cublasReason { preconditionFailure("mm: cuBLAS is not available: \(why)") }
            var h: cublasHandle_t? = nil
            let r = stcu_cublasCreate(&h)
            precondition(r == 0, "mm: cublasCreate failed: \(String(cString: stcu_cublas_status_name(r)))")
            _ = stcu_cublasSetStream(h, stream)
            cublas = h
            tf32 = nil
        }
        let allow = torch.backends.cuda.matmul.allowTF32
        if tf32 != allow {
            _ = stcu_cublasSetMathMode(cublas, allow ? Int32(CUBLAS_TF32_TENSOR_OP_MATH) : Int32(CUBLAS_DEFAULT_MATH))
            tf32 = allow
        }
        return cublas
    }
}
