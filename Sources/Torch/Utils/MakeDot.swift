/// torchviz's `make_dot`: the autograd graph behind `output` as Graphviz DOT.
///
/// Nodes are laid out as torchviz draws them: the output tensor (green, its shape), one box per
/// backward node named as its `grad_fn` (`AddmmBackward0`), and a blue box per leaf with its name
/// from `params` and its shape, joined by edges in the direction gradients flow. A view's base
/// tensor is drawn too, joined by a dotted edge.
///
/// The backward nodes' saved attributes are PyTorch's `grad_fn._saved_<name>` ones, with the same
/// names and values, for the ops models and tutorials use (elementwise math, matmul/addmm/bmm,
/// reductions, views, convolution, pooling, normalization, softmax, losses); other nodes show
/// none. Where they differ from PyTorch's:
/// - a `Scalar` such as `alpha` or a pow exponent shows as an int when integral (a Python `2.0`
///   shows as `2`), since a Swift `Double` does not say how it was written;
/// - after a `backward()` without `retainGraph` the saved values are freed with the graph's
///   saved tensors and nodes show their names only (PyTorch raises there, so torchviz cannot draw
///   it at all);
/// - `F.crossEntropy` is one fused `NllLossBackward0` node whose `self` is the logits, where
///   PyTorch records `LogSoftmaxBackward0` then `NllLossBackward0` (use `F.logSoftmax` and
///   `F.nllLoss` for PyTorch's graph).
///
/// Saved tensors are the tensors themselves: a saved input that is a leaf or another drawn tensor
/// shares its node, as in torchviz, and a saved output is its own node (PyTorch returns a new
/// object for it, distinct from the output).
///
/// ```swift
/// let dot = makeDot(y, params: ["x": x, "w": w, "b": b], showAttrs: true, showSaved: true)
/// print(dot)                                                  // the DOT source
/// try dot.render(filename: "compute_graph", format: "png")    // runs Graphviz's `dot`
/// ```
/// - Parameters:
///   - output: the tensor whose autograd graph is drawn.
///   - params: names for leaf tensors (parameters, inputs), shown on their nodes.
///   - showAttrs: label each backward node with a table of its saved attributes (`alpha: 1`,
///     `self: [saved tensor]`, `self_sym_sizes: (3, 2)`), as torchviz.
///   - showSaved: draw each saved tensor as an orange node (its attribute name and shape), joined
///     to its backward node by an undirected edge.
///   - maxAttrChars: the widest attribute value shown; longer ones are cut and end in `...`.
public func makeDot(_ output: Tensor, params: [String: Tensor] = [:], showAttrs: Bool = false, showSaved: Bool = false,
                    maxAttrChars: Int = 50) -> DotGraph {
    makeDot([output], params: params, showAttrs: showAttrs, showSaved: showSaved, maxAttrChars: maxAttrChars)
}

/// `make_dot((a, b), ...)`: several outputs in one drawing.
public func makeDot(_ outputs: [Tensor], params: [String: Tensor] = [:], showAttrs: Bool = false, showSaved: Bool = false,
                    maxAttrChars: Int = 50) -> DotGraph {
    var builder = AutogradDotBuilder(params: params, showAttrs: showAttrs, showSaved: showSaved, maxAttrChars: maxAttrChars)
    for t in outputs { builder.addBase(t, color: "darkolivegreen1") }
    return DotGraph(body: builder.body)
}

/// Graphviz DOT source (`graphviz.Digraph` as torchviz returns it); `description` is the source.
public struct DotGraph: CustomStringConvertible {
    /// The statements between the braces, one a line.
    public let body: [String]

    /// The full DOT source, with torchviz's node style and its size (0.15 inch a statement, at least 12).
    public var source: String {
        let size = Swift.max(12, Double(body.count) * 0.15)
        let sizeText = size == 12 ? "12" : "\(size)"
        var s = "digraph {\n"
        s += "\tgraph [size=\"\(sizeText),\(sizeText)\"]\n"
        s += "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n"
        for line in body { s += "\t" + line + "\n" }
        return s + "}\n"
    }

    public var description: String { source }

