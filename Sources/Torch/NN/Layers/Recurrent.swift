/// Recurrent layers: `nn.RNN`, `nn.LSTM`, `nn.GRU` (multi-layer, bidirectional, batch-first,
/// inter-layer dropout, unbatched inputs), with PyTorch's parameter names, initialisation,
/// gate order, return tuples and repr. Each layer-direction runs as one fused kernel and one
/// autograd node (RecurrentKernels.swift).

extension nn {
    /// The shared machinery of `nn.RNN`, `nn.LSTM` and `nn.GRU` (PyTorch's `nn.RNNBase`).
    ///
    /// Parameters are registered per layer and direction in PyTorch's order: `weight_ih_l{k}`
    /// `[G·hidden, in]`, `weight_hh_l{k}` `[G·hidden, hidden]`, `bias_ih_l{k}`, `bias_hh_l{k}`
    /// `[G·hidden]`, then the same with the suffix `_reverse` when bidirectional (G = 4 for LSTM,
    /// 3 for GRU, 1 for RNN). All are drawn from U(−1/√hidden, 1/√hidden) in that order, so a
    /// seeded model has PyTorch's weights.
    public class RNNBase: Module {
        /// PyTorch's mode string: `"LSTM"`, `"GRU"`, `"RNN_TANH"` or `"RNN_RELU"`.
        public var mode: String { kind.name }
        let kind: RNNMode
        /// Features of each input step.
        public let inputSize: Int
        /// Features of the hidden state.
        public let hiddenSize: Int
        /// Stacked recurrent layers.
        public let numLayers: Int
        /// Whether the layers have `bias_ih`/`bias_hh`.
        public let bias: Bool
        /// Inputs and outputs are `[batch, seq, feature]` instead of `[seq, batch, feature]`.
        public let batchFirst: Bool
        /// Dropout probability on the outputs of every layer but the last (training only).
        public let dropout: Double
        /// Whether each layer also runs from the last step to the first.
        public let bidirectional: Bool

        /// 2 when bidirectional, else 1.
        public var numDirections: Int { bidirectional ? 2 : 1 }

