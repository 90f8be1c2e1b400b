/// Activations and the softmax family, onto `F` where SwiftTorch has the function and as formulas of Tensor ops
/// where ONNX's definition has parameters PyTorch's lacks (Selu's alpha and gamma, HardSigmoid's alpha and beta).
extension ONNXOps {
    static var activations: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]
        func act(_ name: String, _ f: @escaping (ONNXNode, Tensor) throws -> Tensor) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                guard x.isFloatingPoint else { throw node.fail("expects a floating-point input, got \(x.dtype)") }
                let r = try f(node, x)
                return [r.dtype == x.dtype ? r : r.to(x.dtype)]
            }
        }
        act("Relu") { _, x in x.relu() }
        act("Sigmoid") { _, x in x.sigmoid() }
        act("Tanh") { _, x in x.tanh() }
        act("LeakyRelu") { n, x in F.leakyRelu(x, negativeSlope: try n.float("alpha", 0.01)) }
        act("Elu") { n, x in
            let a = try n.float("alpha", 1)
            return torch.where(x .> 0, x, (x.exp() - 1) * a)
        }
        act("Celu") { n, x in
            let a = try n.float("alpha", 1)
            return x.relu() + ((x / a).exp() - 1).minimum(torch.zerosLike(x)) * a
        }
        act("Selu") { n, x in
            let a = try n.float("alpha", 1.67326319217681884765625), g = try n.float("gamma", 1.05070102214813232421875)
            return torch.where(x .> 0, x, (x.exp() - 1) * a) * g
        }
        act("ThresholdedRelu") { n, x in
            let a = try n.float("alpha", 1)
            return torch.where(x .> a, x, torch.zerosLike(x))
        }
        act("HardSigmoid") { n, x in
            let a = try n.float("alpha", 0.2), b = try n.float("beta", 0.5)
            return (x * a + b).clamp(min: 0, max: 1)
        }
        act("HardSwish") { _, x in x * (x / 6 + 0.5).clamp(min: 0, max: 1) }
        act("Softplus") { _, x in (x.exp() + 1).log() }
        act("Softsign") { _, x in x / (x.abs() + 1) }
        act("Gelu") { n, x in
            let mode = try n.string("approximate", "none")
            guard mode == "none" || mode == "tanh" else { throw n.fail("approximate '\(mode)' is not none or tanh") }
            return F.gelu(x, approximate: mode)
        }
        act("Mish") { _, x in x * (x.exp() + 1).log().tanh() }
        act("Swish") { n, x in x * (x * (try n.float("alpha", 1))).sigmoid() }
        act("Shrink") { n, x in
            let l = try n.float("lambd", 0.5), b = try n.float("bias", 0)
            return torch.where(x .< -l, x + b, torch.where(x .> l, x - b, torch.zerosLike(x)))
        }
        t["PRelu"] = { node, ins in
            let x = try ins.x(0), s = try ins.x(1)
            _ = try broadcastShape(x.shape, s.shape, node)
            return [torch.where(x .< 0, x * s, x)]
        }

        // Softmax, LogSoftmax, Hardmax: before opset 13 over the input flattened to 2-D at `axis` (default 1),
        // from 13 over the one `axis` (default -1).
        func softmaxFamily(_ name: String, _ f: @escaping (Tensor, Int) -> Tensor) {
            t[name] = { node, ins in
                let x = try ins.x(0)
                guard x.isFloatingPoint else { throw node.fail("expects a floating-point input, got \(x.dtype)") }
                if x.dim == 0 { return [f(x.reshape([1]), 0).reshape([])] }
                if node.opset < 13 {
                    let axis = try node.axis(try node.int("axis", 1), rank: x.dim + 1)
                    let rows = x.shape[..<axis].reduce(1, *), cols = x.shape[axis...].reduce(1, *)
                    return [f(x.reshape([rows, cols]), 1).reshape(x.shape)]
                }
                return [f(x, try node.axis(try node.int("axis", -1), rank: x.dim))]
            }
        }
        softmaxFamily("Softmax") { $0.softmax(dim: $1) }
        softmaxFamily("LogSoftmax") { $0.logSoftmax(dim: $1) }
        softmaxFamily("Hardmax") { x, d in
            let i = x.argmax(dim: d, keepdim: true)
            return torch.zerosLike(x).scatter(d, i, value: 1)
        }
        return t
    }
}
