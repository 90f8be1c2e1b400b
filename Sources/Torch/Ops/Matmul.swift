/// Matrix products through the packed GEMM of CTorchKernels: mm, bmm, matmul (every PyTorch case),
/// mv, dot, addmm, outer.

/// out = alpha * a @ b + beta * out for 2-D views `a` (M×K) and `b` (K×N) of `out.dtype`;
/// `out` must have contiguous rows.
func gemm(_ a: Tensor, _ b: Tensor, into out: Tensor, alpha: Double = 1, beta: Double = 0) {
    let n = b.shape[1]
    precondition(out.strides.count == 2 && (out.strides[1] == 1 || n <= 1), "gemm: output rows must be contiguous")
    checkSameDevice(out, a, b)
    switch out.device {
    case .cpu: CPUBlas.gemm(a, b, into: out, alpha: alpha, beta: beta)
    case .cuda: CUDABlas.gemm(a, b, into: out, alpha: alpha, beta: beta)
    }
}

/// The dtype a GEMM of `dt` operands runs in: float16 and bfloat16 natively on CUDA (cuBLAS on the tensor cores,
/// float32 accumulation, as PyTorch's autocast relies on); the CPU's packed GEMM takes float32/float64, so half
/// types go through float32 there.
private func gemmType(_ dt: DType, _ device: Device) -> DType {
    if device != .cpu && (dt == .float16 || dt == .bfloat16) { return dt }
    return dt.computeType
}

/// A 2-D operand GEMM can read directly (one unit stride), else a contiguous copy.
private func gemmOperand(_ t: Tensor, _ dtype: DType) -> Tensor {
    let c = t.to(dtype)
    switch c.device {
    case .cpu:
        if c.strides[1] == 1 || c.strides[0] == 1 || c.shape[0] <= 1 || c.shape[1] <= 1 { return c }
        return c.contiguousCopy()
    case .cuda:
        return CUDABlas.readsInPlace(c.shape[0], c.shape[1], c.strides[0], c.strides[1]) ? c : c.contiguousCopy()
    }
}

/// A 3-D CUDA operand cuBLAS's strided-batched GEMM can read directly (each matrix readable in place, any
/// batch stride), else a contiguous copy.
private func batchedGemmOperand(_ t: Tensor) -> Tensor {
    CUDABlas.readsInPlace(t.shape[1], t.shape[2], t.strides[1], t.strides[2]) ? t : t.contiguous()
}

/// True when a 2-D tensor is column-major (its transpose is contiguous), as a Linear weight seen through `.t()` is.
private func isColumnMajor(_ t: Tensor) -> Bool {
    t.dim == 2 && t.shape[0] > 1 && t.shape[1] > 1 && t.strides[0] == 1 && t.strides[1] == t.shape[0]
}

/// The gradient of `mat1` in `mat1 @ mat2` (g mat2ᵀ), in `mat1`'s layout as PyTorch's mm_mat1_backward makes it:
/// for a column-major `mat1` it is computed as (mat2 gᵀ)ᵀ.
private func mmMat1Backward(_ g: Tensor, _ mat2: Tensor, columnMajor: Bool) -> Tensor {
    columnMajor ? mat2.mm(g.t()).t() : g.mm(mat2.t())
}

/// The gradient of `mat2` in `mat1 @ mat2` (mat1ᵀ g), in `mat2`'s layout as PyTorch's mm_mat2_backward makes it:
/// for a column-major `mat2` (`weight.t()` in a Linear layer) it is computed as (gᵀ mat1)ᵀ, so the weight's
/// gradient reaches AccumulateGrad contiguous instead of being copied there.
private func mmMat2Backward(_ g: Tensor, _ mat1: Tensor, columnMajor: Bool) -> Tensor {
    columnMajor ? g.t().mm(mat1).t() : mat1.t().mm(g)
}

