// General (nonsymmetric) eigen-decomposition for the CPU backend (`torch.linalg.eig`): the
// LAPACK `dgeev` pipeline for small matrices — balancing (`dgebal`), Householder Hessenberg
// reduction (`dgehd2`/`dorghr`), Francis double-shift QR with `dlahqr`'s shifts and deflation
// criterion, 2 × 2 blocks standardized as `dlanv2` — followed by back-substitution on the Schur
// form (Martin/Wilkinson `hqr2`) and `dgeev`'s normalization. The eigenvalue order therefore
// matches LAPACK/torch for n < 75 up to rounding ties (LAPACK switches to aggressive early
// deflation for larger n). Part of `LinalgKernels` (LinalgKernels.swift), whose conventions apply.

extension LinalgKernels {

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
}