        init(_ kind: RNNMode, _ inputSize: Int, _ hiddenSize: Int, numLayers: Int, bias: Bool, batchFirst: Bool,
             dropout: Double, bidirectional: Bool, dtype: DType?) {
            precondition(dropout >= 0 && dropout <= 1,
                         "dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
            precondition(inputSize > 0, "input_size must be greater than zero")
            precondition(hiddenSize > 0, "hidden_size must be greater than zero")
            precondition(numLayers > 0, "num_layers must be greater than zero")
            self.kind = kind
            self.inputSize = inputSize
            self.hiddenSize = hiddenSize
            self.numLayers = numLayers
            self.bias = bias
            self.batchFirst = batchFirst
            self.dropout = dropout
            self.bidirectional = bidirectional
            super.init()
            let gates = kind.gateCount * hiddenSize
            for layer in 0..<numLayers {
                for direction in 0..<numDirections {
                    let layerInput = layer == 0 ? inputSize : hiddenSize * numDirections
                    let names = RNNBase.parameterNames(layer: layer, reverse: direction == 1)
                    registerParameter(names[0], Parameter(torch.empty(gates, layerInput, dtype: dtype)))
                    registerParameter(names[1], Parameter(torch.empty(gates, hiddenSize, dtype: dtype)))
                    if bias {
                        registerParameter(names[2], Parameter(torch.empty(gates, dtype: dtype)))
                        registerParameter(names[3], Parameter(torch.empty(gates, dtype: dtype)))
                    }
                }
            }
            resetParameters()
        }

        /// `weight_ih_l{layer}`, `weight_hh_l…`, `bias_ih_l…`, `bias_hh_l…` (+ `_reverse`).
        static func parameterNames(layer: Int, reverse: Bool) -> [String] {
            let suffix = "\(layer)" + (reverse ? "_reverse" : "")
            return ["weight_ih_l", "weight_hh_l", "bias_ih_l", "bias_hh_l"].map { $0 + suffix }
        }

        /// Re-draws every parameter from U(−1/√hidden, 1/√hidden), in registration order.
        public func resetParameters() {
            let stdv = 1 / Double(hiddenSize).squareRoot()
            for p in parameters() { nn.`init`.uniform_(p, -stdv, stdv) }
        }

        /// The parameters per layer-direction, in PyTorch's `all_weights` order
        /// (`[[weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0], [..._reverse], ...]`).
        public var allWeights: [[Parameter]] {
            (0..<numLayers).flatMap { layer in
                (0..<numDirections).map { d in
                    RNNBase.parameterNames(layer: layer, reverse: d == 1).prefix(bias ? 4 : 2).map { name in
                        guard let p = registeredParameters[name] else {
                            preconditionFailure("\(typeName): parameter '\(name)' was removed")
                        }
                        return p
                    }
                }
            }
        }

        private func layerParams(_ layer: Int, _ direction: Int) -> RNNLayerParams {
            let names = RNNBase.parameterNames(layer: layer, reverse: direction == 1)
            func get(_ n: String) -> Parameter {
                guard let p = registeredParameters[n] else { preconditionFailure("\(typeName): parameter '\(n)' was removed") }
                return p
            }
            return RNNLayerParams(wIh: get(names[0]), wHh: get(names[1]),
                                  bIh: bias ? get(names[2]) : nil, bHh: bias ? get(names[3]) : nil)
        }

        /// Validates the input and states like PyTorch, runs every layer and direction, and
        /// returns `(output, h_n, c_n)` (c_n only for LSTM).
        final func runLayers(_ input: Tensor, _ hx: Tensor?, _ cx: Tensor?) -> (Tensor, Tensor, Tensor?) {
            if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.recurrent(self, input, hx, cx, { runLayers(input, hx, cx) }) { return r }
            let isLSTM = kind == .lstm
            precondition(input.dim == 2 || input.dim == 3, RNNBase.inputRankMessage(typeName, input.dim))
            let weightType = registeredParameters.values.first?.dtype ?? input.dtype
            precondition(input.dtype == weightType, RNNBase.dtypeMismatchMessage(input: input.dtype, weight: weightType))
            let isBatched = input.dim == 3
            let batchDim = batchFirst ? 0 : 1
            var x = isBatched ? input : input.unsqueeze(batchDim)
            var h = hx, c = cx
            if let hv = h {
                if isLSTM {
                    let cDim = c?.dim ?? hv.dim
                    precondition(hv.dim == input.dim && cDim == input.dim,
                                 RNNBase.lstmStateRankMessage(batched: isBatched, hDim: hv.dim, cDim: cDim))
                } else {
                    precondition(hv.dim == input.dim, RNNBase.stateRankMessage(batched: isBatched, hDim: hv.dim))
                }
                if !isBatched {
                    h = hv.unsqueeze(1)
                    c = c?.unsqueeze(1)
                }
            }
            if batchFirst { x = x.transpose(0, 1) }
            precondition(x.shape[2] == inputSize,
                         "input.size(-1) must be equal to input_size. Expected \(inputSize), got \(x.shape[2])")
            let batch = x.shape[1]
            let expected = [numLayers * numDirections, batch, hiddenSize]
            if let h {
                precondition(h.shape == expected,
                             RNNBase.hiddenSizeMessage(isLSTM ? "Expected hidden[0] size" : "Expected hidden size", expected, h.shape))
            }
            if let c {
                precondition(c.shape == expected, RNNBase.hiddenSizeMessage("Expected hidden[1] size", expected, c.shape))
            }
            let h0 = h ?? torch.zeros(expected, dtype: input.dtype, device: input.device)
            let c0: Tensor? = isLSTM ? (c ?? torch.zeros(expected, dtype: input.dtype, device: input.device)) : nil

            var layerInput = x
            var hFinals: [Tensor] = [], cFinals: [Tensor] = []
            for layer in 0..<numLayers {
                var outs: [Tensor] = []
                for d in 0..<numDirections {
                    let k = layer * numDirections + d
                    let r = rnnLayerForward(kind, input: layerInput, h0: h0.select(0, k), c0: c0?.select(0, k),
                                            layerParams(layer, d), reverse: d == 1)
                    outs.append(r.output)
                    hFinals.append(r.hN)
                    if let cN = r.cN { cFinals.append(cN) }
                }
                layerInput = outs.count == 1 ? outs[0] : torch.cat(outs, dim: 2)
                if dropout > 0 && training && layer < numLayers - 1 {
                    layerInput = F.dropout(layerInput, p: dropout, training: true)
                }
            }
            var output = batchFirst ? layerInput.transpose(0, 1) : layerInput
            var hN = torch.stack(hFinals)
            var cN: Tensor? = isLSTM ? torch.stack(cFinals) : nil
            if !isBatched {
                output = output.squeeze(batchDim)
                hN = hN.squeeze(1)
                cN = cN?.squeeze(1)
            }
            return (output, hN, cN)
        }

        public override func extraRepr() -> String {
            var s = "\(inputSize), \(hiddenSize)"
            if numLayers != 1 { s += ", num_layers=\(numLayers)" }
            if !bias { s += ", bias=False" }
            if batchFirst { s += ", batch_first=True" }
            if dropout != 0 { s += ", dropout=\(pyFloat(dropout))" }
            if bidirectional { s += ", bidirectional=True" }
            return s
        }

        // MARK: Messages (PyTorch's wording)

        static func inputRankMessage(_ name: String, _ dim: Int) -> String {
            name == "RNN" ? "RNN: Expected input to be 2D or 3D, got \(dim)D tensor instead"
                : "\(name): Expected input to be 2D or 3D, got \(dim)D instead"
        }
        static func dtypeMismatchMessage(input: DType, weight: DType) -> String {
            "RNN input dtype (\(input)) does not match weight dtype (\(weight)). Convert input: input.to(\(weight)), or convert model: model.to(\(input))"
        }
        static func stateRankMessage(batched: Bool, hDim: Int) -> String {
            batched ? "For batched 3-D input, hx should also be 3-D but got \(hDim)-D tensor"
                : "For unbatched 2-D input, hx should also be 2-D but got \(hDim)-D tensor"
        }
        static func lstmStateRankMessage(batched: Bool, hDim: Int, cDim: Int) -> String {
            batched ? "For batched 3-D input, hx and cx should also be 3-D but got (\(hDim)-D, \(cDim)-D) tensors"
                : "For unbatched 2-D input, hx and cx should also be 2-D but got (\(hDim)-D, \(cDim)-D) tensors"
        }
        static func hiddenSizeMessage(_ prefix: String, _ expected: [Int], _ got: [Int]) -> String {
            "\(prefix) \(pyTuple(expected)), got \(shapeString(got))"
        }
    }

