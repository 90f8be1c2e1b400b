extension optim {
    /// Adadelta with PyTorch's update.
    public final class Adadelta: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1.0, rho: Double = 0.9, eps: Double = 1e-6, weightDecay: Double = 0,
                    maximize: Bool = false) {
            precondition(lr >= 0 && rho >= 0 && rho <= 1 && eps >= 0 && weightDecay >= 0, "Adadelta: invalid hyper-parameter")
            super.init(params, defaults: [("lr", .double(lr)), ("rho", .double(rho)), ("eps", .double(eps)),
                                          ("weight_decay", .double(weightDecay)), ("maximize", .bool(maximize)),
                                          ("capturable", .bool(false)), ("foreach", .none), ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, fused in
                let lr = group.lr, rho = group.double("rho"), eps = group.double("eps")
                let wd = group.double("weight_decay"), maximize = group.bool("maximize")
                _ = st.incrementStep()
                let sq = st.buffer("square_avg") { torch.zerosLike(p) }
                let acc = st.buffer("acc_delta") { torch.zerosLike(p) }
                if p.isCuda {
                    if CUDAOptimizer.canFuse([p, g, sq, acc]) {
                        fused.append(.adadelta, tensors: [p, g, sq, acc], flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd),
                                     scalars: [rho, 1 - rho, eps, wd, lr])
                        return
                    }
                    let grad = deviceGradient(g, p, maximize: maximize, weightDecay: wd)
                    sq.mul_(rho).add_(grad * grad * (1 - rho))
                    let delta = (acc + eps).sqrt() / (sq + eps).sqrt() * grad
                    acc.mul_(rho).add_(delta * delta * (1 - rho))
                    p.add_(delta * -lr)
                    return
                }
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self), s = sq.pointer(T.self), a = acc.pointer(T.self)
                    let trho = T(rho), w = T(1 - rho), teps = T(eps), twd = T(wd), tlr = T(lr)
                    fusedUpdate(p.numel) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 { grad = grad + pp[i] * twd }
                            s[i] = s[i] * trho + grad * grad * w
                            let std = (s[i] + teps).squareRoot()
                            let delta = ((a[i] + teps).squareRoot() / std) * grad
                            a[i] = a[i] * trho + delta * delta * w
                            pp[i] = pp[i] + delta * -tlr
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }
}
