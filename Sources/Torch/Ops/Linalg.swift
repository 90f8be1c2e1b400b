/// `torch.linalg` on top of `LinalgKernels` (one Double matrix per call). This file holds the shared
/// plumbing (messages, differentiable helpers; the Double matrix buffers are in
/// Backend/CPU/CPULinalgBuffers.swift), det, slogdet, inv, solve, cross, and the
/// `torch.*` / `Tensor` twins (`det`, `inverse`, `logdet`, `slogdet`, `pinverse`, legacy `svd` and `eig`);
/// svd/svdvals, eigh/eigvalsh, eig/eigvals, cholesky and qr are in LinalgDecompositions.swift, norms,
/// matrix rank and pinv in LinalgNorms.swift.
///
/// Inputs are float32 or float64 with shape (…, m, n); every matrix of the batch is converted to a
/// contiguous Double buffer, handed to the kernel, and the results are converted back to the input's
/// dtype. Backward formulas (PyTorch's, from `FunctionsManual.cpp`) are written with differentiable
/// tensor ops, so second derivatives work where PyTorch's do.
///
/// Errors: shapes, dtypes and arguments are programmer errors (`precondition` with PyTorch's message).
/// A singular matrix given to `inv`/`solve`, or a non positive-definite one given to `cholesky`, is a
/// value error in PyTorch (`torch.linalg.LinAlgError`); here it is also a `precondition` with the same
/// message — check `det`/`slogdet`/`matrixRank` first when the input may be singular.

// MARK: - Messages (tested directly; preconditions can't be caught)

/// The message for an input dtype linalg ops don't accept, or nil for float32/float64.
func linalgDTypeMessage(_ op: String, _ dtype: DType) -> String? {
    switch dtype {
    case .float32, .float64: return nil
    case .float16, .bfloat16: return "\(op): Low precision dtypes not supported. Got \(scalarTypeName(dtype))"
    default: return "\(op): Expected a floating point or complex tensor as input. Got \(scalarTypeName(dtype))"
    }
}

/// The message for a shape that is not a (batch of) matrix (square when `square`), or nil.
func linalgShapeMessage(_ op: String, _ shape: [Int], square: Bool, name: String = "A") -> String? {
    if shape.count < 2 { return "\(op): The input tensor \(name) must have at least 2 dimensions." }
    let m = shape[shape.count - 2], n = shape[shape.count - 1]
    if square && m != n { return "\(op): A must be batches of square matrices, but they are \(m) by \(n) matrices" }
    return nil
}

/// "(Batch element i): " when the input is batched, as PyTorch prefixes LinAlgError messages.
private func batchPrefix(_ batchShape: [Int], _ index: Int) -> String {
    batchShape.isEmpty ? "" : "(Batch element \(index)): "
}

/// PyTorch's LinAlgError message for `linalg.inv` of a singular matrix (`pivot` is 1-based).
func linalgSingularInverseMessage(batchShape: [Int], batchIndex: Int, pivot: Int) -> String {
    "linalg.inv: \(batchPrefix(batchShape, batchIndex))The diagonal element \(pivot) is zero, the inversion could not be completed because the input matrix is singular."
}

/// PyTorch's LinAlgError message for `linalg.solve` with a singular A.
func linalgSingularSolveMessage(batchShape: [Int], batchIndex: Int) -> String {
    "torch.linalg.solve: \(batchPrefix(batchShape, batchIndex))The solver failed because the input matrix is singular."
}

/// PyTorch's LinAlgError message for `linalg.cholesky` of a matrix that is not positive-definite.
func linalgCholeskyMessage(batchShape: [Int], batchIndex: Int, order: Int) -> String {
    "linalg.cholesky: \(batchPrefix(batchShape, batchIndex))The factorization could not be completed because the input is not positive-definite (the leading minor of order \(order) is not positive-definite)."
}

/// PyTorch's message for `linalg.solve` shapes that don't fit AX = B.
func linalgSolveShapeMessage(_ aShape: [Int], _ bMatrixShape: [Int]) -> String {
    let n = aShape[aShape.count - 1]
    let r = bMatrixShape[bMatrixShape.count - 2], c = bMatrixShape[bMatrixShape.count - 1]
    return "linalg.solve: Incompatible shapes of A and B for the equation AX = B (\(n)x\(n) and \(r)x\(c))"
}

