// The recording hooks of `torch.onnx.export` (docs/onnx.md, "Export").
//
// While an export runs, `ONNXTrace.isOn` is true and the hook lines at the ops' entry points and in
// `Module.callAsFunction` hand their work to the export session:
//
//     if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.matmul, [self, other], { self.matmul(other) }) { return r }
//
// With no export active the hook is one load of a global Bool and a branch. The session is confined to the
// thread that started the export: other threads, and the work an op does inside its own hook (tracing is
// suspended while `body` runs), see `op` return nil and run as usual.

/// An op as the export records it: the SwiftTorch op and the arguments that decide its ONNX form.
enum TracedOp {
    case binary(BinaryOp)
    case compare(CompareOp)
    /// detach, clone: the same value under another tensor.
    case alias(String)
    case unary(UnaryOp)
    case activation(ActivationKind)
    /// view / reshape with the sizes the caller asked for (-1 kept).
    case reshape([Int])
    case flatten(start: Int, end: Int)
    case squeeze([Int]?)
    case unsqueeze(Int)
    case transpose(Int, Int)
    case t
    case permute([Int])
    case softmax(dim: Int, log: Bool)
    case matmul
    case cat(dim: Int)
    case sum(dims: [Int], keepdim: Bool)
    case mean(dims: [Int], keepdim: Bool)
    /// split / chunk into pieces of these sizes along `dim` (several outputs).
    case split(sizes: [Int], dim: Int)
    /// torch.stack along a new dim.
    case stack(dim: Int)
    /// Elements start, start+step, ... < end of `dim` (bounds clamped; narrow and `x[a..<b]`).
    case slice(dim: Int, start: Int, end: Int, step: Int)
    /// Index `index` of `dim`, the dim removed (select and `x[i]`).
    case select(dim: Int, index: Int)
    /// Advanced indexing by the index tensors (positions or masks) that follow the indexed tensor in the inputs, at
    /// these dims of it (`x[t]`, `x[0..., t]`, `x[mask]`, indexSelect).
    case index(dims: [Int])
    /// gather along `dim`.
    case gather(dim: Int)
    /// max / min / amax / amin values over `dims` (nil: every element); `withIndices`: max(dim:) and min(dim:),
    /// whose second output is the index.
    case extremum(max: Bool, dims: [Int]?, keepdim: Bool, withIndices: Bool)
    /// argmax / argmin along `dim` (nil: of the flattened tensor).
    case argExtremum(max: Bool, dim: Int?, keepdim: Bool)
    /// F.pad with PyTorch's (before, after) list starting from the last dim.
    case pad([Int], mode: nn.functional.PadMode, value: Double)
    /// torch.where(condition, a, b).
    case `where`
    /// clamp / clamp_min / clamp_max with either bound.
    case clamp(min: Double?, max: Double?)
    /// Running sum along `dim`.
    case cumsum(dim: Int)
    /// unbind: the slices along `dim`, that dim removed (several outputs).
    case unbind(dim: Int)
    /// F.interpolate to `sizes` (`scales` when a scale factor was given and is used as such).
    case resize(mode: nn.functional.InterpolationMode, alignCorners: Bool, sizes: [Int], scales: [Double]?, antialias: Bool)

    /// split and max(dim:)/min(dim:) give several tensors.
    var hasSeveralOutputs: Bool {
        switch self {
        case .split, .unbind: return true
        case .extremum(_, _, _, let withIndices): return withIndices
        default: return false
        }
    }

    var isAlias: Bool { if case .alias = self { return true } else { return false } }

