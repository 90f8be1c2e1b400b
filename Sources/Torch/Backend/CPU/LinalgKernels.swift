#if canImport(Glibc)
import Glibc
#endif

/// Dense linear-algebra numerics for the CPU backend (`torch.linalg`).
///
/// Every kernel works on ONE matrix in `Double`, stored row-major and contiguous
/// (leading dimension = number of columns). Batching, dtype conversion
/// (float32 <-> float64) and error reporting are the caller's job.
///
/// Conventions shared by all kernels:
/// - Inputs are never modified unless the parameter is documented as in-place.
/// - A non-finite input (NaN or ±inf) never hangs a kernel: the iterative
///   decompositions (`svd`, `eigh`, `eig`) detect it up front and fill every
///   output with NaN; the direct ones (`luFactor`, `det`, `solve`, `inverse`)
///   simply propagate it through the arithmetic.
/// - Iterative kernels scale the input by a power of two (exact) so that its
///   largest entry is about 1, which keeps squares and norms away from
///   overflow/underflow; results are scaled back.
///
/// Algorithms:
/// - LU: partial pivoting (LAPACK `getrf` semantics).
/// - SVD: one-sided Jacobi (Hestenes), which gives singular values to high
///   relative accuracy; bases are completed by Gram–Schmidt when rank-deficient
///   or when full matrices are requested.
/// - Symmetric eigenproblem: Householder tridiagonalization + implicit QL
///   (`tred2`/`tql2`), in SymmetricEigenKernels.swift.
/// - General eigenproblem: the LAPACK `dgeev` pipeline, in GeneralEigenKernels.swift.
enum LinalgKernels {

    // MARK: - LU factorization and friends

    /// In-place LU factorization with partial pivoting: `A = P · L · U`.
    ///
    /// On return `a` holds `U` on and above the diagonal and the multipliers of
    /// the unit lower-triangular `L` below it (LAPACK `getrf` layout, but
    /// row-major). `pivots[k]` is the **0-based** row that was swapped with row
    /// `k` at step `k` (LAPACK/torch use 1-based: add 1 for `torch.linalg.lu_factor`).
    ///
    /// Like `getrf`, factorization continues past an exactly-zero pivot and
    /// reports it through `singular`. `sign` is the determinant of `P` (±1).
    @discardableResult
    static func luFactor(_ a: UnsafeMutablePointer<Double>, n: Int,
                         pivots: UnsafeMutablePointer<Int>) -> (sign: Double, singular: Bool) {
        var sign = 1.0
        var singular = false
        for k in 0..<n {
            // Pivot: first row with the largest |a[i][k]|, i >= k (as idamax).
            var p = k
            var maxAbs = abs(a[k * n + k])
            for i in (k + 1)..<n {
                let v = abs(a[i * n + k])
                if v > maxAbs { maxAbs = v; p = i }
            }
            pivots[k] = p
            if p != k {
                swapRows(a, p, k, width: n)
                sign = -sign
            }
            let pivot = a[k * n + k]
            if pivot == 0 { singular = true; continue }
            let rowK = a + k * n
            for i in (k + 1)..<n {
                let rowI = a + i * n
                let l = rowI[k] / pivot
                rowI[k] = l
                if l != 0 { axpy(-l, rowK + (k + 1), rowI + (k + 1), count: n - k - 1) }
            }
        }
        return (sign, singular)
    }

    /// Solves `A X = B` in place given the output of `luFactor`.
    ///
    /// `x` holds `B` (n × nrhs, row-major) on entry and `X` on return. Singular
    /// factors produce inf/NaN, as LAPACK `getrs` would.
    static func luSolve(_ lu: UnsafePointer<Double>, n: Int, pivots: UnsafePointer<Int>,
                        x: UnsafeMutablePointer<Double>, nrhs: Int) {
        guard n > 0, nrhs > 0 else { return }
        for i in 0..<n where pivots[i] != i { swapRows(x, i, pivots[i], width: nrhs) }
        // Forward substitution with unit-lower L.
        for i in 0..<n {
            for k in 0..<i {
                let l = lu[i * n + k]
                if l != 0 { axpy(-l, x + k * nrhs, x + i * nrhs, count: nrhs) }
            }
        }
        // Back substitution with U.
        for i in stride(from: n - 1, through: 0, by: -1) {
            let xi = x + i * nrhs
            for k in (i + 1)..<n {
                let u = lu[i * n + k]
                if u != 0 { axpy(-u, x + k * nrhs, xi, count: nrhs) }
            }
            let d = lu[i * n + i]
            for j in 0..<nrhs { xi[j] /= d }
        }
    }

