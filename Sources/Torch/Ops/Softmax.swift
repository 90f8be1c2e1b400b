/// softmax, logSoftmax and softmin along a dim, with fused, numerically stable kernels.
///
/// The input is viewed as `[outer, n, inner]` (n = the softmax dim). The last-dim case (inner = 1)
/// works row by row: max, `x - max`, vectorized exp (`ct_vexp_f32` for float32), sum, scale. Other
/// dims work on contiguous `inner`-wide rows with per-column running max and sum, so no transpose is
/// needed (`CPUSoftmax`). On CUDA, forward and backward are one launch each (`CUDAFused`). Backward formulas are fused kernels when no graph is being built, and differentiable
/// tensor expressions under `createGraph`.

/// PyTorch's message for softmax on a non-floating dtype.
func softmaxDTypeErrorMessage(op: String, dtype: DType) -> String {
    let names: [DType: String] = [.int64: "Long", .int32: "Int", .uint8: "Byte", .bool: "Bool"]
    return "\"\(op)_lastdim_kernel_impl\" not implemented for '\(names[dtype] ?? dtype.name)'"
}

/// Forward without autograd: softmax or log_softmax of `x` over normalised dim `d`.
private func softmaxForward(_ x: Tensor, _ d: Int, log: Bool) -> Tensor {
    switch x.device {
    case .cpu: return CPUSoftmax.forward(x, dim: d, log: log)
    case .cuda: return CUDAFused.softmax(x, dim: d, log: log)   // one row-wise launch
    }
}

/// The input gradient of softmax / log_softmax from the output gradient `g` and the output `y`.
/// Fused when no graph is recorded, differentiable tensor ops otherwise.
private func softmaxBackward(_ g: Tensor, _ y: Tensor, _ d: Int, log: Bool) -> Tensor {
    if GradMode.isEnabled {
        if log { return g - y.exp() * g.sum(dim: d, keepdim: true) }
        return y * (g - (g * y).sum(dim: d, keepdim: true))
    }
    checkSameDevice(g, y)
    switch y.device {
    case .cpu: return CPUSoftmax.backward(g, y, dim: d, log: log)
    case .cuda: return CUDAFused.softmaxBackward(g, y, dim: d, log: log)
    }
}

extension Tensor {
    /// `exp(x) / sum(exp(x))` along `dim`, computed stably (the max is subtracted first).
    ///
    /// ```swift
    /// let p = logits.softmax(dim: 1)     // rows sum to 1
    /// ```
    /// - Parameters:
    ///   - dim: the dimension that sums to 1.
    ///   - dtype: converts the input to this type first (PyTorch's `dtype=`).
    public func softmax(dim: Int, dtype: DType? = nil) -> Tensor { softmaxImpl(dim, dtype, log: false) }

    /// `x - log(sum(exp(x)))` along `dim`, computed stably.
    public func logSoftmax(dim: Int, dtype: DType? = nil) -> Tensor { softmaxImpl(dim, dtype, log: true) }

    /// `softmax(-x)` along `dim`.
    public func softmin(dim: Int, dtype: DType? = nil) -> Tensor {
        let x = dtype.map { self.to($0) } ?? self
        return (-x).softmax(dim: dim)
    }

    private func softmaxImpl(_ dim: Int, _ dtype: DType?, log: Bool) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.softmax(dim: dim, log: log), [self], { softmaxImpl(dim, dtype, log: log) }) { return r }
        if _slowPath(Autocast.isActive), dtype == nil,
           let r = Autocast.run(log ? .log_softmax : .softmax, [self], { $0[0]!.softmaxImpl(dim, nil, log: log) }) { return r }
        if let dtype, dtype != self.dtype { return self.to(dtype).softmaxImpl(dim, nil, log: log) }
        let op = log ? "log_softmax" : "softmax"
        precondition(self.dtype.isFloatingPoint, softmaxDTypeErrorMessage(op: op, dtype: self.dtype))
        let d = normalizeDim(dim, self.dim, op: op)
        let out = softmaxForward(self, self.dim == 0 ? 0 : d, log: log)
        if needsGrad {
            let so = SavedTensor(output: out)
            let dd = self.dim == 0 ? 0 : d
            record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", out, inputs: [self],
                   saved: { [.int("dim", dim), .tensor("result", so)] }) { node, g in
                [softmaxBackward(g, so.unpack(node), dd, log: log)]
            }
        }
        return out
    }
}

extension torch {
    public static func softmax(_ x: Tensor, dim: Int, dtype: DType? = nil) -> Tensor { x.softmax(dim: dim, dtype: dtype) }
    public static func logSoftmax(_ x: Tensor, dim: Int, dtype: DType? = nil) -> Tensor { x.logSoftmax(dim: dim, dtype: dtype) }
    public static func softmin(_ x: Tensor, dim: Int, dtype: DType? = nil) -> Tensor { x.softmin(dim: dim, dtype: dtype) }
}