/// The `_saved_` attributes of mm/addmm for its two matrices (name, tensor, what was saved for the
/// other's gradient, whether it needs a gradient itself): each matrix as a tensor (kept only for
/// the other's gradient), its sizes, and its strides (kept only for its own gradient, `()` otherwise);
/// addmm adds its `alpha` and `beta`.
private func matmulAttributes(_ a: (String, Tensor, SavedTensor?, Bool), _ b: (String, Tensor, SavedTensor?, Bool),
                              alphaBeta: (Double, Double)? = nil) -> () -> [SavedAttribute] {
    let (nameA, sa, needA) = (a.0, a.2, a.3), (nameB, sb, needB) = (b.0, b.2, b.3)
    let aShape = a.1.shape, aStrides = a.1.strides, bShape = b.1.shape, bStrides = b.1.strides
    return {
        var r: [SavedAttribute] = []
        if let (alpha, beta) = alphaBeta { r += [.scalar("alpha", alpha), .scalar("beta", beta)] }
        r += [.tensor(nameA, sa), .ints(nameA + "_sym_sizes", aShape), .ints(nameA + "_sym_strides", needA ? aStrides : [])]
        r += [.tensor(nameB, sb), .ints(nameB + "_sym_sizes", bShape), .ints(nameB + "_sym_strides", needB ? bStrides : [])]
        return r
    }
}