    /// Determinant via LU: `sign(P) · ∏ U[i][i]`. The empty matrix has det 1.
    static func det(_ a: UnsafePointer<Double>, n: Int) -> Double {
        withLU(a, n: n) { lu, _, sign, _ in
            var d = sign
            for i in 0..<n { d *= lu[i * n + i] }
            return d
        }
    }

    /// `(sign, log|det|)` like `torch.linalg.slogdet`: `(0, -inf)` for a singular
    /// matrix, NaNs for NaN input. Avoids the over/underflow of `det` for large n.
    static func slogdet(_ a: UnsafePointer<Double>, n: Int) -> (sign: Double, logAbsDet: Double) {
        withLU(a, n: n) { lu, _, sign, singular in
            if singular { return (0, -Double.infinity) }
            var s = sign
            var logAbs = 0.0
            for i in 0..<n {
                let d = lu[i * n + i]
                if d.isNaN { return (.nan, .nan) }
                if d < 0 { s = -s }
                logAbs += Glibc.log(abs(d))
            }
            return (s, logAbs)
        }
    }

    /// Inverse via LU. Returns false (and fills `out` with NaN) when a pivot is
    /// exactly zero; `out` is n × n row-major.
    @discardableResult
    static func inverse(_ a: UnsafePointer<Double>, n: Int, out: UnsafeMutablePointer<Double>) -> Bool {
        withLU(a, n: n) { lu, pivots, _, singular in
            if singular { out.update(repeating: .nan, count: n * n); return false }
            setIdentity(out, rows: n, cols: n)
            luSolve(lu, n: n, pivots: pivots, x: out, nrhs: n)
            return true
        }
    }

    /// Solves `A X = B` with `A` n × n and `B`, `X` n × nrhs (row-major).
    /// Returns false (and fills `out` with NaN) when `A` is exactly singular.
    @discardableResult
    static func solve(_ a: UnsafePointer<Double>, n: Int, b: UnsafePointer<Double>, nrhs: Int,
                      out: UnsafeMutablePointer<Double>) -> Bool {
        withLU(a, n: n) { lu, pivots, _, singular in
            if singular { out.update(repeating: .nan, count: n * nrhs); return false }
            out.update(from: b, count: n * nrhs)
            luSolve(lu, n: n, pivots: pivots, x: out, nrhs: nrhs)
            return true
        }
    }

    /// Factors a scratch copy of `a` and hands `(lu, pivots, sign, singular)` to `body`.
    private static func withLU<R>(
        _ a: UnsafePointer<Double>, n: Int,
        _ body: (UnsafeMutablePointer<Double>, UnsafeMutablePointer<Int>, Double, Bool) -> R
    ) -> R {
        let lu = UnsafeMutablePointer<Double>.allocate(capacity: max(n * n, 1))
        let pivots = UnsafeMutablePointer<Int>.allocate(capacity: max(n, 1))
        defer { lu.deallocate(); pivots.deallocate() }
        lu.initialize(from: a, count: n * n)
        let (sign, singular) = luFactor(lu, n: n, pivots: pivots)
        return body(lu, pivots, sign, singular)
    }

    // MARK: - Singular value decomposition

