/// Single-step recurrent cells: `nn.RNNCell`, `nn.LSTMCell`, `nn.GRUCell`, built from
/// differentiable ops like PyTorch's CPU cells (so their grad_fns match and double backward
/// works): `MulBackward0`/`AddBackward0` for LSTMCell's (h, c), `AddBackward0` for GRUCell,
/// `TanhBackward0`/`ReluBackward0` for RNNCell.

extension nn {
    /// The parameters and checks shared by the cells (PyTorch's `nn.RNNCellBase`):
    /// `weight_ih [G·hidden, in]`, `weight_hh [G·hidden, hidden]`, `bias_ih`, `bias_hh [G·hidden]`,
    /// all from U(−1/√hidden, 1/√hidden) in that order.
    public class RNNCellBase: Module {
        /// Features of the input.
        public let inputSize: Int
        /// Features of the hidden state.
        public let hiddenSize: Int
        /// Whether the cell has `bias_ih`/`bias_hh`.
        public let bias: Bool
        /// `weight_ih`: `[G·hidden, inputSize]`.
        public var weightIh: Parameter {
            get { registeredParameters["weight_ih"]! }
            set { registerParameter("weight_ih", newValue) }
        }
        /// `weight_hh`: `[G·hidden, hiddenSize]`.
        public var weightHh: Parameter {
            get { registeredParameters["weight_hh"]! }
            set { registerParameter("weight_hh", newValue) }
        }
        /// `bias_ih`: `[G·hidden]`, nil without bias.
        public var biasIh: Parameter? {
            get { registeredParameters["bias_ih"] }
            set { registerParameter("bias_ih", newValue) }
        }
        /// `bias_hh`: `[G·hidden]`, nil without bias.
        public var biasHh: Parameter? {
            get { registeredParameters["bias_hh"] }
            set { registerParameter("bias_hh", newValue) }
        }

        init(_ inputSize: Int, _ hiddenSize: Int, bias: Bool, chunks: Int, dtype: DType?) {
            self.inputSize = inputSize
            self.hiddenSize = hiddenSize
            self.bias = bias
            super.init()
            // Registered under PyTorch's names (state-dict keys `weight_ih`, ...), in PyTorch's order.
            registerParameter("weight_ih", Parameter(torch.empty(chunks * hiddenSize, inputSize, dtype: dtype)))
            registerParameter("weight_hh", Parameter(torch.empty(chunks * hiddenSize, hiddenSize, dtype: dtype)))
            if bias {
                registerParameter("bias_ih", Parameter(torch.empty(chunks * hiddenSize, dtype: dtype)))
                registerParameter("bias_hh", Parameter(torch.empty(chunks * hiddenSize, dtype: dtype)))
            }
            resetParameters()
        }

        /// Re-draws every parameter from U(−1/√hidden, 1/√hidden), in registration order.
        public func resetParameters() {
            let stdv = 1 / Double(hiddenSize).squareRoot()
            for p in parameters() { nn.`init`.uniform_(p, -stdv, stdv) }
        }

        /// Checks ranks like PyTorch and adds the batch dim to unbatched inputs.
        final func batched(_ input: Tensor, _ states: [Tensor?], stateName: (Int) -> String) -> (x: Tensor, states: [Tensor?], isBatched: Bool) {
            precondition(input.dim == 1 || input.dim == 2, "\(typeName): Expected input to be 1D or 2D, got \(input.dim)D instead")
            for (i, s) in states.enumerated() {
                if let s {
                    precondition(s.dim == 1 || s.dim == 2, "\(typeName): Expected \(stateName(i)) to be 1D or 2D, got \(s.dim)D instead")
                }
            }
            let isBatched = input.dim == 2
            let x = isBatched ? input : input.unsqueeze(0)
            precondition(x.shape[1] == inputSize, "input has inconsistent input_size: got \(x.shape[1]) expected \(inputSize)")
            let out = states.map { s -> Tensor? in
                guard let s else { return nil }
                let b = isBatched ? s : s.unsqueeze(0)
                precondition(b.shape[1] == hiddenSize, "hidden has inconsistent hidden_size: got \(b.shape[1]), expected \(hiddenSize)")
                precondition(b.shape[0] == x.shape[0], "Input batch size \(x.shape[0]) doesn't match hidden batch size \(b.shape[0])")
                return b
            }
            return (x, out, isBatched)
        }

        /// W_ih·x + b_ih and W_hh·h + b_hh.
        final func projections(_ x: Tensor, _ h: Tensor) -> (Tensor, Tensor) {
            (F.linear(x, weightIh, biasIh), F.linear(h, weightHh, biasHh))
        }

        final func zeroState(_ x: Tensor) -> Tensor { torch.zeros([x.shape[0], hiddenSize], dtype: x.dtype) }

        public override func extraRepr() -> String {
            "\(inputSize), \(hiddenSize)" + (bias ? "" : ", bias=False")
        }
    }

