import Foundation

/// `torch.linalg` on top of `LinalgKernels` (one Double matrix per call): det, slogdet, inv, solve,
/// svd/svdvals, eigh/eigvalsh, eig/eigvals, norms, matrix rank, pinv, cholesky, qr, cross, and the
/// `torch.*` / `Tensor` twins (`det`, `inverse`, `logdet`, `slogdet`, `pinverse`, legacy `svd` and `eig`).
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

private func checkLinalgInput(_ A: Tensor, _ op: String, square: Bool) {
    if let m = linalgDTypeMessage(op, A.dtype) { preconditionFailure(m) }
    if let m = linalgShapeMessage(op, A.shape, square: square) { preconditionFailure(m) }
}

// MARK: - Batched matrix plumbing

/// A (…, rows, cols) tensor as a contiguous Double buffer, one matrix after another.
private struct MatrixBatch {
    let data: Tensor
    let batchShape: [Int]
    let rows: Int
    let cols: Int
    let count: Int

    init(_ a: Tensor) {
        data = torch.noGrad { a.to(.float64).contiguous() }
        batchShape = Array(a.shape.dropLast(2))
        rows = a.shape[a.dim - 2]
        cols = a.shape[a.dim - 1]
        count = shapeNumel(batchShape)
    }

    func matrix(_ i: Int) -> UnsafePointer<Double> {
        UnsafePointer(data.pointer(Double.self) + i * rows * cols)
    }
}