func checkLinalgInput(_ A: Tensor, _ op: String, square: Bool) {
    if let m = linalgDTypeMessage(op, A.dtype) { preconditionFailure(m) }
    if let m = linalgShapeMessage(op, A.shape, square: square) { preconditionFailure(m) }
}

/// 1-based index of the first exactly-zero pivot of the LU factorization (getrf's `info`), or nil.
private func firstZeroPivot(_ a: UnsafePointer<Double>, n: Int) -> Int? {
    let lu = UnsafeMutablePointer<Double>.allocate(capacity: max(n * n, 1))
    let piv = UnsafeMutablePointer<Int>.allocate(capacity: max(n, 1))
    defer { lu.deallocate(); piv.deallocate() }
    lu.initialize(from: a, count: n * n)
    LinalgKernels.luFactor(lu, n: n, pivots: piv)
    for i in 0..<n where lu[i * n + i] == 0 { return i + 1 }
    return nil
}

// MARK: - Differentiable helpers used by the backward formulas (and einsum)

/// The diagonal of dims `d1`, `d2` as a view, appended as the last dim (`torch.diagonal(x, 0, d1, d2)`).
func linalgDiagonal(_ x: Tensor, _ d1: Int = -2, _ d2: Int = -1) -> Tensor {
    let a = normalizeDim(d1, x.dim, op: "diagonal"), b = normalizeDim(d2, x.dim, op: "diagonal")
    precondition(a != b, "diagonal dimensions cannot be identical \(d1), \(d2)")
    var shape: [Int] = [], strides: [Int] = []
    for i in 0..<x.dim where i != a && i != b { shape.append(x.shape[i]); strides.append(x.strides[i]) }
    shape.append(Swift.min(x.shape[a], x.shape[b]))
    strides.append(x.strides[a] + x.strides[b])
    let inShape = x.shape
    return x.viewOp("DiagonalBackward0", shape: shape, strides: strides, offset: x.storageOffset, backward: { g in
        embedGradient(g, into: inShape) { linalgDiagonal($0, a, b) }
    })
}

/// (…, k) → (…, k, k) with the values on the diagonal (`torch.diag_embed`); differentiable.
func diagEmbed(_ s: Tensor) -> Tensor {
    let k = s.shape[s.dim - 1]
    return s.unsqueeze(-1) * torch.eye(k, dtype: s.dtype)
}

/// Lower (`upper == false`) or upper triangle of the last two dims, via a constant mask; differentiable.
func triangle(_ x: Tensor, upper: Bool, diagonal: Int = 0) -> Tensor {
    let m = x.shape[x.dim - 2], n = x.shape[x.dim - 1]
    var mask = [Double](repeating: 0, count: m * n)
    for i in 0..<m { for j in 0..<n where upper ? (j - i >= diagonal) : (j - i <= diagonal) { mask[i * n + j] = 1 } }
    return x * Tensor(mask, shape: [m, n], dtype: x.dtype)
}

/// Inserts size-1 dims at the (sorted, normalized) reduced `dims` of a reduction's output.
func unsqueezeReduced(_ t: Tensor, _ dims: [Int]) -> Tensor {
    var r = t
    for d in dims.sorted() { r = r.unsqueeze(d) }
    return r
}

extension torch {
    /// PyTorch's `torch.linalg`: decompositions, solvers, inverses and norms of (batches of) matrices.
    ///
    /// ```swift
    /// let A = torch.tensor([[4.0, 1.0], [2.0, 3.0]])
    /// let x = torch.linalg.solve(A, torch.tensor([1.0, 2.0]))
    /// let (U, S, Vh) = torch.linalg.svd(A, fullMatrices: false)
    /// ```
    public enum linalg {}
}

// MARK: - det, slogdet, inv, solve