extension Tensor {
    /// Matrix product of two 2-D tensors.
    public func mm(_ other: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.mm, [self, other], { $0[0]!.mm($0[1]!) }) { return r }
        precondition(dim == 2, "mm: self must be a matrix (got a \(dim)-D tensor)")
        precondition(other.dim == 2, "mm: mat2 must be a matrix (got a \(other.dim)-D tensor)")
        precondition(shape[1] == other.shape[0], "mm: mat1 and mat2 shapes cannot be multiplied (\(shape[0])x\(shape[1]) and \(other.shape[0])x\(other.shape[1]))")
        let dt = resultType(self, other)
        let device = commonDevice(self, other)
        let compute = gemmType(dt, device)
        let out = Tensor(uninitializedShape: [shape[0], other.shape[1]], dtype: compute, device: device)
        gemm(gemmOperand(self, compute), gemmOperand(other, compute), into: out)
        let result = compute == dt ? out : out.to(dt)
        if anyNeedsGrad(self, other) {
            let needA = _requiresGrad, needB = other._requiresGrad
            let sa = needB ? SavedTensor(self) : nil, sb = needA ? SavedTensor(other) : nil
            let colA = isColumnMajor(self), colB = isColumnMajor(other)
            record("MmBackward0", result, inputs: [self, other],
                   saved: matmulAttributes(("self", self, sa, needA), ("mat2", other, sb, needB))) { node, g in
                [needA ? mmMat1Backward(g, sb!.unpack(node), columnMajor: colA) : nil,
                 needB ? mmMat2Backward(g, sa!.unpack(node), columnMajor: colB) : nil]
            }
        }
        return result
    }

    /// Batched matrix product of two 3-D tensors.
    public func bmm(_ other: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.bmm, [self, other], { $0[0]!.bmm($0[1]!) }) { return r }
        precondition(dim == 3 && other.dim == 3, "bmm: Expected 3-D tensors (got \(dim)-D and \(other.dim)-D)")
        precondition(shape[0] == other.shape[0], "bmm: batch1 and batch2 must have the same batch size (got \(shape[0]) and \(other.shape[0]))")
        precondition(shape[2] == other.shape[1], "bmm: Expected size for first two dimensions of batch2 tensor to be: [\(shape[0]), \(shape[2])] but got: [\(other.shape[0]), \(other.shape[1])].")
        let dt = resultType(self, other)
        let device = commonDevice(self, other)
        let compute = gemmType(dt, device)
        let bsz = shape[0]
        let out = Tensor(uninitializedShape: [bsz, shape[1], other.shape[2]], dtype: compute, device: device)
        let a = self.to(compute), b = other.to(compute)
        switch out.device {
        case .cpu:
            for i in 0..<bsz {
                gemm(gemmOperand(a.select(0, i), compute), gemmOperand(b.select(0, i), compute), into: out.select(0, i))
            }
        case .cuda: CUDABlas.gemmBatched(batchedGemmOperand(a), batchedGemmOperand(b), into: out)
        }
        let result = compute == dt ? out : out.to(dt)
        if anyNeedsGrad(self, other) {
            let needA = _requiresGrad, needB = other._requiresGrad
            let sa = needB ? SavedTensor(self) : nil, sb = needA ? SavedTensor(other) : nil
            record("BmmBackward0", result, inputs: [self, other], saved: { [.tensor("mat2", sb), .tensor("self", sa)] }) { node, g in
                [needA ? g.bmm(sb!.unpack(node).transpose(1, 2)) : nil,
                 needB ? sa!.unpack(node).transpose(1, 2).bmm(g) : nil]
            }
        }
        return result
    }

    /// Matrix × vector.
    public func mv(_ v: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.mv, [self, v], { $0[0]!.mv($0[1]!) }) { return r }
        precondition(dim == 2 && v.dim == 1, "mv: expected a matrix and a vector (got \(dim)-D and \(v.dim)-D)")
        precondition(shape[1] == v.shape[0], "mv: size mismatch, got input (\(shape[0])), mat (\(shape[0])x\(shape[1])), vec (\(v.shape[0]))")
        let out = torch.noGrad { mm(v.unsqueeze(1)).squeeze(1) }
        if anyNeedsGrad(self, v) {
            let needM = _requiresGrad, needV = v._requiresGrad
            let sm = needV ? SavedTensor(self) : nil, sv = needM ? SavedTensor(v) : nil
            record("MvBackward0", out, inputs: [self, v], saved: { [.tensor("self", sm), .tensor("vec", sv)] }) { node, g in
                [needM ? g.outer(sv!.unpack(node)) : nil, needV ? sm!.unpack(node).t().mv(g) : nil]
            }
        }
        return out
    }

    /// Inner product of two 1-D tensors.
    public func dot(_ other: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.dot, [self, other], { $0[0]!.dot($0[1]!) }) { return r }
        precondition(dim == 1 && other.dim == 1, "1D tensors expected, but got \(dim)D and \(other.dim)D tensors")
        precondition(shape[0] == other.shape[0], "inconsistent tensor size, expected tensor [\(shape[0])] and src [\(other.shape[0])] to have the same number of elements, but got \(shape[0]) and \(other.shape[0]) elements respectively")
        let out = torch.noGrad { unsqueeze(0).mm(other.unsqueeze(1)).reshape([]) }
        if anyNeedsGrad(self, other) {
            let needA = _requiresGrad, needB = other._requiresGrad
            let sa = needB ? SavedTensor(self) : nil, sb = needA ? SavedTensor(other) : nil
            record("DotBackward0", out, inputs: [self, other], saved: { [.tensor("self", sa), .tensor("tensor", sb)] }) { node, g in
                [needA ? g * sb!.unpack(node) : nil, needB ? g * sa!.unpack(node) : nil]
            }
        }
        return out
    }

    /// Outer product of two 1-D tensors.
    public func outer(_ other: Tensor) -> Tensor { unsqueeze(1) * other.unsqueeze(0) }

    /// PyTorch's `matmul`: dot, mv, mm, and batched products with broadcast batch dims.
    public func matmul(_ other: Tensor) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.matmul, [self, other], { matmul(other) }) { return r }
        if _slowPath(Autocast.isActive), let r = Autocast.run(.matmul, [self, other], { $0[0]!.matmul($0[1]!) }) { return r }
        let da = dim, db = other.dim
        precondition(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are \(da)D and \(db)D")
        if da == 1 && db == 1 { return dot(other) }
        if da == 2 && db == 1 { return mv(other) }
        if da == 1 && db == 2 { return unsqueeze(0).mm(other).squeeze(0) }
        if da == 2 && db == 2 { return mm(other) }
        if da >= 3 && db <= 2 {
            // Fold batch dims into rows: (..., n, k) @ (k, m).
            let k = shape[da - 1]
            precondition(k == other.shape[0], "matmul: mat1 and mat2 shapes cannot be multiplied (\(numel / k)x\(k) and \(other.shape[0])x\(db == 2 ? other.shape[1] : 1))")
            let folded = reshape(-1, k)
            if db == 1 { return folded.mv(other).reshape(Array(shape.dropLast())) }
            return folded.mm(other).reshape(Array(shape.dropLast()) + [other.shape[1]])
        }
        // General batched case with broadcasting.
        let a = da == 1 ? unsqueeze(0) : self
        let b = db == 1 ? other.unsqueeze(1) : other
        let n = a.shape[a.dim - 2], k = a.shape[a.dim - 1]
        let k2 = b.shape[b.dim - 2], m = b.shape[b.dim - 1]
        precondition(k == k2, "matmul: Expected size for first two dimensions of batch2 tensor to be: [\(k), \(m)] but got: [\(k2), \(m)].")
        let batchA = Array(a.shape.dropLast(2)), batchB = Array(b.shape.dropLast(2))
        let batch = broadcastShapes(batchA, batchB, op: "matmul")
        let bs = shapeNumel(batch)
        let a3 = a.expand(batch + [n, k]).reshape(bs, n, k)
        let b3 = b.expand(batch + [k, m]).reshape(bs, k, m)
        var r = a3.bmm(b3).reshape(batch + [n, m])
        if da == 1 { r = r.squeeze(-2) }
        if db == 1 { r = r.squeeze(-1) }
        return r
    }

    /// beta * self + alpha * (mat1 @ mat2), with self broadcast to the product's shape.
    public func addmm(_ mat1: Tensor, _ mat2: Tensor, beta: Double = 1, alpha: Double = 1) -> Tensor {
        torch.addmm(self, mat1, mat2, beta: beta, alpha: alpha)
    }
}

