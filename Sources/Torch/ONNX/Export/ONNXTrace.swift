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