extension torch.linalg {
    /// Determinant of a square matrix or of each matrix of a batch (…, n, n).
    ///
    /// Differentiable (`LinalgDetBackward0`: g·det(A)·A⁻ᵀ); for a singular matrix the gradient is the
    /// cofactor matrix computed through the SVD, which is finite.
    public static func det(_ A: Tensor) -> Tensor {
        checkLinalgInput(A, "linalg.det", square: true)
        let b = MatrixBatch(A), n = b.rows
        let (out, po) = doubleBuffer(b.batchShape)
        for i in 0..<b.count { po[i] = LinalgKernels.det(b.matrix(i), n: n) }
        let result = out.to(A.dtype)
        if A.needsGrad {
            let sa = SavedTensor(A), sd = SavedTensor(output: result)
            record("LinalgDetBackward0", result, inputs: [A]) { node, g in
                [detBackward(g, sd.unpack(node), sa.unpack(node))]
            }
        }
        return result
    }

    /// `(sign, logabsdet)` of the determinant, without its over/underflow; `(0, -inf)` when singular.
    /// Only `logabsdet` is differentiable (`LinalgSlogdetBackward0`: g·A⁻ᵀ).
    public static func slogdet(_ A: Tensor) -> (sign: Tensor, logabsdet: Tensor) {
        checkLinalgInput(A, "linalg.slogdet", square: true)
        let b = MatrixBatch(A), n = b.rows
        let (s, ps) = doubleBuffer(b.batchShape), (l, pl) = doubleBuffer(b.batchShape)
        for i in 0..<b.count { (ps[i], pl[i]) = LinalgKernels.slogdet(b.matrix(i), n: n) }
        let sign = s.to(A.dtype), logabs = l.to(A.dtype)
        if A.needsGrad {
            let sa = SavedTensor(A)
            record("LinalgSlogdetBackward0", logabs, inputs: [A]) { node, g in
                [g.unsqueeze(-1).unsqueeze(-1) * inverseImpl(sa.unpack(node), check: false).mT]
            }
        }
        return (sign, logabs)
    }

    /// Inverse of a square matrix or of each matrix of a batch (`LinalgInvExBackward0`: −A⁻ᵀ g A⁻ᵀ).
    ///
    /// A singular matrix stops with PyTorch's LinAlgError message, e.g. "linalg.inv: The diagonal
    /// element 2 is zero, the inversion could not be completed because the input matrix is singular."
    public static func inv(_ A: Tensor) -> Tensor {
        checkLinalgInput(A, "linalg.inv", square: true)
        return inverseImpl(A, check: true)
    }

    /// Solves `A X = B` for X. `B` is a vector (…, n) when it is 1-D or has exactly A's shape minus the
    /// last dim, else a matrix (…, n, k); batch dims broadcast. Differentiable in A and B
    /// (`LinalgSolveExBackward0`). A singular A stops with PyTorch's LinAlgError message.
    public static func solve(_ A: Tensor, _ B: Tensor) -> Tensor {
        checkLinalgInput(A, "linalg.solve", square: true)
        precondition(A.dtype == B.dtype, "linalg.solve: Expected A and B to have the same dtype, but found A of type \(scalarTypeName(A.dtype)) and B of type \(scalarTypeName(B.dtype)) instead")
        let n = A.shape[A.dim - 1]
        let vectorCase = B.dim == 1 || (B.dim == A.dim - 1 && B.shape == Array(A.shape.dropLast()))
        precondition(B.dim >= 1, "linalg.solve: The input tensor B must have at least 1 dimensions.")
        let bMatShape = vectorCase ? B.shape + [1] : B.shape
        precondition(bMatShape[bMatShape.count - 2] == n, linalgSolveShapeMessage(A.shape, bMatShape))
        let k = bMatShape[bMatShape.count - 1]
        let batch = broadcastShapes(Array(A.shape.dropLast(2)), Array(bMatShape.dropLast(2)), op: "linalg.solve")
        let ab = MatrixBatch(torch.noGrad { A.expand(batch + [n, n]) })
        let bb = MatrixBatch(torch.noGrad { B.reshape(bMatShape).expand(batch + [n, k]) })
        let outShape = vectorCase ? batch + [n] : batch + [n, k]
        let (out, po) = doubleBuffer(outShape)
        for i in 0..<ab.count {
            let ok = LinalgKernels.solve(ab.matrix(i), n: n, b: bb.matrix(i), nrhs: k, out: po + i * n * k)
            precondition(ok, linalgSingularSolveMessage(batchShape: batch, batchIndex: i))
        }
        let X = out.to(A.dtype)
        if anyNeedsGrad(A, B) {
            let needA = A._requiresGrad, needB = B._requiresGrad
            let sa = SavedTensor(A), sx = SavedTensor(output: X)
            let aShape = A.shape, bShape = B.shape
            record("LinalgSolveExBackward0", X, inputs: [A, B]) { node, g in
                let a = sa.unpack(node), x = sx.unpack(node)
                let gm = vectorCase ? g.unsqueeze(-1) : g
                let xm = vectorCase ? x.unsqueeze(-1) : x
                let gB = solve(a.mT, gm)
                let gA: Tensor? = needA ? (-gB.matmul(xm.mT)).sumToSize(aShape) : nil
                let gBo: Tensor? = needB ? (vectorCase ? gB.squeeze(-1) : gB).sumToSize(bShape) : nil
                return [gA, gBo]
            }
        }
        return X
    }
}

