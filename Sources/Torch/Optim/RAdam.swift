#if canImport(Glibc)
import Glibc
#endif

extension optim {
    /// RAdam (rectified Adam) with PyTorch's update.
    public final class RAdam: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, decoupledWeightDecay: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])),
                                          ("eps", .double(eps)), ("weight_decay", .double(weightDecay)), ("maximize", .bool(maximize)),
                                          ("foreach", .none), ("capturable", .bool(false)),
                                          ("decoupled_weight_decay", .bool(decoupledWeightDecay)), ("differentiable", .bool(false))])
        }

        public override func step() {
            forEachParameter { group, p, g, st, fused in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), decoupled = group.bool("decoupled_weight_decay")
                let maximize = group.bool("maximize")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let bc1 = 1 - Glibc.pow(beta1, step), bc2 = 1 - Glibc.pow(beta2, step)
                let rhoInf = 2 / (1 - beta2) - 1
                let rhoT = rhoInf - 2 * step * Glibc.pow(beta2, step) / bc2
                let rect = rhoT > 5 ? ((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT)).squareRoot() : 0
                if p.isCuda {
                    if CUDAOptimizer.canFuse([p, g, expAvg, expAvgSq]) {
                        fused.append(.radam, tensors: [p, g, expAvg, expAvgSq],
                                     flags: OptimizerKernelFlags(maximize: maximize, weightDecay: wd, decoupled: decoupled),
                                     scalars: [1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr * wd, lr],
                                     tensorFlags: rhoT > 5 ? .rectified : [], tensorScalars: [bc1, bc2.squareRoot(), rect])
                        return
                    }
                    var grad = maximize ? -g : g
                    if wd != 0 { if decoupled { p.mul_(1 - lr * wd) } else { grad = grad + p * wd } }
                    expAvg.add_((grad - expAvg) * (1 - beta1))
                    expAvgSq.mul_(beta2).add_(grad * grad * (1 - beta2))
                    let corrected = expAvg / bc1
                    if rhoT > 5 {
                        p.add_(corrected * (bc2.squareRoot() / (expAvgSq.sqrt() + eps)) * (-lr * rect))
                    } else {
                        p.add_(corrected * -lr)
                    }
                    return
                }
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self), m = expAvg.pointer(T.self), v = expAvgSq.pointer(T.self)
                    let w1 = T(1 - beta1), tb2 = T(beta2), w2 = T(1 - beta2), teps = T(eps), twd = T(wd)
                    let decay = T(1 - lr * wd), tbc1 = T(bc1), tbc2s = T(bc2.squareRoot()), tlr = T(lr), trect = T(rect)
                    let rectified = rhoT > 5
                    fusedUpdate(p.numel) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 { if decoupled { pp[i] = pp[i] * decay } else { grad = grad + pp[i] * twd } }
                            m[i] = lerp(m[i], grad, w1)
                            v[i] = v[i] * tb2 + grad * grad * w2
                            let corrected = m[i] / tbc1
                            if rectified {
                                let adaptive = tbc2s / (v[i].squareRoot() + teps)
                                pp[i] = pp[i] - corrected * tlr * adaptive * trect
                            } else {
                                pp[i] = pp[i] - corrected * tlr
                            }
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }
}
