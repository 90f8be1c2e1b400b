/// Running one node (the op table, the typed kernels for emulated types, and control flow), and the control-flow
/// ops If, Loop and Scan, whose subgraphs run with the values of the scope around them.
enum ONNXControlFlow {
    static let ops: Set<String> = ["If", "Loop", "Scan"]

    /// Runs `node` on the values in scope, storing its outputs (and their emulated types) there.
    static func runNode(_ node: ONNXNode, _ kernel: ONNXKernel?, _ values: inout [String: Tensor],
                        _ types: inout [String: Int32]) throws {
        var ins: [Tensor?] = []
        var insTypes: [Int32] = []
        var emulated: Int32?
        ins.reserveCapacity(node.inputs.count)
        for name in node.inputs {
            if name.isEmpty { ins.append(nil); insTypes.append(0); continue }
            guard let v = values[name] else { throw node.fail("input '\(name)' has no value") }
            ins.append(v)
            if let t = types[name] { emulated = t }
            insTypes.append(ONNXEmulated.type(v, types[name]))
        }
        if !node.unfused.isEmpty, emulated != nil || ONNXEmulated.alwaysTyped.contains(node.opType) {
            // The typed kernels of emulated element types know nothing of fusions: run the file's nodes one by one.
            for n in node.unfused { try runNode(n, nil, &values, &types) }
            for n in node.unfused.dropLast() { for o in n.outputs { values[o] = nil; types[o] = nil } }
            return
        }
        let inputs = ONNXInputs(values: ins, node: node)
        let results: [(Tensor, Int32?)]
        if ops.contains(node.opType) {
            results = try controlFlow(node, inputs, insTypes, values, types)
        } else if let typed = ONNXEmulated.kernels[node.opType], emulated != nil || ONNXEmulated.alwaysTyped.contains(node.opType) {
            results = try typed(node, inputs, insTypes)
        } else if let e = emulated {
            throw ONNXError.unsupportedDataType(field: "\(node.label) (\(node.opType) input)", dataType: e)
        } else {
            guard let kernel = kernel ?? ONNXOps.table[ONNXOps.key(node)] else {
                throw ONNXError.unsupportedOperator(op: node.opType, domain: node.domain, opset: node.opset, node: node.label)
            }
            results = try kernel(node, inputs).map { ($0, nil) }
        }
        // Kernels computed on the host (the double-precision ones) hand back CPU tensors: results follow the
        // node's inputs to their device.
        let device = ins.lazy.compactMap { $0?.device }.first { $0 != .cpu }
        for (k, o) in node.outputs.enumerated() where !o.isEmpty {
            guard k < results.count else {
                throw node.fail("produced \(results.count) outputs, the node names \(node.outputs.count)")
            }
            values[o] = device.map { d in results[k].0.device == d ? results[k].0 : results[k].0.to(d) } ?? results[k].0
            types[o] = results[k].1
        }
    }

    /// The names a graph reads from the scope around it (its own nested graphs included).
    static func freeNames(_ g: Onnx_GraphProto) -> Set<String> {
        var defined = Set(g.input.map(\.name)).union(g.initializer.map(\.name))
        for n in g.node { defined.formUnion(n.output) }
        var free = Set<String>()
        for n in g.node {
            for i in n.input where !i.isEmpty && !defined.contains(i) { free.insert(i) }
            for a in n.attribute {
                if a.hasG { free.formUnion(freeNames(a.g).subtracting(defined)) }
                for sg in a.graphs { free.formUnion(freeNames(sg).subtracting(defined)) }
            }
        }
        for o in g.output where !defined.contains(o.name) { free.insert(o.name) }
        return free
    }

    /// A graph attribute run as a function of its inputs and the enclosing scope.
    struct Subgraph {
        let graph: Onnx_GraphProto
        let nodes: [ONNXNode]
        let constants: [String: Tensor]
        let constantTypes: [String: Int32]
        let field: String

        init(_ node: ONNXNode, _ attribute: String) throws {
            guard let (i, a) = node.attributes[attribute], a.hasG else { throw node.fail("attribute '\(attribute)' (a graph) is required") }
            field = "\(node.field).attribute[\(i)].g"
            graph = a.g
            var c: [String: Tensor] = [:], ct: [String: Int32] = [:]
            for (k, t) in graph.initializer.enumerated() {
                let (v, type) = try ONNXEmulated.decodeTyped(t, field: "\(field).initializer[\(k)]", baseDirectory: node.baseDirectory)
                c[t.name] = v
                if let type { ct[t.name] = type }
            }
            constants = c; constantTypes = ct
            let prefix = "\(field).node"
            nodes = try a.g.node.enumerated().map { k, p in
                let n = ONNXNode(index: k, proto: p, opset: node.opset, baseDirectory: node.baseDirectory, fieldPrefix: prefix)
                if !ONNXOps.isKnown(ONNXOps.key(n)) {
                    throw ONNXError.unsupportedOperator(op: p.opType, domain: n.domain, opset: node.opset, node: n.label)
                }
                return n
            }
        }

