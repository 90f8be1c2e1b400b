/// Convolution → BatchNorm (→ ReLU, ReLU6 or Hardtanh) in eval mode as one convolution.
///
/// In eval mode a batch norm is a fixed per-channel affine map, y = x·α + β with α = γ/√(running_var + ε) and
/// β = beta − running_mean·α, so after a convolution it folds into the convolution's weights and bias (PyTorch
/// offers the same as `torch.nn.utils.fusion.fuse_conv_bn_eval`, applied by hand). The convolution kernels add
/// the bias while they write their output, so the batch norm's own pass over the activations disappears, and a
/// ReLU after it runs in place on the fresh output. `nn.Sequential` applies this to every Conv → BatchNorm
/// (→ ReLU) run of its children, and torchvision's models call `nn.convBatchNorm` in their blocks.
///
/// Results equal the unfused modules' to float rounding (the products are taken in a different order).

/// The folded weight and bias of one convolution + batch norm pair, with what they were computed from.
final class ConvBatchNormFold {
    let weight: Tensor
    let bias: Tensor
    /// Identity and version of every tensor the fold read; a change to any of them rebuilds it.
    let sources: [(ObjectIdentifier, Int)]
    init(weight: Tensor, bias: Tensor, sources: [(ObjectIdentifier, Int)]) {
        (self.weight, self.bias, self.sources) = (weight, bias, sources)
    }
}

extension nn {
    /// `bn(conv(x))`, then `activation` — computed as one convolution with `bn` folded into the weights when
    /// nothing could tell the difference, else module by module:
    /// - `conv` a non-transposed `nn.Conv1d/2d/3d` with zero padding, `bn` a `BatchNorm` of its channels in eval
    ///   mode with running statistics;
    /// - no autograd graph being recorded (grad mode off, or neither `x` nor a parameter requires grad);
    /// - no forward hooks on the modules.
    /// The folded weights are kept on `conv` and rebuilt when any of the six tensors they come from changes. A
    /// `nn.ReLU`, `nn.ReLU6` or `nn.Hardtanh` activation then runs in place on the convolution's output; any other
    /// runs as its module.
    ///
    /// ```swift
    /// // A block's forward, fused in eval mode:
    /// out = nn.convBatchNorm(conv1, bn1, then: relu, x)
    /// ```
    public static func convBatchNorm(_ conv: Module, _ bn: Module, then activation: Module? = nil, _ x: Tensor) -> Tensor {
        if let y = fusedConvBatchNorm(conv, bn, then: activation, x) { return y }
        let y = bn(conv(x))
        return activation.map { $0(y) } ?? y
    }

    /// `convBatchNorm`'s fused path, or nil where it does not apply.
    static func fusedConvBatchNorm(_ conv: Module, _ bn: Module, then activation: Module?, _ x: Tensor) -> Tensor? {
        guard let c = conv as? ConvNd, let b = bn as? BatchNormBase, let fold = foldIfExact(c, b, x) else { return nil }
        let y = c.convolve(x, weight: fold.weight, bias: fold.bias)
        guard let activation else { return y }
        // The output is new and seen by no one else, so a clamp (ReLU, ReLU6, Hardtanh) may run in place on it even
        // when its module was built with inplace: false.
        guard !activation.hasForwardHooks, let clamp = inPlaceClamp(activation) else { return activation(y) }
        return clamp(y)
    }

    /// The in-place form of a clamp activation (ReLU, ReLU6, Hardtanh) that `convBatchNorm` runs on the fused output,
    /// or nil for any other module; `nn.Sequential` folds a following clamp into a Conv → BatchNorm run.
    static func inPlaceClamp(_ module: Module) -> ((Tensor) -> Tensor)? {
        if module is ReLU { return { $0.relu_() } }
        if module is ReLU6 { return { F.relu6($0, inplace: true) } }
        if let h = module as? Hardtanh { return { F.hardtanh($0, minVal: h.minVal, maxVal: h.maxVal, inplace: true) } }
        return nil
    }

    /// The fold of `conv` and `bn` when running them as one is exact to rounding (see `convBatchNorm`), or nil.
    static func foldIfExact(_ conv: ConvNd, _ bn: BatchNormBase, _ x: Tensor) -> ConvBatchNormFold? {
        // The batch norm of the convolution's rank exactly (a subclass such as SyncBatchNorm keeps its own path).
        let bnType = ObjectIdentifier(type(of: bn)), dims = conv.spatialDims
        guard bnType == ObjectIdentifier(dims == 1 ? BatchNorm1d.self : dims == 2 ? BatchNorm2d.self : BatchNorm3d.self),
              x.dim == dims + 2, !conv.transposed, conv.paddingMode == .zeros, !bn.training, let mean = bn.runningMean,
              let variance = bn.runningVar, bn.numFeatures == conv.outChannels, !conv.hasForwardHooks,
              !bn.hasForwardHooks, x.dtype == conv.weight.dtype, conv.weight.dtype.isFloatingPoint else { return nil }
        let tensors: [Tensor?] = [conv.weight, conv.bias, bn.weight, bn.bias, mean, variance]
        if GradMode.isEnabled && (x._requiresGrad || tensors.contains { $0?._requiresGrad ?? false }) { return nil }
        let sources = tensors.compactMap { $0.map { (ObjectIdentifier($0), $0.storage.version) } }
        if let cached = conv.batchNormFold, cached.sources.elementsEqual(sources, by: { $0 == $1 }) { return cached }
        let fold = torch.noGrad { () -> ConvBatchNormFold in
            // α = γ/√(var + ε) and β = beta − mean·α in float64, then rounded once to the weights' dtype.
            let dtype = conv.weight.dtype
            var alpha = (variance.to(.float64) + bn.eps).rsqrt()
            if let w = bn.weight { alpha = alpha * w.to(.float64) }
            var shift = -(mean.to(.float64) * alpha)
            if let cb = conv.bias { shift = shift + cb.to(.float64) * alpha }
            if let bb = bn.bias { shift = shift + bb.to(.float64) }
            var shape = [Int](repeating: 1, count: conv.weight.dim)
            shape[0] = conv.outChannels
            let weight = (conv.weight.to(.float64) * alpha.reshape(shape)).to(dtype).contiguous()
            return ConvBatchNormFold(weight: weight, bias: shift.to(dtype), sources: sources)
        }
        conv.batchNormFold = fold
        return fold
    }
}