    /// Writes the source to `filename` and runs Graphviz's `dot` to make `filename.format`, as
    /// `graphviz.Digraph.render`. Returns the rendered file's path.
    /// - Throws: ``DotRenderError`` when `dot` is not installed or fails, or the source cannot be written.
    @discardableResult
    public func render(filename: String, format: String = "pdf") throws -> String {
        let output = filename + "." + format
        do {
            try source.write(toFile: filename, atomically: true, encoding: .utf8)
        } catch {
            throw DotRenderError.cannotWrite(path: filename, reason: errorDescription(error))
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let dot = path.split(separator: ":").map({ String($0) + "/dot" })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw DotRenderError.graphvizNotFound
        }
        let p = ChildProcess(executable: dot, arguments: ["-T" + format, "-o", output, filename], standardError: .pipe)
        do { try p.run() } catch { throw DotRenderError.failed(status: -1, message: errorDescription(error)) }
        let message = String(decoding: p.readToEnd(), as: UTF8.self)
        let status: Int32
        switch p.wait() {
        case .exited(let code): status = code
        case .signalled(let signal): status = signal
        }
        guard status == 0 else {
            throw DotRenderError.failed(status: status, message: message.trimmingWhitespace(newlines: true))
        }
        return output
    }
}

/// Why ``DotGraph/render(filename:format:)`` failed.
public enum DotRenderError: Error, CustomStringConvertible {
    /// No `dot` executable on PATH.
    case graphvizNotFound
    /// `dot` exited with an error.
    case failed(status: Int32, message: String)
    /// The DOT source could not be written.
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .graphvizNotFound:
            return "render: Graphviz's `dot` executable was not found on PATH; install Graphviz (e.g. `apt-get install graphviz`) or print the DOT source instead"
        case .failed(let status, let message):
            return "render: `dot` failed with status \(status): \(message)"
        case .cannotWrite(let path, let reason):
            return "render: cannot write the DOT source to \(path): \(reason)"
        }
    }
}

/// Walks the backward graph like torchviz, numbering objects in the order first seen.
struct AutogradDotBuilder {
    var body: [String] = []
    private var ids: [ObjectIdentifier: Int] = [:]
    private var seen = Set<ObjectIdentifier>()
    private let paramNames: [ObjectIdentifier: String]
    private let showAttrs: Bool, showSaved: Bool, maxAttrChars: Int
    /// The attributes read so far. Some tensors in them are made when asked (a loss's
    /// `total_weight`); keeping them alive keeps their identifiers unique, as torchviz's `seen`
    /// set keeps PyTorch's saved-tensor objects alive.
    private var readAttributes: [[SavedAttribute]] = []

    init(params: [String: Tensor], showAttrs: Bool = false, showSaved: Bool = false, maxAttrChars: Int = 50) {
        var names: [ObjectIdentifier: String] = [:]
        for (k, v) in params.sorted(by: { $0.key < $1.key }) { names[ObjectIdentifier(v)] = k }
        paramNames = names
        self.showAttrs = showAttrs
        self.showSaved = showSaved
        self.maxAttrChars = maxAttrChars
    }

    private mutating func id(_ o: AnyObject) -> Int {
        let key = ObjectIdentifier(o)
        if let i = ids[key] { return i }
        ids[key] = ids.count + 1
        return ids.count
    }

    /// torchviz's `get_var_name`: the name (from `params`, or a saved attribute's) and the shape.
    private func label(_ t: Tensor, name: String? = nil) -> String {
        "\(name ?? paramNames[ObjectIdentifier(t)] ?? "")\n (\(t.shape.map(String.init).joined(separator: ", ")))"
    }

    private mutating func node(_ o: AnyObject, _ label: String, fill: String? = nil) {
        body.append("\(id(o)) [label=\(dotQuote(label))\(fill.map { " fillcolor=\($0)" } ?? "")]")
    }

    private mutating func edge(_ from: AnyObject, _ to: AnyObject, _ attrs: String = "") {
        body.append("\(id(from)) -> \(id(to))\(attrs.isEmpty ? "" : " [\(attrs)]")")
    }

    mutating func addBase(_ t: Tensor, color: String) {
        guard seen.insert(ObjectIdentifier(t)).inserted else { return }
        node(t, label(t), fill: color)
        if let fn = t.gradFn {
            addNodes(fn)
            edge(fn, t)
        }
        if let base = t.viewBase {
            addBase(base, color: "darkolivegreen3")
            edge(base, t, "style=dotted")
        }
    }

