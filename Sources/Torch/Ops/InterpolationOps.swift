/// The differentiable separable resampling op behind `F.interpolate`: one spatial dim at a time, forward and
/// adjoint each recorded with the other as its derivative, so every order of gradient is available.

/// A contiguous tensor of dtype `dt` with `t`'s values on `t`'s device, without autograd (t itself when it
/// already is one).
private func contiguousOperand(_ t: Tensor, _ dt: DType) -> Tensor {
    if t.dtype == dt && t.isContiguous { return t }
    let out = Tensor(uninitializedShape: t.shape, dtype: dt, device: t.device)
    copyKernel(from: t, into: out)
    return out
}

/// Runs the resampling kernel (or its adjoint) over `x` viewed as `[outer, size(dim), inner]`, writing a tensor
/// whose `dim` has `outLength`: the op family's one dispatch point, to `CUDAResampling` for CUDA tensors and to
/// `CPUResampling` (Backend/CPU/InterpolationKernels.swift) otherwise.
private func runResampling(_ x: Tensor, dim: Int, outLength: Int, taps: ResamplingTaps, adjoint: Bool) -> Tensor {
    let ct = x.dtype.computeType
    precondition(ct == .float32 || ct == .float64, "interpolate: unsupported dtype \(x.dtype)")
    let src = contiguousOperand(x, ct)
    var shape = x.shape
    shape[dim] = outLength
    let out = Tensor(uninitializedShape: shape, dtype: ct, device: x.device)
    let outer = shape[..<dim].reduce(1, *), inner = shape[(dim + 1)...].reduce(1, *)
    if outer > 0 && inner > 0 && outLength > 0 {
        switch (x.device, adjoint) {
        case (.cpu, false): CPUResampling.forward(src, into: out, dim: dim, taps: taps)
        case (.cpu, true): CPUResampling.adjoint(src, into: out, dim: dim, taps: taps)
        case (.cuda, false): CUDAResampling.forward(src, into: out, dim: dim, taps: taps)
        case (.cuda, true): CUDAResampling.adjoint(src, into: out, dim: dim, taps: taps)
        }
    } else if out.numel > 0 {
        _ = torch.noGrad { out.zero_() }
    }
    return out.dtype == x.dtype ? out : torch.noGrad { out.to(x.dtype) }
}

/// Resamples `dim` of `x` with `taps` (output length `taps.outSize`); the gradient is the adjoint resampling,
/// recorded as `name` (PyTorch's node name for the mode, like `UpsampleBilinear2DBackward0`).
func resampleAlongDim(_ x: Tensor, dim: Int, taps: ResamplingTaps, name: String) -> Tensor {
    let out = runResampling(x, dim: dim, outLength: taps.outSize, taps: taps, adjoint: false)
    if x.needsGrad {
        let inLength = x.shape[dim]
        record(name, out, inputs: [x]) { _, g in [resampleAdjointAlongDim(g, dim: dim, taps: taps, inLength: inLength, name: name)] }
    }
    return out
}

/// The adjoint of `resampleAlongDim` (scatter-add of the weighted rows back to `inLength`); its gradient is the
/// forward resampling again.
private func resampleAdjointAlongDim(_ g: Tensor, dim: Int, taps: ResamplingTaps, inLength: Int, name: String) -> Tensor {
    let out = runResampling(g, dim: dim, outLength: inLength, taps: taps, adjoint: true)
    if g.needsGrad {
        record(name.replacing("Backward0", with: "BackwardBackward0"), out, inputs: [g]) { _, gg in
            [resampleAlongDim(gg, dim: dim, taps: taps, name: name)]
        }
    }
    return out
}
