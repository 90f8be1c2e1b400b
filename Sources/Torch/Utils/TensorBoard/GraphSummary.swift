extension utils.tensorboard.SummaryWriter {
    /// Logs the model's graph for TensorBoard's Graphs tab (`add_graph(model, input_to_model)`).
    ///
    /// The model runs once on `inputToModel` in eval mode (its mode is restored afterwards). Each
    /// leaf module call becomes a node named by its scope as PyTorch names them
    /// (`ResNet/Sequential[layer1]/BasicBlock[0]/Conv2d[conv1]`), with the module type as its op,
    /// its `extraRepr` as the `attr` attribute and its output shape as `_output_shapes`; edges follow
    /// the data through the autograd graph, so functional code between modules (a residual `+`,
    /// a `view`) joins the right nodes. `input/input` and `output/output` are the "IO Node"s.
    ///
    /// ```swift
    /// writer.addGraph(net, images)       // tutorial 001
    /// ```
    public func addGraph(_ model: nn.Module, _ inputToModel: Tensor) {
        emitGraph(ModelGraph(model, inputToModel).graphDef())
    }

    func emitGraph(_ graphDef: [UInt8]) {
        var e = ProtoWriter()
        e.double(1, Date().timeIntervalSince1970)
        e.data(4, graphDef)
        guard let w = mainWriter() else { return }
        do { try w.writeRecord(e.bytes) } catch { record(error) }
    }
}

/// The dataflow between a model's leaf modules for one forward pass.
struct ModelGraph {
    struct GraphNode {
        let name: String
        let op: String
        var inputs: [String]
        let shape: [Int]
        let attr: String
    }

    private(set) var nodes: [GraphNode] = []

    init(_ model: nn.Module, _ input: Tensor) {
        let named = model.namedModules()
        var typeOf: [String: String] = [:]
        for (n, m) in named { typeOf[n] = m.typeName }
        func scope(_ path: String) -> String {
            var s = model.typeName, prefix = ""
            for part in path.split(separator: ".").map(String.init) where !path.isEmpty {
                prefix = prefix.isEmpty ? part : prefix + "." + part
                s += "/\(typeOf[prefix] ?? "Module")[\(part)]"
            }
            return s
        }
        // Record each leaf call's output node (its grad_fn) under a unique scoped name.
        var calls: [(name: String, module: nn.Module, gradFn: Node?, shape: [Int])] = []
        var used: [String: Int] = [:]
        var handles: [nn.RemovableHandle] = []
        for (path, m) in named where m.localChildren().isEmpty {
            let base = scope(path)
            handles.append(m.registerForwardHook { module, _, output in
                let k = used[base, default: 0]
                used[base] = k + 1
                calls.append((k == 0 ? base : "\(base)_\(k)", module, output.gradFn, output.shape))
                return nil
            })
        }
        let x = input.detach().requiresGrad_()
        let wasTraining = model.training
        model.eval()
        let output = torch.enableGrad { model(x) }
        model.train(wasTraining)
        for h in handles { h.remove() }

        var producer: [ObjectIdentifier: String] = [:]
        for c in calls { if let g = c.gradFn { producer[ObjectIdentifier(g)] = c.name } }
        /// The recorded nodes (or the input) whose outputs reach `start` through unrecorded ops.
        func sources(_ start: Node?) -> [String] {
            var out: [String] = [], seen = Set<ObjectIdentifier>()
            var stack = start.map { $0.nextFunctions.compactMap(\.0) } ?? []
            while let n = stack.popLast() {
                guard seen.insert(ObjectIdentifier(n)).inserted else { continue }
                if let name = producer[ObjectIdentifier(n)] {
                    if !out.contains(name) { out.append(name) }
                } else if let acc = n as? AccumulateGrad {
                    if acc.variable === x && !out.contains("input/input") { out.append("input/input") }
                } else {
                    stack += n.nextFunctions.compactMap(\.0)
                }
            }
            return out.reversed()
        }
        nodes.append(GraphNode(name: "input/input", op: "IO Node", inputs: [], shape: input.shape, attr: ""))
        for c in calls {
            // A module whose output has no grad_fn (e.g. Identity) passes its input through.
            let inputs = c.gradFn.map { producer[ObjectIdentifier($0)] == c.name ? sources($0) : [producer[ObjectIdentifier($0)]!] } ?? []
            nodes.append(GraphNode(name: c.name, op: c.module.typeName, inputs: inputs, shape: c.shape, attr: c.module.extraRepr()))
        }
        let last = output.gradFn.flatMap { producer[ObjectIdentifier($0)] }.map { [$0] } ?? sources(output.gradFn)
        nodes.append(GraphNode(name: "output/output", op: "IO Node", inputs: last, shape: output.shape, attr: ""))
    }

    /// The serialized `GraphDef{node: [NodeDef{name, op, input, attr}], versions{producer: 22}}`.
    func graphDef() -> [UInt8] {
        var g = ProtoWriter()
        for n in nodes {
            var node = ProtoWriter()
            node.string(1, n.name)
            node.string(2, n.op)
            for i in n.inputs { node.string(3, i) }
            // attr map entries: {key, AttrValue}; _output_shapes is AttrValue{list{shape[{dim[{size}]}]}}.
            var shape = ProtoWriter()
            for d in n.shape {
                var dim = ProtoWriter()
                dim.int(1, d)
                shape.message(2, dim)
            }
            var list = ProtoWriter()
            list.message(7, shape)
            var shapesValue = ProtoWriter()
            shapesValue.message(1, list)
            var shapesEntry = ProtoWriter()
            shapesEntry.string(1, "_output_shapes")
            shapesEntry.message(2, shapesValue)
            node.message(5, shapesEntry)
            if !n.attr.isEmpty {
                var s = ProtoWriter()
                s.string(2, n.attr)
                var entry = ProtoWriter()
                entry.string(1, "attr")
                entry.message(2, s)
                node.message(5, entry)
            }
            g.message(1, node)
        }
        var versions = ProtoWriter()
        versions.int(1, 22)
        g.message(4, versions)
        return g.bytes
    }
}
