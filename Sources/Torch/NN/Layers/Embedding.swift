/// `nn.Embedding` and `F.embedding`: a lookup table of rows selected by integer indices, with
/// PyTorch's `padding_idx` (a row that gets no gradient), `max_norm` renormalisation and
/// `scale_grad_by_freq`; grad_fn `EmbeddingBackward0`.

/// The indices as a contiguous int64 tensor, stopping with PyTorch's message for other dtypes.
private func embeddingIndices(_ indices: Tensor) -> Tensor {
    precondition(indices.dtype == .int64 || indices.dtype == .int32,
                 "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got \(indices.legacyTypeName) instead (while checking arguments for embedding)")
    if indices.dtype == .int64 && indices.isContiguous { return indices }
    let out = Tensor(uninitializedShape: indices.shape, dtype: .int64, device: indices.device)
    copyKernel(from: indices, into: out)
    return out
}

/// PyTorch's message for an index outside the table.
let embeddingIndexErrorMessage = "index out of range in self"

/// `embeddingRenorm` of a table on a GPU, from device ops and without waiting for it: the referenced rows'
/// `normType`-norms, a per-row scale (`maxNorm / (norm + 1e-7)` where the norm exceeds `maxNorm`, else 1), and
/// the scaled rows written back in place (a row referenced twice gets the same value twice).
private func deviceEmbeddingRenorm(_ weight: Tensor, _ flat: Tensor, maxNorm: Double, normType: Double) {
    if flat.numel == 0 { return }
    let rows = weight.indexSelect(0, flat)
    let a = rows.abs()
    let norm: Tensor
    switch normType {
    case .infinity: norm = a.amax(dim: [1])
    case 0: norm = (rows .!= 0).to(rows.dtype).sum(dim: 1)
    case 1: norm = a.sum(dim: 1)
    case 2: norm = (rows * rows).sum(dim: 1).sqrt()
    default: norm = a.pow(normType).sum(dim: 1).pow(1 / normType)
    }
    let scale = torch.where(norm .> maxNorm, maxNorm / (norm + 1e-7), torch.onesLike(norm))
    weight[flat] = rows * scale.unsqueeze(1)
}

extension nn.functional {
    /// Rows of `weight` (`[numEmbeddings, embeddingDim]`) selected by the integer `input`
    /// (any shape, int64 or int32): the result has shape `input.shape + [embeddingDim]`
    /// (PyTorch's `F.embedding`).
    ///
    /// - Parameters:
    ///   - input: integer indices (int64 or int32), any shape.
    ///   - weight: the table, `[numEmbeddings, embeddingDim]`.
    ///   - paddingIdx: this row gets no gradient (negative counts from the end).
    ///   - maxNorm: referenced rows whose `normType`-norm exceeds it are first rescaled in place.
    ///   - normType: the p of the p-norm used with `maxNorm` (default 2).
    ///   - scaleGradByFreq: divide each row's gradient by how often it occurs in `input`.
    ///
    /// ```swift
    /// let w = torch.randn(10, 3, requiresGrad: true)
    /// let e = F.embedding(torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]]), w)   // [2, 4, 3]
    /// ```
    public static func embedding(_ input: Tensor, _ weight: Tensor, paddingIdx: Int? = nil, maxNorm: Double? = nil,
                                 normType: Double = 2, scaleGradByFreq: Bool = false) -> Tensor {
        precondition(weight.dim == 2, "'weight' must be 2-D")
        let v = weight.shape[0], d = weight.shape[1]
        var pad = -1
        if let paddingIdx {
            precondition(paddingIdx < v && paddingIdx >= -v, "Padding_idx must be within num_embeddings")
            pad = paddingIdx < 0 ? v + paddingIdx : paddingIdx
        }
        let idx = embeddingIndices(input)
        checkSameDevice(weight, idx)
        switch weight.device {
        case .cpu: break
        case .cuda:
            return embeddingOnDevice(idx, weight, paddingIdx: pad, maxNorm: maxNorm, normType: normType, scaleGradByFreq: scaleGradByFreq)
        }
        if let maxNorm { torch.noGrad { CPUEmbedding.renorm(weight, idx, maxNorm: maxNorm, normType: normType) } }
        let out = Tensor(uninitializedShape: input.shape + [d], dtype: weight.dtype)
        CPUEmbedding.gather(weight, idx, into: out)
        if weight.needsGrad {
            record("EmbeddingBackward0", out, inputs: [weight]) { _, g in
                [embeddingBackward(g, idx, numWeights: v, paddingIdx: pad, scaleGradByFreq: scaleGradByFreq)]
            }
        }
        return out
    }

