// Symmetric eigen-decomposition for the CPU backend (`torch.linalg.eigh`): Householder
// tridiagonalization + implicit QL with Wilkinson shifts (Martin/Reinsch/Wilkinson
// `tred2`/`tql2`). Part of `LinalgKernels` (LinalgKernels.swift), whose conventions apply:
// one row-major `Double` matrix per call, NaN outputs for non-finite input, power-of-two scaling.

extension LinalgKernels {

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
}