    /// One Elman RNN step, h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or ReLU) (PyTorch's `nn.RNNCell`).
    ///
    /// ```swift
    /// let cell = nn.RNNCell(10, 20)
    /// var h = torch.zeros(3, 20)
    /// for x in inputs { h = cell(x, h) }
    /// ```
    public final class RNNCell: RNNCellBase {
        /// `"tanh"` or `"relu"`.
        public let nonlinearity: String

        public init(_ inputSize: Int, _ hiddenSize: Int, bias: Bool = true, nonlinearity: String = "tanh", dtype: DType? = nil) {
            precondition(nonlinearity == "tanh" || nonlinearity == "relu", "Unknown nonlinearity: \(nonlinearity)")
            self.nonlinearity = nonlinearity
            super.init(inputSize, hiddenSize, bias: bias, chunks: 1, dtype: dtype)
        }

        /// h' for input `[batch, in]` (or `[in]`) and state `[batch, hidden]` (zeros when nil).
        public func callAsFunction(_ input: Tensor, _ hx: Tensor?) -> Tensor {
            let (x, s, isBatched) = batched(input, [hx]) { _ in "hidden" }
            let h = s[0] ?? zeroState(x)
            let (gi, gh) = projections(x, h)
            let pre = gi + gh
            let out = nonlinearity == "tanh" ? pre.tanh() : pre.relu()
            return isBatched ? out : out.squeeze(0)
        }

        public override func forward(_ x: Tensor) -> Tensor { self(x, nil) }

        public override func extraRepr() -> String {
            super.extraRepr() + (nonlinearity == "tanh" ? "" : ", nonlinearity=\(nonlinearity)")
        }
    }

    /// One LSTM step (PyTorch's `nn.LSTMCell`): gates i, f, g, o; c' = f ⊙ c + i ⊙ g,
    /// h' = o ⊙ tanh(c').
    ///
    /// ```swift
    /// let cell = nn.LSTMCell(10, 20)
    /// var (h, c) = (torch.zeros(3, 20), torch.zeros(3, 20))
    /// for x in inputs { (h, c) = cell(x, (h, c)) }
    /// ```
    public final class LSTMCell: RNNCellBase {
        public init(_ inputSize: Int, _ hiddenSize: Int, bias: Bool = true, dtype: DType? = nil) {
            super.init(inputSize, hiddenSize, bias: bias, chunks: 4, dtype: dtype)
        }

        /// (h', c') for input `[batch, in]` (or `[in]`) and state (h, c) (zeros when nil).
        public func callAsFunction(_ input: Tensor, _ hx: (Tensor, Tensor)? = nil) -> (Tensor, Tensor) {
            let (x, s, isBatched) = batched(input, [hx?.0, hx?.1]) { "hx[\($0)]" }
            let h = s[0] ?? zeroState(x), c = s[1] ?? zeroState(x)
            let (gi, gh) = projections(x, h)
            let gates = gi + gh
            let n = hiddenSize
            let i = gates.narrow(1, 0, n).sigmoid(), f = gates.narrow(1, n, n).sigmoid()
            let g = gates.narrow(1, 2 * n, n).tanh(), o = gates.narrow(1, 3 * n, n).sigmoid()
            let c1 = f * c + i * g
            let h1 = o * c1.tanh()
            return isBatched ? (h1, c1) : (h1.squeeze(0), c1.squeeze(0))
        }

        /// h' alone (for use in containers); `cell(x)` returns the (h', c') tuple.
        public override func forward(_ x: Tensor) -> Tensor { self(x, nil).0 }
    }

    /// One GRU step (PyTorch's `nn.GRUCell`): r, z gates, n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
    /// h' = (1 − z) ⊙ n + z ⊙ h.
    ///
    /// ```swift
    /// let cell = nn.GRUCell(10, 20)
    /// var h = torch.zeros(3, 20)
    /// for x in inputs { h = cell(x, h) }
    /// ```
    public final class GRUCell: RNNCellBase {
        public init(_ inputSize: Int, _ hiddenSize: Int, bias: Bool = true, dtype: DType? = nil) {
            super.init(inputSize, hiddenSize, bias: bias, chunks: 3, dtype: dtype)
        }

        /// h' for input `[batch, in]` (or `[in]`) and state `[batch, hidden]` (zeros when nil).
        public func callAsFunction(_ input: Tensor, _ hx: Tensor?) -> Tensor {
            let (x, s, isBatched) = batched(input, [hx]) { _ in "hidden" }
            let h = s[0] ?? zeroState(x)
            let (gi, gh) = projections(x, h)
            let n = hiddenSize
            let r = (gi.narrow(1, 0, n) + gh.narrow(1, 0, n)).sigmoid()
            let z = (gi.narrow(1, n, n) + gh.narrow(1, n, n)).sigmoid()
            let cand = (gi.narrow(1, 2 * n, n) + r * gh.narrow(1, 2 * n, n)).tanh()
            let h1 = cand + z * (h - cand)
            return isBatched ? h1 : h1.squeeze(0)
        }

        public override func forward(_ x: Tensor) -> Tensor { self(x, nil) }
    }
}