    /// Iterative depth-first walk (deep graphs must not overflow the stack), emitting statements
    /// in torchviz's order: a node, then for each input its edge followed by that input's subtree.
    private mutating func addNodes(_ root: Node) {
        enum Step { case visit(Node), edge(Node, Node) }
        var stack: [Step] = [.visit(root)]
        while let step = stack.popLast() {
            switch step {
            case .edge(let from, let to):
                edge(from, to)
            case .visit(let fn):
                guard seen.insert(ObjectIdentifier(fn)).inserted else { continue }
                let attributes = showAttrs || showSaved ? fn.savedAttributes() : []
                if !attributes.isEmpty { readAttributes.append(attributes) }
                if showSaved { addSavedTensors(fn, attributes) }
                if let acc = fn as? AccumulateGrad {
                    seen.insert(ObjectIdentifier(acc.variable))
                    node(acc.variable, label(acc.variable), fill: "lightblue")
                    edge(acc.variable, fn)
                }
                node(fn, showAttrs ? attributeTable(fn.name, attributes, maxAttrChars: maxAttrChars) : fn.name)
                for e in fn.nextEdges.reversed() {
                    guard let next = e.node else { continue }
                    stack.append(.visit(next))
                    stack.append(.edge(next, fn))
                }
            }
        }
    }
}

extension AutogradDotBuilder {
    /// torchviz's saved-tensor nodes: an undirected edge from the backward node, then an orange
    /// node named by the attribute (`attr[i]` in a tuple). Like torchviz, a tensor already drawn
    /// (a leaf saved as `self`) is declared again, and a single saved tensor counts as seen, so an
    /// output saved by a node it does not come from is not drawn again as an output.
    private mutating func addSavedTensors(_ fn: Node, _ attributes: [SavedAttribute]) {
        for a in attributes {
            switch a.value {
            case .tensor(let t):
                seen.insert(ObjectIdentifier(t))
                edge(fn, t, "dir=none")
                node(t, label(t, name: a.name), fill: "orange")
            case .tensors(let ts):
                for (i, t) in ts.enumerated() {
                    guard let t else { continue }
                    edge(fn, t, "dir=none")
                    node(t, label(t, name: "\(a.name)[\(i)]"), fill: "orange")
                }
            case .text:
                break
            }
        }
    }
}

/// torchviz's `get_fn_name` with `show_attrs`: the node's name, a line of dashes, then one
/// `name: value` row per attribute, names left-aligned and values right-aligned in columns, values
/// longer than `maxAttrChars` cut to end in `...`.
func attributeTable(_ name: String, _ attributes: [SavedAttribute], maxAttrChars: Int) -> String {
    guard !attributes.isEmpty else { return name }
    let rows = attributes.map { a -> (String, String) in
        switch a.value {
        case .tensor: return (a.name, "[saved tensor]")
        case .tensors(let ts):
            if ts.contains(where: { $0 != nil }) { return (a.name, "[saved tensors]") }
            return (a.name, pyTuple(strings: ts.map { _ in "None" }))
        case .text(let s): return (a.name, s)
        }
    }
    let width1 = rows.map { $0.0.count }.max()!
    let width2 = Swift.min(rows.map { $0.1.count }.max()!, Swift.max(maxAttrChars, 3))
    func cut(_ s: String) -> String { s.count > width2 ? String(s.prefix(width2 - 3)) + "..." : s }
    func padded(_ s: String, _ width: Int, left: Bool) -> String {
        let fill = String(repeating: " ", count: Swift.max(0, width - s.count))
        return left ? s + fill : fill + s
    }
    let separator = String(repeating: "-", count: Swift.max(width1 + width2 + 2, name.count))
    let lines = rows.map { padded($0.0, width1, left: true) + ": " + padded(cut($0.1), width2, left: false) }
    return ([name, separator] + lines).joined(separator: "\n")
}

/// Graphviz's quoting: bare identifiers and numerals stay as they are, anything else is put in
/// double quotes with `"` escaped.
func dotQuote(_ s: String) -> String {
    let keywords: Set<String> = ["node", "edge", "graph", "digraph", "subgraph", "strict"]
    // ^[A-Za-z_][A-Za-z0-9_]*$ and ^-?(\.[0-9]+|[0-9]+(\.[0-9]*)?)$, by hand (no Foundation regular expressions).
    func isLetter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
    func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
    let bytes = Array(s.utf8)
    let isID = !bytes.isEmpty && isLetter(bytes[0]) && bytes.allSatisfy { isLetter($0) || isDigit($0) }
        && !keywords.contains(s.lowercased())
    let unsigned = bytes.first == 45 ? bytes.dropFirst() : bytes[...]
    let dots = unsigned.filter { $0 == 46 }.count
    let isNumeral = unsigned.allSatisfy { isDigit($0) || $0 == 46 } && dots <= 1 && unsigned.contains(where: isDigit)
    if isID || isNumeral { return s }
    return "\"" + s.replacing("\"", with: "\\\"") + "\""
}