/// Batched inverse; `check` stops on a singular matrix, otherwise its inverse is NaN.
private func inverseImpl(_ A: Tensor, check: Bool) -> Tensor {
    let b = MatrixBatch(A), n = b.rows
    let (out, po) = doubleBuffer(A.shape)
    for i in 0..<b.count {
        let ok = LinalgKernels.inverse(b.matrix(i), n: n, out: po + i * n * n)
        if !ok && check {
            let pivot = firstZeroPivot(b.matrix(i), n: n) ?? n
            preconditionFailure(linalgSingularInverseMessage(batchShape: b.batchShape, batchIndex: i, pivot: pivot))
        }
    }
    let result = out.to(A.dtype)
    if A.needsGrad {
        let so = SavedTensor(output: result)
        record("LinalgInvExBackward0", result, inputs: [A]) { node, g in
            let t = so.unpack(node).mT
            return [-(t.matmul(g).matmul(t))]
        }
    }
    return result
}

/// Gradient of det: g · cofactor(A). Uses the differentiable det·A⁻ᵀ when every matrix is invertible
/// and a graph of the gradient is wanted; otherwise the cofactor matrices computed numerically (through
/// the SVD for singular ones: cof(A) = det(U)det(Vh) · U diag(∏_{j≠i} s_j) Vh).
private func detBackward(_ g: Tensor, _ det: Tensor, _ A: Tensor) -> Tensor {
    let b = MatrixBatch(A), n = b.rows
    let (cof, pc) = doubleBuffer(A.shape)
    var allRegular = true
    let inv = UnsafeMutablePointer<Double>.allocate(capacity: max(n * n, 1))
    let u = UnsafeMutablePointer<Double>.allocate(capacity: max(n * n, 1))
    let vh = UnsafeMutablePointer<Double>.allocate(capacity: max(n * n, 1))
    let s = UnsafeMutablePointer<Double>.allocate(capacity: max(n, 1))
    defer { inv.deallocate(); u.deallocate(); vh.deallocate(); s.deallocate() }
    for i in 0..<b.count {
        let a = b.matrix(i), c = pc + i * n * n
        if LinalgKernels.inverse(a, n: n, out: inv) {
            let d = LinalgKernels.det(a, n: n)
            for r in 0..<n { for k in 0..<n { c[r * n + k] = d * inv[k * n + r] } }
            continue
        }
        allRegular = false
        LinalgKernels.svd(a, m: n, n: n, u: u, s: s, vh: vh, fullMatrices: true)
        let sign = LinalgKernels.det(u, n: n) * LinalgKernels.det(vh, n: n)
        var others = [Double](repeating: 1, count: n)   // ∏_{j≠i} s_j by prefix/suffix products
        var acc = 1.0
        for j in 0..<n { others[j] = acc; acc *= s[j] }
        acc = 1
        for j in stride(from: n - 1, through: 0, by: -1) { others[j] *= acc; acc *= s[j] }
        for r in 0..<n {
            for k in 0..<n {
                var sum = 0.0
                for j in 0..<n { sum += u[r * n + j] * others[j] * vh[j * n + k] }
                c[r * n + k] = sign * sum
            }
        }
    }
    let gm = g.unsqueeze(-1).unsqueeze(-1)
    if allRegular && GradMode.isEnabled {
        return (g * det).unsqueeze(-1).unsqueeze(-1) * inverseImpl(A, check: false).mT
    }
    return gm * cof.to(g.dtype)
}

