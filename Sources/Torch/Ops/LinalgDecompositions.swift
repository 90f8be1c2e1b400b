// `torch.linalg` decompositions: svd/svdvals, eigh/eigvalsh, eig/eigvals, cholesky and qr, with
// their backward formulas (PyTorch's, from `FunctionsManual.cpp`). The numerics are in
// `LinalgKernels`; the batching, dtype and error conventions are those described in Linalg.swift.

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

// MARK: - Cholesky, QR

extension torch.linalg {
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
