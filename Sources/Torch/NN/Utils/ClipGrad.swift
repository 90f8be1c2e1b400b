/// `nn.utils`: gradient clipping (`clipGradNorm_`, `clipGradValue_`) and conversion between
/// parameters and one flat vector (`parametersToVector`, `vectorToParameters`), with PyTorch's
/// formulas.

extension nn {
    /// PyTorch's `torch.nn.utils`.
    public enum utils {}
}

extension nn.utils {
    /// Scales all gradients in place so that their joint `normType`-norm is at most `maxNorm`
    /// (PyTorch's `clip_grad_norm_`): the norm of the per-gradient norms is computed, then every
    /// gradient is multiplied by `min(maxNorm / (totalNorm + 1e-6), 1)`. Parameters without a
    /// gradient are skipped.
    ///
    /// ```swift
    /// loss.backward()
    /// nn.utils.clipGradNorm_(model.parameters(), maxNorm: 1.0)
    /// opt.step()
    /// ```
    ///
    /// - Parameters:
    ///   - parameters: the tensors whose gradients are scaled together.
    ///   - maxNorm: the largest total norm allowed.
    ///   - normType: p of the norm (`.infinity` for the max norm).
    ///   - errorIfNonfinite: stop when the total norm is NaN or infinite instead of scaling by it.
    /// - Returns: the total norm of the gradients before clipping (a 0-d tensor).
    @discardableResult
    public static func clipGradNorm_(_ parameters: [Tensor], maxNorm: Double, normType: Double = 2,
                                     errorIfNonfinite: Bool = false) -> Tensor {
        let grads = parameters.compactMap { $0.grad }
        if grads.isEmpty { return torch.tensor(0.0) }
        return torch.noGrad {
            let norms = grads.map { $0.norm(p: normType) }
            let dtype = norms.dropFirst().reduce(norms[0].dtype) { DType.promote($0, $1.dtype) }
            // Stacked where the gradients live: no per-parameter round trip to the host on a GPU.
            let stacked = torch.stack(norms.map { $0.to(dtype) })
            let total = stacked.norm(p: normType)
            if errorIfNonfinite {
                let v = total.item()
                precondition(v.isFinite, clipGradNonfiniteMessage(normType: normType))
            }
            let coef = (maxNorm / (total + 1e-6)).clamp(max: 1)
            for g in grads { g.mul_(coef) }
            return total
        }
    }

    /// `clipGradNorm_` of a single tensor's gradient.
    @discardableResult
    public static func clipGradNorm_(_ parameter: Tensor, maxNorm: Double, normType: Double = 2,
                                     errorIfNonfinite: Bool = false) -> Tensor {
        clipGradNorm_([parameter], maxNorm: maxNorm, normType: normType, errorIfNonfinite: errorIfNonfinite)
    }

    /// Clamps every gradient in place to `[-clipValue, clipValue]` (PyTorch's `clip_grad_value_`).
    ///
    /// ```swift
    /// nn.utils.clipGradValue_(model.parameters(), clipValue: 0.5)
    /// ```
    public static func clipGradValue_(_ parameters: [Tensor], clipValue: Double) {
        torch.noGrad {
            for p in parameters {
                if let g = p.grad { g.clamp_(min: -clipValue, max: clipValue) }
            }
        }
    }

    /// `clipGradValue_` of a single tensor's gradient.
    public static func clipGradValue_(_ parameter: Tensor, clipValue: Double) {
        clipGradValue_([parameter], clipValue: clipValue)
    }

    /// All parameters flattened and concatenated into one 1-D tensor (PyTorch's
    /// `parameters_to_vector`); differentiable (`CatBackward0`).
    ///
    /// ```swift
    /// let flat = nn.utils.parametersToVector(model.parameters())
    /// ```
    public static func parametersToVector(_ parameters: [Tensor]) -> Tensor {
        precondition(!parameters.isEmpty, "torch.cat(): expected a non-empty list of Tensors")
        let dtype = parameters.dropFirst().reduce(parameters[0].dtype) { DType.promote($0, $1.dtype) }
        let sizes = parameters.map { $0.numel }
        let out = Tensor(uninitializedShape: [sizes.reduce(0, +)], dtype: dtype)
        torch.noGrad {
            var offset = 0
            for (p, n) in zip(parameters, sizes) {
                if n > 0 { copyKernel(from: p, into: out.narrow(0, offset, n).view(p.shape)) }
                offset += n
            }
        }
        if anyNeedsGrad(parameters) {
            let shapes = parameters.map { $0.shape }
            let types = parameters.map { $0.dtype }
            record("CatBackward0", out, inputs: parameters) { _, g in
                var offset = 0
                return zip(shapes, types).map { shape, type in
                    let n = shapeNumel(shape)
                    defer { offset += n }
                    let piece = g.narrow(0, offset, n).reshape(shape)
                    return piece.dtype == type ? piece : piece.to(type)
                }
            }
        }
        return out
    }

    /// Makes each parameter view its consecutive slice of `vec` (PyTorch's
    /// `vector_to_parameters`, which assigns `param.data`): the parameters keep their identity and
    /// `requiresGrad`, and share memory with `vec` afterwards.
    ///
    /// ```swift
    /// nn.utils.vectorToParameters(flat * 0.5, model.parameters())
    /// ```
    public static func vectorToParameters(_ vec: Tensor, _ parameters: [Tensor]) {
        let needed = parameters.reduce(0) { $0 + $1.numel }
        precondition(vec.dim == 1 && vec.numel >= needed, vectorToParametersSizeMessage(vec: vec.shape, needed: needed))
        let v = vec.detach()
        var offset = 0
        for p in parameters {
            let n = p.numel
            p.replaceContents(with: v.narrow(0, offset, n).view(p.shape))
            offset += n
        }
    }
}

/// PyTorch's message when `errorIfNonfinite` finds a NaN or infinite total norm.
func clipGradNonfiniteMessage(normType: Double) -> String {
    "The total norm of order \(pyFloat(normType)) for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
}

/// The message when `vec` cannot fill the parameters.
func vectorToParametersSizeMessage(vec: [Int], needed: Int) -> String {
    "vectorToParameters: expected a 1-D vector of at least \(needed) elements for the parameters, got shape \(shapeString(vec))"
}