// MARK: - cross

extension torch.linalg {
    /// Cross product of 3-vectors along `dim` (inputs broadcast); differentiable (`LinalgCrossBackward0`).
    public static func cross(_ input: Tensor, _ other: Tensor, dim: Int = -1) -> Tensor {
        let shape = broadcastShapes(input.shape, other.shape, op: "linalg.cross")
        let d = normalizeDim(dim, shape.count, op: "linalg.cross")
        func sizeAt(_ t: Tensor) -> Int { let i = d - (shape.count - t.dim); return i >= 0 ? t.shape[i] : 1 }
        let la = sizeAt(input), lb = sizeAt(other)
        precondition(la == 3 && lb == 3, "linalg.cross: inputs dimension \(dim) must have length 3. Got \(la) and \(lb)")
        let result = torch.noGrad { crossProduct(input, other, d, shape) }
        if anyNeedsGrad(input, other) {
            let sa = SavedTensor(input), sb = SavedTensor(other)
            let needA = input._requiresGrad, needB = other._requiresGrad
            let aShape = input.shape, bShape = other.shape
            record("LinalgCrossBackward0", result, inputs: [input, other]) { node, g in
                let a = sa.unpack(node), b = sb.unpack(node)
                return [needA ? crossProduct(b, g, d, shape).sumToSize(aShape) : nil,
                        needB ? crossProduct(g, a, d, shape).sumToSize(bShape) : nil]
            }
        }
        return result
    }
}

/// a × b along dim `d` of the broadcast `shape`, through two cyclic permutation matrices (differentiable).
private func crossProduct(_ a: Tensor, _ b: Tensor, _ d: Int, _ shape: [Int]) -> Tensor {
    let ae = a.expand(shape).movedim(d, -1), be = b.expand(shape).movedim(d, -1)
    let dt = DType.promote(a.dtype, b.dtype)
    // x @ P1 = (x1, x2, x0), x @ P2 = (x2, x0, x1)
    let p1 = Tensor([0, 0, 1, 1, 0, 0, 0, 1, 0] as [Double], shape: [3, 3], dtype: dt)
    let p2 = Tensor([0, 1, 0, 0, 0, 1, 1, 0, 0] as [Double], shape: [3, 3], dtype: dt)
    let a1 = ae.matmul(p1), a2 = ae.matmul(p2), b1 = be.matmul(p1), b2 = be.matmul(p2)
    return (a1 * b2 - a2 * b1).movedim(-1, d)
}

// MARK: - torch.* and Tensor twins

extension torch {
    /// `torch.det`: determinant (see `torch.linalg.det`).
    public static func det(_ A: Tensor) -> Tensor { linalg.det(A) }
    /// `torch.logdet`: log of the determinant; NaN where it is negative, -inf where it is 0.
    public static func logdet(_ A: Tensor) -> Tensor {
        let (sign, logabs) = linalg.slogdet(A)
        return torch.where(sign .< 0, Double.nan, logabs)
    }
    /// `torch.slogdet`: (sign, logabsdet) of the determinant.
    public static func slogdet(_ A: Tensor) -> (sign: Tensor, logabsdet: Tensor) { linalg.slogdet(A) }
    /// `torch.inverse`: matrix inverse (see `torch.linalg.inv`).
    public static func inverse(_ A: Tensor) -> Tensor { linalg.inv(A) }
    /// `torch.pinverse`: pseudo-inverse with relative cutoff `rcond`.
    public static func pinverse(_ A: Tensor, rcond: Double = 1e-15) -> Tensor { linalg.pinv(A, rtol: rcond) }