    /// `A = U · diag(S) · Vh` for an m × n matrix, like `torch.linalg.svd`.
    ///
    /// With k = min(m, n): reduced (`fullMatrices == false`) gives U m × k,
    /// S k, Vh k × n; full gives U m × m, Vh n × n. Singular values are
    /// non-negative and descending. Columns of U (rows of Vh) belonging to zero
    /// singular values, and the extra ones of the full form, are an arbitrary
    /// orthonormal completion. Signs are not LAPACK's (they are arbitrary there too).
    static func svd(_ a: UnsafePointer<Double>, m: Int, n: Int,
                    u: UnsafeMutablePointer<Double>, s: UnsafeMutablePointer<Double>,
                    vh: UnsafeMutablePointer<Double>, fullMatrices: Bool) {
        let k = min(m, n)
        let uCols = fullMatrices ? m : k
        let vhRows = fullMatrices ? n : k
        if k == 0 {
            setIdentity(u, rows: m, cols: uCols)
            setIdentity(vh, rows: vhRows, cols: n)
            return
        }
        if !allFinite(a, count: m * n) {
            u.update(repeating: .nan, count: m * uCols)
            s.update(repeating: .nan, count: k)
            vh.update(repeating: .nan, count: vhRows * n)
            return
        }
        // Work on the "tall" matrix M (rows >= cols): M = A if m >= n, else A^T.
        // `w` stores M column-major, so column j is contiguous; for A^T that is
        // exactly A's row-major storage.
        let tall = m >= n
        let rows = tall ? m : n, cols = tall ? n : m
        let w = UnsafeMutablePointer<Double>.allocate(capacity: rows * cols)
        let v = UnsafeMutablePointer<Double>.allocate(capacity: cols * cols)
        let qCount = fullMatrices ? rows : cols
        let q = UnsafeMutablePointer<Double>.allocate(capacity: rows * qCount)
        defer { w.deallocate(); v.deallocate(); q.deallocate() }
        if tall {
            for i in 0..<m { for j in 0..<n { w[j * rows + i] = a[i * n + j] } }
        } else {
            w.initialize(from: a, count: m * n)
        }
        let scale = normalizingScale(maxAbs(w, count: rows * cols))
        for i in 0..<(rows * cols) { w[i] *= scale }

        // M · V = W with W's columns mutually orthogonal.
        setIdentity(v, rows: cols, cols: cols)
        oneSidedJacobi(w, rows: rows, cols: cols, v: v)

        var sigma = [Double](repeating: 0, count: cols)
        for j in 0..<cols { sigma[j] = dot(w + j * rows, w + j * rows, count: rows).squareRoot() }
        let order = (0..<cols).sorted { sigma[$0] > sigma[$1] || (sigma[$0] == sigma[$1] && $0 < $1) }

        // Left factor Q (rows × qCount, column-major): normalized columns of W,
        // completed to an orthonormal set where sigma is (numerically) zero.
        let tiny = Double.leastNormalMagnitude / Double.ulpOfOne
        q.initialize(repeating: 0, count: rows * qCount)
        var filled = [Bool](repeating: false, count: qCount)
        for (idx, j) in order.enumerated() {
            s[idx] = sigma[j] / scale
            if sigma[j] > tiny {
                let inv = 1 / sigma[j]
                for i in 0..<rows { q[idx * rows + i] = w[j * rows + i] * inv }
                filled[idx] = true
            }
        }
        completeOrthonormalColumns(q, rows: rows, count: qCount, filled: &filled)

        // M = Q · S · R^T with R[:, idx] = V[:, order[idx]] (cols × cols).
        if tall {  // A = M:  U = Q,  Vh = R^T
            for i in 0..<m { for c in 0..<uCols { u[i * uCols + c] = q[c * rows + i] } }
            for r in 0..<n { for j in 0..<n { vh[r * n + j] = v[order[r] * cols + j] } }
        } else {   // A = M^T = R · S · Q^T:  U = R,  Vh = Q^T
            for i in 0..<m { for c in 0..<m { u[i * m + c] = v[order[c] * cols + i] } }
            for r in 0..<vhRows { for j in 0..<n { vh[r * n + j] = q[r * rows + j] } }
        }
    }

    /// One-sided Jacobi: rotates the columns of `w` (rows × cols, column-major,
    /// rows >= cols) until they are mutually orthogonal to working precision,
    /// accumulating the rotations into `v` (cols × cols, column-major).
    private static func oneSidedJacobi(_ w: UnsafeMutablePointer<Double>, rows: Int, cols: Int,
                                       v: UnsafeMutablePointer<Double>) {
        guard cols > 1 else { return }
        let tol = Double.ulpOfOne * Double(rows).squareRoot()
        let maxSweeps = 80
        var norms = [Double](repeating: 0, count: cols)  // squared column norms
        for _ in 0..<maxSweeps {
            for j in 0..<cols { norms[j] = dot(w + j * rows, w + j * rows, count: rows) }
            var rotated = false
            for p in 0..<(cols - 1) {
                let wp = w + p * rows
                for qi in (p + 1)..<cols {
                    let alpha = norms[p], beta = norms[qi]
                    if alpha == 0 || beta == 0 { continue }
                    let wq = w + qi * rows
                    let gamma = dot(wp, wq, count: rows)
                    if !(abs(gamma) > tol * alpha.squareRoot() * beta.squareRoot()) { continue }
                    rotated = true
                    // Rotation angle that zeroes the (p, q) inner product; |t| <= 1.
                    let zeta = (beta - alpha) / (2 * gamma)
                    let t = abs(zeta) > 1e150
                        ? 1 / (2 * zeta)
                        : (zeta >= 0 ? 1 : -1) / (abs(zeta) + (1 + zeta * zeta).squareRoot())
                    let c = 1 / (1 + t * t).squareRoot()
                    let sn = c * t
                    rotateColumns(wp, wq, c: c, s: sn, count: rows)
                    rotateColumns(v + p * cols, v + qi * cols, c: c, s: sn, count: cols)
                    // Exact identities for the new norms; recompute on heavy cancellation.
                    norms[p] = alpha - t * gamma
                    norms[qi] = beta + t * gamma
                    let big = max(alpha, beta)
                    if norms[p] < 1e-2 * big { norms[p] = dot(wp, wp, count: rows) }
                    if norms[qi] < 1e-2 * big { norms[qi] = dot(wq, wq, count: rows) }
                }
            }
            if !rotated { return }
        }
    }

