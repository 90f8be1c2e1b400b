// nn.RNN / nn.LSTM / nn.GRU → ONNX RNN / LSTM / GRU, one node per layer (both directions in one node), as
// PyTorch's TorchScript exporter writes them. The weights are re-laid out for ONNX at export time (they become
// initializers, like PyTorch's folded ones):
//
//   - gate blocks reordered: LSTM PyTorch i,f,g,o → ONNX i,o,f,c; GRU r,z,n → z,r,h (linear_before_reset = 1,
//     PyTorch's n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))); a plain RNN has one block;
//   - W [dirs, G·hidden, in], R [dirs, G·hidden, hidden], B [dirs, 2·G·hidden] (W's bias then R's);
//   - Y [seq, dirs, batch, hidden] back to PyTorch's [seq, batch, dirs·hidden]: Squeeze of axis 1 for one
//     direction, Transpose + Reshape for two; h_n and c_n are the layers' Y_h / Y_c concatenated.
//
// batch_first inputs and outputs are transposed around the layers; an unbatched (2-D) input gets a batch dim of
// 1. Absent initial states are left out of the node (ONNX's default is zeros, as PyTorch's).

enum ExportRecurrent {
    static func emit(_ m: nn.RNNBase, _ input: Tensor, _ xn: String, h0: String?, c0: String?,
                     _ result: (Tensor, Tensor, Tensor?), _ s: ExportSession) {
        let (output, hN, cN) = result
        if m.dropout > 0 && m.training {
            return s.unsupported("aten::\(m.mode.lowercased())", "dropout between layers in training mode")
        }
        let kind = m.kind, dirs = m.numDirections, hidden = m.hiddenSize
        let opType: String, order: [Int]
        switch kind {
        case .lstm: (opType, order) = ("LSTM", [0, 3, 1, 2])
        case .gru: (opType, order) = ("GRU", [1, 0, 2])
        case .rnnTanh, .rnnRelu: (opType, order) = ("RNN", [0])
        }
        let batched = input.dim == 3
        // To [seq, batch, feature].
        var x = xn
        if !batched { x = s.node("Unsqueeze", [x, s.constInts([1])])[0] } else if m.batchFirst {
            x = s.node("Transpose", [x], [attr("perm", [1, 0, 2])])[0]
        }
        var h = h0, c = c0
        if !batched {
            h = h.map { s.node("Unsqueeze", [$0, s.constInts([1])])[0] }
            c = c.map { s.node("Unsqueeze", [$0, s.constInts([1])])[0] }
        }

        var attrs = [attr("hidden_size", hidden), attr("direction", dirs == 2 ? "bidirectional" : "forward")]
        switch kind {
        case .gru: attrs.append(attr("linear_before_reset", 1))
        case .rnnTanh: attrs.append(attr("activations", [String](repeating: "Tanh", count: dirs)))
        case .rnnRelu: attrs.append(attr("activations", [String](repeating: "Relu", count: dirs)))
        case .lstm: break
        }

        var hs: [String] = [], cs: [String] = []
        for layer in 0..<m.numLayers {
            let params = (0..<dirs).map { m.allWeights[layer * dirs + $0] }
            let w = s.constant(torch.stack(params.map { reorder($0[0], order) }))
            let r = s.constant(torch.stack(params.map { reorder($0[1], order) }))
            var ins = [x, w, r]
            if m.bias {
                ins.append(s.constant(torch.stack(params.map { torch.cat([reorder($0[2], order), reorder($0[3], order)]) })))
            } else {
                ins.append("")
            }
            ins.append("")   // sequence_lens: every sequence is full length
            let states = [h, c].prefix(kind == .lstm ? 2 : 1)
            for st in states {
                // This layer's slice of the stacked initial state.
                ins.append(st.map { s.node("Slice", [$0, s.constInts([layer * dirs]), s.constInts([(layer + 1) * dirs]),
                                                     s.constInts([0])])[0] } ?? "")
            }
            while ins.last == "" { ins.removeLast() }
            let outs = s.node(opType, ins, outputs: kind == .lstm ? 3 : 2, attrs)
            hs.append(outs[1])
            if kind == .lstm { cs.append(outs[2]) }
            // Y [seq, dirs, batch, hidden] → [seq, batch, dirs·hidden].
            if dirs == 1 {
                x = s.node("Squeeze", [outs[0], s.constInts([1])])[0]
            } else {
                let t = s.node("Transpose", [outs[0]], [attr("perm", [0, 2, 1, 3])])[0]
                x = s.node("Reshape", [t, s.constInts([0, 0, -1])])[0]
            }
        }
        var y = x
        if !batched { y = s.node("Squeeze", [y, s.constInts([1])])[0] } else if m.batchFirst {
            y = s.node("Transpose", [y], [attr("perm", [1, 0, 2])])[0]
        }
        s.bind(output, y)
        func stacked(_ names: [String]) -> String {
            let v = names.count == 1 ? names[0] : s.node("Concat", names, [attr("axis", 0)])[0]
            return batched ? v : s.node("Squeeze", [v, s.constInts([1])])[0]
        }
        s.bind(hN, stacked(hs))
        if let cN { s.bind(cN, stacked(cs)) }
    }

    /// The gate blocks of a PyTorch weight or bias (first dim G·hidden) in ONNX's order.
    static func reorder(_ t: Tensor, _ order: [Int]) -> Tensor {
        let blocks = t.detach().chunk(order.count, dim: 0)
        return order.count == 1 ? blocks[0] : torch.cat(order.map { blocks[$0] }, dim: 0)
    }
}
