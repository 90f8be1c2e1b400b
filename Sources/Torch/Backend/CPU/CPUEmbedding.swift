/// `F.embedding` on the CPU: the row gather, the table gradient and `max_norm`'s renormalisation, over int64
/// indices (contiguous, checked against the table). `F.embedding` (NN/Layers/Embedding.swift) keeps shapes and
/// autograd, checks devices once and calls these for CPU tables; CUDA tables go through device ops.
enum CPUEmbedding {
    /// Rows `idx` of the table `weight` (`[v, d]`) into `out` (`idx.shape + [d]`, contiguous).
    static func gather(_ weight: Tensor, _ idx: Tensor, into out: Tensor) {
        let table = weight.isContiguous ? weight : weight.contiguousCopy()
        gather(table, UnsafePointer(idx.pointer(Int64.self)), count: idx.numel, into: out)
    }

    /// The `[numWeights, d]` gradient of the table from the output gradient `g` (`[count, d]`).
    static func backward(_ g: Tensor, _ idx: Tensor, numWeights: Int, paddingIdx: Int, scaleByFreq: Bool) -> Tensor {
        backward(g.isContiguous ? g : g.contiguousCopy(), UnsafePointer(idx.pointer(Int64.self)), count: idx.numel,
                 numWeights: numWeights, paddingIdx: paddingIdx, scaleByFreq: scaleByFreq)
    }

    /// Each index's gradient scale for the differentiable backward: 0 at `paddingIdx`, else 1 or 1/frequency.
    static func rowScales(_ idx: Tensor, paddingIdx: Int, scaleByFreq: Bool) -> [Double] {
        let count = idx.numel, p = UnsafePointer(idx.pointer(Int64.self))
        var rowScale = [Double](repeating: 1, count: count)
        var freq = [Int: Int]()
        if scaleByFreq { for i in 0..<count { freq[Int(p[i]), default: 0] += 1 } }
        for i in 0..<count {
            let k = Int(p[i])
            rowScale[i] = k == paddingIdx ? 0 : (scaleByFreq ? 1 / Double(freq[k]!) : 1)
        }
        return rowScale
    }

    /// Scales, in place, every row of `weight` referenced by `indices` whose `normType`-norm
    /// exceeds `maxNorm` to norm `maxNorm` (PyTorch's `embedding_renorm_`, without autograd).
    static func renorm(_ weight: Tensor, _ idx: Tensor, maxNorm: Double, normType: Double) {
        let p = idx.pointer(Int64.self)
        let rows = Set((0..<idx.numel).map { Int(p[$0]) }).sorted()
        let v = weight.shape[0]
        for k in rows {
            precondition(k >= 0 && k < v, embeddingIndexErrorMessage)
            let row = weight.select(0, k)
            let values = row.toArray(as: Double.self)
            let norm: Double
            switch normType {
            case .infinity: norm = values.map { Swift.abs($0) }.max() ?? 0
            case 0: norm = Double(values.filter { $0 != 0 }.count)
            case 1: norm = values.reduce(0) { $0 + Swift.abs($1) }
            case 2: norm = values.reduce(0) { $0 + $1 * $1 }.squareRoot()
            default: norm = Double.pow(values.reduce(0) { $0 + Double.pow(Swift.abs($1), normType) }, 1 / normType)
            }
            if norm > maxNorm {
                let scaled = row.detach() * (maxNorm / (norm + 1e-7))
                copyKernel(from: scaled, into: row)
            }
        }
        if !rows.isEmpty { weight.storage.bumpVersion() }
    }

    /// Copies row `idx[i]` of a contiguous `[v, d]` table into row i of `out`, for every index.
    private static func gather(_ weight: Tensor, _ idx: UnsafePointer<Int64>, count: Int, into out: Tensor) {
        let v = weight.shape[0], d = weight.shape[1]
        let rowBytes = d * weight.dtype.itemSize
        let src = UnsafeRawPointer(weight.rawPointer), dst = out.rawPointer
        for i in 0..<count {
            let k = Int(idx[i])
            precondition(k >= 0 && k < v, embeddingIndexErrorMessage)
        }
        parallelFor(count, grain: Swift.max(1, elementwiseGrain / Swift.max(d, 1))) { lo, hi in
            for i in lo..<hi {
                (dst + i * rowBytes).copyMemory(from: src + Int(idx[i]) * rowBytes, byteCount: rowBytes)
            }
        }
    }

    /// The `[numWeights, d]` gradient of the table: row i of `g` (`[count, d]`, contiguous) added
    /// into row idx[i], skipping `paddingIdx`; divided by the index's frequency when `scaleByFreq`.
    /// Rows are split among threads, each scanning all indices for its own rows (no races).
    private static func backward(_ g: Tensor, _ idx: UnsafePointer<Int64>, count: Int, numWeights: Int,
                                 paddingIdx: Int, scaleByFreq: Bool) -> Tensor {
        let d = g.shape[1]
        let out = torch.zeros([numWeights, d], dtype: g.dtype)
        var freq: [Int] = []
        if scaleByFreq {
            freq = [Int](repeating: 0, count: numWeights)
            for i in 0..<count { freq[Int(idx[i])] += 1 }
        }
        func run<T: FloatElement>(_: T.Type) {
            let gp = UnsafePointer(g.pointer(T.self)), op = out.pointer(T.self)
            freq.withUnsafeBufferPointer { f in
                let body = { (lo: Int, hi: Int) in
                    for i in 0..<count {
                        let k = Int(idx[i])
                        if k == paddingIdx || k < lo || k >= hi { continue }
                        let src = gp + i * d, dst = op + k * d
                        if scaleByFreq {
                            let s = T(1 / Double(f[k]))
                            for j in 0..<d { dst[j] += s * src[j] }
                        } else {
                            for j in 0..<d { dst[j] += src[j] }
                        }
                    }
                }
                if count * d > elementwiseGrain { parallelFor(numWeights, grain: 1, body) } else { body(0, numWeights) }
            }
        }
        switch g.dtype {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        default:
            let r = backward(g.to(.float32), idx, count: count, numWeights: numWeights,
                             paddingIdx: paddingIdx, scaleByFreq: scaleByFreq)
            return r.to(g.dtype)
        }
        return out
    }
}
