/// One node of a loaded graph, as the op table sees it: its operator, attributes (with typed, checked accessors
/// that name the attribute's field path in their errors) and the opset version it runs under.
struct ONNXNode {
    let index: Int
    /// `graph.node[3]`
    let field: String
    let name: String
    let opType: String
    let domain: String
    let opset: Int64
    let inputs: [String]
    var outputs: [String]
    let attributes: [String: (index: Int, proto: Onnx_AttributeProto)]
    /// The model's folder, for tensor attributes with external data.
    let baseDirectory: String?
    /// The values the node's subgraphs (If, Loop, Scan) read from the scope around them.
    let implicitInputs: [String]
    /// For a node the importer fused (`ONNXFusion`): the file's nodes it stands for, in order; empty otherwise.
    var unfused: [ONNXNode] = []

    init(index: Int, proto: Onnx_NodeProto, opset: Int64, baseDirectory: String?, fieldPrefix: String = "graph.node") {
        self.index = index
        field = "\(fieldPrefix)[\(index)]"
        name = proto.name
        opType = proto.opType
        domain = proto.domain == "ai.onnx" ? "" : proto.domain
        self.opset = opset
        inputs = proto.input
        outputs = proto.output
        var a: [String: (Int, Onnx_AttributeProto)] = [:]
        for (i, at) in proto.attribute.enumerated() where a[at.name] == nil { a[at.name] = (i, at) }
        attributes = a
        self.baseDirectory = baseDirectory
        var free = Set<String>()
        for at in proto.attribute {
            if at.hasG { free.formUnion(ONNXControlFlow.freeNames(at.g)) }
            for g in at.graphs { free.formUnion(ONNXControlFlow.freeNames(g)) }
        }
        implicitInputs = free.sorted()
    }

    /// How errors name this node: its field path and, when it has one, its name.
    var label: String { name.isEmpty ? "\(field) (\(opType))" : "\(field) ('\(name)', \(opType))" }

    func fail(_ reason: String) -> ONNXError { .invalidNode(field: label, reason: reason) }

    func attrField(_ name: String) -> String {
        if let (i, _) = attributes[name] { return "\(field).attribute[\(i)] ('\(name)')" }
        return "\(field).attribute '\(name)'"
    }

    func has(_ name: String) -> Bool { attributes[name] != nil }

    private func attr(_ name: String, _ type: Onnx_AttributeProto.AttributeType) throws -> Onnx_AttributeProto? {
        guard let (_, a) = attributes[name] else { return nil }
        if a.hasType && a.type != type && a.type != .undefined {
            throw ONNXError.invalidAttribute(field: attrField(name), reason: "expected \(type), got \(a.type)")
        }
        return a
    }

    func int(_ name: String) throws -> Int? {
        guard let a = try attr(name, .int) else { return nil }
        guard a.i >= Int64(Int.min) / 2, a.i <= Int64(Int.max) / 2 else { return a.i < 0 ? Int.min / 2 : Int.max / 2 }
        return Int(a.i)
    }
    func int(_ name: String, _ def: Int) throws -> Int { try int(name) ?? def }

    func ints(_ name: String) throws -> [Int]? {
        guard let a = try attr(name, .ints) else { return nil }
        return a.ints.map { Int(clamping: $0) }
    }

    func float(_ name: String) throws -> Double? {
        guard let a = try attr(name, .float) else { return nil }
        return Double(a.f)
    }
    func float(_ name: String, _ def: Double) throws -> Double { try float(name) ?? def }

    func floats(_ name: String) throws -> [Double]? {
        guard let a = try attr(name, .floats) else { return nil }
        return a.floats.map(Double.init)
    }

    func string(_ name: String) throws -> String? {
        guard let a = try attr(name, .string) else { return nil }
        guard let s = String(data: a.s, encoding: .utf8) else {
            throw ONNXError.invalidAttribute(field: attrField(name), reason: "not UTF-8")
        }
        return s
    }
    func string(_ name: String, _ def: String) throws -> String { try string(name) ?? def }

    func strings(_ name: String) throws -> [String]? {
        guard let a = try attr(name, .strings) else { return nil }
        return a.strings.map { String(decoding: $0, as: UTF8.self) }
    }

    func tensor(_ name: String) throws -> Tensor? {
        guard let a = try attr(name, .tensor) else { return nil }
        return try ONNXTensorCodec.decode(a.t, field: "\(attrField(name)).t", baseDirectory: baseDirectory)
    }

    /// An axis attribute or value normalized into 0..<rank.
    func axis(_ a: Int, rank: Int, _ what: String = "axis") throws -> Int {
        let r = a < 0 ? a + rank : a
        guard r >= 0 && r < max(rank, 1) else { throw fail("\(what) \(a) is out of range for rank \(rank)") }
        return r
    }
}

/// The inputs of one node as it runs: tensors by position, nil for an omitted optional input.
struct ONNXInputs {
    let values: [Tensor?]
    let node: ONNXNode