    /// `embedding` of a table on a GPU: one gather of rows; the backward adds rows of the gradient into a
    /// zero table with one atomic `indexAdd_`, weighted by the padding row's zero and 1/frequency.
    private static func embeddingOnDevice(_ idx: Tensor, _ weight: Tensor, paddingIdx pad: Int, maxNorm: Double?,
                                          normType: Double, scaleGradByFreq: Bool) -> Tensor {
        if let maxNorm { torch.noGrad { deviceEmbeddingRenorm(weight, idx.reshape([idx.numel]), maxNorm: maxNorm, normType: normType) } }
        let v = weight.shape[0], d = weight.shape[1], count = idx.numel
        let flat = idx.reshape([count])
        let out = torch.noGrad { weight.indexSelect(0, flat) }.view(idx.shape + [d])
        if weight.needsGrad {
            record("EmbeddingBackward0", out, inputs: [weight]) { _, g in
                var rows = g.reshape(count, d)
                var scale: Tensor? = nil
                if pad >= 0 { scale = flat.ne(Double(pad)).to(g.dtype) }
                if scaleGradByFreq {
                    let ones = torch.ones([count], dtype: g.dtype, device: g.device)
                    let freq = torch.zeros([v], dtype: g.dtype, device: g.device).indexAdd_(0, flat, ones)
                    let inverse = freq.indexSelect(0, flat).reciprocal()
                    scale = scale.map { $0 * inverse } ?? inverse
                }
                if let scale { rows = rows * scale.unsqueeze(1) }
                return [torch.zeros([v, d], dtype: g.dtype, device: g.device).indexAdd_(0, flat, rows)]
            }
        }
        return out
    }

    /// The gradient of `embedding` w.r.t. a CPU table (PyTorch's `embedding_backward`).
    static func embeddingBackward(_ g: Tensor, _ idx: Tensor, numWeights: Int, paddingIdx: Int,
                                  scaleGradByFreq: Bool) -> Tensor {
        let count = idx.numel, d = g.shape.last ?? 0
        if GradMode.isEnabled {
            // Differentiable form (create_graph): scatter-add of masked, scaled rows.
            let rowScale = CPUEmbedding.rowScales(idx, paddingIdx: paddingIdx, scaleByFreq: scaleGradByFreq)
            let scale = Tensor(rowScale, shape: [count, 1]).to(g.dtype)
            let rows = g.reshape(count, d) * scale
            let target = idx.reshape(count, 1).expand(count, d)
            return torch.zeros([numWeights, d], dtype: g.dtype).scatterAdd(0, target, rows)
        }
        return CPUEmbedding.backward(g.reshape(count, d), idx, numWeights: numWeights, paddingIdx: paddingIdx,
                                     scaleByFreq: scaleGradByFreq)
    }
}

extension nn {
    /// A lookup table of `numEmbeddings` vectors of size `embeddingDim` (PyTorch's
    /// `nn.Embedding`): the weight is drawn from N(0, 1) with the default generator, and the
    /// `paddingIdx` row (if any) is zero and gets no gradient.
    ///
    /// ```swift
    /// let emb = nn.Embedding(10, 3, paddingIdx: 0)
    /// print(emb)                                              // Embedding(10, 3, padding_idx=0)
    /// let y = emb(torch.tensor([[0, 2, 0, 5]]))               // [1, 4, 3]
    /// let pre = nn.Embedding.fromPretrained(torch.randn(5, 4))  // frozen: weight.requiresGrad == false
    /// ```
    public final class Embedding: Module {
        public let numEmbeddings: Int
        public let embeddingDim: Int
        /// The row that gets no gradient (stored non-negative), or nil.
        public let paddingIdx: Int?
        /// Rows referenced in a forward pass are rescaled to at most this norm, when set.
        public let maxNorm: Double?
        /// The p of the p-norm used with `maxNorm`.
        public let normType: Double
        /// Divide gradients by the indices' frequency in the batch.
        public let scaleGradByFreq: Bool
        /// `[numEmbeddings, embeddingDim]`.
        public var weight: Parameter