    /// An Elman RNN, hₜ = tanh(W_ih xₜ + b_ih + W_hh hₜ₋₁ + b_hh) (or ReLU), stacked and optionally
    /// bidirectional (PyTorch's `nn.RNN`).
    ///
    /// ```swift
    /// let rnn = nn.RNN(10, 20, numLayers: 2)
    /// let (output, hN) = rnn(torch.randn(5, 3, 10), torch.randn(2, 3, 20))   // [5, 3, 20], [2, 3, 20]
    /// ```
    public final class RNN: RNNBase {
        /// `"tanh"` or `"relu"`.
        public let nonlinearity: String

        /// - Parameters:
        ///   - inputSize: features of each input step.
        ///   - hiddenSize: features of the hidden state.
        ///   - numLayers: stacked layers, each fed the previous one's output.
        ///   - nonlinearity: `"tanh"` (default) or `"relu"`.
        ///   - bias: learn `bias_ih`/`bias_hh`.
        ///   - batchFirst: input and output are `[batch, seq, feature]`.
        ///   - dropout: dropout on every layer's output but the last, in training mode.
        ///   - bidirectional: also run each layer backwards; outputs are concatenated.
        ///   - dtype: parameter dtype (default `torch.defaultDType`).
        public init(_ inputSize: Int, _ hiddenSize: Int, numLayers: Int = 1, nonlinearity: String = "tanh",
                    bias: Bool = true, batchFirst: Bool = false, dropout: Double = 0, bidirectional: Bool = false,
                    dtype: DType? = nil) {
            precondition(nonlinearity == "tanh" || nonlinearity == "relu",
                         "Unknown nonlinearity '\(nonlinearity)'. Select from 'tanh' or 'relu'.")
            self.nonlinearity = nonlinearity
            super.init(nonlinearity == "tanh" ? .rnnTanh : .rnnRelu, inputSize, hiddenSize, numLayers: numLayers,
                       bias: bias, batchFirst: batchFirst, dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// PyTorch's positional form `nn.RNN(10, 20, 2)`.
        public convenience init(_ inputSize: Int, _ hiddenSize: Int, _ numLayers: Int, nonlinearity: String = "tanh",
                                bias: Bool = true, batchFirst: Bool = false, dropout: Double = 0,
                                bidirectional: Bool = false, dtype: DType? = nil) {
            self.init(inputSize, hiddenSize, numLayers: numLayers, nonlinearity: nonlinearity, bias: bias,
                      batchFirst: batchFirst, dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// Runs the sequence: `input` is `[seq, batch, inputSize]` (`[batch, seq, …]` with
        /// `batchFirst`) or unbatched `[seq, inputSize]`; `hx` is `[numLayers·D, batch, hidden]`
        /// (zeros when nil). Returns `(output, h_n)`: output `[seq, batch, D·hidden]`, h_n like hx.
        public func callAsFunction(_ input: Tensor, _ hx: Tensor? = nil) -> (Tensor, Tensor) {
            let (o, h, _) = runLayers(input, hx, nil)
            return (o, h)
        }

        /// The output sequence alone (for use in containers); `rnn(input)` returns the tuple.
        public override func forward(_ x: Tensor) -> Tensor { runLayers(x, nil, nil).0 }
    }

    /// Long short-term memory (PyTorch's `nn.LSTM`), gates in PyTorch's order i, f, g, o:
    /// c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c').
    ///
    /// ```swift
    /// let lstm = nn.LSTM(28, 128, batchFirst: true)
    /// let (output, (hN, cN)) = lstm(torch.randn(64, 28, 28))   // [64, 28, 128], [1, 64, 128] ×2
    /// ```
    public final class LSTM: RNNBase {
        /// - Parameters: as `nn.RNN` without `nonlinearity`.
        public init(_ inputSize: Int, _ hiddenSize: Int, numLayers: Int = 1, bias: Bool = true, batchFirst: Bool = false,
                    dropout: Double = 0, bidirectional: Bool = false, dtype: DType? = nil) {
            super.init(.lstm, inputSize, hiddenSize, numLayers: numLayers, bias: bias, batchFirst: batchFirst,
                       dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// PyTorch's positional form `nn.LSTM(10, 20, 2)`.
        public convenience init(_ inputSize: Int, _ hiddenSize: Int, _ numLayers: Int, bias: Bool = true,
                                batchFirst: Bool = false, dropout: Double = 0, bidirectional: Bool = false,
                                dtype: DType? = nil) {
            self.init(inputSize, hiddenSize, numLayers: numLayers, bias: bias, batchFirst: batchFirst,
                      dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// Runs the sequence with initial `(h0, c0)` (zeros when nil), each
        /// `[numLayers·D, batch, hidden]`. Returns `(output, (h_n, c_n))`.
        public func callAsFunction(_ input: Tensor, _ hx: (Tensor, Tensor)? = nil) -> (Tensor, (Tensor, Tensor)) {
            let (o, h, c) = runLayers(input, hx?.0, hx?.1)
            return (o, (h, c!))
        }

        /// The output sequence alone (for use in containers); `lstm(input)` returns the tuple.
        public override func forward(_ x: Tensor) -> Tensor { runLayers(x, nil, nil).0 }
    }

    /// Gated recurrent unit (PyTorch's `nn.GRU`), gates r, z, n:
    /// n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h.
    ///
    /// ```swift
    /// let gru = nn.GRU(10, 20, numLayers: 2, bidirectional: true)
    /// let (output, hN) = gru(torch.randn(5, 3, 10))   // [5, 3, 40], [4, 3, 20]
    /// ```
    public final class GRU: RNNBase {
        /// - Parameters: as `nn.RNN` without `nonlinearity`.
        public init(_ inputSize: Int, _ hiddenSize: Int, numLayers: Int = 1, bias: Bool = true, batchFirst: Bool = false,
                    dropout: Double = 0, bidirectional: Bool = false, dtype: DType? = nil) {
            super.init(.gru, inputSize, hiddenSize, numLayers: numLayers, bias: bias, batchFirst: batchFirst,
                       dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// PyTorch's positional form `nn.GRU(10, 20, 2)`.
        public convenience init(_ inputSize: Int, _ hiddenSize: Int, _ numLayers: Int, bias: Bool = true,
                                batchFirst: Bool = false, dropout: Double = 0, bidirectional: Bool = false,
                                dtype: DType? = nil) {
            self.init(inputSize, hiddenSize, numLayers: numLayers, bias: bias, batchFirst: batchFirst,
                      dropout: dropout, bidirectional: bidirectional, dtype: dtype)
        }

        /// Runs the sequence from `hx` (zeros when nil). Returns `(output, h_n)`.
        public func callAsFunction(_ input: Tensor, _ hx: Tensor? = nil) -> (Tensor, Tensor) {
            let (o, h, _) = runLayers(input, hx, nil)
            return (o, h)
        }

        /// The output sequence alone (for use in containers); `gru(input)` returns the tuple.
        public override func forward(_ x: Tensor) -> Tensor { runLayers(x, nil, nil).0 }
    }
}
