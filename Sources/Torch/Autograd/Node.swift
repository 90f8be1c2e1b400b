/// An edge of the backward graph: the node that receives a gradient and which of its inputs it is.
public struct Edge {
    public let node: Node?
    public let inputNr: Int
}

/// A node of the backward graph (PyTorch's `grad_fn`), e.g. `MulBackward0`.
///
/// It receives the gradients of its forward op's outputs and returns the gradients of the
/// forward op's inputs, one per entry of `nextFunctions`.
public class Node: CustomStringConvertible {
    /// PyTorch's node name, e.g. `AddmmBackward0`.
    public let name: String
    /// Where the gradients of the forward op's inputs go.
    public internal(set) var nextEdges: [Edge]
    /// Number of outputs of the forward op (= gradients this node receives).
    let numOutputs: Int
    /// Creation order, used to order ready nodes like PyTorch (later nodes first).
    let sequenceNr: Int
    /// Hooks on the gradients of outputs (from `registerHook`/`retainGrad` on non-leaf tensors).
    var outputHooks: [(outputNr: Int, hook: (Tensor) -> Tensor?)] = []

    // Engine scratch state, valid during one backward pass.
    var engineEpoch = 0
    var engineDeps = 0
    var engineBuffer: [Tensor?] = []

    nonisolated(unsafe) static var sequenceCounter = 0

    init(name: String, nextEdges: [Edge], numOutputs: Int = 1) {
        self.name = name
        self.nextEdges = nextEdges
        self.numOutputs = numOutputs
        Node.sequenceCounter &+= 1
        sequenceNr = Node.sequenceCounter
    }

    deinit {
        if !nextEdges.isEmpty {
            var edges: [Edge] = []
            swap(&edges, &nextEdges)
            DeferredRelease.release(consume edges)
        }
    }

    /// `(node, inputNr)` pairs like PyTorch's `grad_fn.next_functions`.
    public var nextFunctions: [(Node?, Int)] { nextEdges.map { ($0.node, $0.inputNr) } }

    public var description: String { "<\(name)>" }

    /// The name without its `Backward<n>` suffix (`MulBackward0` → `Mul`), as PyTorch's messages show it.
    var shortName: String {
        var n = Substring(name)
        while let last = n.last, last.isNumber { n = n.dropLast() }
        return n.hasSuffix("Backward") ? String(n.dropLast(8)) : name
    }

    /// Computes input gradients from output gradients. Overridden by subclasses.
    func apply(_ grads: [Tensor?]) -> [Tensor?] { fatalError("\(name).apply is abstract") }

    /// Frees the tensors saved for backward (after a backward without `retainGraph`).
    func releaseSaved() {}

    /// PyTorch's `grad_fn._saved_<name>` attributes in `dir()` order (sorted by name), for
    /// torchviz's `makeDot(showAttrs:showSaved:)`. Empty for nodes that define none and once
    /// the saved tensors were freed by a backward pass.
    func savedAttributes() -> [SavedAttribute] { [] }
}

/// A node whose backward is a closure over the tensors saved by the forward op.
///
/// Single-output ops (`record`) store their `(node, gradOutput)` closure as it is; the node
/// unwraps the one output gradient itself, so recording allocates one closure context per op.
/// Ops that have PyTorch `_saved_` attributes also pass `describe`, which builds them only when
/// asked (by `makeDot`); it is dropped with the saved tensors.
final class FunctionNode: Node {
    typealias Backward = (FunctionNode, [Tensor?]) -> [Tensor?]
    typealias SingleBackward = (FunctionNode, Tensor) -> [Tensor?]
    private var backward: Backward?
    private var singleBackward: SingleBackward?
    private var describe: (() -> [SavedAttribute])?

    init(name: String, nextEdges: [Edge], numOutputs: Int = 1, describe: (() -> [SavedAttribute])? = nil,
         backward: @escaping Backward) {
        self.backward = backward
        self.describe = describe
        super.init(name: name, nextEdges: nextEdges, numOutputs: numOutputs)
    }

    /// A one-output node: `backward` gets the output's gradient and is not called when there is none.
    init(name: String, nextEdges: [Edge], describe: (() -> [SavedAttribute])? = nil,
         single backward: @escaping SingleBackward) {
        self.singleBackward = backward
        self.describe = describe
        super.init(name: name, nextEdges: nextEdges, numOutputs: 1)
    }

    override func apply(_ grads: [Tensor?]) -> [Tensor?] {
        if let singleBackward {
            guard let g = grads[0] else { return [Tensor?](repeating: nil, count: nextEdges.count) }
            return singleBackward(self, g)
        }
        guard let backward else {
            preconditionFailure(AutogradMessage.backwardTwice)
        }
        return backward(self, grads)
    }

    override func releaseSaved() {
        backward = nil
        singleBackward = nil
        describe = nil
    }