extension torch {
    public static func mm(_ a: Tensor, _ b: Tensor) -> Tensor { a.mm(b) }
    public static func bmm(_ a: Tensor, _ b: Tensor) -> Tensor { a.bmm(b) }
    public static func matmul(_ a: Tensor, _ b: Tensor) -> Tensor { a.matmul(b) }
    public static func mv(_ a: Tensor, _ v: Tensor) -> Tensor { a.mv(v) }
    public static func dot(_ a: Tensor, _ b: Tensor) -> Tensor { a.dot(b) }
    public static func outer(_ a: Tensor, _ b: Tensor) -> Tensor { a.outer(b) }

    /// beta * input + alpha * (mat1 @ mat2) in one GEMM call (the bias is broadcast into the output first).
    public static func addmm(_ input: Tensor, _ mat1: Tensor, _ mat2: Tensor, beta: Double = 1, alpha: Double = 1) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.addmm, [input, mat1, mat2], { addmm($0[0]!, $0[1]!, $0[2]!, beta: beta, alpha: alpha) }) { return r }
        precondition(mat1.dim == 2 && mat2.dim == 2, "addmm: expected 2-D matrices (got \(mat1.dim)-D and \(mat2.dim)-D)")
        precondition(mat1.shape[1] == mat2.shape[0], "addmm: mat1 and mat2 shapes cannot be multiplied (\(mat1.shape[0])x\(mat1.shape[1]) and \(mat2.shape[0])x\(mat2.shape[1]))")
        let dt = resultType([input, mat1, mat2])
        let device = commonDevice(mat1, mat2)
        let compute = gemmType(dt, device)
        let outShape = [mat1.shape[0], mat2.shape[1]]
        _ = broadcastShapes(outShape, input.shape, op: "addmm")
        let out = Tensor(uninitializedShape: outShape, dtype: compute, device: device)
        if beta != 0 {
            copyKernel(from: input, into: out)
        }
        gemm(gemmOperand(mat1, compute), gemmOperand(mat2, compute), into: out, alpha: alpha, beta: beta == 0 ? 0 : beta)
        let result = compute == dt ? out : out.to(dt)
        if anyNeedsGrad([input, mat1, mat2]) {
            let n1 = mat1._requiresGrad, n2 = mat2._requiresGrad, ni = input._requiresGrad
            let s1 = n2 ? SavedTensor(mat1) : nil, s2 = n1 ? SavedTensor(mat2) : nil
            let inShape = input.shape
            let col1 = isColumnMajor(mat1), col2 = isColumnMajor(mat2)
            record("AddmmBackward0", result, inputs: [input, mat1, mat2],
                   saved: matmulAttributes(("mat1", mat1, s1, n1), ("mat2", mat2, s2, n2), alphaBeta: (alpha, beta))) { node, g in
                let gi: Tensor? = ni ? (beta == 1 ? g : g * beta).sumToSize(inShape) : nil
                var g1: Tensor? = n1 ? mmMat1Backward(g, s2!.unpack(node), columnMajor: col1) : nil
                var g2: Tensor? = n2 ? mmMat2Backward(g, s1!.unpack(node), columnMajor: col2) : nil
                if alpha != 1 { g1 = g1.map { $0 * alpha }; g2 = g2.map { $0 * alpha } }
                return [gi, g1, g2]
            }
        }
        return result
    }
}