    var count: Int { values.count }

    /// Input `i`, which must be present.
    func x(_ i: Int) throws -> Tensor {
        guard i < values.count, let t = values[i] else { throw node.fail("input \(i) is required") }
        return t
    }

    /// Input `i`, or nil when omitted.
    func opt(_ i: Int) -> Tensor? { i < values.count ? values[i] : nil }

    /// The values of integer input `i` (a shape, axes, pads …), or nil when omitted.
    func ints(_ i: Int) throws -> [Int]? {
        guard let t = opt(i) else { return nil }
        guard !t.isFloatingPoint || t.numel == 0 else { throw node.fail("input \(i) must be an integer tensor, got \(t.dtype)") }
        guard t.dim <= 1 else { throw node.fail("input \(i) must be a scalar or 1-D, got shape \(t.shape)") }
        guard t.numel <= 1 << 20 else { throw node.fail("input \(i) has \(t.numel) values") }
        return t.toArray(as: Int64.self).map { Int(clamping: $0) }
    }

    /// The single value of input `i` as a Double, or nil when omitted.
    func scalar(_ i: Int) throws -> Double? {
        guard let t = opt(i) else { return nil }
        guard t.numel == 1 else { throw node.fail("input \(i) must hold one value, got shape \(t.shape)") }
        return t.item()
    }
}

/// An operator's implementation: the node (attributes, opset) and its inputs in, its outputs out.
typealias ONNXKernel = (ONNXNode, ONNXInputs) throws -> [Tensor]

/// The operator table: op type of the default domain (ai.onnx) → implementation, one mapping per op family.
/// The exporter reads the same families to know which Torch ops have an ONNX form.
enum ONNXOps {
    /// The op table's key of a node: its op type, qualified by its domain outside the default one.
    static func key(_ node: ONNXNode) -> String { node.domain.isEmpty ? node.opType : node.domain + "." + node.opType }

    /// True for an op (a `key`) that some kernel runs.
    static func isKnown(_ op: String) -> Bool {
        table[op] != nil || ONNXEmulated.kernels[op] != nil || ONNXControlFlow.ops.contains(op)
    }

    static let table: [String: ONNXKernel] = {
        var t: [String: ONNXKernel] = [:]
        for family in [elementwise, activations, reductions, shapeOps, nnOps, losses, attention, miscOps, signalOps, recurrentOps] {
            t.merge(family) { a, _ in a }
        }
        return t
    }()

    /// Ops that are safe to evaluate at load time when all their inputs are constants (no randomness, small
    /// results): the Shape/Gather/Concat chains exporters leave in graphs.
    static let foldable: Set<String> = [
        "Constant", "Shape", "Size", "Gather", "Concat", "Unsqueeze", "Squeeze", "Slice", "Cast", "Reshape",
        "Add", "Sub", "Mul", "Div", "Range", "Identity", "Equal", "Where", "Floor", "Ceil", "Neg", "Sqrt",
        "ReduceProd", "Min", "Max", "Not", "Transpose", "Expand", "ConstantOfShape", "Abs",
    ]

    // MARK: - Helpers shared by the families

    /// A result tensor bound: shapes computed from values in the file are checked before allocating.
    static func checkShape(_ shape: [Int], _ node: ONNXNode) throws {
        var n = 1
        for d in shape {
            guard d >= 0 else { throw node.fail("negative dimension in shape \(shape)") }
            let (p, o) = n.multipliedReportingOverflow(by: d)
            guard !o else { throw node.fail("shape \(shape) overflows") }
            n = p
        }
        guard n <= onnx.maxTensorElements else { throw node.fail("shape \(shape) exceeds \(onnx.maxTensorElements) elements") }
    }

    /// A scalar (0-d) tensor of `value` in `dtype` on `device`.
    static func scalar(_ value: Double, _ dtype: DType, _ device: Device = .cpu) -> Tensor {
        torch.full([], value, dtype: dtype, device: device)
    }

    /// An int64 1-D tensor.
    static func int64s(_ v: [Int], device: Device = .cpu) -> Tensor {
        Tensor(v.map { Int64($0) }, shape: [v.count]).to(device)
    }

    /// The broadcast shape of ONNX's multidirectional broadcasting (numpy's), or an error naming the node.
    static func broadcastShape(_ a: [Int], _ b: [Int], _ node: ONNXNode) throws -> [Int] {
        let n = max(a.count, b.count)
        var r = [Int](repeating: 1, count: n)
        for i in 0..<n {
            let x = i < n - a.count ? 1 : a[i - (n - a.count)]
            let y = i < n - b.count ? 1 : b[i - (n - b.count)]
            guard x == y || x == 1 || y == 1 else {
                throw node.fail("shapes \(a) and \(b) cannot be broadcast")
            }
            r[i] = x == 1 ? y : x
        }
        return r
    }
}
