// `torch.linalg` norms and the spectral quantities built on the SVD: vector_norm, matrix_norm,
// norm, matrix_rank and pinv. The batching, dtype and error conventions are those described in
// Linalg.swift.

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

// MARK: - Rank, pseudo-inverse

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
