import CCUDAShim

/// Convolutions on CUDA: the three kernels every convolution and its derivatives are made of, as on the CPU
/// (ConvolutionOps.swift): the forward (`smallFromBig`), its adjoint (`bigFromSmall`, the transposed convolution
/// and the input gradient) and the weight gradient.
///
/// Each runs through cuDNN (`CUDNNConvolution`) when it loaded, `torch.backends.cudnn.enabled` is true and cuDNN
/// takes the problem; otherwise as im2col + cuBLAS GEMMs (the `convolution` kernel family,
/// `ConvolutionKernelSource`), which is what the rest of this type does.
///
/// Images go side by side in the column matrix, so each is one GEMM per group for a whole chunk of the batch;
/// chunks keep the column matrix under `columnBudget` bytes. Inputs are contiguous CUDA tensors (float32 and
/// float64; float16 and bfloat16 natively through cuDNN, else in float32); results are new contiguous tensors on the
/// same device.
enum CUDAConvolution {
    /// The most bytes a column matrix may take; larger batches go in chunks of images. 256 MiB keeps the
    /// temporary small beside what training a network on a GPU holds anyway.
    nonisolated(unsafe) static var columnBudget = 256 << 20

    /// `conv(x, w) + bias` shaped `outShape` ([N, Csmall, small…]).
    static func smallFromBig(_ x: Tensor, _ w: Tensor, bias: Tensor?, _ g: ConvGeometry, outShape: [Int]) -> Tensor {
        precondition(x.device == w.device, sameDeviceMessage(x.device, w.device))
        if let out = CUDNNConvolution.smallFromBig(x, w, bias: bias, g, outShape: outShape) { return out }
        if isHalf(x.dtype) {
            return widened(x.dtype) { smallFromBig(x.float(), w.float(), bias: bias?.float(), g, outShape: outShape) }
        }
        check(x, w, "conv")
        let out = Tensor(uninitializedShape: outShape, dtype: x.dtype, device: x.device)
        let n = x.shape[0], cs = g.smallChannels, p = g.smallPlane
        forEachChunk(images: n, g) { n0, nc in
            let col = im2col(x.narrow(0, n0, nc), g, images: nc)
            let product = Tensor(uninitializedShape: [cs, nc * p], dtype: x.dtype, device: x.device)
            groupGemms(g) { gi, csg, cbg in
                (w.reshape([cs, cbg * g.kernelVolume]).narrow(0, gi * csg, csg),
                 col.narrow(0, gi * cbg * g.kernelVolume, cbg * g.kernelVolume), product.narrow(0, gi * csg, csg))
            }
            // [Csmall, nc·P] → images [nc, Csmall, P], with the bias on the way.
            let images = product.view([cs, nc, p]).permute([1, 0, 2])
            let target = out.narrow(0, n0, nc).view([nc, cs, p])
            if let bias {
                CUDAElementwise.launch(.binary(.add, x.dtype), out: target, images, bias.view([1, cs, 1]))
            } else {
                CUDAElementwise.copy(from: images, into: target)
            }
        }
        return out
    }

    /// The adjoint of `smallFromBig` applied to `y` ([N, Csmall, small…]) plus a per-big-channel bias,
    /// shaped `outShape` ([N, Cbig, big…]).
    static func bigFromSmall(_ y: Tensor, _ w: Tensor, bias: Tensor?, _ g: ConvGeometry, outShape: [Int]) -> Tensor {
        precondition(y.device == w.device, sameDeviceMessage(y.device, w.device))
        if let out = CUDNNConvolution.bigFromSmall(y, w, bias: bias, g, outShape: outShape) { return out }
        if isHalf(y.dtype) {
            return widened(y.dtype) { bigFromSmall(y.float(), w.float(), bias: bias?.float(), g, outShape: outShape) }
        }
        check(y, w, "conv_transpose")
        let out = Tensor(uninitializedShape: outShape, dtype: y.dtype, device: y.device)
        let n = y.shape[0], cs = g.smallChannels, p = g.smallPlane, rows = g.bigChannels * g.kernelVolume
        forEachChunk(images: n, g) { n0, nc in
            let dy = channelsFirst(y.narrow(0, n0, nc), channels: cs, plane: p)
            let col = Tensor(uninitializedShape: [rows, nc * p], dtype: y.dtype, device: y.device)
            groupGemms(g) { gi, csg, cbg in
                (w.reshape([cs, cbg * g.kernelVolume]).narrow(0, gi * csg, csg).t(),
                 dy.narrow(0, gi * csg, csg), col.narrow(0, gi * cbg * g.kernelVolume, cbg * g.kernelVolume))
            }
            col2im(col, into: out.narrow(0, n0, nc), g, images: nc)
        }
        if let bias {
            let view = out.view([n, g.bigChannels, g.bigPlane])
            CUDAElementwise.launch(.binary(.add, y.dtype), out: view, view, bias.view([1, g.bigChannels, 1]))
        }
        return out
    }

