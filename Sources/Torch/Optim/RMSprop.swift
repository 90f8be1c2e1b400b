extension optim {
    /// RMSprop with PyTorch's update (alpha, eps, centered, momentum, weight decay).
    public final class RMSprop: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-2, alpha: Double = 0.99, eps: Double = 1e-8, weightDecay: Double = 0,
                    momentum: Double = 0, centered: Bool = false, maximize: Bool = false) {
            precondition(lr >= 0 && eps >= 0 && alpha >= 0 && momentum >= 0 && weightDecay >= 0, "RMSprop: invalid hyper-parameter (lr=\(lr), alpha=\(alpha), eps=\(eps), momentum=\(momentum), weight_decay=\(weightDecay))")
            super.init(params, defaults: [("lr", .double(lr)), ("momentum", .double(momentum)), ("alpha", .double(alpha)),
                                          ("eps", .double(eps)), ("centered", .bool(centered)), ("weight_decay", .double(weightDecay)),
                                          ("capturable", .bool(false)), ("foreach", .none), ("maximize", .bool(maximize)),
                                          ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, fused in
                let lr = group.lr, alpha = group.double("alpha"), eps = group.double("eps"), wd = group.double("weight_decay")
                let momentum = group.double("momentum"), centered = group.bool("centered"), maximize = group.bool("maximize")
                _ = st.incrementStep()
                let sq = st.buffer("square_avg") { torch.zerosLike(p) }
                let buf: Tensor? = momentum > 0 ? st.buffer("momentum_buffer") { torch.zerosLike(p) } : nil
                let gavg: Tensor? = centered ? st.buffer("grad_avg") { torch.zerosLike(p) } : nil
                if p.isCuda {
                    if CUDAOptimizer.canFuse([p, g, sq, buf, gavg]) {
                        var flags = OptimizerKernelFlags(maximize: maximize, weightDecay: wd)
                        if buf != nil { flags.insert(.momentum) }
                        if gavg != nil { flags.insert(.centered) }
                        fused.append(.rmsprop, tensors: [p, g, sq, buf, gavg], flags: flags,
                                     scalars: [alpha, 1 - alpha, eps, wd, momentum, lr])
                        return
                    }
                    let grad = deviceGradient(g, p, maximize: maximize, weightDecay: wd)
                    sq.mul_(alpha).add_(grad * grad * (1 - alpha))
                    var avg = sq
                    if let gavg {
                        gavg.add_((grad - gavg) * (1 - alpha))
                        avg = sq - gavg * gavg
                    }
                    let step = grad / (avg.sqrt() + eps)
                    if let buf { p.add_(buf.mul_(momentum).add_(step) * -lr) } else { p.add_(step * -lr) }
                    return
                }
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self), s = sq.pointer(T.self)
                    let b = buf?.pointer(T.self), ga = gavg?.pointer(T.self)
                    let ta = T(alpha), wa = T(1 - alpha), teps = T(eps), twd = T(wd), tm = T(momentum), tlr = T(lr)
                    fusedUpdate(p.numel) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 { grad = grad + pp[i] * twd }
                            s[i] = s[i] * ta + grad * grad * wa
                            var avg: T
                            if let ga {
                                ga[i] = lerp(ga[i], grad, wa)
                                avg = (s[i] + ga[i] * ga[i] * -1).squareRoot()
                            } else {
                                avg = s[i].squareRoot()
                            }
                            avg = avg + teps
                            if let b {
                                b[i] = b[i] * tm + grad / avg
                                pp[i] = pp[i] + b[i] * -tlr
                            } else {
                                pp[i] = pp[i] + (grad / avg) * -tlr
                            }
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }
}
