import Foundation

/// torchviz's `make_dot`: the autograd graph behind `output` as Graphviz DOT.
///
/// Nodes are laid out as torchviz draws them: the output tensor (green, its shape), one box per
/// backward node named as its `grad_fn` (`AddmmBackward0`), and a blue box per leaf with its name
/// from `params` and its shape, joined by edges in the direction gradients flow. A view's base
/// tensor is drawn too, joined by a dotted edge.
///
/// ```swift
/// let dot = makeDot(y, params: ["x": x, "w": w, "b": b], showAttrs: true, showSaved: true)
/// print(dot)                                                  // the DOT source
/// try dot.render(filename: "compute_graph", format: "png")    // runs Graphviz's `dot`
/// ```
/// - Parameters:
///   - output: the tensor whose autograd graph is drawn.
///   - params: names for leaf tensors (parameters, inputs), shown on their nodes.
///   - showAttrs: accepted for torchviz's spelling. SwiftTorch's backward nodes keep
///     their saved tensors inside closures, without names, so there are no saved attributes or
///     tensors to add to the drawing; the graph is the same as with the flag off.
///   - showSaved: accepted for torchviz's spelling; see `showAttrs`.
public func makeDot(_ output: Tensor, params: [String: Tensor] = [:], showAttrs: Bool = false, showSaved: Bool = false) -> DotGraph {
    makeDot([output], params: params, showAttrs: showAttrs, showSaved: showSaved)
}

/// `make_dot((a, b), ...)`: several outputs in one drawing.
public func makeDot(_ outputs: [Tensor], params: [String: Tensor] = [:], showAttrs: Bool = false, showSaved: Bool = false) -> DotGraph {
    var builder = AutogradDotBuilder(params: params)
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
            throw DotRenderError.cannotWrite(path: filename, reason: error.localizedDescription)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let dot = path.split(separator: ":").map({ String($0) + "/dot" })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw DotRenderError.graphvizNotFound
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: dot)
        p.arguments = ["-T" + format, "-o", output, filename]
        let err = Pipe()
        p.standardError = err
        do { try p.run() } catch { throw DotRenderError.failed(status: -1, message: error.localizedDescription) }
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw DotRenderError.failed(status: p.terminationStatus, message: message.trimmingCharacters(in: .whitespacesAndNewlines))
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

    init(params: [String: Tensor]) {
        var names: [ObjectIdentifier: String] = [:]
        for (k, v) in params.sorted(by: { $0.key < $1.key }) { names[ObjectIdentifier(v)] = k }
        paramNames = names
    }

    private mutating func id(_ o: AnyObject) -> Int {
        let key = ObjectIdentifier(o)
        if let i = ids[key] { return i }
        ids[key] = ids.count + 1
        return ids.count
    }

    private func label(_ t: Tensor) -> String {
        "\(paramNames[ObjectIdentifier(t)] ?? "")\n (\(t.shape.map(String.init).joined(separator: ", ")))"
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
                if let acc = fn as? AccumulateGrad {
                    seen.insert(ObjectIdentifier(acc.variable))
                    node(acc.variable, label(acc.variable), fill: "lightblue")
                    edge(acc.variable, fn)
                }
                node(fn, fn.name)
                for e in fn.nextEdges.reversed() {
                    guard let next = e.node else { continue }
                    stack.append(.visit(next))
                    stack.append(.edge(next, fn))
                }
            }
        }
    }
}

/// Graphviz's quoting: bare identifiers and numerals stay as they are, anything else is put in
/// double quotes with `"` escaped.
func dotQuote(_ s: String) -> String {
    let keywords: Set<String> = ["node", "edge", "graph", "digraph", "subgraph", "strict"]
    let isID = s.range(of: #"^[A-Za-z_][A-Za-z0-9_]*$"#, options: .regularExpression) != nil && !keywords.contains(s.lowercased())
    let isNumeral = s.range(of: #"^-?(\.[0-9]+|[0-9]+(\.[0-9]*)?)$"#, options: .regularExpression) != nil
    if isID || isNumeral { return s }
    return "\"" + s.replacingOccurrences(of: "\"", with: "\\\"") + "\""
}
