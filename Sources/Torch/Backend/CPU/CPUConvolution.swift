/// The CPU convolution kernels at tensor level (the pointer kernels are in ConvolutionKernels.swift): forward
/// (`smallFromBig`), its adjoint (`bigFromSmall`) and the weight gradient; their CUDA twin is `CUDAConvolution`.
enum CPUConvolution {
    /// Y = conv(X, W) + bias for contiguous operands; crops `w`'s dead taps into `crop` unless the caller has.
    static func smallFromBig(_ x: Tensor, _ w: Tensor, bias b: Tensor?, _ g: ConvGeometry, outShape: [Int],
                             crop: inout ConvWeightCrop?) -> Tensor {
        let out = Tensor(uninitializedShape: outShape, dtype: x.dtype)
        var cropped = crop
        func run<T: ConvElement>(_: T.Type) {
            if cropped == nil { cropped = ConvWeightCrop(w, g, T.self) }
            // A cropped weight is new in every call: only the caller's own weight is worth packing once. The kernel
            // asks for the form its path multiplies (Winograd's filters, or the im2col matrix when Winograd got none);
            // `packed` holds the last answer until the kernel returns.
            var packed: PackedGEMMWeight?
            let packedWeight = { (form: PackedGEMMWeight.Form) -> UnsafePointer<Float>? in
                guard T.self == Float.self, cropped == nil, g.groups == 1 else { return nil }
                packed = PackedGEMMWeight.lookup(w, form)
                return packed.map { UnsafePointer($0.pointer) }
            }
            convSmallFromBigKernel(UnsafePointer(x.pointer(T.self)), UnsafePointer((cropped?.weight ?? w).pointer(T.self)),
                                   bias: b.map { UnsafePointer($0.pointer(T.self)) }, out.pointer(T.self), batch: outShape[0],
                                   cropped?.geometry ?? g, packedWeight: packedWeight)
            withExtendedLifetime(packed) {}
        }
        withConvElement(x.dtype, "conv") { run($0) }
        crop = cropped
        return out
    }

    /// X = convᵀ(Y, W) + bias for contiguous operands; `crop` as for `smallFromBig`.
    static func bigFromSmall(_ y: Tensor, _ w: Tensor, bias b: Tensor?, _ g: ConvGeometry, outShape: [Int],
                             crop: inout ConvWeightCrop?) -> Tensor {
        let out = Tensor(uninitializedShape: outShape, dtype: y.dtype)
        var cropped = crop
        func run<T: ConvElement>(_: T.Type) {
            if cropped == nil { cropped = ConvWeightCrop(w, g, T.self) }
            convBigFromSmallKernel(UnsafePointer(y.pointer(T.self)), UnsafePointer((cropped?.weight ?? w).pointer(T.self)),
                                   bias: b.map { UnsafePointer($0.pointer(T.self)) }, out.pointer(T.self), batch: outShape[0],
                                   cropped?.geometry ?? g)
        }
        withConvElement(y.dtype, "conv_transpose") { run($0) }
        crop = cropped
        return out
    }

    /// dW = Σₙ Y[n] · im2col(X[n])ᵀ for contiguous operands.
    static func weightGrad(_ y: Tensor, _ x: Tensor, _ g: ConvGeometry, weightShape: [Int]) -> Tensor {
        let out = Tensor(uninitializedShape: weightShape, dtype: y.dtype)
        func run<T: ConvElement>(_: T.Type) {
            convWeightGradKernel(UnsafePointer(y.pointer(T.self)), UnsafePointer(x.pointer(T.self)), out.pointer(T.self),
                                 batch: y.shape[0], g)
        }
        withConvElement(y.dtype, "conv_backward") { run($0) }
        return out
    }
}

/// A weight cut down to the taps of a convolution that read its input (ConvolutionTapCropping.swift), with the
/// geometry that goes with it. The forward makes it and its backward reuses it for the input gradient, so a weight
/// with dead taps is cropped once per step instead of twice: 33 MB of strided reads a step for ResNet-18's last
/// stage on 32×32 images, whose 3×3 convolutions on 1×1 planes keep only their centre tap.
struct ConvWeightCrop {
    let weight: Tensor
    let geometry: ConvGeometry

    /// The crop of the contiguous `weight` for `g`, or nil when every tap is live.
    init?<T: ConvElement>(_ weight: Tensor, _ g: ConvGeometry, _: T.Type) {
        guard let taps = g.liveTaps else { return nil }
        geometry = g.cropped(to: taps)
        self.weight = Tensor(uninitializedShape: [g.smallChannels * geometry.colRows], dtype: weight.dtype)
        copyLiveTaps(weight.pointer(T.self), self.weight.pointer(T.self), rows: g.smallChannels * g.bigChannels / g.groups,
                     kernel: g.kernel, taps: taps, toCropped: true)
    }
}

/// Runs `body` with the kernel element type of `dtype` (float32 or float64).
private func withConvElement(_ dtype: DType, _ op: String, _ body: (any ConvElement.Type) -> Void) {
    switch dtype {
    case .float32: body(Float.self)
    case .float64: body(Double.self)
    default: preconditionFailure("\(op): expected a floating point tensor (float32 or float64), got \(dtype)")
    }
}