/// A new contiguous float64 tensor and its element pointer.
private func doubleBuffer(_ shape: [Int]) -> (Tensor, UnsafeMutablePointer<Double>) {
    let t = Tensor(uninitializedShape: shape, dtype: .float64)
    return (t, t.pointer(Double.self))
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
private func diagEmbed(_ s: Tensor) -> Tensor {
    let k = s.shape[s.dim - 1]
    return s.unsqueeze(-1) * torch.eye(k, dtype: s.dtype)
}

/// Lower (`upper == false`) or upper triangle of the last two dims, via a constant mask; differentiable.
private func triangle(_ x: Tensor, upper: Bool, diagonal: Int = 0) -> Tensor {
    let m = x.shape[x.dim - 2], n = x.shape[x.dim - 1]
    var mask = [Double](repeating: 0, count: m * n)
    for i in 0..<m { for j in 0..<n where upper ? (j - i >= diagonal) : (j - i <= diagonal) { mask[i * n + j] = 1 } }
    return x * Tensor(mask, shape: [m, n], dtype: x.dtype)
}

/// Inserts size-1 dims at the (sorted, normalized) reduced `dims` of a reduction's output.
private func unsqueezeReduced(_ t: Tensor, _ dims: [Int]) -> Tensor {
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

// MARK: - SVD

extension torch.linalg {
    /// Singular value decomposition `A = U · diag(S) · Vh` of a matrix or batch (…, m, n).
    ///
    /// With k = min(m, n): `fullMatrices: true` gives U (…, m, m) and Vh (…, n, n); `false` gives
    /// U (…, m, k) and Vh (…, k, n). S (…, k) is descending. Singular vectors are unique only up to sign,
    /// so differentiate only losses that don't depend on that choice (`LinalgSvdBackward0`, PyTorch's
    /// formula on the reduced factors; it assumes distinct singular values).
    public static func svd(_ A: Tensor, fullMatrices: Bool = true) -> (U: Tensor, S: Tensor, Vh: Tensor) {
        checkLinalgInput(A, "linalg.svd", square: false)
        let (U, S, Vh) = svdForward(A, fullMatrices: fullMatrices)
        if A.needsGrad {
            let k = S.shape[S.dim - 1]
            let su = SavedTensor(output: U, outputNr: 0), ss = SavedTensor(output: S, outputNr: 1)
            let sv = SavedTensor(output: Vh, outputNr: 2)
            recordMulti("LinalgSvdBackward0", [U, S, Vh], inputs: [A]) { node, grads in
                var u = su.unpack(node), vh = sv.unpack(node)
                var gU = grads[0], gVh = grads[2]
                if fullMatrices {
                    u = u.narrow(-1, 0, k); vh = vh.narrow(-2, 0, k)
                    gU = gU?.narrow(-1, 0, k); gVh = gVh?.narrow(-2, 0, k)
                }
                return [svdBackward(gU: gU, gS: grads[1], gVh: gVh, U: u, S: ss.unpack(node), Vh: vh)]
            }
        }
        return (U, S, Vh)
    }

    /// Singular values (…, min(m, n)), descending; differentiable (g ↦ U diag(g) Vh).
    public static func svdvals(_ A: Tensor) -> Tensor {
        checkLinalgInput(A, "linalg.svdvals", square: false)
        let (U, S, Vh) = svdForward(A, fullMatrices: false)
        if A.needsGrad {
            let ss = SavedTensor(output: S), sa = SavedTensor(A)
            record("LinalgSvdBackward0", S, inputs: [A]) { node, g in
                if GradMode.isEnabled {   // create_graph: differentiable factors for the double backward
                    let (u, s, vh) = svd(sa.unpack(node), fullMatrices: false)
                    return [svdBackward(gU: nil, gS: g, gVh: nil, U: u, S: s, Vh: vh)]
                }
                return [svdBackward(gU: nil, gS: g, gVh: nil, U: U, S: ss.unpack(node), Vh: Vh)]
            }
        }
        return S
    }
}

private func svdForward(_ A: Tensor, fullMatrices: Bool) -> (Tensor, Tensor, Tensor) {
    let b = MatrixBatch(A), m = b.rows, n = b.cols, k = Swift.min(m, n)
    let uc = fullMatrices ? m : k, vr = fullMatrices ? n : k
    let (u, pu) = doubleBuffer(b.batchShape + [m, uc])
    let (s, ps) = doubleBuffer(b.batchShape + [k])
    let (vh, pv) = doubleBuffer(b.batchShape + [vr, n])
    for i in 0..<b.count {
        LinalgKernels.svd(b.matrix(i), m: m, n: n, u: pu + i * m * uc, s: ps + i * k, vh: pv + i * vr * n,
                          fullMatrices: fullMatrices)
    }
    return (u.to(A.dtype), s.to(A.dtype), vh.to(A.dtype))
}

/// PyTorch's `svd_backward` for real inputs on the reduced factors (U m×k, S k, Vh k×n).
private func svdBackward(gU: Tensor?, gS: Tensor?, gVh: Tensor?, U: Tensor, S: Tensor, Vh: Tensor) -> Tensor? {
    if gU == nil && gS == nil && gVh == nil { return nil }
    let m = U.shape[U.dim - 2], n = Vh.shape[Vh.dim - 1]
    if gU == nil && gVh == nil {
        let gs = gS!
        return m >= n ? U.matmul(gs.unsqueeze(-1) * Vh) : (U * gs.unsqueeze(-2)).matmul(Vh)
    }
    let skew = { (x: Tensor) -> Tensor in x - x.mT }
    let UhgU = gU.map { skew(U.mT.matmul($0)) }
    let VhgV = gVh.map { skew(Vh.matmul($0.mT)) }
    let S2 = S * S
    let k = S.shape[S.dim - 1]
    let E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + torch.eye(k, dtype: S.dtype)
    var gA: Tensor
    if let uh = UhgU, let vv = VhgV {
        gA = (uh * S.unsqueeze(-2) + S.unsqueeze(-1) * vv) / E
    } else if let uh = UhgU {
        gA = (uh / E) * S.unsqueeze(-2)
    } else {
        gA = S.unsqueeze(-1) * (VhgV! / E)
    }
    if let gs = gS { gA = gA + diagEmbed(gs) }
    if m > n, let gu = gU {
        gA = U.matmul(gA)
        let gUSinv = gu / S.unsqueeze(-2)
        gA = gA + gUSinv - U.matmul(U.mT.matmul(gUSinv))
        gA = gA.matmul(Vh)
    } else if m < n, let gv = gVh {
        gA = gA.matmul(Vh)
        let SinvgVh = gv / S.unsqueeze(-1)
        gA = gA + SinvgVh - SinvgVh.matmul(Vh.mT).matmul(Vh)
        gA = U.matmul(gA)
    } else {
        gA = m >= n ? U.matmul(gA.matmul(Vh)) : U.matmul(gA).matmul(Vh)
    }
    return gA
}

// MARK: - Symmetric and general eigenproblems

/// PyTorch's message for a bad `UPLO`, or nil.
func linalgUPLOMessage(_ uplo: String) -> String? {
    ["L", "U", "l", "u"].contains(uplo) ? nil : "Expected UPLO argument to be 'L' or 'U', but got \(uplo)"
}

extension torch.linalg {
    /// Eigenvalues (ascending) and orthonormal eigenvectors (the columns) of a real symmetric matrix or
    /// batch; only the `UPLO` ("L" or "U") triangle is read. Differentiable (`LinalgEighBackward0`) for
    /// losses that don't depend on the eigenvectors' signs; assumes distinct eigenvalues.
    public static func eigh(_ A: Tensor, UPLO: String = "L") -> (eigenvalues: Tensor, eigenvectors: Tensor) {
        checkLinalgInput(A, "linalg.eigh", square: true)
        if let msg = linalgUPLOMessage(UPLO) { preconditionFailure(msg) }
        let (L, V) = eighForward(A, upper: UPLO.uppercased() == "U")
        if A.needsGrad {
            let sl = SavedTensor(output: L, outputNr: 0), sv = SavedTensor(output: V, outputNr: 1)
            recordMulti("LinalgEighBackward0", [L, V], inputs: [A]) { node, grads in
                [eighBackward(gL: grads[0], gV: grads[1], L: sl.unpack(node), V: sv.unpack(node))]
            }
        }
        return (L, V)
    }

    /// Eigenvalues (ascending) of a real symmetric matrix or batch; differentiable (g ↦ V diag(g) Vᵀ).
    public static func eigvalsh(_ A: Tensor, UPLO: String = "L") -> Tensor {
        checkLinalgInput(A, "linalg.eigvalsh", square: true)
        if let msg = linalgUPLOMessage(UPLO) { preconditionFailure(msg) }
        let (L, V) = eighForward(A, upper: UPLO.uppercased() == "U")
        if A.needsGrad {
            let sl = SavedTensor(output: L), sa = SavedTensor(A)
            record("LinalgEighBackward0", L, inputs: [A]) { node, g in
                if GradMode.isEnabled {   // create_graph: differentiable eigenvectors for the double backward
                    let (l, v) = eigh(sa.unpack(node), UPLO: UPLO)
                    return [eighBackward(gL: g, gV: nil, L: l, V: v)]
                }
                return [eighBackward(gL: g, gV: nil, L: sl.unpack(node), V: V)]
            }
        }
        return L
    }

    /// Eigenvalues and right eigenvectors of a general real square matrix or batch, like
    /// `torch.linalg.eig` (LAPACK `geev` order and normalization: unit-norm vectors, the largest
    /// component of a complex one real). There is no complex dtype yet, so real and imaginary parts
    /// come as separate tensors: eigenvalue j is `eigenvaluesReal[j] + i·eigenvaluesImag[j]` and its
    /// eigenvector is column j of `eigenvectorsReal + i·eigenvectorsImag`. Not differentiable.
    public static func eig(_ A: Tensor) -> (eigenvaluesReal: Tensor, eigenvaluesImag: Tensor,
                                            eigenvectorsReal: Tensor, eigenvectorsImag: Tensor) {
        checkLinalgInput(A, "linalg.eig", square: true)
        let b = MatrixBatch(A), n = b.rows
        let (wr, pwr) = doubleBuffer(b.batchShape + [n]), (wi, pwi) = doubleBuffer(b.batchShape + [n])
        let (vr, pvr) = doubleBuffer(A.shape), (vi, pvi) = doubleBuffer(A.shape)
        for i in 0..<b.count {
            LinalgKernels.eig(b.matrix(i), n: n, valuesRe: pwr + i * n, valuesIm: pwi + i * n,
                              vectorsRe: pvr + i * n * n, vectorsIm: pvi + i * n * n)
        }
        return (wr.to(A.dtype), wi.to(A.dtype), vr.to(A.dtype), vi.to(A.dtype))
    }

    /// Eigenvalues of a general real square matrix or batch as (real, imaginary) parts; not differentiable.
    public static func eigvals(_ A: Tensor) -> (real: Tensor, imag: Tensor) {
        checkLinalgInput(A, "linalg.eigvals", square: true)
        let r = eig(A)
        return (r.eigenvaluesReal, r.eigenvaluesImag)
    }
}

private func eighForward(_ A: Tensor, upper: Bool) -> (Tensor, Tensor) {
    let b = MatrixBatch(torch.noGrad { upper ? A.mT : A }), n = b.rows
    let (l, pl) = doubleBuffer(b.batchShape + [n])
    let (v, pv) = doubleBuffer(A.shape)
    for i in 0..<b.count {
        LinalgKernels.eigh(b.matrix(i), n: n, values: pl + i * n, vectors: pv + i * n * n)
    }
    return (l.to(A.dtype), v.to(A.dtype))
}

/// PyTorch's `linalg_eig_backward` for the Hermitian case: V (skew(VᵀgV)/E + diag(gL)) Vᵀ.
private func eighBackward(gL: Tensor?, gV: Tensor?, L: Tensor, V: Tensor) -> Tensor? {
    if gL == nil && gV == nil { return nil }
    var inner: Tensor? = nil
    if let gv = gV {
        let VhgV = V.mT.matmul(gv)
        let skew = 0.5 * (VhgV - VhgV.mT)
        let n = L.shape[L.dim - 1]
        let E = L.unsqueeze(-2) - L.unsqueeze(-1) + torch.eye(n, dtype: L.dtype)
        inner = skew / E
    }
    if let gl = gL {
        inner = inner.map { $0 + diagEmbed(gl) } ?? diagEmbed(gl)
    }
    return V.matmul(inner!).matmul(V.mT)
}

// MARK: - Norms

extension torch.linalg {
    /// The `ord` of a norm: a number (`2`, `1`, `.infinity`, `-.infinity`, `0.5`, …) or "fro" / "nuc".
    ///
    /// Literals convert: `ord: 2`, `ord: 0.5`, `ord: "fro"`; a variable goes through `.p(x)`.
    public enum NormOrder: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
                           CustomStringConvertible {
        /// A numeric order (±∞ allowed).
        case p(Double)
        /// Frobenius norm (matrices).
        case fro
        /// Nuclear norm: the sum of singular values (matrices).
        case nuc

        /// `ord: 2`.
        public init(integerLiteral value: Int) { self = .p(Double(value)) }
        /// `ord: 0.5`.
        public init(floatLiteral value: Double) { self = .p(value) }
        /// `ord: "fro"` or `ord: "nuc"`; any other string stops with PyTorch's message.
        public init(stringLiteral value: String) {
            switch value {
            case "fro": self = .fro
            case "nuc": self = .nuc
            default: preconditionFailure("linalg.matrix_norm: Order \(value) not supported.")
            }
        }
        /// ∞ (max / max-row-sum norm).
        public static let infinity = NormOrder.p(.infinity)
        /// Negation of a numeric order (`-.infinity`, `-2`).
        public static prefix func - (x: NormOrder) -> NormOrder {
            guard case .p(let v) = x else { preconditionFailure("linalg.norm: cannot negate the order \(x)") }
            return .p(-v)
        }

        public var description: String {
            switch self {
            case .fro: return "fro"
            case .nuc: return "nuc"
            case .p(let v):
                if v.isInfinite { return v > 0 ? "inf" : "-inf" }
                return v == v.rounded() ? String(Int(v)) : String(v)
            }
        }
    }

    /// Vector p-norm over `dim` (all elements when nil): `sum(|x|^ord)^(1/ord)`, max/min |x| for ±∞,
    /// the count of non-zeros for 0. Differentiable (`LinalgVectorNormBackward0`, zero gradient at 0).
    public static func vectorNorm(_ x: Tensor, ord: Double = 2, dim: [Int]? = nil, keepdim: Bool = false,
                                  dtype: DType? = nil) -> Tensor {
        if let m = linalgDTypeMessage("linalg.vector_norm", x.dtype) { preconditionFailure(m) }
        let input = dtype.map { x.to($0) } ?? x
        let dims = (dim ?? Array(0..<x.dim)).map { normalizeDim($0, x.dim, op: "linalg.vector_norm") }
        precondition(Set(dims).count == dims.count, "linalg.vector_norm: dim appears multiple times in the list of dims")
        let all = dims   // [] (a 0-d input) reduces every dim
        let result: Tensor = torch.noGrad {
            let a = input.abs()
            switch ord {
            case .infinity: return a.amax(dim: all, keepdim: keepdim)
            case -.infinity: return a.amin(dim: all, keepdim: keepdim)
            case 0: return (input .!= 0).to(input.dtype).sum(dim: all, keepdim: keepdim)
            case 1: return a.sum(dim: all, keepdim: keepdim)
            case 2: return (input * input).sum(dim: all, keepdim: keepdim).sqrt()
            default: return a.pow(ord).sum(dim: all, keepdim: keepdim).pow(1 / ord)
            }
        }.contiguousCopy()
        if input.needsGrad {
            let sx = SavedTensor(input), so = SavedTensor(output: result)
            let rdims = x.dim == 0 ? [] : dims
            record("LinalgVectorNormBackward0", result, inputs: [input]) { node, g in
                let s = sx.unpack(node)
                let norm = keepdim ? so.unpack(node) : unsqueezeReduced(so.unpack(node), rdims)
                let gk = keepdim ? g : unsqueezeReduced(g, rdims)
                switch ord {
                case 0: return [torch.zerosLike(s)]
                case 1: return [s.sign() * gk]
                case 2: return [torch.where(norm .== 0, 0.0, s / norm) * gk]
                case .infinity, -.infinity:
                    let mask = (s.abs() .== norm).to(s.dtype)
                    let count = mask.sum(dim: rdims, keepdim: true)
                    return [s.sign() * mask * (gk / count)]
                default:
                    if ord < 1 {
                        return [torch.where(s .== 0, 0.0, s.sign() * s.abs().pow(ord - 1) * gk / norm.pow(ord - 1))]
                    }
                    return [torch.where(norm .== 0, 0.0, s * s.abs().pow(ord - 2) * gk / norm.pow(ord - 1))]
                }
            }
        }
        return result
    }

    /// Matrix norm over the two dims `dim` (default the last two): "fro", "nuc", 1, -1, 2, -2, ∞, -∞.
    public static func matrixNorm(_ A: Tensor, ord: NormOrder = .fro, dim: [Int] = [-2, -1], keepdim: Bool = false,
                                  dtype: DType? = nil) -> Tensor {
        if let m = linalgDTypeMessage("linalg.matrix_norm", A.dtype) { preconditionFailure(m) }
        if let m = linalgShapeMessage("linalg.matrix_norm", A.shape, square: false) { preconditionFailure(m) }
        precondition(dim.count == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got \(dim.map(String.init).joined(separator: " "))")
        let d0 = normalizeDim(dim[0], A.dim, op: "linalg.matrix_norm"), d1 = normalizeDim(dim[1], A.dim, op: "linalg.matrix_norm")
        precondition(d0 != d1, "linalg.matrix_norm: dims must be different. Got (\(dim[0]), \(dim[1]))")
        let x = dtype.map { A.to($0) } ?? A
        let lo = Swift.min(d0, d1), hi = Swift.max(d0, d1)
        func restore(_ r: Tensor) -> Tensor { keepdim ? r.unsqueeze(lo).unsqueeze(hi) : r }
        switch ord {
        case .fro:
            return vectorNorm(x, ord: 2, dim: [d0, d1], keepdim: keepdim)
        case .nuc, .p(2), .p(-2):
            let perm = (0..<x.dim).filter { $0 != d0 && $0 != d1 } + [d0, d1]
            let s = svdvals(x.permute(perm))
            switch ord {
            case .nuc: return restore(s.sum(dim: -1))
            case .p(2): return restore(s.amax(dim: [-1]))
            default: return restore(s.amin(dim: [-1]))
            }
        case .p(1), .p(-1):
            let colSums = x.abs().sum(dim: d0, keepdim: true)
            let r = ord.isPositive ? colSums.amax(dim: [d1], keepdim: true) : colSums.amin(dim: [d1], keepdim: true)
            return keepdim ? r : r.squeeze(dim: [lo, hi])
        case .p(.infinity), .p(-.infinity):
            let rowSums = x.abs().sum(dim: d1, keepdim: true)
            let r = ord.isPositive ? rowSums.amax(dim: [d0], keepdim: true) : rowSums.amin(dim: [d0], keepdim: true)
            return keepdim ? r : r.squeeze(dim: [lo, hi])
        default:
            preconditionFailure("linalg.matrix_norm: Order \(ord) not supported.")
        }
    }

    /// PyTorch's `torch.linalg.norm`: a vector norm when `dim` has one entry (or when `ord` is nil and
    /// `dim` is nil: the 2-norm of all elements), a matrix norm when `dim` has two entries, or, with
    /// `ord` given and no `dim`, the vector norm of a 1-D input or the matrix norm of a 2-D one.
    public static func norm(_ A: Tensor, ord: NormOrder? = nil, dim: [Int]? = nil, keepdim: Bool = false,
                            dtype: DType? = nil) -> Tensor {
        if let dim {
            if case .p(let p)? = ord, dim.count == 1 { return vectorNorm(A, ord: p, dim: dim, keepdim: keepdim, dtype: dtype) }
            if ord == nil && dim.count == 1 { return vectorNorm(A, ord: 2, dim: dim, keepdim: keepdim, dtype: dtype) }
            return matrixNorm(A, ord: ord ?? .fro, dim: dim, keepdim: keepdim, dtype: dtype)
        }
        guard let ord else { return vectorNorm(A, ord: 2, dim: nil, keepdim: keepdim, dtype: dtype) }
        if case .p(let p) = ord, A.dim == 1 { return vectorNorm(A, ord: p, dim: nil, keepdim: keepdim, dtype: dtype) }
        if case .p = ord {
            precondition(A.dim == 2, "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got \(A.dim)D.")
        }
        return matrixNorm(A, ord: ord, dim: [-2, -1], keepdim: keepdim, dtype: dtype)
    }

    /// `norm` over one dim.
    public static func norm(_ A: Tensor, ord: NormOrder? = nil, dim: Int, keepdim: Bool = false,
                            dtype: DType? = nil) -> Tensor {
        norm(A, ord: ord, dim: [dim], keepdim: keepdim, dtype: dtype)
    }
}

extension torch.linalg.NormOrder {
    fileprivate var isPositive: Bool {
        if case .p(let v) = self { return v > 0 }
        return true
    }
}

// MARK: - Rank, pseudo-inverse, Cholesky, QR, cross

/// The singular-value cutoff of matrix_rank/pinv: max(atol, rtol·σ_max), rtol defaulting to
/// eps·max(m, n) when neither tolerance is given and to 0 when only atol is.
private func rankTolerance(atol: Double?, rtol: Double?, sMax: Double, m: Int, n: Int, dtype: DType) -> Double {
    let eps = dtype == .float32 ? Double(Float.ulpOfOne) : Double.ulpOfOne
    let r = rtol ?? ((atol ?? 0) > 0 ? 0 : eps * Double(Swift.max(m, n)))
    return Swift.max(atol ?? 0, r * sMax)
}

extension torch.linalg {
    /// Numerical rank: the number of singular values (eigenvalue magnitudes when `hermitian`) above
    /// max(atol, rtol·σ_max); int64 of the batch shape.
    public static func matrixRank(_ A: Tensor, atol: Double? = nil, rtol: Double? = nil, hermitian: Bool = false) -> Tensor {
        if let m = linalgDTypeMessage("torch.linalg.matrix_rank", A.dtype) { preconditionFailure(m) }
        if let m = linalgShapeMessage("torch.linalg.matrix_rank", A.shape, square: false, name: "input") { preconditionFailure(m) }
        let s = torch.noGrad { hermitian ? eigvalsh(A).abs() : svdvals(A) }
        let k = s.shape[s.dim - 1], m = A.shape[A.dim - 2], n = A.shape[A.dim - 1]
        let values = s.toArray(as: Double.self)
        let batch = Array(A.shape.dropLast(2))
        var ranks = [Int64](repeating: 0, count: shapeNumel(batch))
        for i in 0..<ranks.count {
            let row = values[(i * k)..<((i + 1) * k)]
            let tol = rankTolerance(atol: atol, rtol: rtol, sMax: row.max() ?? 0, m: m, n: n, dtype: A.dtype)
            ranks[i] = Int64(row.filter { $0 > tol }.count)
        }
        return Tensor(ranks, shape: batch)
    }

    /// Moore–Penrose pseudo-inverse (…, n, m) through the SVD, singular values ≤ max(atol, rtol·σ_max)
    /// treated as zero. Differentiable (`LinalgPinvBackward0`). `hermitian` is accepted for parity; the
    /// SVD is used either way (same result for a symmetric input).
    public static func pinv(_ A: Tensor, atol: Double? = nil, rtol: Double? = nil, hermitian: Bool = false) -> Tensor {
        precondition(A.dim >= 2 && (A.dtype == .float32 || A.dtype == .float64),
                     "linalg.pinv(\(scalarTypeName(A.dtype)){\(shapeString(A.shape))}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types")
        let b = MatrixBatch(A), m = b.rows, n = b.cols, k = Swift.min(m, n)
        let (out, po) = doubleBuffer(b.batchShape + [n, m])
        let u = UnsafeMutablePointer<Double>.allocate(capacity: max(m * k, 1))
        let vh = UnsafeMutablePointer<Double>.allocate(capacity: max(k * n, 1))
        let s = UnsafeMutablePointer<Double>.allocate(capacity: max(k, 1))
        defer { u.deallocate(); vh.deallocate(); s.deallocate() }
        for i in 0..<b.count {
            LinalgKernels.svd(b.matrix(i), m: m, n: n, u: u, s: s, vh: vh, fullMatrices: false)
            let tol = rankTolerance(atol: atol, rtol: rtol, sMax: k > 0 ? s[0] : 0, m: m, n: n, dtype: A.dtype)
            let o = po + i * n * m
            for r in 0..<n {
                for c in 0..<m {
                    var sum = 0.0
                    for j in 0..<k where s[j] > tol { sum += vh[j * n + r] / s[j] * u[c * k + j] }
                    o[r * m + c] = sum
                }
            }
        }
        let result = out.to(A.dtype)
        if A.needsGrad {
            let sa = SavedTensor(A), so = SavedTensor(output: result)
            record("LinalgPinvBackward0", result, inputs: [A]) { node, g in
                [pinvBackward(g, so.unpack(node), sa.unpack(node))]
            }
        }
        return result
    }

    /// Cholesky factor of a symmetric positive-definite matrix or batch (only the lower triangle is
    /// read): lower L with A = L Lᵀ, or its transpose when `upper`. Differentiable
    /// (`LinalgCholeskyExBackward0`). A matrix that is not positive-definite stops with PyTorch's message.
    public static func cholesky(_ A: Tensor, upper: Bool = false) -> Tensor {
        checkLinalgInput(A, "linalg.cholesky", square: true)
        let b = MatrixBatch(A), n = b.rows
        let (out, po) = doubleBuffer(A.shape)
        for i in 0..<b.count {
            let a = b.matrix(i), l = po + i * n * n
            l.update(repeating: 0, count: n * n)
            for j in 0..<n {
                var d = a[j * n + j]
                for t in 0..<j { d -= l[j * n + t] * l[j * n + t] }
                precondition(d > 0, linalgCholeskyMessage(batchShape: b.batchShape, batchIndex: i, order: j + 1))
                let ljj = d.squareRoot()
                l[j * n + j] = ljj
                for r in (j + 1)..<Swift.max(n, j + 1) {
                    var v = a[r * n + j]
                    for t in 0..<j { v -= l[r * n + t] * l[j * n + t] }
                    l[r * n + j] = v / ljj
                }
            }
        }
        let L = out.to(A.dtype)
        let result = upper ? L.mT.contiguousCopy() : L
        if A.needsGrad {
            let so = SavedTensor(output: result)
            record("LinalgCholeskyExBackward0", result, inputs: [A]) { node, g in
                var l = so.unpack(node), gl = g
                if upper { l = l.mT; gl = gl.mT }
                var gA = triangle(l.mT.matmul(gl), upper: false)
                gA = 0.5 * (gA + triangle(gA, upper: false, diagonal: -1).mT)
                gA = solve(l.mT, gA)                 // L^{-T} gA
                gA = solve(l.mT, gA.mT).mT           // gA L^{-1} = (L^{-T} gAᵀ)ᵀ
                return [gA]
            }
        }
        return result
    }

    /// QR decomposition by Householder reflections (LAPACK `geqrf` signs). `mode`: "reduced" (Q m×k,
    /// R k×n), "complete" (Q m×m, R m×n) or "r" (Q empty, R k×n). Differentiable for "reduced", and
    /// for "complete" when m ≤ n (`LinalgQrBackward0`).
    public static func qr(_ A: Tensor, mode: String = "reduced") -> (Q: Tensor, R: Tensor) {
        checkLinalgInput(A, "linalg.qr", square: false)
        precondition(["reduced", "complete", "r"].contains(mode), "qr received unrecognized mode '\(mode)' but expected one of 'reduced' (default), 'r', or 'complete'")
        let b = MatrixBatch(A), m = b.rows, n = b.cols, k = Swift.min(m, n)
        let qc = mode == "complete" ? m : k, rr = mode == "complete" ? m : k
        let (q, pq) = doubleBuffer(b.batchShape + [m, qc])
        let (r, pr) = doubleBuffer(b.batchShape + [rr, n])
        let w = UnsafeMutablePointer<Double>.allocate(capacity: max(m * n, 1))
        let tau = UnsafeMutablePointer<Double>.allocate(capacity: max(k, 1))
        defer { w.deallocate(); tau.deallocate() }
        for i in 0..<b.count {
            householderQR(b.matrix(i), m: m, n: n, work: w, tau: tau)
            let rp = pr + i * rr * n
            for a in 0..<rr { for c in 0..<n { rp[a * n + c] = c >= a ? w[a * n + c] : 0 } }
            formQ(w, m: m, n: n, tau: tau, q: pq + i * m * qc, cols: qc)
        }
        let Q = mode == "r" ? torch.zeros([0], dtype: A.dtype) : q.to(A.dtype)
        let R = r.to(A.dtype)
        if A.needsGrad && mode != "r" {
            precondition(mode == "reduced" || m <= n, "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
            let sq = SavedTensor(output: Q, outputNr: 0), sr = SavedTensor(output: R, outputNr: 1)
            recordMulti("LinalgQrBackward0", [Q, R], inputs: [A]) { node, grads in
                [qrBackward(gQ: grads[0], gR: grads[1], Q: sq.unpack(node), R: sr.unpack(node))]
            }
        }
        return (Q, R)
    }

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

/// PyTorch's `pinv_backward`.
private func pinvBackward(_ g: Tensor, _ pinvA: Tensor, _ A: Tensor) -> Tensor {
    let m = A.shape[A.dim - 2], n = A.shape[A.dim - 1]
    let pinvAh = pinvA.mT, gh = g.mT
    if m <= n {
        let K = gh.matmul(pinvA)
        let KpinvAh = K.matmul(pinvAh)
        return -(pinvA.matmul(K)).mT + KpinvAh - A.matmul(pinvA).matmul(KpinvAh)
            + pinvAh.matmul(pinvA).matmul(gh - K.matmul(A))
    }
    let K = pinvA.matmul(gh)
    let pinvAhK = pinvAh.matmul(K)
    return -(K.matmul(pinvA)).mT + (gh - A.matmul(K)).matmul(pinvA).matmul(pinvAh) + pinvAhK
        - pinvAhK.matmul(pinvA).matmul(A)
}

/// Householder QR of the row-major m×n `a` into `work` (R on and above the diagonal, the reflectors'
/// tails below, LAPACK `dgeqr2` with `dlarfg`'s sign choice) and `tau`.
private func householderQR(_ a: UnsafePointer<Double>, m: Int, n: Int,
                           work w: UnsafeMutablePointer<Double>, tau: UnsafeMutablePointer<Double>) {
    w.update(from: a, count: m * n)
    for j in 0..<Swift.min(m, n) {
        let alpha = w[j * n + j]
        var xnorm = 0.0
        for i in (j + 1)..<Swift.max(m, j + 1) { xnorm = hypot(xnorm, w[i * n + j]) }
        if xnorm == 0 { tau[j] = 0; continue }
        let beta = -(alpha >= 0 ? 1.0 : -1.0) * hypot(alpha, xnorm)
        tau[j] = (beta - alpha) / beta
        let scale = 1 / (alpha - beta)
        for i in (j + 1)..<m { w[i * n + j] *= scale }
        w[j * n + j] = beta
        // Apply H = I - tau v vᵀ (v = [1, w[j+1..<m][j]]) to the trailing columns.
        for c in (j + 1)..<Swift.max(n, j + 1) {
            var dot = w[j * n + c]
            for i in (j + 1)..<m { dot += w[i * n + j] * w[i * n + c] }
            dot *= tau[j]
            w[j * n + c] -= dot
            for i in (j + 1)..<m { w[i * n + c] -= dot * w[i * n + j] }
        }
    }
}

/// Q = H_0 H_1 … H_{k-1} restricted to its first `cols` columns (row-major m × cols).
private func formQ(_ w: UnsafePointer<Double>, m: Int, n: Int, tau: UnsafePointer<Double>,
                   q: UnsafeMutablePointer<Double>, cols: Int) {
    q.update(repeating: 0, count: m * cols)
    for i in 0..<Swift.min(m, cols) { q[i * cols + i] = 1 }
    for j in stride(from: Swift.min(m, n) - 1, through: 0, by: -1) where tau[j] != 0 {
        for c in 0..<cols {
            var dot = q[j * cols + c]
            for i in (j + 1)..<m { dot += w[i * n + j] * q[i * cols + c] }
            dot *= tau[j]
            q[j * cols + c] -= dot
            for i in (j + 1)..<m { q[i * cols + c] -= dot * w[i * n + j] }
        }
    }
}

/// QR backward (m ≥ n: gA = (gQ + Q copyltu(M)) R⁻ᵀ with M = R gRᵀ − gQᵀ Q; m < n through the
/// square leading block, as in PyTorch's `linalg_qr_backward`).
private func qrBackward(gQ: Tensor?, gR: Tensor?, Q: Tensor, R: Tensor) -> Tensor? {
    if gQ == nil && gR == nil { return nil }
    let m = Q.shape[Q.dim - 2], n = R.shape[R.dim - 1]
    func square(_ gQ: Tensor, _ gR: Tensor, _ Q: Tensor, _ R: Tensor) -> Tensor {
        let M = R.matmul(gR.mT) - gQ.mT.matmul(Q)
        let lower = triangle(M, upper: false)
        let copyltu = lower + triangle(M, upper: false, diagonal: -1).mT
        let rhs = gQ + Q.matmul(copyltu)              // gA Rᵀ = rhs  →  gA = rhs R⁻ᵀ
        return torch.linalg.solve(R, rhs.mT).mT
    }
    let gq = gQ ?? torch.zerosLike(Q), gr = gR ?? torch.zerosLike(R)
    if m >= n { return square(gq, gr, Q, R) }
    // A = Q [U | V]: the leading m×m block X = Q U, the rest Y = Q V.
    let U = R.narrow(-1, 0, m), gU = gr.narrow(-1, 0, m), gV = gr.narrow(-1, m, n - m)
    let Y = Q.matmul(R.narrow(-1, m, n - m))
    let gX = square(gq + Y.matmul(gV.mT), gU, Q, U)
    let gY = Q.matmul(gV)
    return torch.cat2(gX, gY)
}

extension torch {
    /// Concatenation of two tensors along the last dim (private helper for the QR backward).
    fileprivate static func cat2(_ a: Tensor, _ b: Tensor) -> Tensor {
        let na = a.shape[a.dim - 1], nb = b.shape[b.dim - 1]
        let ea = torch.eye(na, na + nb, dtype: a.dtype)                                   // [I | 0]
        let eb = torch.eye(nb + na, dtype: b.dtype).narrow(0, na, nb)                     // [0 | I]
        return a.matmul(ea) + b.matmul(eb)
    }
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
