/// One recurrent layer in one direction over a whole sequence, the unit `nn.RNN`, `nn.LSTM` and `nn.GRU`
/// stack: one forward call and one autograd node. On the CPU the fused kernels of `CPURecurrent`; on CUDA the
/// cell equations composed from device ops (autograd differentiates them).

/// The recurrence of a layer (PyTorch's `mode`).
enum RNNMode: Equatable {
    case rnnTanh, rnnRelu, lstm, gru

    /// Gate blocks per hidden unit: LSTM i,f,g,o; GRU r,z,n; plain RNN one.
    var gateCount: Int {
        switch self {
        case .lstm: return 4
        case .gru: return 3
        case .rnnTanh, .rnnRelu: return 1
        }
    }

    /// PyTorch's mode string (`RNNBase.mode`).
    var name: String {
        switch self {
        case .lstm: return "LSTM"
        case .gru: return "GRU"
        case .rnnTanh: return "RNN_TANH"
        case .rnnRelu: return "RNN_RELU"
        }
    }

    /// The grad_fn PyTorch's CPU path shows on a one-layer, one-direction output: LSTM runs as
    /// mkldnn's fused layer, GRU and plain RNN stack per-step outputs.
    var nodeName: String { self == .lstm ? "MkldnnRnnLayerBackward0" : "StackBackward0" }
}

/// One layer-direction's parameters: `W_ih [G·H, in]`, `W_hh [G·H, H]`, biases `[G·H]`.
struct RNNLayerParams {
    let wIh: Tensor
    let wHh: Tensor
    let bIh: Tensor?
    let bHh: Tensor?
}

/// A contiguous tensor with `t`'s values (itself when already contiguous), not recorded.
@inline(__always)
private func dense(_ t: Tensor) -> Tensor { t.isContiguous ? t : t.contiguousCopy() }

// MARK: - Layer forward

/// One recurrent layer on a GPU: the input projection of every step as one GEMM, then per step the hidden
/// projection (one GEMM) and the cell's pointwise formulas as device ops (PyTorch's cell equations, as in
/// `RecurrentCells.swift`); autograd differentiates the composition. A fused cell kernel (and cuDNN's RNN) is
/// later work.
private func deviceRNNLayer(_ mode: RNNMode, input: Tensor, h0: Tensor, c0: Tensor?, _ params: RNNLayerParams,
                            reverse: Bool) -> (output: Tensor, hN: Tensor, cN: Tensor?) {
    let steps = input.shape[0], batch = input.shape[1], n = h0.shape[1]
    let projected = F.linear(input.reshape(steps * batch, input.shape[2]), params.wIh, params.bIh)
        .reshape(steps, batch, mode.gateCount * n)
    var h = h0, c = c0
    var outputs = [Tensor](repeating: h0, count: steps)
    for s in 0..<steps {
        let t = reverse ? steps - 1 - s : s
        let gi = projected.select(0, t), gh = F.linear(h, params.wHh, params.bHh)
        switch mode {
        case .rnnTanh: h = (gi + gh).tanh()
        case .rnnRelu: h = (gi + gh).relu()
        case .lstm:
            let gates = gi + gh
            let i = gates.narrow(1, 0, n).sigmoid(), f = gates.narrow(1, n, n).sigmoid()
            let g = gates.narrow(1, 2 * n, n).tanh(), o = gates.narrow(1, 3 * n, n).sigmoid()
            c = f * c! + i * g
            h = o * c!.tanh()
        case .gru:
            let r = (gi.narrow(1, 0, n) + gh.narrow(1, 0, n)).sigmoid()
            let z = (gi.narrow(1, n, n) + gh.narrow(1, n, n)).sigmoid()
            let candidate = (gi.narrow(1, 2 * n, n) + r * gh.narrow(1, 2 * n, n)).tanh()
            h = candidate + z * (h - candidate)
        }
        outputs[t] = h
    }
    return (torch.stack(outputs), h, c)
}

