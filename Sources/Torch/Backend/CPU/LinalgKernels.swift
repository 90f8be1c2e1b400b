import Foundation

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
/// - Symmetric eigenproblem: Householder tridiagonalization + implicit QL with
///   Wilkinson shifts (Martin/Reinsch/Wilkinson `tred2`/`tql2`).
/// - General eigenproblem: the LAPACK `dgeev` pipeline for small matrices —
///   balancing (`dgebal`), Householder Hessenberg reduction (`dgehd2`/`dorghr`),
///   Francis double-shift QR with `dlahqr`'s shifts and deflation criterion,
///   2 × 2 blocks standardized as `dlanv2` — followed by back-substitution on
///   the Schur form (Martin/Wilkinson `hqr2`) and `dgeev`'s normalization. The
///   eigenvalue order therefore matches LAPACK/torch for n < 75 up to rounding
///   ties (LAPACK switches to aggressive early deflation for larger n).
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
                logAbs += Foundation.log(abs(d))
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
    private static func rotateColumns(_ x: UnsafeMutablePointer<Double>, _ y: UnsafeMutablePointer<Double>,
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

    // MARK: - Symmetric eigenproblem

    /// Eigen-decomposition of a real symmetric n × n matrix, like
    /// `torch.linalg.eigh(A, UPLO='L')`: only the lower triangle is read.
    /// Eigenvalues ascending in `values`; the matching orthonormal eigenvectors
    /// are the COLUMNS of `vectors` (n × n, row-major).
    static func eigh(_ a: UnsafePointer<Double>, n: Int,
                     values: UnsafeMutablePointer<Double>, vectors: UnsafeMutablePointer<Double>) {
        guard n > 0 else { return }
        // z is the working matrix, stored column-major: z[c * n + r] = Z[r][c].
        let z = UnsafeMutablePointer<Double>.allocate(capacity: n * n)
        let d = UnsafeMutablePointer<Double>.allocate(capacity: n)
        let e = UnsafeMutablePointer<Double>.allocate(capacity: n)
        defer { z.deallocate(); d.deallocate(); e.deallocate() }
        var big = 0.0
        var finite = true
        for i in 0..<n {
            for j in 0...i {
                let x = a[i * n + j]
                if !x.isFinite { finite = false }
                big = max(big, abs(x))
            }
        }
        if !finite {
            values.update(repeating: .nan, count: n)
            vectors.update(repeating: .nan, count: n * n)
            return
        }
        let scale = normalizingScale(big)
        for i in 0..<n {
            for j in 0...i {
                let x = a[i * n + j] * scale
                z[j * n + i] = x
                z[i * n + j] = x
            }
        }
        tridiagonalize(z, n: n, d: d, e: e)
        tridiagonalQL(d: d, e: e, z: z, n: n)

        let order = (0..<n).sorted { d[$0] < d[$1] || (d[$0] == d[$1] && $0 < $1) }
        for (c, j) in order.enumerated() {
            values[c] = d[j] / scale
            for r in 0..<n { vectors[r * n + c] = z[j * n + r] }
        }
    }

    /// Householder reduction of the symmetric matrix in `z` (column-major;
    /// only the lower triangle is read) to tridiagonal form, accumulating the
    /// orthogonal transformation in `z` (`tred2`). On return `d` is the
    /// diagonal and `e[1..<n]` the subdiagonal (`e[0] = 0`).
    private static func tridiagonalize(_ z: UnsafeMutablePointer<Double>, n: Int,
                                       d: UnsafeMutablePointer<Double>, e: UnsafeMutablePointer<Double>) {
        @inline(__always) func ix(_ r: Int, _ c: Int) -> Int { c * n + r }
        for j in 0..<n { d[j] = z[ix(n - 1, j)] }
        for i in stride(from: n - 1, to: 0, by: -1) {
            var scale = 0.0
            var h = 0.0
            for k in 0..<i { scale += abs(d[k]) }
            if scale == 0 {
                e[i] = d[i - 1]
                for j in 0..<i {
                    d[j] = z[ix(i - 1, j)]
                    z[ix(i, j)] = 0
                    z[ix(j, i)] = 0
                }
            } else {
                // Householder vector in d[0..<i].
                for k in 0..<i { d[k] /= scale; h += d[k] * d[k] }
                var f = d[i - 1]
                var g = h.squareRoot()
                if f > 0 { g = -g }
                e[i] = scale * g
                h -= f * g
                d[i - 1] = f - g
                for j in 0..<i { e[j] = 0 }
                // e = A·u (lower triangle only), storing u in column i.
                for j in 0..<i {
                    f = d[j]
                    z[ix(j, i)] = f
                    g = e[j] + z[ix(j, j)] * f
                    var k = j + 1
                    while k < i {
                        g += z[ix(k, j)] * d[k]
                        e[k] += z[ix(k, j)] * f
                        k += 1
                    }
                    e[j] = g
                }
                f = 0
                for j in 0..<i { e[j] /= h; f += e[j] * d[j] }
                let hh = f / (h + h)
                for j in 0..<i { e[j] -= hh * d[j] }
                // Rank-2 update A -= u·e^T + e·u^T.
                for j in 0..<i {
                    f = d[j]
                    g = e[j]
                    for k in j..<i { z[ix(k, j)] -= f * e[k] + g * d[k] }
                    d[j] = z[ix(i - 1, j)]
                    z[ix(i, j)] = 0
                }
            }
            d[i] = h
        }
        // Accumulate the transformations.
        for i in 0..<(n - 1) {
            z[ix(n - 1, i)] = z[ix(i, i)]
            z[ix(i, i)] = 1
            let h = d[i + 1]
            if h != 0 {
                for k in 0...i { d[k] = z[ix(k, i + 1)] / h }
                for j in 0...i {
                    let g = dot(z + ix(0, i + 1), z + ix(0, j), count: i + 1)
                    axpy(-g, d, z + ix(0, j), count: i + 1)
                }
            }
            for k in 0...i { z[ix(k, i + 1)] = 0 }
        }
        for j in 0..<n { d[j] = z[ix(n - 1, j)]; z[ix(n - 1, j)] = 0 }
        z[ix(n - 1, n - 1)] = 1
        e[0] = 0
    }

    /// Implicit QL with Wilkinson shifts on the tridiagonal (`d`, `e`) from
    /// `tridiagonalize`, applying the rotations to the columns of `z`
    /// (`tql2`). On return `d` holds the (unsorted) eigenvalues.
    private static func tridiagonalQL(d: UnsafeMutablePointer<Double>, e: UnsafeMutablePointer<Double>,
                                      z: UnsafeMutablePointer<Double>, n: Int) {
        for i in 1..<max(n, 1) { e[i - 1] = e[i] }
        e[n - 1] = 0
        let eps = Double.ulpOfOne
        let maxIterations = 60
        var f = 0.0
        var tst1 = 0.0
        for l in 0..<n {
            tst1 = max(tst1, abs(d[l]) + abs(e[l]))
            var m = l
            while m < n - 1 && abs(e[m]) > eps * tst1 { m += 1 }
            if m > l {
                var iteration = 0
                repeat {
                    iteration += 1
                    // Wilkinson shift from the leading 2 × 2.
                    var g = d[l]
                    var p = (d[l + 1] - g) / (2 * e[l])
                    var r = hypot(p, 1)
                    if p < 0 { r = -r }
                    d[l] = e[l] / (p + r)
                    d[l + 1] = e[l] * (p + r)
                    let dl1 = d[l + 1]
                    var h = g - d[l]
                    for i in (l + 2)..<n { d[i] -= h }
                    f += h
                    // Implicit QL sweep from m up to l.
                    p = d[m]
                    var c = 1.0, c2 = 1.0, c3 = 1.0
                    let el1 = e[l + 1]
                    var s = 0.0, s2 = 0.0
                    for i in stride(from: m - 1, through: l, by: -1) {
                        c3 = c2; c2 = c; s2 = s
                        g = c * e[i]
                        h = c * p
                        r = hypot(p, e[i])
                        e[i + 1] = s * r
                        s = e[i] / r
                        c = p / r
                        p = c * d[i] - s * g
                        d[i + 1] = h + s * (c * g + s * d[i])
                        rotateColumns(z + i * n, z + (i + 1) * n, c: c, s: s, count: n)
                    }
                    p = -s * s2 * c3 * el1 * e[l] / dl1
                    e[l] = s * p
                    d[l] = c * p
                } while abs(e[l]) > eps * tst1 && iteration < maxIterations
            }
            d[l] += f
            e[l] = 0
        }
    }

    // MARK: - General (nonsymmetric) eigenproblem

    /// Eigenvalues and right eigenvectors of a general real n × n matrix, like
    /// `torch.linalg.eig` / LAPACK `dgeev`.
    ///
    /// Eigenvalue `j` is `valuesRe[j] + i·valuesIm[j]`, in the order they appear
    /// on the diagonal of the real Schur form; complex conjugate pairs are
    /// adjacent with the positive imaginary part first. The eigenvectors are
    /// the COLUMNS of `vectorsRe + i·vectorsIm` (n × n, row-major), each with
    /// unit Euclidean norm; a complex vector is additionally rotated so that
    /// its largest component is real (as `dgeev`).
    ///
    /// Returns false, with NaN outputs, if the input is not finite or the QR
    /// iteration fails to converge (`dgeev` info > 0).
    @discardableResult
    static func eig(_ a: UnsafePointer<Double>, n: Int,
                    valuesRe: UnsafeMutablePointer<Double>, valuesIm: UnsafeMutablePointer<Double>,
                    vectorsRe: UnsafeMutablePointer<Double>, vectorsIm: UnsafeMutablePointer<Double>) -> Bool {
        guard n > 0 else { return true }
        func fail() -> Bool {
            valuesRe.update(repeating: .nan, count: n)
            valuesIm.update(repeating: .nan, count: n)
            vectorsRe.update(repeating: .nan, count: n * n)
            vectorsIm.update(repeating: .nan, count: n * n)
            return false
        }
        guard allFinite(a, count: n * n) else { return fail() }

        let h = UnsafeMutablePointer<Double>.allocate(capacity: n * n)     // Hessenberg -> Schur
        let z = UnsafeMutablePointer<Double>.allocate(capacity: n * n)     // Schur vectors -> eigenvectors
        let balanceInfo = UnsafeMutablePointer<Double>.allocate(capacity: n)
        defer { h.deallocate(); z.deallocate(); balanceInfo.deallocate() }
        h.initialize(from: a, count: n * n)
        let scale = normalizingScale(maxAbs(h, count: n * n))
        for i in 0..<(n * n) { h[i] *= scale }

        let (low, high) = balance(h, n: n, info: balanceInfo)
        hessenberg(h, n: n, low: low, high: high, q: z)
        var hessenbergNorm = 0.0
        for i in 0..<n { for j in max(i - 1, 0)..<n { hessenbergNorm += abs(h[i * n + j]) } }
        guard schurForm(h, z, n: n, low: low, high: high, wr: valuesRe, wi: valuesIm) else { return fail() }
        schurEigenvectors(h, z, n: n, low: low, high: high, norm: hessenbergNorm, wr: valuesRe, wi: valuesIm)
        undoBalance(z, n: n, low: low, high: high, info: balanceInfo)

        for j in 0..<n { valuesRe[j] /= scale; valuesIm[j] /= scale }
        writeNormalizedEigenvectors(z, n: n, wi: valuesIm, re: vectorsRe, im: vectorsIm)
        return true
    }

    /// LAPACK `dgebal(job='B')` on the row-major `h`: permutes rows/columns to
    /// isolate eigenvalues, then scales rows/columns by powers of 2 to balance
    /// their norms. Returns the active block `low...high` (0-based); `info`
    /// receives the permutation indices (outside the block) and scale factors
    /// (inside), as LAPACK's SCALE but with 0-based indices.
    private static func balance(_ h: UnsafeMutablePointer<Double>, n: Int,
                                info: UnsafeMutablePointer<Double>) -> (low: Int, high: Int) {
        /// Swaps rows/columns `i` and `j`: columns over rows 0...l, rows over columns k..<n.
        func exchange(_ i: Int, _ j: Int, k: Int, l: Int) {
            guard i != j else { return }
            for r in 0...l { (h[r * n + i], h[r * n + j]) = (h[r * n + j], h[r * n + i]) }
            swapRows(h + k, i, j, width: n, count: n - k)
        }
        var k = 0, l = n - 1
        // Rows with no off-diagonal nonzeros in columns 0...l go to the bottom.
        var changed = true
        rowSearch: while changed {
            changed = false
            for i in stride(from: l, through: 0, by: -1) {
                var isolated = true
                for j in 0...l where j != i && h[i * n + j] != 0 { isolated = false; break }
                guard isolated else { continue }
                info[l] = Double(i)
                exchange(i, l, k: k, l: l)
                changed = true
                if l == 0 { return (0, 0) }
                l -= 1
            }
        }
        // Columns with no off-diagonal nonzeros in rows k...l go to the left.
        changed = true
        while changed {
            changed = false
            for j in k...l {
                var isolated = true
                for i in k...l where i != j && h[i * n + j] != 0 { isolated = false; break }
                guard isolated else { continue }
                info[k] = Double(j)
                exchange(j, k, k: k, l: l)
                changed = true
                k += 1
            }
        }
        for i in k...l { info[i] = 1 }
        // Iterative power-of-2 scaling of the active block.
        let radix = 2.0, factor = 0.95
        let sfmin1 = Double.leastNormalMagnitude / Double.ulpOfOne
        let sfmax1 = 1 / sfmin1
        let sfmin2 = sfmin1 * radix
        let sfmax2 = 1 / sfmin2
        var noConvergence = true
        var sweeps = 0
        while noConvergence && sweeps < 1000 {
            noConvergence = false
            sweeps += 1
            for i in k...l {
                var c = 0.0, r = 0.0, ca = 0.0, ra = 0.0
                for t in k...l { c += h[t * n + i] * h[t * n + i]; r += h[i * n + t] * h[i * n + t] }
                c = c.squareRoot(); r = r.squareRoot()
                for t in 0...l { ca = max(ca, abs(h[t * n + i])) }
                for t in k..<n { ra = max(ra, abs(h[i * n + t])) }
                if c == 0 || r == 0 { continue }
                var g = r / radix
                var f = 1.0
                let s = c + r
                while c < g && max(f, c, ca) < sfmax2 && min(r, g, ra) > sfmin2 {
                    f *= radix; c *= radix; ca *= radix; r /= radix; g /= radix; ra /= radix
                }
                g = c / radix
                while g >= r && max(r, ra) < sfmax2 && min(f, c, g, ca) > sfmin2 {
                    f /= radix; c /= radix; g /= radix; ca /= radix; r *= radix; ra *= radix
                }
                if c + r >= factor * s { continue }
                if f < 1 && info[i] < 1 && f * info[i] <= sfmin1 { continue }
                if f > 1 && info[i] > 1 && info[i] >= sfmax1 / f { continue }
                info[i] *= f
                noConvergence = true
                for t in k..<n { h[i * n + t] /= f }
                for t in 0...l { h[t * n + i] *= f }
            }
        }
        return (k, l)
    }

    /// LAPACK `dgebak(job='B', side='R')`: maps eigenvectors (rows of the
    /// row-major `z`) of the balanced matrix back to the original one.
    private static func undoBalance(_ z: UnsafeMutablePointer<Double>, n: Int, low: Int, high: Int,
                                    info: UnsafePointer<Double>) {
        if low < high {  // (a single-entry block holds a permutation index, as in dgebak)
            for i in low...high where info[i] != 1 {
                for c in 0..<n { z[i * n + c] *= info[i] }
            }
        }
        for ii in 0..<n where ii < low || ii > high {
            let i = ii < low ? low - 1 - ii : ii
            let k = Int(info[i])
            if k != i { swapRows(z, i, k, width: n) }
        }
    }

    /// Householder reduction of rows/columns `low...high` of the row-major `h`
    /// to upper Hessenberg form (LAPACK `dgehd2` + `dorghr`); the orthogonal
    /// similarity is returned in `q` (identity outside the block). Entries
    /// below the subdiagonal are set to zero.
    private static func hessenberg(_ h: UnsafeMutablePointer<Double>, n: Int, low: Int, high: Int,
                                   q: UnsafeMutablePointer<Double>) {
        setIdentity(q, rows: n, cols: n)
        guard high - low >= 2 else { return }
        // Reflector for step m (annihilating column m-1 below row m) is
        // I - tau[m]·u·u^T with u[m] = 1 and u[m+1...high] = refl[m][...].
        var tau = [Double](repeating: 0, count: n)
        let refl = UnsafeMutablePointer<Double>.allocate(capacity: n * n)
        let u = UnsafeMutablePointer<Double>.allocate(capacity: n)
        let work = UnsafeMutablePointer<Double>.allocate(capacity: n)
        defer { refl.deallocate(); u.deallocate(); work.deallocate() }

        /// Applies I - t·u·u^T (u supported on m...high) from the left to
        /// columns `cols` of the row-major matrix `x`.
        func applyLeft(_ x: UnsafeMutablePointer<Double>, m: Int, t: Double, cols: Range<Int>) {
            for j in cols { work[j] = 0 }
            for i in m...high where u[i] != 0 {
                for j in cols { work[j] += u[i] * x[i * n + j] }
            }
            for i in m...high where u[i] != 0 {
                let f = t * u[i]
                for j in cols { x[i * n + j] -= f * work[j] }
            }
        }

        for m in (low + 1)..<high {
            let c = m - 1
            let alpha = h[m * n + c]
            var xnorm = 0.0
            for i in (m + 1)...high { xnorm = hypot(xnorm, h[i * n + c]) }
            if xnorm == 0 { continue }  // tau = 0: nothing to annihilate (as dlarfg)
            let beta = -Double(signOf: alpha, magnitudeOf: hypot(alpha, xnorm))
            let t = (beta - alpha) / beta
            let inv = 1 / (alpha - beta)
            u[m] = 1
            for i in (m + 1)...high { u[i] = h[i * n + c] * inv; h[i * n + c] = 0 }
            h[m * n + c] = beta
            tau[m] = t
            for i in (m + 1)...high { refl[m * n + i] = u[i] }
            // From the right: rows 0...high, columns m...high.
            for i in 0...high {
                let row = h + i * n
                var s = 0.0
                for j in m...high { s += row[j] * u[j] }
                s *= t
                for j in m...high { row[j] -= s * u[j] }
            }
            // From the left: rows m...high, columns m..<n.
            applyLeft(h, m: m, t: t, cols: m..<n)
        }
        // Q = H(low+1) ··· H(high-1), accumulated backwards on the block.
        for m in stride(from: high - 1, through: low + 1, by: -1) where tau[m] != 0 {
            u[m] = 1
            for i in (m + 1)...high { u[i] = refl[m * n + i] }
            applyLeft(q, m: m, t: tau[m], cols: m..<(high + 1))
        }
    }

    /// Francis double-shift QR (LAPACK `dlahqr` with `wantt`/`wantz`) on the
    /// upper Hessenberg `h` (row-major), rows/columns `low...high` active,
    /// accumulating the orthogonal transformations into the rows `low...high`
    /// of `z`. On return `h` is in real Schur form with 2 × 2 blocks
    /// standardized as by `dlanv2`, and `wr`/`wi` hold the eigenvalues in
    /// diagonal order (complex pairs with the positive imaginary part first).
    /// Returns false if some eigenvalue fails to converge in 30·max(10, n)
    /// iterations.
    private static func schurForm(_ h: UnsafeMutablePointer<Double>, _ z: UnsafeMutablePointer<Double>,
                                  n: Int, low: Int, high: Int,
                                  wr: UnsafeMutablePointer<Double>, wi: UnsafeMutablePointer<Double>) -> Bool {
        @inline(__always) func ix(_ r: Int, _ c: Int) -> Int { r * n + c }
        /// Applies the plane rotation (c, s) to the pairs (x[k], y[k]) as BLAS `drot`.
        @inline(__always) func rot(_ x: Int, _ y: Int, stride: Int, count: Int, _ c: Double, _ s: Double) {
            for t in 0..<count {
                let a = h[x + t * stride], b = h[y + t * stride]
                h[x + t * stride] = c * a + s * b
                h[y + t * stride] = c * b - s * a
            }
        }
        for i in 0..<n where i < low || i > high { wr[i] = h[ix(i, i)]; wi[i] = 0 }
        if low == high { wr[low] = h[ix(low, low)]; wi[low] = 0; return true }
        // Clear whatever sits below the subdiagonal.
        for j in stride(from: low, through: high - 3, by: 1) { h[ix(j + 2, j)] = 0; h[ix(j + 3, j)] = 0 }
        if low <= high - 2 { h[ix(high, high - 2)] = 0 }

        let ulp = Double.ulpOfOne
        let nh = high - low + 1
        let smlnum = Double.leastNormalMagnitude * (Double(nh) / ulp)
        let maxIterations = 30 * max(10, nh)
        let exceptionalPeriod = 10
        var sinceDeflation = 0
        var i = high
        while i >= low {
            var l = low
            var split = false
            for _ in 0...maxIterations {
                // Look for a single negligible subdiagonal (Ahues–Tisseur criterion).
                var k = i
                while k > l {
                    let sub = abs(h[ix(k, k - 1)])
                    if sub <= smlnum { break }
                    var tst = abs(h[ix(k - 1, k - 1)]) + abs(h[ix(k, k)])
                    if tst == 0 {
                        if k - 2 >= low { tst += abs(h[ix(k - 1, k - 2)]) }
                        if k + 1 <= high { tst += abs(h[ix(k + 1, k)]) }
                    }
                    if sub <= ulp * tst {
                        let sup = abs(h[ix(k - 1, k)])
                        let ab = max(sub, sup), ba = min(sub, sup)
                        let diff = abs(h[ix(k - 1, k - 1)] - h[ix(k, k)])
                        let aa = max(abs(h[ix(k, k)]), diff), bb = min(abs(h[ix(k, k)]), diff)
                        let s = aa + ab
                        if ba * (ab / s) <= max(smlnum, ulp * (bb * (aa / s))) { break }
                    }
                    k -= 1
                }
                l = k
                if l > low { h[ix(l, l - 1)] = 0 }
                if l >= i - 1 { split = true; break }
                sinceDeflation += 1

                // Shifts: Francis' double shift from the trailing 2 × 2, or an
                // exceptional shift every `exceptionalPeriod` iterations.
                var h11: Double, h12: Double, h21: Double, h22: Double
                if sinceDeflation % (2 * exceptionalPeriod) == 0 {
                    let s = abs(h[ix(i, i - 1)]) + abs(h[ix(i - 1, i - 2)])
                    h11 = 0.75 * s + h[ix(i, i)]; h12 = -0.4375 * s; h21 = s; h22 = h11
                } else if sinceDeflation % exceptionalPeriod == 0 {
                    let s = abs(h[ix(l + 1, l)]) + abs(h[ix(l + 2, l + 1)])
                    h11 = 0.75 * s + h[ix(l, l)]; h12 = -0.4375 * s; h21 = s; h22 = h11
                } else {
                    h11 = h[ix(i - 1, i - 1)]; h21 = h[ix(i, i - 1)]
                    h12 = h[ix(i - 1, i)]; h22 = h[ix(i, i)]
                }
                var rt1r = 0.0, rt1i = 0.0, rt2r = 0.0, rt2i = 0.0
                let hs = abs(h11) + abs(h12) + abs(h21) + abs(h22)
                if hs != 0 {
                    h11 /= hs; h21 /= hs; h12 /= hs; h22 /= hs
                    let tr = (h11 + h22) / 2
                    let det = (h11 - tr) * (h22 - tr) - h12 * h21
                    let rtdisc = abs(det).squareRoot()
                    if det >= 0 {            // complex conjugate shifts
                        rt1r = tr * hs; rt2r = rt1r
                        rt1i = rtdisc * hs; rt2i = -rt1i
                    } else {                 // real shifts: use the one closer to h22 twice
                        let r1 = tr + rtdisc, r2 = tr - rtdisc
                        rt1r = (abs(r1 - h22) <= abs(r2 - h22) ? r1 : r2) * hs
                        rt2r = rt1r
                    }
                }

                // Look for two consecutive small subdiagonals; v = first column
                // of (H - s1)(H - s2) restricted to rows m...m+2.
                var m = i - 2
                var v1 = 0.0, v2 = 0.0, v3 = 0.0
                while true {
                    let hmm = h[ix(m, m)]
                    var s = abs(hmm - rt2r) + abs(rt2i) + abs(h[ix(m + 1, m)])
                    let h21s = h[ix(m + 1, m)] / s
                    v1 = h21s * h[ix(m, m + 1)] + (hmm - rt1r) * ((hmm - rt2r) / s) - rt1i * (rt2i / s)
                    v2 = h21s * (hmm + h[ix(m + 1, m + 1)] - rt1r - rt2r)
                    v3 = h21s * h[ix(m + 2, m + 1)]
                    s = abs(v1) + abs(v2) + abs(v3)
                    v1 /= s; v2 /= s; v3 /= s
                    if m == l { break }
                    if abs(h[ix(m, m - 1)]) * (abs(v2) + abs(v3))
                        <= ulp * abs(v1) * (abs(h[ix(m - 1, m - 1)]) + abs(hmm) + abs(h[ix(m + 1, m + 1)])) {
                        break
                    }
                    m -= 1
                }

                // Double-shift QR step: bulge chase with 3 × 3 (last: 2 × 2) reflectors.
                for k in m..<i {
                    let nr = min(3, i - k + 1)
                    if k > m {
                        v1 = h[ix(k, k - 1)]
                        v2 = h[ix(k + 1, k - 1)]
                        v3 = nr == 3 ? h[ix(k + 2, k - 1)] : 0
                    }
                    // dlarfg: reflector I - t1·[1 v2 v3]^T·[1 v2 v3] mapping (v1, v2, v3) to (beta, 0, 0).
                    var t1 = 0.0
                    let xnorm = nr == 3 ? hypot(v2, v3) : abs(v2)
                    if xnorm != 0 {
                        let beta = -Double(signOf: v1, magnitudeOf: hypot(v1, xnorm))
                        t1 = (beta - v1) / beta
                        let scal = 1 / (v1 - beta)
                        v2 *= scal; v3 *= scal
                        v1 = beta
                    }
                    if k > m {
                        h[ix(k, k - 1)] = v1
                        h[ix(k + 1, k - 1)] = 0
                        if k < i - 1 { h[ix(k + 2, k - 1)] = 0 }
                    } else if m > l {
                        h[ix(k, k - 1)] *= 1 - t1
                    }
                    let t2 = t1 * v2
                    if nr == 3 {
                        let t3 = t1 * v3
                        for j in k..<n {
                            let sum = h[ix(k, j)] + v2 * h[ix(k + 1, j)] + v3 * h[ix(k + 2, j)]
                            h[ix(k, j)] -= sum * t1
                            h[ix(k + 1, j)] -= sum * t2
                            h[ix(k + 2, j)] -= sum * t3
                        }
                        for j in 0...min(k + 3, i) {
                            let sum = h[ix(j, k)] + v2 * h[ix(j, k + 1)] + v3 * h[ix(j, k + 2)]
                            h[ix(j, k)] -= sum * t1
                            h[ix(j, k + 1)] -= sum * t2
                            h[ix(j, k + 2)] -= sum * t3
                        }
                        for j in low...high {
                            let sum = z[ix(j, k)] + v2 * z[ix(j, k + 1)] + v3 * z[ix(j, k + 2)]
                            z[ix(j, k)] -= sum * t1
                            z[ix(j, k + 1)] -= sum * t2
                            z[ix(j, k + 2)] -= sum * t3
                        }
                    } else {
                        for j in k..<n {
                            let sum = h[ix(k, j)] + v2 * h[ix(k + 1, j)]
                            h[ix(k, j)] -= sum * t1
                            h[ix(k + 1, j)] -= sum * t2
                        }
                        for j in 0...i {
                            let sum = h[ix(j, k)] + v2 * h[ix(j, k + 1)]
                            h[ix(j, k)] -= sum * t1
                            h[ix(j, k + 1)] -= sum * t2
                        }
                        for j in low...high {
                            let sum = z[ix(j, k)] + v2 * z[ix(j, k + 1)]
                            z[ix(j, k)] -= sum * t1
                            z[ix(j, k + 1)] -= sum * t2
                        }
                    }
                }
            }
            guard split else { return false }

            if l == i {
                wr[i] = h[ix(i, i)]
                wi[i] = 0
            } else if l == i - 1 {
                // Standardize the 2 × 2 block and apply the rotation everywhere.
                let b = standardize2x2(h[ix(i - 1, i - 1)], h[ix(i - 1, i)], h[ix(i, i - 1)], h[ix(i, i)])
                h[ix(i - 1, i - 1)] = b.a; h[ix(i - 1, i)] = b.b
                h[ix(i, i - 1)] = b.c; h[ix(i, i)] = b.d
                wr[i - 1] = b.a; wr[i] = b.d
                wi[i - 1] = b.c == 0 ? 0 : abs(b.b).squareRoot() * abs(b.c).squareRoot()
                wi[i] = -wi[i - 1]
                if i + 1 < n { rot(ix(i - 1, i + 1), ix(i, i + 1), stride: 1, count: n - i - 1, b.cs, b.sn) }
                rot(ix(0, i - 1), ix(0, i), stride: n, count: i - 1, b.cs, b.sn)
                for j in low...high {
                    let x = z[ix(j, i - 1)], y = z[ix(j, i)]
                    z[ix(j, i - 1)] = b.cs * x + b.sn * y
                    z[ix(j, i)] = b.cs * y - b.sn * x
                }
            }
            sinceDeflation = 0
            i = l - 1
        }
        return true
    }

    /// Schur factorization of a real 2 × 2 block `[a b; c d]` in standard form
    /// (LAPACK `dlanv2`): either upper triangular (real eigenvalues a, d) or
    /// with a == d and b·c < 0 (complex pair a ± i·sqrt(-b·c)). `(cs, sn)` is
    /// the rotation with `[a b; c d]_new = [cs sn; -sn cs]·[a b; c d]·[cs -sn; sn cs]`.
    private static func standardize2x2(_ a0: Double, _ b0: Double, _ c0: Double, _ d0: Double)
        -> (a: Double, b: Double, c: Double, d: Double, cs: Double, sn: Double) {
        var a = a0, b = b0, c = c0, d = d0
        var cs = 1.0, sn = 0.0
        @inline(__always) func sign(_ x: Double) -> Double { x < 0 || (x == 0 && x.sign == .minus) ? -1 : 1 }
        if c == 0 {
            return (a, b, c, d, 1, 0)
        } else if b == 0 {
            // Swap rows and columns.
            return (d, -c, 0, a, 0, 1)
        } else if a - d == 0 && sign(b) != sign(c) {
            return (a, b, c, d, 1, 0)
        }
        let temp = a - d
        var p = 0.5 * temp
        let bcmax = max(abs(b), abs(c))
        let bcmis = min(abs(b), abs(c)) * sign(b) * sign(c)
        let scale = max(abs(p), bcmax)
        var zz = (p / scale) * p + (bcmax / scale) * bcmis
        if zz >= 4 * Double.ulpOfOne {
            // Real eigenvalues: compute a and d.
            zz = p + Double(signOf: p, magnitudeOf: scale.squareRoot() * zz.squareRoot())
            a = d + zz
            d -= (bcmax / zz) * bcmis
            let tau = hypot(c, zz)
            cs = zz / tau
            sn = c / tau
            b -= c
            c = 0
        } else {
            // Complex or (almost) equal real eigenvalues: make the diagonal equal.
            let sigma = b + c
            let tau = hypot(sigma, temp)
            cs = (0.5 * (1 + abs(sigma) / tau)).squareRoot()
            sn = -(p / (tau * cs)) * sign(sigma)
            let aa = a * cs + b * sn, bb = -a * sn + b * cs
            let cc = c * cs + d * sn, dd = -c * sn + d * cs
            a = aa * cs + cc * sn
            b = bb * cs + dd * sn
            c = -aa * sn + cc * cs
            d = -bb * sn + dd * cs
            let mid = 0.5 * (a + d)
            a = mid
            d = mid
            if c != 0 {
                if b != 0 {
                    if sign(b) == sign(c) {
                        // Real eigenvalues after all: reduce to upper triangular form.
                        let sab = abs(b).squareRoot(), sac = abs(c).squareRoot()
                        p = Double(signOf: c, magnitudeOf: sab * sac)
                        let tau2 = 1 / abs(b + c).squareRoot()
                        a = mid + p
                        d = mid - p
                        b -= c
                        c = 0
                        let cs1 = sab * tau2, sn1 = sac * tau2
                        let t = cs * cs1 - sn * sn1
                        sn = cs * sn1 + sn * cs1
                        cs = t
                    }
                } else {
                    b = -c
                    c = 0
                    let t = cs
                    cs = -sn
                    sn = t
                }
            }
        }
        return (a, b, c, d, cs, sn)
    }

    /// Eigenvectors of the real Schur form `h` (row-major, overwritten) by
    /// back-substitution (Martin/Wilkinson `hqr2`), transformed back with the
    /// Schur vectors `z` (rows `low...high` active). `norm` is a norm of the
    /// original Hessenberg matrix, used to perturb exactly repeated
    /// eigenvalues. On return the columns of `z` are the eigenvectors: a real
    /// one in one column, a complex pair (j, j+1) as real part in column j and
    /// imaginary part in column j+1 for the eigenvalue with `wi[j] > 0`, with
    /// the phase LAPACK `dtrevc3` chooses (up to a positive factor).
    private static func schurEigenvectors(_ h: UnsafeMutablePointer<Double>, _ z: UnsafeMutablePointer<Double>,
                                          n: Int, low: Int, high: Int, norm: Double,
                                          wr: UnsafePointer<Double>, wi: UnsafePointer<Double>) {
        @inline(__always) func ix(_ r: Int, _ c: Int) -> Int { r * n + c }
        let eps = Double.ulpOfOne
        var p = 0.0, q = 0.0, r = 0.0, s = 0.0, t = 0.0, w = 0.0, x = 0.0, y = 0.0, zz = 0.0
        if norm == 0 { return }
        // For a standardized block [a t12; t21 a], dtrevc3 starts the complex
        // vector at (1, i·wi/t12) when |t12| >= |t21| and at (-wi/t21, i)
        // otherwise; ours starts at (t12/wi, i), which is (t12/wi) times the
        // former and equal to the latter. Record where the factor is negative.
        var negate = [Bool](repeating: false, count: n)
        for j in 1..<n where wi[j] < 0 {
            let t12 = h[ix(j - 1, j)], t21 = h[ix(j, j - 1)]
            negate[j] = abs(t12) >= abs(t21) && t12 < 0
        }

        // Back-substitution, last column first.
        for en in stride(from: n - 1, through: 0, by: -1) {
            p = wr[en]
            q = wi[en]
            if q == 0 {
                // Real vector: solve (T - p)·x = 0 with x[en] = 1.
                var l = en
                h[ix(en, en)] = 1
                for i in stride(from: en - 1, through: 0, by: -1) {
                    w = h[ix(i, i)] - p
                    r = 0
                    for j in l...en { r += h[ix(i, j)] * h[ix(j, en)] }
                    if wi[i] < 0 {
                        zz = w
                        s = r
                        continue
                    }
                    l = i
                    if wi[i] == 0 {
                        h[ix(i, en)] = w != 0 ? -r / w : -r / (eps * norm)
                    } else {
                        // 2 × 2 real system for rows i, i+1.
                        x = h[ix(i, i + 1)]
                        y = h[ix(i + 1, i)]
                        q = (wr[i] - p) * (wr[i] - p) + wi[i] * wi[i]
                        t = (x * s - zz * r) / q
                        h[ix(i, en)] = t
                        h[ix(i + 1, en)] = abs(x) > abs(zz) ? (-r - w * t) / x : (-s - y * t) / zz
                    }
                    t = abs(h[ix(i, en)])
                    if (eps * t) * t > 1 {       // overflow control
                        for j in i...en { h[ix(j, en)] /= t }
                    }
                }
            } else if q < 0 {
                // Complex vector for wr[en] - i·q (positive imaginary part), stored
                // as real part in column en-1 and imaginary part in column en.
                var l = en - 1
                if abs(h[ix(en, en - 1)]) > abs(h[ix(en - 1, en)]) {
                    h[ix(en - 1, en - 1)] = q / h[ix(en, en - 1)]
                    h[ix(en - 1, en)] = -(h[ix(en, en)] - p) / h[ix(en, en - 1)]
                } else {
                    (h[ix(en - 1, en - 1)], h[ix(en - 1, en)]) =
                        complexDivide(0, -h[ix(en - 1, en)], h[ix(en - 1, en - 1)] - p, q)
                }
                h[ix(en, en - 1)] = 0
                h[ix(en, en)] = 1
                for i in stride(from: en - 2, through: 0, by: -1) {
                    var ra = 0.0, sa = 0.0
                    for j in l...en {
                        ra += h[ix(i, j)] * h[ix(j, en - 1)]
                        sa += h[ix(i, j)] * h[ix(j, en)]
                    }
                    w = h[ix(i, i)] - p
                    if wi[i] < 0 {
                        zz = w
                        r = ra
                        s = sa
                        continue
                    }
                    l = i
                    if wi[i] == 0 {
                        (h[ix(i, en - 1)], h[ix(i, en)]) = complexDivide(-ra, -sa, w, q)
                    } else {
                        // 2 × 2 complex system for rows i, i+1.
                        x = h[ix(i, i + 1)]
                        y = h[ix(i + 1, i)]
                        var vr = (wr[i] - p) * (wr[i] - p) + wi[i] * wi[i] - q * q
                        let vi = (wr[i] - p) * 2 * q
                        if vr == 0 && vi == 0 {
                            vr = eps * norm * (abs(w) + abs(q) + abs(x) + abs(y) + abs(zz))
                        }
                        (h[ix(i, en - 1)], h[ix(i, en)]) =
                            complexDivide(x * r - zz * ra + q * sa, x * s - zz * sa - q * ra, vr, vi)
                        if abs(x) > abs(zz) + abs(q) {
                            h[ix(i + 1, en - 1)] = (-ra - w * h[ix(i, en - 1)] + q * h[ix(i, en)]) / x
                            h[ix(i + 1, en)] = (-sa - w * h[ix(i, en)] - q * h[ix(i, en - 1)]) / x
                        } else {
                            (h[ix(i + 1, en - 1)], h[ix(i + 1, en)]) =
                                complexDivide(-r - y * h[ix(i, en - 1)], -s - y * h[ix(i, en)], zz, q)
                        }
                    }
                    t = max(abs(h[ix(i, en - 1)]), abs(h[ix(i, en)]))
                    if (eps * t) * t > 1 {       // overflow control
                        for j in i...en {
                            h[ix(j, en - 1)] /= t
                            h[ix(j, en)] /= t
                        }
                    }
                }
            }
        }

        // Rows of isolated roots: the vectors are the Schur-form columns themselves.
        for i in 0..<n where i < low || i > high {
            for j in i..<n { z[ix(i, j)] = h[ix(i, j)] }
        }
        // Back-transform: Z[:, j] <- Z · X[:, j] on the active rows.
        for j in stride(from: n - 1, through: low, by: -1) {
            let kMax = min(j, high)
            for i in low...high {
                var acc = 0.0
                for k in low...kMax { acc += z[ix(i, k)] * h[ix(k, j)] }
                z[ix(i, j)] = acc
            }
        }
        for j in 0..<n where negate[j] {
            for i in 0..<n { z[ix(i, j - 1)] = -z[ix(i, j - 1)]; z[ix(i, j)] = -z[ix(i, j)] }
        }
    }

    /// Scales each eigenvector (column of the row-major `z`, complex pairs as
    /// (re, im) column pairs) to unit Euclidean norm, rotates complex ones so
    /// that the largest component is real (LAPACK `dgeev`), and writes them as
    /// complex columns into `re`/`im`.
    private static func writeNormalizedEigenvectors(_ z: UnsafeMutablePointer<Double>, n: Int,
                                                    wi: UnsafePointer<Double>,
                                                    re: UnsafeMutablePointer<Double>,
                                                    im: UnsafeMutablePointer<Double>) {
        func columnNorm(_ c: Int) -> Double {
            var acc = 0.0
            for i in 0..<n { acc = hypot(acc, z[i * n + c]) }
            return acc
        }
        var j = 0
        while j < n {
            if wi[j] == 0 || j == n - 1 {
                let nrm = columnNorm(j)
                let inv = nrm > 0 ? 1 / nrm : 1
                for i in 0..<n {
                    re[i * n + j] = z[i * n + j] * inv
                    im[i * n + j] = 0
                }
                j += 1
                continue
            }
            let nrm = hypot(columnNorm(j), columnNorm(j + 1))
            let inv = nrm > 0 ? 1 / nrm : 1
            var kBest = 0
            var best = -1.0
            for i in 0..<n {
                z[i * n + j] *= inv
                z[i * n + j + 1] *= inv
                let mag = z[i * n + j] * z[i * n + j] + z[i * n + j + 1] * z[i * n + j + 1]
                if mag > best { best = mag; kBest = i }
            }
            // Multiply by the conjugate phase of component kBest (dlartg conventions).
            let f = z[kBest * n + j], g = z[kBest * n + j + 1]
            var cs = 1.0, sn = 0.0
            if g != 0 {
                if f == 0 {
                    cs = 0; sn = g > 0 ? 1 : -1
                } else {
                    let rr = Double(signOf: f, magnitudeOf: hypot(f, g))
                    cs = f / rr; sn = g / rr
                }
            }
            for i in 0..<n {
                let xr = z[i * n + j], xi = z[i * n + j + 1]
                let vr = cs * xr + sn * xi
                let vi = i == kBest ? 0 : cs * xi - sn * xr
                re[i * n + j] = vr; im[i * n + j] = vi
                re[i * n + j + 1] = vr; im[i * n + j + 1] = -vi
            }
            j += 2
        }
    }

    /// Complex division `(xr + i·xi) / (yr + i·yi)` (Smith's algorithm).
    @inline(__always)
    private static func complexDivide(_ xr: Double, _ xi: Double, _ yr: Double, _ yi: Double) -> (Double, Double) {
        if abs(yr) > abs(yi) {
            let r = yi / yr, d = yr + r * yi
            return ((xr + r * xi) / d, (xi - r * xr) / d)
        } else {
            let r = yr / yi, d = yi + r * yr
            return ((r * xr + xi) / d, (r * xi - xr) / d)
        }
    }

    // MARK: - Small shared helpers

    /// Dot product with four partial sums (lets the compiler vectorize).
    @inline(__always)
    private static func dot(_ x: UnsafePointer<Double>, _ y: UnsafePointer<Double>, count: Int) -> Double {
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
    private static func axpy(_ alpha: Double, _ x: UnsafePointer<Double>, _ y: UnsafeMutablePointer<Double>,
                             count: Int) {
        for i in 0..<count { y[i] += alpha * x[i] }
    }

    /// Swaps the first `count` (default: all) entries of rows `i` and `j` of a
    /// row-major matrix with `width` columns.
    @inline(__always)
    private static func swapRows(_ a: UnsafeMutablePointer<Double>, _ i: Int, _ j: Int, width: Int,
                                 count: Int? = nil) {
        guard i != j else { return }
        let ri = a + i * width, rj = a + j * width
        for c in 0..<(count ?? width) { let t = ri[c]; ri[c] = rj[c]; rj[c] = t }
    }

    /// Writes the rows × cols identity (ones on the main diagonal), row-major.
    private static func setIdentity(_ a: UnsafeMutablePointer<Double>, rows: Int, cols: Int) {
        a.update(repeating: 0, count: rows * cols)
        for i in 0..<min(rows, cols) { a[i * cols + i] = 1 }
    }

    private static func allFinite(_ a: UnsafePointer<Double>, count: Int) -> Bool {
        for i in 0..<count where !a[i].isFinite { return false }
        return true
    }

    private static func maxAbs(_ a: UnsafePointer<Double>, count: Int) -> Double {
        var m = 0.0
        for i in 0..<count { m = max(m, abs(a[i])) }
        return m
    }

    /// A power of two `s` with `maxAbs · s` in [1, 2) (exact scaling), or 1
    /// when `maxAbs` is zero; the exponent is clamped to stay finite.
    private static func normalizingScale(_ maxAbs: Double) -> Double {
        guard maxAbs > 0, maxAbs.isFinite else { return 1 }
        let e = min(max(-Int(maxAbs.exponent), Double.leastNormalMagnitude.exponent), Double.greatestFiniteMagnitude.exponent)
        return Double(sign: .plus, exponent: e, significand: 1)
    }
}
