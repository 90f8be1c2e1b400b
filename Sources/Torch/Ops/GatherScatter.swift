/// gather / scatter / scatter_add along a dim with an int64 index tensor.

extension Tensor {
    /// out[i][j] = self[index[i][j]][j] for dim 0 (and likewise for other dims).
    public func gather(_ dim: Int, _ index: Tensor) -> Tensor {
        let d = normalizeDim(dim, Swift.max(self.dim, 1), op: "gather")
        precondition(index.dim == self.dim, "gather(): Index tensor must have the same number of dimensions as input tensor")
        for i in 0..<self.dim where i != d {
            precondition(index.shape[i] <= shape[i], "gather(): Size does not match at dimension \(i) expected index \(shapeString(index.shape)) to be smaller than self \(shapeString(shape)) apart from dimension \(d)")
        }
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.gather(dim: d), [self, index], { gather(d, index) }) { return r }
        let out: Tensor
        switch device {
        case .cpu:
            checkSameDevice(index, self)
            out = CPUIndexing.gather(self, dim: d, index: index)
        case .cuda: out = CUDAIndexing.gather(self, dim: d, index: index)
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
        switch device {
        case .cpu:
            checkSameDevice(index, out)
            checkSameDevice(s, out)
            CPUIndexing.scatter(into: out, dim: d, index: index, src: s, accumulate: accumulate)
        case .cuda: CUDAIndexing.scatter(into: out, dim: d, index: index, src: s, accumulate: accumulate)
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
}

extension torch {
    public static func gather(_ x: Tensor, _ dim: Int, _ index: Tensor) -> Tensor { x.gather(dim, index) }
    public static func scatter(_ x: Tensor, _ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor { x.scatter(dim, index, src) }
    public static func scatterAdd(_ x: Tensor, _ dim: Int, _ index: Tensor, _ src: Tensor) -> Tensor { x.scatterAdd(dim, index, src) }
}
