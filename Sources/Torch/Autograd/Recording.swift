/// How ops add themselves to the autograd graph.
///
/// An op computes its result without recording, then, when `GradMode.isEnabled` and one of its
/// inputs requires grad, calls `record` with its PyTorch node name and a backward closure.

extension Tensor {
    /// True when an op on this tensor must be recorded.
    @inline(__always) var needsGrad: Bool { _requiresGrad && GradMode.isEnabled }

    /// The edge gradients for this tensor flow into.
    func gradientEdge() -> Edge {
        if viewBase != nil { refreshViewHistory() }
        if let fn = gradFn { return Edge(node: fn, inputNr: outputNr) }
        if _requiresGrad { return Edge(node: accumulator(), inputNr: 0) }
        return Edge(node: nil, inputNr: 0)
    }

    /// The leaf's gradient accumulator, created on first use.
    func accumulator() -> AccumulateGrad {
        if let acc = gradAccumulator { return acc }
        let acc = AccumulateGrad(self)
        gradAccumulator = acc
        return acc
    }
}

/// True when any input needs an autograd record.
@inline(__always) func anyNeedsGrad(_ a: Tensor) -> Bool { a.needsGrad }
@inline(__always) func anyNeedsGrad(_ a: Tensor, _ b: Tensor) -> Bool {
    GradMode.isEnabled && (a._requiresGrad || b._requiresGrad)
}
@inline(__always) func anyNeedsGrad(_ ts: [Tensor]) -> Bool {
    GradMode.isEnabled && ts.contains { $0._requiresGrad }
}

/// Records a single-output op: `backward(node, gradOutput)` returns one gradient per input
/// (nil where an input gets none). Returns `output` for chaining.
///
/// `saved`, given by ops that have PyTorch `_saved_` attributes, lists them (see `SavedAttribute`);
/// it runs only when something asks (`makeDot(showAttrs:showSaved:)`), never while recording.
@discardableResult
func record(_ name: String, _ output: Tensor, inputs: [Tensor], saved: (() -> [SavedAttribute])? = nil,
            backward: @escaping (FunctionNode, Tensor) -> [Tensor?]) -> Tensor {
    let node = FunctionNode(name: name, nextEdges: inputs.map { $0.gradientEdge() }, describe: saved, single: backward)
    output.gradFn = node
    output.outputNr = 0
    output._requiresGrad = true
    if output.viewBase != nil { output.viewHistoryVersion = output.storage.version }
    return output
}

/// Records an op with several outputs; missing output gradients are passed as nil.
func recordMulti(_ name: String, _ outputs: [Tensor], inputs: [Tensor], saved: (() -> [SavedAttribute])? = nil,
                 backward: @escaping (FunctionNode, [Tensor?]) -> [Tensor?]) {
    let node = FunctionNode(name: name, nextEdges: inputs.map { $0.gradientEdge() },
                            numOutputs: outputs.count, describe: saved, backward: backward)
    for (i, o) in outputs.enumerated() {
        o.gradFn = node
        o.outputNr = i
        o._requiresGrad = true
        if o.viewBase != nil { o.viewHistoryVersion = o.storage.version }
    }
}