    override func savedAttributes() -> [SavedAttribute] {
        guard let describe else { return [] }
        return describe().sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    deinit {
        if backward != nil { DeferredRelease.release(backward.take()!) }
        if singleBackward != nil { DeferredRelease.release(singleBackward.take()!) }
        if describe != nil { DeferredRelease.release(describe.take()!) }
    }
}

/// The node that adds incoming gradients into a leaf's `.grad`.
public final class AccumulateGrad: Node {
    /// The leaf tensor.
    public let variable: Tensor

    init(_ variable: Tensor) {
        self.variable = variable
        super.init(name: "AccumulateGrad", nextEdges: [])
    }

    override func apply(_ grads: [Tensor?]) -> [Tensor?] {
        guard var g = grads[0] else { return [] }
        for hook in variable.hooks { if let r = hook(g) { g = r } }
        precondition(g.shape == variable.shape || g.numel == variable.numel,
                     "AccumulateGrad: gradient of shape \(shapeString(g.shape)) does not match the leaf's shape \(shapeString(variable.shape))")
        if g.shape != variable.shape { g = g.reshape(variable.shape) }
        if let existing = variable.grad {
            if GradMode.isEnabled {
                variable.grad = existing + g           // create_graph: keep the graph of the sum
            } else {
                existing.add_(g)
            }
        } else {
            if GradMode.isEnabled {
                variable.grad = g
            } else {
                // Own the buffer: a view or broadcast gradient is materialised, unless the view covers its
                // whole storage contiguously (a weight gradient made as (gᵀ x)ᵀ and transposed back), which is
                // then taken over as a plain tensor.
                let usable = g.gradFn == nil && g.dtype == variable.dtype && g.isContiguous
                if usable && g.viewBase == nil {
                    variable.grad = g
                } else if usable && g.storageOffset == 0 && g.storage.byteCount == g.numel * g.dtype.itemSize {
                    variable.grad = Tensor(storage: g.storage, shape: g.shape, strides: g.strides, offset: 0, dtype: g.dtype)
                } else {
                    variable.grad = g.to(variable.dtype).contiguousCopy()
                }
            }
        }
        for h in variable.postAccumulateGradHooks { h.hook(variable) }
        return []
    }
}

/// A tensor saved for backward with the version it had, so in-place changes are detected.
struct SavedTensor {
    let tensor: Tensor
    let version: Int
    /// True when `tensor` is an output of the node that saved it (stored without its grad_fn).
    let isOutput: Bool
    /// Which output of the saving node `tensor` is (multi-output ops such as linalg.svd).
    let outputNr: Int

    /// Saves an input of the op.
    init(_ t: Tensor) {
        tensor = t
        version = t.storage.version
        isOutput = false
        outputNr = 0
    }

    /// Saves output `outputNr` of the op without a reference cycle (the alias has no grad_fn).
    init(output t: Tensor, outputNr: Int = 0) {
        self.outputNr = outputNr
        tensor = Tensor(storage: t.storage, shape: t.shape, strides: t.strides, offset: t.storageOffset, dtype: t.dtype)
        version = t.storage.version
        isOutput = true
    }

    /// The saved tensor; stops with PyTorch's message if it was modified in place since.
    func unpack(_ node: Node) -> Tensor {
        if tensor.storage.version != version {
            // PyTorch names the tensor's producer: the saving node for a saved output, the input's
            // current grad_fn otherwise (none for a leaf).
            preconditionFailure(SavedTensor.modifiedMessage(tensor: tensor, gradFn: isOutput ? node : tensor.gradFn,
                                                            outputNr: isOutput ? 0 : tensor.outputNr,
                                                            version: tensor.storage.version, expected: version))
        }
        if isOutput && GradMode.isEnabled {
            // Under create_graph, the output is re-attached to the node that made it.
            let t = Tensor(storage: tensor.storage, shape: tensor.shape, strides: tensor.strides, offset: tensor.storageOffset, dtype: tensor.dtype)
            t.gradFn = node
            t.outputNr = outputNr
            t._requiresGrad = true
            return t
        }
        return tensor
    }

    static func modifiedMessage(tensor: Tensor, gradFn: Node?, outputNr: Int, version: Int, expected: Int) -> String {
        var m = "one of the variables needed for gradient computation has been modified by an inplace operation: [\(tensor.legacyTypeName) \(shapeString(tensor.shape))]"
        if let gradFn { m += ", which is output \(outputNr) of \(gradFn.shortName)," }
        m += " is at version \(version); expected version \(expected) instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
        return m
    }
}

extension Tensor {
    /// PyTorch's legacy type name used in messages, e.g. `torch.FloatTensor`.
    var legacyTypeName: String {
        switch dtype {
        case .float32: return "torch.FloatTensor"
        case .float64: return "torch.DoubleTensor"
        case .float16: return "torch.HalfTensor"
        case .bfloat16: return "torch.BFloat16Tensor"
        case .int64: return "torch.LongTensor"
        case .int32: return "torch.IntTensor"
        case .uint8: return "torch.ByteTensor"
        case .bool: return "torch.BoolTensor"
        }
    }
}