    /// Legacy `torch.svd`: `(U, S, V)` with V (not Vh); `some: true` gives the reduced factors.
    /// With `computeUV: false`, U and V are zero matrices (m×m, n×n) as in PyTorch.
    public static func svd(_ A: Tensor, some: Bool = true, computeUV: Bool = true) -> (U: Tensor, S: Tensor, V: Tensor) {
        if !computeUV {
            let m = A.shape[A.dim - 2], n = A.shape[A.dim - 1], batch = Array(A.shape.dropLast(2))
            return (torch.zeros(batch + [m, m], dtype: A.dtype), linalg.svdvals(A), torch.zeros(batch + [n, n], dtype: A.dtype))
        }
        let (U, S, Vh) = linalg.svd(A, fullMatrices: !some)
        return (U, S, Vh.mT)
    }

    /// Legacy `torch.eig` (removed from PyTorch 2, kept for the 1.x tutorials): eigenvalues as an n×2
    /// tensor of (real, imaginary) rows, and — when `eigenvectors` — the real n×n matrix whose columns
    /// are the real eigenvectors, or for a complex pair (j, j+1) the real and imaginary parts of
    /// eigenvector j; an empty tensor otherwise. Only 2-D input.
    public static func eig(_ A: Tensor, eigenvectors: Bool = false) -> (eigenvalues: Tensor, eigenvectors: Tensor) {
        precondition(A.dim == 2, "eig: input should be 2 dimensional (got \(A.dim)-D)")
        let r = linalg.eig(A)
        let n = A.shape[0]
        let wr = r.eigenvaluesReal.toArray(as: Double.self), wi = r.eigenvaluesImag.toArray(as: Double.self)
        var values = [Double](repeating: 0, count: 2 * n)
        for j in 0..<n { values[2 * j] = wr[j]; values[2 * j + 1] = wi[j] }
        let vals = Tensor(values, shape: [n, 2], dtype: A.dtype)
        guard eigenvectors else { return (vals, torch.zeros([0], dtype: A.dtype)) }
        let vr = r.eigenvectorsReal.toArray(as: Double.self), vi = r.eigenvectorsImag.toArray(as: Double.self)
        var packed = [Double](repeating: 0, count: n * n)
        var j = 0
        while j < n {
            for i in 0..<n { packed[i * n + j] = vr[i * n + j] }
            if wi[j] != 0 && j + 1 < n {
                for i in 0..<n { packed[i * n + j + 1] = vi[i * n + j] }
                j += 2
            } else {
                j += 1
            }
        }
        return (vals, Tensor(packed, shape: [n, n], dtype: A.dtype))
    }

    /// `torch.cross`: cross product along `dim` (default: the first dim of size 3, as PyTorch).
    public static func cross(_ a: Tensor, _ b: Tensor, dim: Int? = nil) -> Tensor {
        if let dim { return linalg.cross(a, b, dim: dim) }
        let shape = broadcastShapes(a.shape, b.shape, op: "cross")
        let d = shape.firstIndex(of: 3)
        precondition(d != nil, "no dimension of size 3 in input")
        return linalg.cross(a, b, dim: d!)
    }
}

extension Tensor {
    /// Determinant (see `torch.linalg.det`).
    public func det() -> Tensor { torch.linalg.det(self) }
    /// Log-determinant (see `torch.logdet`).
    public func logdet() -> Tensor { torch.logdet(self) }
    /// (sign, logabsdet) of the determinant.
    public func slogdet() -> (sign: Tensor, logabsdet: Tensor) { torch.linalg.slogdet(self) }
    /// Matrix inverse (see `torch.linalg.inv`).
    public func inverse() -> Tensor { torch.linalg.inv(self) }
    /// Pseudo-inverse (see `torch.pinverse`).
    public func pinverse(rcond: Double = 1e-15) -> Tensor { torch.pinverse(self, rcond: rcond) }
    /// Legacy SVD returning V (see `torch.svd`).
    public func svd(some: Bool = true, computeUV: Bool = true) -> (U: Tensor, S: Tensor, V: Tensor) {
        torch.svd(self, some: some, computeUV: computeUV)
    }
    /// Cross product along `dim` (see `torch.cross`).
    public func cross(_ other: Tensor, dim: Int? = nil) -> Tensor { torch.cross(self, other, dim: dim) }
}