    /// The weight gradient ([Csmall, Cbig/groups, kernel…] = `weightShape`) of `smallFromBig` for output
    /// gradient `dy` ([N, Csmall, small…]) and input `x` ([N, Cbig, big…]).
    static func weightGrad(_ dy: Tensor, _ x: Tensor, _ g: ConvGeometry, weightShape: [Int]) -> Tensor {
        precondition(x.device == dy.device, sameDeviceMessage(x.device, dy.device))
        if let out = CUDNNConvolution.weightGrad(dy, x, g, weightShape: weightShape) { return out }
        if isHalf(x.dtype) { return widened(x.dtype) { weightGrad(dy.float(), x.float(), g, weightShape: weightShape) } }
        check(x, dy, "conv_backward")
        let out = Tensor(uninitializedShape: weightShape, dtype: x.dtype, device: x.device)
        let cs = g.smallChannels, p = g.smallPlane, cbgK = g.bigChannels / g.groups * g.kernelVolume
        let flat = out.reshape([cs, cbgK])
        var first = true
        forEachChunk(images: x.shape[0], g) { n0, nc in
            let col = im2col(x.narrow(0, n0, nc), g, images: nc)
            let dyc = channelsFirst(dy.narrow(0, n0, nc), channels: cs, plane: p)
            groupGemms(g, beta: first ? 0 : 1) { gi, csg, cbg in
                (dyc.narrow(0, gi * csg, csg), col.narrow(0, gi * cbgK, cbgK).t(), flat.narrow(0, gi * csg, csg))
            }
            first = false
        }
        if x.shape[0] == 0 { CUDAElementwise.fill(out, 0) }
        return out
    }

    // MARK: pieces

    private static func isHalf(_ dtype: DType) -> Bool { dtype == .float16 || dtype == .bfloat16 }

    /// A float16/bfloat16 problem cuDNN did not take (not loaded, disabled, or the problem refused): the im2col
    /// kernels are float32/float64, so it runs in float32 and the result is rounded back, as on the CPU.
    private static func widened(_ dtype: DType, _ body: () -> Tensor) -> Tensor {
        torch.noGrad { body().to(dtype) }
    }

    private static func check(_ a: Tensor, _ b: Tensor, _ op: String) {
        precondition(a.device == b.device, sameDeviceMessage(a.device, b.device))
        precondition(ConvolutionKernelSource.supports(a.dtype),
                     "\"\(op)_cuda\" not implemented for '\(a.dtype.name.capitalized)' (SwiftTorch's im2col CUDA convolutions take float32 and float64; float16 and bfloat16 need cuDNN: \(CUDNNConvolution.unavailableReason))")
    }

    /// Runs `body(first image, image count)` over chunks of the batch whose column matrix fits the budget.
    private static func forEachChunk(images n: Int, _ g: ConvGeometry, _ body: (Int, Int) -> Void) {
        let bytesPerImage = Swift.max(1, g.bigChannels * g.kernelVolume * g.smallPlane * 8)
        let chunk = Swift.max(1, Swift.min(n, columnBudget / bytesPerImage))
        var n0 = 0
        while n0 < n {
            body(n0, Swift.min(chunk, n - n0))
            n0 += chunk
        }
    }

    /// One GEMM per group: `operands(group, small channels per group, big channels per group)` gives the
    /// 2-D (a, b, out) of that group's `out = a @ b (+ out when beta is 1)`.
    private static func groupGemms(_ g: ConvGeometry, beta: Double = 0,
                                   _ operands: (Int, Int, Int) -> (Tensor, Tensor, Tensor)) {
        let csg = g.smallChannels / g.groups, cbg = g.bigChannels / g.groups
        for gi in 0..<g.groups {
            let (a, b, c) = operands(gi, csg, cbg)
            gemm(a, b, into: c, alpha: 1, beta: beta)
        }
    }

    /// `t` ([nc, channels, plane…]) as a contiguous [channels, nc·plane] matrix (images side by side).
    private static func channelsFirst(_ t: Tensor, channels: Int, plane: Int) -> Tensor {
        let nc = t.shape[0]
        let out = Tensor(uninitializedShape: [channels, nc * plane], dtype: t.dtype, device: t.device)
        CUDAElementwise.copy(from: t.reshape([nc, channels, plane]).permute([1, 0, 2]), into: out.view([channels, nc, plane]))
        return out
    }

    private static func im2col(_ x: Tensor, _ g: ConvGeometry, images nc: Int) -> Tensor {
        let col = Tensor(uninitializedShape: [g.bigChannels * g.kernelVolume, nc * g.smallPlane], dtype: x.dtype, device: x.device)
        launch(.im2col, dtype: x.dtype, g, images: nc, threads: col.numel, from: x.contiguous().deviceAddress, to: col.deviceAddress,
               device: x.device)
        return col
    }

    private static func col2im(_ col: Tensor, into out: Tensor, _ g: ConvGeometry, images nc: Int) {
        launch(.col2im, dtype: col.dtype, g, images: nc, threads: out.numel, from: col.deviceAddress, to: out.deviceAddress,
               device: out.device)
    }

    private static func launch(_ op: ConvolutionKernelOp, dtype: DType, _ g: ConvGeometry, images: Int, threads: Int,
                               from input: UInt64, to output: UInt64, device: Device) {
        if threads == 0 { return }
        guard case .cuda(let index) = device else { preconditionFailure("CUDAConvolution: tensor on \(device)") }
        var args = stcu_conv_args()
        args.n = Int64(threads)
        args.channels = Int64(g.bigChannels)
        args.images = Int64(images)
        func triple(_ v: [Int]) -> (Int64, Int64, Int64) { (Int64(v[0]), Int64(v[1]), Int64(v[2])) }
        args.big = triple(g.big); args.small = triple(g.small); args.kernel = triple(g.kernel)
        args.stride = triple(g.stride); args.padding = triple(g.padding); args.dilation = triple(g.dilation)
        args.in = input; args.out = output
        CUDARuntime.device(index).launch(.convolution(op, dtype), items: threads, args: &args, "conv_\(op.name)")
    }
}
