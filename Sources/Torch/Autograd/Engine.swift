/// The backward engine: an iterative topological pass over the graph reachable from the roots
/// (no recursion, so a chain of 100,000 ops does not overflow the stack).
enum Engine {
    nonisolated(unsafe) private static var epochCounter = 0

    /// Runs backward from `roots` seeded with `grads`.
    /// - Parameters:
    ///   - captures: when non-nil (torch.autograd.grad), gradients w.r.t. these tensors are returned
    ///     instead of being accumulated into leaves' `.grad`.
    /// - Returns: the captured gradients (empty when `captures` is nil).
    static func run(roots: [Tensor], grads: [Tensor], retainGraph: Bool, createGraph: Bool,
                    captures: [Tensor]? = nil, allowUnused: Bool = true) -> [Tensor?] {
        if _slowPath(Autocast.isActive) {
            // Backward ops run in the dtypes their forward ops chose, not under autocast (as in PyTorch).
            return Autocast.suspended {
                run(roots: roots, grads: grads, retainGraph: retainGraph, createGraph: createGraph, captures: captures,
                    allowUnused: allowUnused)
            }
        }
        epochCounter &+= 1
        let epoch = epochCounter

        // 1. Root edges.
        var rootEdges: [Edge] = []
        rootEdges.reserveCapacity(roots.count)
        for (i, r) in roots.enumerated() {
            let e = r.gradientEdge()
            precondition(e.node != nil, AutogradMessage.noGradFn(i))
            rootEdges.append(e)
        }

        // 2. Discover the graph and count dependencies (iterative DFS).
        var stack: [Node] = []
        var all: [Node] = []
        func visit(_ n: Node) {
            if n.engineEpoch != epoch {
                n.engineEpoch = epoch
                n.engineDeps = 0
                n.engineBuffer = [Tensor?](repeating: nil, count: n.numOutputs)
                stack.append(n)
                all.append(n)
            }
        }
        for e in rootEdges { visit(e.node!) }
        while let n = stack.popLast() {
            for e in n.nextEdges {
                guard let c = e.node else { continue }
                visit(c)
                c.engineDeps += 1
            }
        }

        // 3. Capture targets for autograd.grad: (node, slot) -> index.
        var captureSlots: [(node: Node, slot: Int, index: Int)] = []
        var captured = [Tensor?](repeating: nil, count: captures?.count ?? 0)
        if let captures {
            for (i, t) in captures.enumerated() {
                let e = t.gradientEdge()
                precondition(e.node != nil, AutogradMessage.inputNotRequiringGrad(i))
                captureSlots.append((e.node!, e.inputNr, i))
            }
        }

        // 4. Seed root gradients.
        for (e, g) in zip(rootEdges, grads) {
            let n = e.node!
            n.engineBuffer[e.inputNr] = accumulate(n.engineBuffer[e.inputNr], g)
        }

        // 5. Process ready nodes, latest-created first (like PyTorch's priority by sequence number).
        var ready = Heap()
        for n in all where n.engineDeps == 0 { ready.push(n) }
        let enable = createGraph
        while let n = ready.pop() {
            var inputs = n.engineBuffer
            n.engineBuffer = []
            for (slot, hook) in n.outputHooks {
                if let g = inputs[slot], let r = hook(g) { inputs[slot] = r }
            }
            var skipApply = false
            if captures != nil {
                for c in captureSlots where c.node === n {
                    captured[c.index] = inputs[c.slot]
                }
                if n is AccumulateGrad { skipApply = true }
            }
            let outputs: [Tensor?]
            if skipApply || inputs.allSatisfy({ $0 == nil }) {
                outputs = [Tensor?](repeating: nil, count: n.nextEdges.count)
            } else {
                outputs = GradMode.with(enable) { n.apply(inputs) }
                if !retainGraph { n.releaseSaved() }
            }
            for (i, e) in n.nextEdges.enumerated() {
                guard let c = e.node else { continue }
                if i < outputs.count, let g = outputs[i] {
                    c.engineBuffer[e.inputNr] = accumulate(c.engineBuffer[e.inputNr], g)
                }
                c.engineDeps -= 1
                if c.engineDeps == 0 { ready.push(c) }
            }
        }
        for n in all { n.engineBuffer = [] }
        return captured
    }