        var inputCount: Int { graph.input.count }
        var outputCount: Int { graph.output.count }

        func run(_ inputs: [(Tensor, Int32?)], _ scope: [String: Tensor], _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
            guard inputs.count == graph.input.count else {
                throw ONNXError.invalidNode(field: field, reason: "the subgraph takes \(graph.input.count) inputs, got \(inputs.count)")
            }
            var values = scope, types = scopeTypes
            for (k, v) in constants { values[k] = v; types[k] = constantTypes[k] }
            for (spec, v) in zip(graph.input, inputs) { values[spec.name] = v.0; types[spec.name] = v.1 }
            for n in nodes { try runNode(n, nil, &values, &types) }
            return try graph.output.map { o in
                guard let v = values[o.name] else { throw ONNXError.undefinedValue(field: "\(field).output", name: o.name) }
                return (v, types[o.name])
            }
        }
    }

    static func controlFlow(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32], _ scope: [String: Tensor],
                            _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
        switch node.opType {
        case "If":
            let c = try ins.x(0)
            guard c.numel == 1 else { throw node.fail("the condition must hold one value, got shape \(c.shape)") }
            let g = try Subgraph(node, c.item() != 0 ? "then_branch" : "else_branch")
            return try g.run([], scope, scopeTypes)
        case "Loop": return try loop(node, ins, types, scope, scopeTypes)
        default: return try scan(node, ins, types, scope, scopeTypes)
        }
    }

    /// Stacks per-iteration values along a new axis `axis` (an empty list: shape [0]).
    static func stack(_ items: [(Tensor, Int32?)], axis: Int = 0, _ node: ONNXNode) throws -> (Tensor, Int32?) {
        guard let first = items.first else { return (Tensor([Float](), shape: [0]), nil) }
        for it in items where it.0.shape != first.0.shape || it.0.dtype != first.0.dtype {
            throw node.fail("scan outputs differ in shape or type across iterations (\(first.0.shape) and \(it.0.shape))")
        }
        let a = try node.axis(axis, rank: first.0.dim + 1)
        return (torch.stack(items.map(\.0), dim: a), first.1)
    }

    static func loop(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32], _ scope: [String: Tensor],
                     _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
        let body = try Subgraph(node, "body")
        let maxTrip = try ins.opt(0).map { t -> Int in
            guard t.numel == 1 else { throw node.fail("M must hold one value") }
            return Int(t.item(as: Int64.self))
        }
        var cond = try ins.opt(1).map { t -> Bool in
            guard t.numel == 1 else { throw node.fail("cond must hold one value") }
            return t.item() != 0
        } ?? true
        guard ins.values.dropFirst(2).allSatisfy({ $0 != nil }) else { throw node.fail("loop-carried values must be given") }
        var carried: [(Tensor, Int32?)] = try (2..<Swift.max(ins.count, 2)).map { k in
            (try ins.x(k), ONNXEmulated.isEmulated(types[k]) ? types[k] : nil)
        }
        let nCarried = carried.count
        guard body.inputCount == nCarried + 2, body.outputCount >= nCarried + 1 else {
            throw node.fail("the body takes \(body.inputCount) inputs and gives \(body.outputCount) outputs for \(nCarried) loop-carried values")
        }
        var scans = [[(Tensor, Int32?)]](repeating: [], count: body.outputCount - 1 - nCarried)
        var i = 0
        while cond && (maxTrip == nil || i < maxTrip!) {
            guard i < 1 << 24 else { throw node.fail("more than 2^24 iterations") }
            let iter = torch.full([], Double(i), dtype: .int64)
            let out = try body.run([(iter, nil), (torch.full([], cond ? 1 : 0, dtype: .bool), nil)] + carried, scope, scopeTypes)
            cond = out[0].0.item() != 0
            carried = Array(out[1..<(1 + nCarried)])
            for k in scans.indices { scans[k].append(out[1 + nCarried + k]) }
            i += 1
        }
        return carried + (try scans.map { try stack($0, node) })
    }

    static func scan(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32], _ scope: [String: Tensor],
                     _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
        if node.opset < 9 { return try scan8(node, ins, types, scope, scopeTypes) }
        let body = try Subgraph(node, "body")
        guard let m = try node.int("num_scan_inputs"), m >= 0, m <= ins.count else {
            throw ONNXError.invalidAttribute(field: node.attrField("num_scan_inputs"), reason: "required, at most the number of inputs")
        }
        let nState = ins.count - m
        let all: [(Tensor, Int32?)] = try (0..<ins.count).map { k in (try ins.x(k), ONNXEmulated.isEmulated(types[k]) ? types[k] : nil) }
        var state = Array(all[0..<nState])
        let scanIns = Array(all[nState...])
        let inAxes = try node.ints("scan_input_axes") ?? [Int](repeating: 0, count: m)
        let inDirs = try node.ints("scan_input_directions") ?? [Int](repeating: 0, count: m)
        let nOut = body.outputCount - nState
        let outAxes = try node.ints("scan_output_axes") ?? [Int](repeating: 0, count: nOut)
        let outDirs = try node.ints("scan_output_directions") ?? [Int](repeating: 0, count: nOut)
        guard inAxes.count == m, inDirs.count == m, outAxes.count == nOut, outDirs.count == nOut, nOut >= 0,
              body.inputCount == nState + m else {
            throw node.fail("scan axes/directions or the body's inputs and outputs do not match the \(m) scan inputs")
        }
        let axes = try zip(scanIns, inAxes).map { try node.axis($1, rank: $0.0.dim) }
        return try scanLoop(body, state, scanIns, axes, inDirs, outAxes, outDirs, node, scope, scopeTypes)
    }

    /// Scan of opset 8: a leading batch dim on every state and scan input (scan axis 1), each batch entry scanned
    /// on its own; sequence_lens (input 0) must be absent or the full length.
    static func scan8(_ node: ONNXNode, _ ins: ONNXInputs, _ types: [Int32], _ scope: [String: Tensor],
                      _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
        let body = try Subgraph(node, "body")
        guard let m = try node.int("num_scan_inputs"), m >= 1, m <= ins.count - 1 else {
            throw ONNXError.invalidAttribute(field: node.attrField("num_scan_inputs"), reason: "required, at least 1, at most the inputs after sequence_lens")
        }
        let all: [(Tensor, Int32?)] = try (1..<ins.count).map { k in (try ins.x(k), ONNXEmulated.isEmulated(types[k]) ? types[k] : nil) }
        let nState = all.count - m, nOut = body.outputCount - nState
        let dirs = try node.ints("directions") ?? [Int](repeating: 0, count: m)
        guard dirs.count == m, nOut >= 0, body.inputCount == nState + m, all.allSatisfy({ $0.0.dim >= 1 }),
              Set(all.map { $0.0.shape[0] }).count == 1, all.suffix(m).allSatisfy({ $0.0.dim >= 2 }) else {
            throw node.fail("states and scan inputs must share a batch dim; directions must fit the \(m) scan inputs")
        }
        let B = all[0].0.shape[0], length = all[nState].0.shape[1]
        if let lens = try ins.ints(0), !lens.allSatisfy({ $0 == length }) {
            throw ONNXError.unsupportedOperator(op: "Scan (opset 8, sequence_lens shorter than the input)", domain: "", opset: node.opset, node: node.label)
        }
        var perBatch: [[(Tensor, Int32?)]] = []
        for b in 0..<B {
            let slices = all.map { ($0.0.select(0, b), $0.1) }
            perBatch.append(try scanLoop(body, Array(slices[0..<nState]), Array(slices[nState...]), [Int](repeating: 0, count: m), dirs,
                                         [Int](repeating: 0, count: nOut), [Int](repeating: 0, count: nOut), node, scope, scopeTypes))
        }
        guard let first = perBatch.first else { throw node.fail("an empty batch") }
        return try first.indices.map { k in try stack(perBatch.map { $0[k] }, node) }
    }

    /// The scan proper: states threaded through the body, one slice of each scan input a step.
    static func scanLoop(_ body: Subgraph, _ initial: [(Tensor, Int32?)], _ scanIns: [(Tensor, Int32?)], _ axes: [Int],
                         _ inDirs: [Int], _ outAxes: [Int], _ outDirs: [Int], _ node: ONNXNode,
                         _ scope: [String: Tensor], _ scopeTypes: [String: Int32]) throws -> [(Tensor, Int32?)] {
        var state = initial
        let m = scanIns.count, nState = initial.count, nOut = outAxes.count
        guard let length = scanIns.first.map({ $0.0.shape[axes[0]] }) else { throw node.fail("needs a scan input") }
        guard zip(scanIns, axes).allSatisfy({ $0.0.shape[$1] == length }) else { throw node.fail("scan inputs differ in length") }
        var outs = [[(Tensor, Int32?)]](repeating: [], count: nOut)
        for i in 0..<length {
            let slices: [(Tensor, Int32?)] = (0..<m).map { k in
                let t = inDirs[k] == 0 ? i : length - 1 - i
                return (scanIns[k].0.select(axes[k], t), scanIns[k].1)
            }
            let out = try body.run(state + slices, scope, scopeTypes)
            state = Array(out[0..<nState])
            for k in 0..<nOut { outs[k].append(out[nState + k]) }
        }
        return state + (try (0..<nOut).map { k in
            try stack(outDirs[k] == 0 ? outs[k] : outs[k].reversed(), axis: outAxes[k], node)
        })
    }
}