/// Runs one recurrent layer in one direction over a whole sequence.
///
/// - Parameters:
///   - input: `[T, B, in]` (any strides).
///   - h0: `[B, H]`; c0: `[B, H]` for LSTM, else nil.
///   - reverse: run from the last step to the first (the `_reverse` direction).
/// - Returns: `output [T, B, H]` (contiguous, step t at index t in either direction), the final
///   hidden state `[B, H]` and, for LSTM, the final cell state.
/// When an input requires grad, all outputs share one node (`RNNMode.nodeName`) whose backward is
/// the hand-written backward through time (first-order only).
func rnnLayerForward(_ mode: RNNMode, input: Tensor, h0: Tensor, c0: Tensor?, _ params: RNNLayerParams,
                     reverse: Bool) -> (output: Tensor, hN: Tensor, cN: Tensor?) {
    checkSameDevice(input, [h0, c0, params.wIh, params.wHh, params.bIh, params.bHh])
    switch input.device {
    case .cpu: break
    case .cuda: return deviceRNNLayer(mode, input: input, h0: h0, c0: c0, params, reverse: reverse)
    }
    let x = dense(input), hInit = dense(h0), cInit = c0.map(dense)
    let wIh = dense(params.wIh), wHh = dense(params.wHh)
    let (output, hN, cN, saved) = CPURecurrent.forward(mode, x: x, h0: hInit, c0: cInit,
                                                       RNNLayerParams(wIh: wIh, wHh: wHh, bIh: params.bIh.map(dense),
                                                                      bHh: params.bHh.map(dense)),
                                                       reverse: reverse)

    var inputs: [Tensor] = [input, h0]
    if let c0 { inputs.append(c0) }
    inputs += [params.wIh, params.wHh]
    if let b = params.bIh { inputs.append(b) }
    if let b = params.bHh { inputs.append(b) }
    if anyNeedsGrad(inputs) {
        let needs = inputs.map { $0._requiresGrad }
        let ctx = RNNLayerBackward(mode: mode, reverse: reverse, x: SavedTensor(x), h0: SavedTensor(hInit),
                                   c0: cInit.map { SavedTensor($0) },
                                   wIh: SavedTensor(wIh), wHh: SavedTensor(wHh), hasBias: params.bIh != nil,
                                   output: SavedTensor(output: output), saved: saved)
        var outs = [output, hN]
        if let cN { outs.append(cN) }
        recordMulti(mode.nodeName, outs, inputs: inputs) { node, grads in
            ctx.backward(node, gOut: grads[0], gHN: grads[1], gCN: grads.count > 2 ? grads[2] : nil, needs: needs)
        }
    }
    return (output, hN, cN)
}

// MARK: - Layer backward

/// What one layer-direction's backward through time needs.
private struct RNNLayerBackward {
    let mode: RNNMode
    let reverse: Bool
    let x: SavedTensor
    let h0: SavedTensor
    let c0: SavedTensor?
    let wIh: SavedTensor
    let wHh: SavedTensor
    let hasBias: Bool
    let output: SavedTensor
    let saved: CPURecurrent.Saved

    /// Gradients for `[input, h0, (c0), W_ih, W_hh, (b_ih, b_hh)]`, nil where `needs` is false.
    func backward(_ node: Node, gOut: Tensor?, gHN: Tensor?, gCN: Tensor?, needs: [Bool]) -> [Tensor?] {
        let x = x.unpack(node), h0 = h0.unpack(node), c0 = c0?.unpack(node)
        let wIh = wIh.unpack(node), wHh = wHh.unpack(node), output = output.unpack(node)
        return CPURecurrent.backward(mode, reverse: reverse, x: x, h0: h0, c0: c0, wIh: wIh, wHh: wHh, hasBias: hasBias,
                                     output: output, saved: saved, gOut: gOut, gHN: gHN, gCN: gCN, needs: needs)
    }
}