    private static func accumulate(_ a: Tensor?, _ b: Tensor) -> Tensor {
        guard let a else { return b }
        return a + b
    }

    /// A max-heap of nodes by sequence number.
    private struct Heap {
        var items: [Node] = []
        mutating func push(_ n: Node) {
            items.append(n)
            var i = items.count - 1
            while i > 0 {
                let p = (i - 1) / 2
                if items[p].sequenceNr >= items[i].sequenceNr { break }
                items.swapAt(p, i); i = p
            }
        }
        mutating func pop() -> Node? {
            guard !items.isEmpty else { return nil }
            let top = items[0]
            let last = items.removeLast()
            if !items.isEmpty {
                items[0] = last
                var i = 0
                while true {
                    let l = 2 * i + 1, r = l + 1
                    var m = i
                    if l < items.count && items[l].sequenceNr > items[m].sequenceNr { m = l }
                    if r < items.count && items[r].sequenceNr > items[m].sequenceNr { m = r }
                    if m == i { break }
                    items.swapAt(i, m); i = m
                }
            }
            return top
        }
    }
}

// MARK: - Tensor autograd API

extension Tensor {
    /// Whether operations on this tensor are recorded for differentiation.
    public var requiresGrad: Bool {
        get { _requiresGrad }
        set {
            precondition(newValue || gradFn == nil, AutogradMessage.nonLeafRequiresGrad)
            precondition(!newValue || dtype.isFloatingPoint, AutogradMessage.requiresGradDType)
            _requiresGrad = newValue
        }
    }

    /// Sets `requiresGrad` in place and returns self (PyTorch's `requires_grad_()`).
    @discardableResult
    public func requiresGrad_(_ flag: Bool = true) -> Tensor {
        requiresGrad = flag
        return self
    }

    /// True for tensors not produced by a recorded op.
    public var isLeaf: Bool { gradFn == nil }

    /// Computes the gradient of this tensor w.r.t. the graph leaves and accumulates it into their `.grad`.
    ///
    /// - Parameters:
    ///   - gradient: d(out)/d(self); required unless self has one element.
    ///   - retainGraph: keep saved tensors for another backward (defaults to `createGraph`).
    ///   - createGraph: record the backward pass itself, for higher-order derivatives.
    public func backward(_ gradient: Tensor? = nil, retainGraph: Bool? = nil, createGraph: Bool = false) {
        precondition(_requiresGrad, AutogradMessage.noGradFn(0))
        let g: Tensor
        if let gradient {
            precondition(gradient.shape == shape, AutogradMessage.shapeMismatch(0, gradient: gradient.shape, output: shape))
            g = gradient
        } else {
            precondition(numel == 1, AutogradMessage.implicitGradNonScalar)
            g = torch.onesLike(self)
        }
        _ = Engine.run(roots: [self], grads: [g], retainGraph: retainGraph ?? createGraph, createGraph: createGraph)
    }

    /// Keeps `.grad` for this non-leaf tensor after backward.
    public func retainGrad() {
        precondition(_requiresGrad, AutogradMessage.retainGradWithoutGrad)
        guard let fn = gradFn, !retainsGrad else { return }
        retainsGrad = true
        fn.outputHooks.append((outputNr, { [weak self] g in
            guard let self else { return nil }
            if let existing = self.grad { self.grad = existing + g } else { self.grad = g.detach().contiguousCopy() }
            return nil
        }))
    }