        /// - Parameters:
        ///   - numEmbeddings: size of the table.
        ///   - embeddingDim: size of each vector.
        ///   - paddingIdx: a row kept at zero that gets no gradient (negative counts from the end).
        ///   - maxNorm: renormalise referenced rows to at most this `normType`-norm.
        ///   - normType: the p of the p-norm used with `maxNorm` (default 2).
        ///   - scaleGradByFreq: scale gradients by the inverse frequency of the indices in a batch.
        ///   - dtype: the table's dtype (default `torch.defaultDType`).
        public convenience init(_ numEmbeddings: Int, _ embeddingDim: Int, paddingIdx: Int? = nil, maxNorm: Double? = nil,
                                normType: Double = 2, scaleGradByFreq: Bool = false, dtype: DType? = nil) {
            self.init(numEmbeddings, embeddingDim, paddingIdx: paddingIdx, maxNorm: maxNorm, normType: normType,
                      scaleGradByFreq: scaleGradByFreq, weight: nil, freeze: false, dtype: dtype)
        }

        init(_ numEmbeddings: Int, _ embeddingDim: Int, paddingIdx: Int?, maxNorm: Double?, normType: Double,
             scaleGradByFreq: Bool, weight: Tensor?, freeze: Bool, dtype: DType?) {
            if let paddingIdx {
                precondition(paddingIdx < numEmbeddings && paddingIdx >= -numEmbeddings, "Padding_idx must be within num_embeddings")
            }
            self.numEmbeddings = numEmbeddings
            self.embeddingDim = embeddingDim
            self.paddingIdx = paddingIdx.map { $0 < 0 ? $0 + numEmbeddings : $0 }
            self.maxNorm = maxNorm
            self.normType = normType
            self.scaleGradByFreq = scaleGradByFreq
            if let weight {
                precondition(weight.shape == [numEmbeddings, embeddingDim], "Shape of weight does not match num_embeddings and embedding_dim")
                self.weight = Parameter(weight.detach(), requiresGrad: !freeze)
            } else {
                self.weight = Parameter(torch.empty(numEmbeddings, embeddingDim, dtype: dtype))
            }
            super.init()
            if weight == nil { resetParameters() }
        }

        /// An embedding whose table is `embeddings` (`[numEmbeddings, embeddingDim]`, storage
        /// shared); frozen (no gradient) unless `freeze: false`.
        public static func fromPretrained(_ embeddings: Tensor, freeze: Bool = true, paddingIdx: Int? = nil,
                                          maxNorm: Double? = nil, normType: Double = 2,
                                          scaleGradByFreq: Bool = false) -> Embedding {
            precondition(embeddings.dim == 2, "Embeddings parameter is expected to be 2-dimensional")
            return Embedding(embeddings.shape[0], embeddings.shape[1], paddingIdx: paddingIdx, maxNorm: maxNorm,
                             normType: normType, scaleGradByFreq: scaleGradByFreq, weight: embeddings,
                             freeze: freeze, dtype: nil)
        }

        /// Redraws the weight from N(0, 1) and zeroes the padding row.
        public func resetParameters() {
            nn.`init`.normal_(weight)
            if let paddingIdx { torch.noGrad { _ = weight.select(0, paddingIdx).fill_(0) } }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.embedding(x, weight, paddingIdx: paddingIdx, maxNorm: maxNorm, normType: normType,
                        scaleGradByFreq: scaleGradByFreq)
        }

        public override func extraRepr() -> String {
            var s = "\(numEmbeddings), \(embeddingDim)"
            if let paddingIdx { s += ", padding_idx=\(paddingIdx)" }
            if let maxNorm { s += ", max_norm=\(pyFloat(maxNorm))" }
            if normType != 2 { s += ", norm_type=\(pyFloat(normType))" }
            if scaleGradByFreq { s += ", scale_grad_by_freq=True" }
            return s
        }
    }
}
