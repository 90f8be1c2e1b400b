/// Convolution → BatchNorm (→ ReLU, ReLU6 or Hardtanh) (→ MaxPool) in eval mode as one convolution and one pooling.
///
/// In eval mode a batch norm is a fixed per-channel affine map, y = x·α + β with α = γ/√(running_var + ε) and
/// β = beta − running_mean·α, so after a convolution it folds into the convolution's weights and bias (PyTorch
/// offers the same as `torch.nn.utils.fusion.fuse_conv_bn_eval`, applied by hand). The convolution kernels add
/// the bias while they write their output, so the batch norm's own pass over the activations disappears, and a
/// ReLU after it runs in place on the fresh output. When a max pooling follows, the ReLU (or ReLU6, Hardtanh) moves
/// behind it and runs on each row of pooled outputs as the pooling writes it: a non-decreasing clamp commutes with
/// the maximum (NaN included), so this is exact and touches a quarter of the elements for 2×2 pooling. Without a batch
/// norm, Conv → ReLU → MaxPool fuses the same way whenever no autograd graph is recorded. `nn.Sequential` applies this
/// to every such run of its children, and torchvision's models call `nn.convBatchNorm` in their blocks.
///
/// Results equal the unfused modules' to float rounding (the products are taken in a different order); the moved
/// clamp changes nothing but the sign of a zero.

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
    /// `pool(activation(bn(conv(x))))` — computed as one convolution with `bn` folded into the weights and one
    /// pooling when nothing could tell the difference, else module by module:
    /// - `conv` a non-transposed `nn.Conv1d/2d/3d` with zero padding, `bn` a `BatchNorm` of its channels in eval
    ///   mode with running statistics;
    /// - no autograd graph being recorded (grad mode off, or neither `x` nor a parameter requires grad);
    /// - no forward hooks on the modules.
    /// The folded weights are kept on `conv` and rebuilt when any of the six tensors they come from changes. A
    /// `nn.ReLU`, `nn.ReLU6` or `nn.Hardtanh` activation then runs in place on the convolution's output, or, when
    /// `pool` is a `nn.MaxPool1d/2d/3d` of the convolution's rank, on the pooled rows as the pooling writes them;
    /// any other activation or pooling runs as its module.
    ///
    /// ```swift
    /// // A block's forward, fused in eval mode:
    /// out = nn.convBatchNorm(conv1, bn1, then: relu, x)
    /// // ResNet's stem: conv, batch norm, ReLU and max pooling in two passes
    /// y = nn.convBatchNorm(conv1, bn1, then: relu, pool: maxpool, x)
    /// ```
    public static func convBatchNorm(_ conv: Module, _ bn: Module, then activation: Module? = nil, pool: Module? = nil,
                                     _ x: Tensor) -> Tensor {
        if let y = fusedConvBlock(conv, bn, then: activation, pool: pool, x) { return y }
        var y = bn(conv(x))
        if let activation { y = activation(y) }
        return pool.map { $0(y) } ?? y
    }

    /// `convBatchNorm`'s fused path, or nil where it does not apply. `bn` may be nil when a max pooling follows
    /// (Conv → clamp → MaxPool, only the pooling fused); a `pool` that cannot be fused makes the whole call nil.
    static func fusedConvBlock(_ conv: Module, _ bn: Module?, then activation: Module?, pool: Module? = nil,
                               _ x: Tensor) -> Tensor? {
        guard let c = conv as? ConvNd else { return nil }
        var maxPool: MaxPoolNd?
        if let pool {
            guard let p = pool as? MaxPoolNd, p.dims == c.spatialDims, !p.hasForwardHooks,
                  x.dtype == .float32 || x.dtype == .float64 else { return nil }
            maxPool = p
        }
        // A clamp without hooks runs fused (in place, or on the pooled rows); any other activation as its module.
        let clamp = activation.flatMap { $0.hasForwardHooks ? nil : clampBounds($0) }
        let y: Tensor
        if let bn {
            guard let b = bn as? BatchNormBase, let fold = foldIfExact(c, b, x) else { return nil }
            y = c.convolve(x, weight: fold.weight, bias: fold.bias)
        } else {
            let recording = GradMode.isEnabled && (x._requiresGrad || c.weight._requiresGrad || (c.bias?._requiresGrad ?? false))
            guard maxPool != nil, activation == nil || clamp != nil, !c.hasForwardHooks, !recording else { return nil }
            y = c.forward(x)
        }
        guard let activation else { return maxPool.map { pooled(y, $0, clamp: nil) } ?? y }
        guard let clamp else {
            let a = activation(y)
            return maxPool.map { $0(a) } ?? a
        }
        if let maxPool { return pooled(y, maxPool, clamp: clamp) }
        // The output is new and seen by no one else, so the clamp may run in place on it even when its module was
        // built with inplace: false. (ReLU keeps its own kernel: the same selects, without the upper bound.)
        return activation is ReLU ? y.relu_() : F.hardtanh(y, minVal: clamp.lo, maxVal: clamp.hi, inplace: true)
    }

    /// `pool`'s values of `y`, with `clamp` applied to the pooled rows.
    private static func pooled(_ y: Tensor, _ pool: MaxPoolNd, clamp: (lo: Double, hi: Double)?) -> Tensor {
        F.maxPool(y, dims: pool.dims, kernel: pool.kernelSize, stride: pool.stride, padding: pool.padding,
                  dilation: pool.dilation, ceilMode: pool.ceilMode, indices: false, clamp: clamp).0
    }

    /// The bounds of a clamp activation (ReLU, ReLU6, Hardtanh) that `convBatchNorm` fuses, or nil for any other
    /// module; `nn.Sequential` folds a following clamp (and max pooling) into a Conv → BatchNorm run.
    static func clampBounds(_ module: Module) -> (lo: Double, hi: Double)? {
        if module is ReLU { return (0, .infinity) }
        if module is ReLU6 { return (0, 6) }
        if let h = module as? Hardtanh { return (h.minVal, h.maxVal) }
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