    /// `(x, y) <- (c·x - s·y, s·x + c·y)` elementwise.
    @inline(__always)
    static func rotateColumns(_ x: UnsafeMutablePointer<Double>, _ y: UnsafeMutablePointer<Double>,
                              c: Double, s: Double, count: Int) {
        for i in 0..<count {
            let xi = x[i], yi = y[i]
            x[i] = c * xi - s * yi
            y[i] = s * xi + c * yi
        }
    }

    /// Given `q` (rows × count, column-major) whose `filled` columns are
    /// orthonormal, replaces the other columns so that all are orthonormal.
    /// Each new column starts from the unit vector e_i with the largest
    /// component outside the current span, then is Gram–Schmidt'ed twice.
    private static func completeOrthonormalColumns(_ q: UnsafeMutablePointer<Double>, rows: Int,
                                                   count: Int, filled: inout [Bool]) {
        guard filled.contains(false) else { return }
        // outside[i] ~ squared norm of the projection of e_i onto the orthogonal complement.
        var outside = [Double](repeating: 1, count: rows)
        for c in 0..<count where filled[c] {
            for i in 0..<rows { outside[i] -= q[c * rows + i] * q[c * rows + i] }
        }
        for c in 0..<count where !filled[c] {
            let col = q + c * rows
            var best = 0
            for i in 1..<rows where outside[i] > outside[best] { best = i }
            col.update(repeating: 0, count: rows)
            col[best] = 1
            for _ in 0..<2 {
                for d in 0..<count where filled[d] {
                    let other = q + d * rows
                    axpy(-dot(other, col, count: rows), other, col, count: rows)
                }
            }
            let inv = 1 / dot(col, col, count: rows).squareRoot()
            for i in 0..<rows { col[i] *= inv; outside[i] -= col[i] * col[i] }
            filled[c] = true
        }
    }

    // MARK: - Small shared helpers

    /// Dot product with four partial sums (lets the compiler vectorize).
    @inline(__always)
    static func dot(_ x: UnsafePointer<Double>, _ y: UnsafePointer<Double>, count: Int) -> Double {
        var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
        var i = 0
        while i + 4 <= count {
            s0 += x[i] * y[i]
            s1 += x[i + 1] * y[i + 1]
            s2 += x[i + 2] * y[i + 2]
            s3 += x[i + 3] * y[i + 3]
            i += 4
        }
        while i < count { s0 += x[i] * y[i]; i += 1 }
        return (s0 + s1) + (s2 + s3)
    }

    /// `y += alpha · x`.
    @inline(__always)
    static func axpy(_ alpha: Double, _ x: UnsafePointer<Double>, _ y: UnsafeMutablePointer<Double>,
                     count: Int) {
        for i in 0..<count { y[i] += alpha * x[i] }
    }

    /// Swaps the first `count` (default: all) entries of rows `i` and `j` of a
    /// row-major matrix with `width` columns.
    @inline(__always)
    static func swapRows(_ a: UnsafeMutablePointer<Double>, _ i: Int, _ j: Int, width: Int,
                         count: Int? = nil) {
        guard i != j else { return }
        let ri = a + i * width, rj = a + j * width
        for c in 0..<(count ?? width) { let t = ri[c]; ri[c] = rj[c]; rj[c] = t }
    }

    /// Writes the rows × cols identity (ones on the main diagonal), row-major.
    static func setIdentity(_ a: UnsafeMutablePointer<Double>, rows: Int, cols: Int) {
        a.update(repeating: 0, count: rows * cols)
        for i in 0..<min(rows, cols) { a[i * cols + i] = 1 }
    }

    static func allFinite(_ a: UnsafePointer<Double>, count: Int) -> Bool {
        for i in 0..<count where !a[i].isFinite { return false }
        return true
    }

    static func maxAbs(_ a: UnsafePointer<Double>, count: Int) -> Double {
        var m = 0.0
        for i in 0..<count { m = max(m, abs(a[i])) }
        return m
    }

    /// A power of two `s` with `maxAbs · s` in [1, 2) (exact scaling), or 1
    /// when `maxAbs` is zero; the exponent is clamped to stay finite.
    static func normalizingScale(_ maxAbs: Double) -> Double {
        guard maxAbs > 0, maxAbs.isFinite else { return 1 }
        let e = min(max(-Int(maxAbs.exponent), Double.leastNormalMagnitude.exponent), Double.greatestFiniteMagnitude.exponent)
        return Double(sign: .plus, exponent: e, significand: 1)
    }
}
