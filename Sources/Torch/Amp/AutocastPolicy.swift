/// Autocast's op lists: which dtype each op runs in inside a region, per device, as PyTorch's
/// `aten/src/ATen/autocast_mode` registers them for the ops SwiftTorch has. An op not listed runs in its inputs'
/// dtypes (BatchNorm, activations, pooling, elementwise arithmetic, views), so a float16 activation stays float16.

/// How autocast treats an op's floating inputs on the region's device.
enum AutocastPolicy: Equatable {
    /// float32 inputs (not float64) become the region's dtype: matrix products, linear, convolutions.
    case lowerPrecision
    /// float16/bfloat16 inputs become float32: softmax, losses, norms, reductions, exp/log.
    case float32
    /// Mixed floating inputs become the widest of them (float64 excluded, as PyTorch's `promote`).
    case promote
    /// The op refuses to run in a region: the message says what to use instead.
    case banned(String)
}

/// The ops autocast changes, named as PyTorch's ATen ops (the names in its lists). PyTorch's lists hold more
/// (baddbmm, addmv, cdist, the RNN cells, interpolation, grid_sample …); those SwiftTorch lacks, or whose
/// entry points are not wired yet, run in their inputs' dtypes.
enum AutocastOp: String, CaseIterable {
    // Lower precision on both devices.
    case conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
    case mm, bmm, matmul, addmm, linear, prelu
    // Lower precision on CUDA only.
    case mv, einsum
    // float32 on both devices.
    case prod, mse_loss, l1_loss, smooth_l1_loss, huber_loss, nll_loss, cross_entropy_loss, kl_div
    case binary_cross_entropy_with_logits, margin_ranking_loss, cosine_embedding_loss
    // float32 on the CPU, refused on CUDA.
    case binary_cross_entropy
    // float32 on CUDA only.
    case acos, asin, cosh, sinh, tan, exp, expm1, log, log10, log2, log1p, reciprocal, rsqrt, pow
    case softplus, layer_norm, group_norm, logsumexp, softmax, log_softmax, cumsum, cumprod, sum, norm
    // Promote on CUDA.
    case bilinear, dot

    /// Ops in PyTorch's lower-precision list for both devices.
    private static let lowerEverywhere: Set<AutocastOp> = [
        .conv1d, .conv2d, .conv3d, .conv_transpose1d, .conv_transpose2d, .conv_transpose3d,
        .mm, .bmm, .matmul, .addmm, .linear, .prelu,
    ]
    private static let lowerOnCUDA: Set<AutocastOp> = [.mv, .einsum]
    private static let float32Everywhere: Set<AutocastOp> = [
        .prod, .mse_loss, .l1_loss, .smooth_l1_loss, .huber_loss, .nll_loss, .cross_entropy_loss, .kl_div,
        .binary_cross_entropy_with_logits, .margin_ranking_loss, .cosine_embedding_loss,
    ]
    private static let float32OnCUDA: Set<AutocastOp> = [
        .acos, .asin, .cosh, .sinh, .tan, .exp, .expm1, .log, .log10, .log2, .log1p, .reciprocal, .rsqrt,
        .pow, .softplus, .layer_norm, .group_norm, .logsumexp, .softmax, .log_softmax, .cumsum, .cumprod, .sum, .norm,
    ]
    private static let promoteOnCUDA: Set<AutocastOp> = [.bilinear, .dot]

    /// What autocast does to this op on `device`, or nil when it leaves it alone there.
    func policy(on device: AutocastDevice) -> AutocastPolicy? {
        if Self.lowerEverywhere.contains(self) { return .lowerPrecision }
        if Self.float32Everywhere.contains(self) { return .float32 }
        switch device {
        case .cuda:
            if self == .binary_cross_entropy {
                return .banned("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
                    + "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                    + "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
                    + "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                    + "safe to autocast.")
            }
            if Self.lowerOnCUDA.contains(self) { return .lowerPrecision }
            if Self.float32OnCUDA.contains(self) { return .float32 }
            if Self.promoteOnCUDA.contains(self) { return .promote }
            return nil
        case .cpu:
            return self == .binary_cross_entropy ? .float32 : nil
        }
    }
}

extension Autocast {
    /// `op`'s inputs as autocast casts them, or nil when autocast leaves them as they are (off for their device,
    /// op not listed there, nothing to cast). Only floating tensors on the op's device other than float64 are
    /// cast, as PyTorch's `is_eligible`.
    @inline(never)
    static func cast(_ op: AutocastOp, _ inputs: [Tensor?]) -> [Tensor?]? {
        guard let s = state else { return nil }
        // The device whose list applies: CUDA when any input is there (a CPU scalar operand does not decide).
        let kind: AutocastDevice = inputs.contains { $0.map { $0.device != .cpu } == true } ? .cuda : .cpu
        guard s.enabled(kind), let policy = op.policy(on: kind) else { return nil }
        func eligible(_ t: Tensor) -> Bool {
            t.dtype.isFloatingPoint && t.dtype != .float64 && AutocastDevice(t.device) == kind
        }
        let target: DType
        switch policy {
        case .banned(let message): preconditionFailure(message)
        case .lowerPrecision: target = s.dtype(kind)
        case .float32: target = .float32
        case .promote:
            var widest: DType? = nil
            for case let t? in inputs where eligible(t) { widest = widest.map { DType.promote($0, t.dtype) } ?? t.dtype }
            guard let widest else { return nil }
            target = widest
        }
        var changed = false
        let out = inputs.map { (t: Tensor?) -> Tensor? in
            guard let t, eligible(t), t.dtype != target else { return t }
            changed = true
            return policy == .lowerPrecision ? cachedCast(t, to: target, s) : t.to(target)
        }
        return changed ? out : nil
    }

    /// `t.to(dtype)`, reusing the region's cast of a float32 parameter (a leaf that requires grad and is no view)
    /// so a weight used several times in a forward pass is cast once, as PyTorch's `cached_cast`.
    private static func cachedCast(_ t: Tensor, to dtype: DType, _ s: AutocastState) -> Tensor {
        let cacheable = s.cacheEnabled && t.dtype == .float32 && t.requiresGrad && t.isLeaf && t.viewBase == nil
            && GradMode.isEnabled
        guard cacheable else { return t.to(dtype) }
        let id = ObjectIdentifier(t)
        if let hit = s.cache[id], hit.cast.dtype == dtype { return hit.cast }
        let c = t.to(dtype)
        s.cache[id] = (t, c)
        return c
    }

    /// Runs `body` on `op`'s inputs as autocast casts them, with autocast suspended inside, or returns nil when
    /// autocast leaves the inputs alone (the caller then runs the op as usual). Each op that autocast changes
    /// begins with
    /// `if _slowPath(Autocast.isActive), let r = Autocast.run(.mm, [self, other], { $0[0]!.mm($0[1]!) }) { return r }`.
    @inline(never)
    static func run<R>(_ op: AutocastOp, _ inputs: [Tensor?], _ body: ([Tensor?]) -> R) -> R? {
        guard let cast = cast(op, inputs) else { return nil }
        return suspended { body(cast) }
    }
}