    /// The name an error message gives the op (PyTorch's aten spelling).
    var name: String {
        switch self {
        case .binary(let op): return "aten::\(op.name)"
        case .compare(let op): return "aten::\(op.name)"
        case .alias(let name): return name
        case .unary(let op): return "aten::\(op)"
        case .activation(let k): return "aten::\(k.opName)"
        case .reshape: return "aten::reshape"
        case .flatten: return "aten::flatten"
        case .squeeze: return "aten::squeeze"
        case .unsqueeze: return "aten::unsqueeze"
        case .transpose: return "aten::transpose"
        case .t: return "aten::t"
        case .permute: return "aten::permute"
        case .softmax(_, let log): return log ? "aten::log_softmax" : "aten::softmax"
        case .matmul: return "aten::matmul"
        case .cat: return "aten::cat"
        case .sum: return "aten::sum"
        case .mean: return "aten::mean"
        case .split: return "aten::split"
        case .stack: return "aten::stack"
        case .slice: return "aten::slice"
        case .select: return "aten::select"
        case .index: return "aten::index"
        case .gather: return "aten::gather"
        case .extremum(let isMax, let dims, _, _): return "aten::" + (dims == nil ? "" : "a") + (isMax ? "max" : "min")
        case .argExtremum(let isMax, _, _): return isMax ? "aten::argmax" : "aten::argmin"
        case .pad: return "aten::pad"
        case .where: return "aten::where"
        case .clamp: return "aten::clamp"
        case .cumsum: return "aten::cumsum"
        case .unbind: return "aten::unbind"
        case .resize(let mode, _, _, _, _): return "aten::upsample_\(mode.rawValue)"
        }
    }
}

/// The switch the op hooks test, and the entry points they call.
enum ONNXTrace {
    /// True while an export is recording somewhere in the process (the hooks' fast test).
    nonisolated(unsafe) static var isOn = false
    /// The recording session and the thread it belongs to.
    nonisolated(unsafe) static var session: ExportSession?
    nonisolated(unsafe) static var owner: pthread_t?

    /// The session, when the calling thread is the one exporting and recording is not suspended.
    @inline(never)
    static var current: ExportSession? {
        guard let s = session, let o = owner, pthread_equal(o, pthread_self()) != 0, !s.suspended else { return nil }
        return s
    }

    /// Records `op` on `inputs`: runs `body` (with recording suspended) for the value, then adds the op's ONNX
    /// nodes. Nil when this thread is not recording; the caller then runs the op as usual.
    @inline(never)
    static func op(_ op: TracedOp, _ inputs: [Tensor], _ body: () -> Tensor) -> Tensor? {
        guard let s = current else { return nil }
        let out = s.suspend(body)
        s.recordOp(op, inputs, out)
        return out
    }

    /// An op with several outputs (split, max with indices): like `op`, the outputs bound in order.
    @inline(never)
    static func ops(_ op: TracedOp, _ inputs: [Tensor], _ body: () -> [Tensor]) -> [Tensor]? {
        guard let s = current else { return nil }
        let outs = s.suspend(body)
        s.recordOp(op, inputs, outs)
        return outs
    }

    /// A recurrent layer (nn.RNN, nn.LSTM, nn.GRU, whichever way it was called): `body` runs it for the value,
    /// then it is recorded as one ONNX RNN/LSTM/GRU node per layer. Returns (output, h_n, c_n).
    @inline(never)
    static func recurrent(_ m: nn.RNNBase, _ input: Tensor, _ h0: Tensor?, _ c0: Tensor?,
                          _ body: () -> (Tensor, Tensor, Tensor?)) -> (Tensor, Tensor, Tensor?)? {
        guard let s = current else { return nil }
        let r = s.suspend(body)
        s.recordRecurrent(m, input, h0, c0, r)
        return r
    }

    /// The in-place form: `body` writes into `inputs[0]`, whose value name then moves to the new node's output.
    @inline(never)
    static func inPlace(_ op: TracedOp, _ inputs: [Tensor], _ body: () -> Void) -> Bool {
        guard let s = current else { return false }
        s.suspend { body() }
        s.recordOp(op, inputs, inputs[0])
        return true
    }

    /// A module call: a module with a direct ONNX form is run with recording suspended and mapped as one
    /// piece; any other runs its `forward`, whose ops record themselves. Nil: run the call as usual.
    @inline(never)
    static func module(_ m: nn.Module, _ x: Tensor) -> Tensor? {
        guard let s = current else { return nil }
        return s.callModule(m, x)
    }
}
