#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// Adamax (Adam with the infinity norm) with PyTorch's update.
    public final class Adamax: Optimizer {
        public init(_ params: [Tensor], lr: Double = 2e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])),
                                          ("eps", .double(eps)), ("weight_decay", .double(weightDecay)), ("foreach", .none),
                                          ("maximize", .bool(maximize)), ("differentiable", .bool(false)), ("capturable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, fused in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), maximize = group.bool("maximize")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expInf = st.buffer("exp_inf") { torch.zerosLike(p) }
                let clr = lr / (1 - Glibc.pow(beta1, step))
                if p.isCuda {
                    if CUDAOptimizer.canFuse([p, g, expAvg, expInf]) {
                        fused.append(.adamax, tensors: [p, g, expAvg, expInf], flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd),
                                     scalars: [1 - beta1, beta2, eps, wd], tensorScalars: [clr])
                        return
                    }
                    let grad = deviceGradient(g, p, maximize: maximize, weightDecay: wd)
                    expAvg.add_((grad - expAvg) * (1 - beta1))
                    expInf.copy_((expInf * beta2).maximum(grad.abs() + eps))
                    p.add_(expAvg / expInf * -clr)
                    return
                }
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self), m = expAvg.pointer(T.self), u = expInf.pointer(T.self)
                    let w1 = T(1 - beta1), tb2 = T(beta2), teps = T(eps), twd = T(wd), tclr = T(clr)
                    fusedUpdate(p.numel) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 { grad = grad + pp[i] * twd }
                            m[i] = lerp(m[i], grad, w1)
                            let a = u[i] * tb2, b = Swift.abs(grad) + teps
                            u[i] = (a.isNaN || a > b) ? a : b
                            pp[i] = pp[i] + (m[i] / u[i]) * -tclr
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }
}
