/// Sliding blocks: `F.unfold` / `nn.Unfold` (im2col: every kernel-sized block of an image becomes a column) and
/// `F.fold` / `nn.Fold` (col2im: columns summed back into an image). Each is the other's adjoint, and both are
/// built from `indexSelect` / `indexAdd`, so the gradient of one is the other (to every order).

/// One spatial dim of a sliding-block geometry.
struct BlockAxis {
    var kernel: Int, dilation: Int, padding: Int, stride: Int
    /// The number of block positions along a padded extent of `size + 2 · padding`.
    func blocks(_ size: Int) -> Int { (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1 }
    /// Padded input position of kernel offset `k` in block `b`, kernel-major: `[k · blocks + b]`.
    func positions(blocks: Int) -> Tensor {
        var idx: [Int64] = []
        idx.reserveCapacity(kernel * blocks)
        for k in 0..<kernel { for b in 0..<blocks { idx.append(Int64(k * dilation + b * stride)) } }
        return Tensor(idx, shape: [idx.count])
    }
}

func blockAxes(_ op: String, kernelSize: any IntOrTuple, dilation: any IntOrTuple, padding: any IntOrTuple,
               stride: any IntOrTuple) throws -> [BlockAxis] {
    func pair(_ v: any IntOrTuple, _ name: String) throws -> [Int] {
        let a = v.intTupleValues
        try requireArgument(a.count == 1 || a.count == 2, "\(op): \(name) must be an int or a pair of ints, got \(a)")
        return a.count == 1 ? [a[0], a[0]] : a
    }
    let (k, d, p, s) = (try pair(kernelSize, "kernel_size"), try pair(dilation, "dilation"), try pair(padding, "padding"), try pair(stride, "stride"))
    try requireArgument(k.allSatisfy { $0 > 0 }, "\(op): kernel size should be greater than zero, but got kernel_size: \(pyTuple(k))")
    try requireArgument(d.allSatisfy { $0 > 0 }, "\(op): dilation should be greater than zero, but got dilation: \(pyTuple(d))")
    try requireArgument(p.allSatisfy { $0 >= 0 }, "\(op): padding should be non-negative, but got padding: \(pyTuple(p))")
    try requireArgument(s.allSatisfy { $0 > 0 }, "\(op): stride should be greater than zero, but got stride: \(pyTuple(s))")
    return (0..<2).map { BlockAxis(kernel: k[$0], dilation: d[$0], padding: p[$0], stride: s[$0]) }
}

extension nn.functional {
    /// Extracts every sliding `kernelSize` block of an `(N, C, H, W)` (or `(C, H, W)`) input as a column:
    /// the result is `(N, C · kH · kW, L)`, L the number of blocks (PyTorch's `F.unfold`, im2col).
    ///
    /// ```swift
    /// let cols = F.unfold(torch.randn(1, 3, 5, 5), kernelSize: 3, padding: 1)   // [1, 27, 25]
    /// ```
    public static func unfold(_ input: Tensor, kernelSize: any IntOrTuple, dilation: any IntOrTuple = 1,
                              padding: any IntOrTuple = 0, stride: any IntOrTuple = 1) -> Tensor {
        let (ax, oh, ow) = checkedArguments {
            try unfoldGeometry(inputShape: input.shape, kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        }
        let x = input.dim == 4 ? input : input.unsqueeze(0)
        let (n, c) = (x.shape[0], x.shape[1])
        let padded = ax[0].padding == 0 && ax[1].padding == 0 ? x
            : F.pad(x, [ax[1].padding, ax[1].padding, ax[0].padding, ax[0].padding])
        let picked = padded.indexSelect(2, ax[0].positions(blocks: oh)).indexSelect(3, ax[1].positions(blocks: ow))
        let cols = picked.view(n, c, ax[0].kernel, oh, ax[1].kernel, ow).permute(0, 1, 2, 4, 3, 5)
            .reshape(n, c * ax[0].kernel * ax[1].kernel, oh * ow)
        return input.dim == 4 ? cols : cols.squeeze(0)
    }

    /// Sums columns of sliding blocks back into an `outputSize` image (PyTorch's `F.fold`, col2im): the input is
    /// `(N, C · kH · kW, L)` (or unbatched), the result `(N, C, H, W)`; overlapping blocks add up.
    ///
    /// ```swift
    /// let cols = F.unfold(x, kernelSize: 2, stride: 2)
    /// let back = F.fold(cols, outputSize: [x.size(2), x.size(3)], kernelSize: 2, stride: 2)   // == x
    /// ```
    public static func fold(_ input: Tensor, outputSize: any IntOrTuple, kernelSize: any IntOrTuple,
                            dilation: any IntOrTuple = 1, padding: any IntOrTuple = 0, stride: any IntOrTuple = 1) -> Tensor {
        let (ax, h, w, oh, ow) = checkedArguments {
            try foldGeometry(inputShape: input.shape, outputSize: outputSize, kernelSize: kernelSize, dilation: dilation,
                             padding: padding, stride: stride)
        }
        let x = input.dim == 3 ? input : input.unsqueeze(0)
        let (n, rows) = (x.shape[0], x.shape[1])
        let (kh, kw) = (ax[0].kernel, ax[1].kernel)
        let c = rows / (kh * kw)
        let (hp, wp) = (h + 2 * ax[0].padding, w + 2 * ax[1].padding)
        let blocks = x.reshape(n, c, kh, kw, oh, ow).permute(0, 1, 2, 4, 3, 5).reshape(n, c, kh * oh, kw * ow)
        let alongW = torch.zeros([n, c, kh * oh, wp], dtype: x.dtype, device: x.device).indexAdd(3, ax[1].positions(blocks: ow), blocks)
        let image = torch.zeros([n, c, hp, wp], dtype: x.dtype, device: x.device).indexAdd(2, ax[0].positions(blocks: oh), alongW)
        let cropped = ax[0].padding == 0 && ax[1].padding == 0 ? image
            : image.narrow(2, ax[0].padding, h).narrow(3, ax[1].padding, w)
        return input.dim == 3 ? cropped : cropped.squeeze(0)
    }
    /// Checks `F.unfold`'s arguments; returns the axes and the number of blocks along H and W.
    static func unfoldGeometry(inputShape s: [Int], kernelSize: any IntOrTuple, dilation: any IntOrTuple,
                               padding: any IntOrTuple, stride: any IntOrTuple) throws -> ([BlockAxis], Int, Int) {
        try requireArgument(s.count == 3 || s.count == 4, "Input Error: Only 3D or 4D input Tensors are supported (got \(s.count)D)")
        let ax = try blockAxes("unfold", kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        let (h, w) = (s[s.count - 2], s[s.count - 1])
        let (oh, ow) = (ax[0].blocks(h), ax[1].blocks(w))
        try requireArgument(oh > 0 && ow > 0, "Given input with spatial size (\(h), \(w)), kernel_size=\(pyTuple([ax[0].kernel, ax[1].kernel])), dilation=\(pyTuple([ax[0].dilation, ax[1].dilation])), padding=\(pyTuple([ax[0].padding, ax[1].padding])), calculated shape of the array of sliding blocks as (\(oh), \(ow)), but its components must be at least one.")
        return (ax, oh, ow)
    }

    /// Checks `F.fold`'s arguments; returns the axes, the output size and the number of blocks along H and W.
    static func foldGeometry(inputShape s: [Int], outputSize: any IntOrTuple, kernelSize: any IntOrTuple,
                             dilation: any IntOrTuple, padding: any IntOrTuple,
                             stride: any IntOrTuple) throws -> ([BlockAxis], Int, Int, Int, Int) {
        try requireArgument(s.count == 2 || s.count == 3, "Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got \(s.count)D)")
        let ax = try blockAxes("fold", kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        let os = outputSize.intTupleValues
        try requireArgument(os.count == 1 || os.count == 2, "fold: output_size must be an int or a pair of ints, got \(os)")
        let (h, w) = os.count == 1 ? (os[0], os[0]) : (os[0], os[1])
        let (rows, l) = (s[s.count - 2], s[s.count - 1])
        let (kh, kw) = (ax[0].kernel, ax[1].kernel)
        try requireArgument(rows % (kh * kw) == 0, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=\(rows) and kernel_size=\(pyTuple([kh, kw]))")
        let (oh, ow) = (ax[0].blocks(h), ax[1].blocks(w))
        try requireArgument(oh > 0 && ow > 0 && oh * ow == l, "Given output_size=\(pyTuple([h, w])), kernel_size=\(pyTuple([kh, kw])), dilation=\(pyTuple([ax[0].dilation, ax[1].dilation])), padding=\(pyTuple([ax[0].padding, ax[1].padding])), stride=\(pyTuple([ax[0].stride, ax[1].stride])), expected size of input's dimension 2 to match the calculated number of sliding blocks \(oh) * \(ow) = \(oh * ow), but got input.size(2)=\(l).")
        return (ax, h, w, oh, ow)
    }
}

/// Python's repr of an argument as the user gave it: `2` or `(2, 3)`.
private func pyArg(_ v: [Int]) -> String { v.count == 1 ? "\(v[0])" : pyTuple(v) }

extension nn {
    /// `F.unfold` as a layer: `nn.Unfold(kernelSize: [2, 3])` prints
    /// `Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)`.
    public final class Unfold: Module {
        public let kernelSize: [Int], dilation: [Int], padding: [Int], stride: [Int]
        public init(kernelSize: any IntOrTuple, dilation: any IntOrTuple = 1, padding: any IntOrTuple = 0,
                    stride: any IntOrTuple = 1) {
            self.kernelSize = kernelSize.intTupleValues; self.dilation = dilation.intTupleValues
            self.padding = padding.intTupleValues; self.stride = stride.intTupleValues
            super.init()
        }
        public convenience init(_ kernelSize: any IntOrTuple, dilation: any IntOrTuple = 1, padding: any IntOrTuple = 0,
                                stride: any IntOrTuple = 1) {
            self.init(kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        }
        public override func forward(_ x: Tensor) -> Tensor {
            F.unfold(x, kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        }
        public override func extraRepr() -> String {
            "kernel_size=\(pyArg(kernelSize)), dilation=\(pyArg(dilation)), padding=\(pyArg(padding)), stride=\(pyArg(stride))"
        }
    }

    /// `F.fold` as a layer: `nn.Fold(outputSize: [4, 5], kernelSize: 2)` prints
    /// `Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)`.
    public final class Fold: Module {
        public let outputSize: [Int], kernelSize: [Int], dilation: [Int], padding: [Int], stride: [Int]
        public init(outputSize: any IntOrTuple, kernelSize: any IntOrTuple, dilation: any IntOrTuple = 1,
                    padding: any IntOrTuple = 0, stride: any IntOrTuple = 1) {
            self.outputSize = outputSize.intTupleValues; self.kernelSize = kernelSize.intTupleValues
            self.dilation = dilation.intTupleValues; self.padding = padding.intTupleValues; self.stride = stride.intTupleValues
            super.init()
        }
        public convenience init(_ outputSize: any IntOrTuple, _ kernelSize: any IntOrTuple, dilation: any IntOrTuple = 1,
                                padding: any IntOrTuple = 0, stride: any IntOrTuple = 1) {
            self.init(outputSize: outputSize, kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        }
        public override func forward(_ x: Tensor) -> Tensor {
            F.fold(x, outputSize: outputSize, kernelSize: kernelSize, dilation: dilation, padding: padding, stride: stride)
        }
        public override func extraRepr() -> String {
            "output_size=\(pyArg(outputSize)), kernel_size=\(pyArg(kernelSize)), dilation=\(pyArg(dilation)), padding=\(pyArg(padding)), stride=\(pyArg(stride))"
        }
    }
}