    /// Registers a hook called with this tensor's gradient; returning a tensor replaces the gradient.
    public func registerHook(_ hook: @escaping (Tensor) -> Tensor?) {
        precondition(_requiresGrad, AutogradMessage.hookWithoutGrad)
        if let fn = gradFn {
            fn.outputHooks.append((outputNr, hook))
        } else {
            hooks.append(hook)
        }
    }

    /// A new tensor sharing storage, cut from the graph.
    public func detach() -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.alias("aten::detach"), [self], { detach() }) { return r }
        return Tensor(storage: storage, shape: shape, strides: strides, offset: storageOffset, dtype: dtype)
    }

    /// Cuts this tensor from the graph in place.
    @discardableResult
    public func detach_() -> Tensor {
        gradFn = nil
        _requiresGrad = false
        return self
    }
}

extension torch {
    /// PyTorch's `torch.autograd`.
    public enum autograd {
        /// Gradients of `outputs` w.r.t. `inputs` without touching `.grad`.
        ///
        /// ```swift
        /// let (dx,) = torch.autograd.grad([y], [x], createGraph: true)
        /// ```
        public static func grad(_ outputs: [Tensor], _ inputs: [Tensor], gradOutputs: [Tensor?]? = nil,
                                retainGraph: Bool? = nil, createGraph: Bool = false,
                                allowUnused: Bool = false) -> [Tensor?] {
            var gs: [Tensor] = []
            for (i, o) in outputs.enumerated() {
                if let go = gradOutputs?[i] { gs.append(go) } else {
                    precondition(o.numel == 1, AutogradMessage.implicitGradNonScalar)
                    gs.append(torch.onesLike(o))
                }
            }
            let r = Engine.run(roots: outputs, grads: gs, retainGraph: retainGraph ?? createGraph,
                               createGraph: createGraph, captures: inputs)
            if !allowUnused {
                for (i, g) in r.enumerated() {
                    precondition(g != nil, AutogradMessage.unusedInput(i))
                }
            }
            return r
        }
    }

    /// Runs `body` without recording autograd (`with torch.no_grad():`).
    @discardableResult
    public static func noGrad<R>(_ body: () throws -> R) rethrows -> R { try GradMode.with(false, body) }
    /// Runs `body` with recording on (`with torch.enable_grad():`).
    @discardableResult
    public static func enableGrad<R>(_ body: () throws -> R) rethrows -> R { try GradMode.with(true, body) }
    /// Turns recording on or off for this thread.
    public static func setGradEnabled(_ enabled: Bool) { GradMode.isEnabled = enabled }
    /// Whether recording is on for this thread.
    public static func isGradEnabled() -> Bool { GradMode.isEnabled }
}

/// PyTorch's autograd error messages, built in one place so tests can compare them with PyTorch's
/// (the checks themselves stop with a precondition, which a test cannot catch).
enum AutogradMessage {
    static let nonLeafRequiresGrad = "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    static let requiresGradDType = "only Tensors of floating point dtype can require gradients"
    static let implicitGradNonScalar = "grad can be implicitly created only for scalar outputs"
    static let retainGradWithoutGrad = "can't retain_grad on Tensor that has requires_grad=False"
    static let hookWithoutGrad = "cannot register a hook on a tensor that doesn't require gradient"
    static let leafInPlace = "a leaf Variable that requires grad is being used in an in-place operation."
    static let viewOfLeafInPlace = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    static let backwardTwice = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward."

    static func noGradFn(_ i: Int) -> String { "element \(i) of tensors does not require grad and does not have a grad_fn" }
    static func inputNotRequiringGrad(_ i: Int) -> String { "One of the differentiated Tensors does not require grad (index \(i))" }
    static func unusedInput(_ i: Int) -> String {
        "The differentiated Tensor at index \(i) appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    }
    static func shapeMismatch(_ i: Int, gradient: [Int], output: [Int]) -> String {
        "Mismatch in shape: grad_output[\(i)] has a shape of torch.Size(\(shapeString(gradient))) and output[\(i)] has a shape of torch.Size(\(shapeString(output)))."
    }
}
