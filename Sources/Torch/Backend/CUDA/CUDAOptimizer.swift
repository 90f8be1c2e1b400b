import CCUDAShim

/// Fused optimizer updates on CUDA (the `optimizer` kernel family, `OptimizerKernelSource`): one launch per
/// parameter. The optimizers call these when every tensor of the update is a contiguous CUDA tensor of a
/// supported dtype (`canFuse`), and otherwise compose the same arithmetic from elementwise ops.
enum CUDAOptimizer {
    /// Whether `tensors` (parameter, gradient, state) can go through one fused launch.
    static func canFuse(_ tensors: [Tensor?]) -> Bool {
        guard let first = tensors.first, let p = first, p.isCuda, OptimizerKernelSource.supports(p.dtype) else { return false }
        return tensors.allSatisfy { t in
            guard let t else { return true }
            return t.device == p.device && t.dtype == p.dtype && t.isContiguous && t.numel == p.numel
        }
    }

    /// One Adam/AdamW update of `p` (see `OptimizerKernelOp.adam` for the scalars).
    static func adam(p: Tensor, grad: Tensor, expAvg: Tensor, expAvgSq: Tensor, maxExpAvgSq: Tensor?, stepSize: Double,
                     beta1: Double, beta2: Double, eps: Double, weightDecay: Double, bc2Sqrt: Double, lr: Double,
                     maximize: Bool, decoupled: Bool) {
        var args = stcu_opt_args()
        var flags: OptimizerKernelFlags = []
        if maximize { flags.insert(.maximize) }
        if maxExpAvgSq != nil { flags.insert(.amsgrad) }
        if decoupled { flags.insert(.decoupled) }
        if weightDecay != 0 { flags.insert(.weightDecay) }
        args.flags = flags.rawValue
        args.ptr = (p.deviceAddress, grad.deviceAddress, expAvg.deviceAddress, expAvgSq.deviceAddress, maxExpAvgSq?.deviceAddress ?? 0)
        args.f = (stepSize, beta1, beta2, eps, weightDecay, bc2Sqrt, 1 - lr * weightDecay, 0)
        launch(.adam, p, &args)
    }

    /// One SGD update of `p` (see `OptimizerKernelOp.sgd`); `buffer` is the momentum buffer when momentum ≠ 0.
    static func sgd(p: Tensor, grad: Tensor, buffer: Tensor?, lr: Double, momentum: Double, dampening: Double,
                    weightDecay: Double, nesterov: Bool, maximize: Bool, firstStep: Bool) {
        var args = stcu_opt_args()
        var flags: OptimizerKernelFlags = []
        if maximize { flags.insert(.maximize) }
        if nesterov { flags.insert(.nesterov) }
        if buffer != nil { flags.insert(.momentum) }
        if firstStep { flags.insert(.firstStep) }
        if weightDecay != 0 { flags.insert(.weightDecay) }
        args.flags = flags.rawValue
        args.ptr = (p.deviceAddress, grad.deviceAddress, buffer?.deviceAddress ?? 0, 0, 0)
        args.f = (lr, momentum, dampening, weightDecay, 0, 0, 0, 0)
        launch(.sgd, p, &args)
    }

    private static func launch(_ op: OptimizerKernelOp, _ p: Tensor, _ args: inout stcu_opt_args) {
        let n = p.numel
        if n == 0 { return }
        guard case .cuda(let index) = p.device else { preconditionFailure("CUDAOptimizer: parameter on \(p.device)") }
        args.n = Int64(n)
        CUDARuntime.device(index).launch(.optimizer(op, p.dtype), items: n, args: &args, "optimizer_\(op.name)")
    }
}
