/// gather / scatter / scatter_add along a dim with an int64 index tensor.

/// Walks every position of `index` (shape S) calling `body(indexPosition, selfOffsetWithoutDim, dimIndex)`.
private func forEachIndexed(_ index: Tensor, dim: Int, op: String, dimSize: Int,
                            _ body: (_ linear: Int, _ coords: [Int], _ target: Int) -> Void) {
    let idx = index.to(.int64).contiguous()
    let p = idx.pointer(Int64.self)
    let shape = idx.shape
    var coords = [Int](repeating: 0, count: shape.count)
    for i in 0..<idx.numel {
        let t = Int(p[i])
        precondition(t >= -dimSize && t < dimSize, "\(op)(): index \(t) is out of bounds for dimension \(dim) with size \(dimSize)")
        body(i, coords, t < 0 ? t + dimSize : t)
        var d = shape.count - 1
        while d >= 0 {
            coords[d] += 1
            if coords[d] < shape[d] { break }
            coords[d] = 0
            d -= 1
        }
    }
}

extension Tensor {
    /// out[i][j] = self[index[i][j]][j] for dim 0 (and likewise for other dims).
    public func gather(_ dim: Int, _ index: Tensor) -> Tensor {
        let d = normalizeDim(dim, Swift.max(self.dim, 1), op: "gather")
        precondition(index.dim == self.dim, "gather(): Index tensor must have the same number of dimensions as input tensor")
        for i in 0..<self.dim where i != d {
            precondition(index.shape[i] <= shape[i], "gather(): Size does not match at dimension \(i) expected index \(shapeString(index.shape)) to be smaller than self \(shapeString(shape)) apart from dimension \(d)")
        }
        let out: Tensor
        if !storage.isHost {
            out = CUDAIndexing.gather(self, dim: d, index: index)
        } else {
            precondition(index.storage.isHost, sameDeviceMessage(index.device, .cpu))
            out = Tensor(uninitializedShape: index.shape, dtype: dtype)
            let src = self
            let item = dtype.itemSize
            forEachIndexed(index, dim: d, op: "gather", dimSize: shape.isEmpty ? 1 : shape[d]) { lin, coords, t in
                var off = src.storageOffset
                for k in 0..<coords.count { off += (k == d ? t : coords[k]) * src.strides[k] }
                (out.storage.data + lin * item).copyMemory(from: src.storage.data + off * item, byteCount: item)
            }
        }
        if needsGrad {
            let inShape = shape, idx = index
            record("GatherBackward0", out, inputs: [self]) { _, g in
                [torch.zeros(inShape, dtype: g.dtype, device: g.device).scatterAdd(d, idx, g)]
            }
        }
        return out
    }

    /// A copy of self with `src` values written at `index` along `dim`.
    public func scatter(_ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor {
        scatterImpl(dim, index, src, accumulate: false)
    }

    /// A copy of self with `value` written at `index` along `dim`.
    public func scatter(_ dim: Int, _ index: Tensor, value: Double) -> Tensor {
        scatterImpl(dim, index, torch.full(index.shape, value, dtype: dtype, device: device), accumulate: false)
    }

    /// A copy of self with `src` values added at `index` along `dim`.
    public func scatterAdd(_ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor {
        scatterImpl(dim, index, src, accumulate: true)
    }

    /// In-place scatter.
    @discardableResult
    public func scatter_(_ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor {
        precondition(!needsGrad, "scatter_: in-place scatter on a tensor that requires grad is not supported; use scatter")
        copyKernel(from: scatterImpl(dim, index, src, accumulate: false), into: self)
        storage.bumpVersion()
        return self
    }

    private func scatterImpl(_ dim: Int, _ index: Tensor, _ src: Tensor, accumulate: Bool) -> Tensor {
        let d = normalizeDim(dim, Swift.max(self.dim, 1), op: "scatter")
        precondition(index.dim == self.dim, "scatter(): Index tensor must have the same number of dimensions as self tensor")
        precondition(src.dim == index.dim && zip(index.shape, src.shape).allSatisfy { $0 <= $1 },
                     "scatter(): Expected index \(shapeString(index.shape)) to be smaller than src \(shapeString(src.shape)) in every dimension")
        let out = contiguousCopy()
        let s = src.to(dtype)
        if !storage.isHost {
            CUDAIndexing.scatter(into: out, dim: d, index: index, src: s, accumulate: accumulate)
        } else {
            scatterOnHost(into: out, d, index, s, accumulate: accumulate)
        }
        if anyNeedsGrad(self, src) {
            let idx = index, srcShape = src.shape
            record(accumulate ? "ScatterAddBackward0" : "ScatterBackward0", out, inputs: [self, src]) { _, g in
                let gSelf = accumulate ? g : g.scatter(d, idx, torch.zeros(idx.shape, dtype: g.dtype, device: g.device))
                var gSrc = g.gather(d, idx)
                if srcShape != idx.shape {
                    // Only src's leading index-shaped block is read; the rest gets zero gradient.
                    gSrc = embedGradient(gSrc, into: srcShape) { t in
                        idx.shape.indices.reduce(t) { $0.narrow($1, 0, idx.shape[$1]) }
                    }
                }
                return [gSelf, gSrc]
            }
        }
        return out
    }

    /// The CPU scatter: `out[…, index[p], …] (+)= s[p]` for every position p of `index`.
    private func scatterOnHost(into out: Tensor, _ d: Int, _ index: Tensor, _ s: Tensor, accumulate: Bool) {
        for t in [index, s] where !t.storage.isHost { preconditionFailure(sameDeviceMessage(t.device, .cpu)) }
        let item = dtype.itemSize
        let outStrides = out.strides, srcStrides = s.strides
        forEachIndexed(index, dim: d, op: "scatter", dimSize: shape.isEmpty ? 1 : shape[d]) { lin, coords, t in
            var off = 0, srcOff = s.storageOffset
            for k in 0..<coords.count {
                off += (k == d ? t : coords[k]) * outStrides[k]
                srcOff += coords[k] * srcStrides[k]   // src is read at the index position's coordinates
            }
            if accumulate {
                switch dtype {
                case .float32: out.pointer(Float.self)[off] += s.storage.data.assumingMemoryBound(to: Float.self)[srcOff]
                case .float64: out.pointer(Double.self)[off] += s.storage.data.assumingMemoryBound(to: Double.self)[srcOff]
                case .int64: out.pointer(Int64.self)[off] += s.storage.data.assumingMemoryBound(to: Int64.self)[srcOff]
                case .int32: out.pointer(Int32.self)[off] += s.storage.data.assumingMemoryBound(to: Int32.self)[srcOff]
                default: preconditionFailure("scatter_add: unsupported dtype \(dtype)")
                }
            } else {
                (out.storage.data + off * item).copyMemory(from: s.storage.data + srcOff * item, byteCount: item)
            }
        }
    }
}

extension torch {
    public static func gather(_ x: Tensor, _ dim: Int, _ index: Tensor) -> Tensor { x.gather(dim, index) }
    public static func scatter(_ x: Tensor, _ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor { x.scatter(dim, index, src) }
    public static func scatterAdd(_ x: Tensor, _ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor { x.scatterAdd(dim, index, src) }
}
