import SwiftProtobuf

/// ONNX models in SwiftTorch: `onnx.load` reads an `.onnx` file (validating it completely before anything runs)
/// into an `ONNXModel` that runs like a module.
///
/// ```swift
/// let model = try onnx.load("model.onnx")
/// let y = model(x)                                   // one input, one output
/// let outs = try model.run(["input": x])             // by name
/// ```
public enum onnx {
    /// The newest IR version this reader understands (ONNX 1.22 writes up to 13).
    public static let maxIRVersion: Int64 = 13
    /// The newest opset of the default domain (ai.onnx) accepted.
    public static let maxOpsetVersion: Int64 = 27
    /// The most elements a tensor of a loaded file (or one a node's shape input asks for) may have.
    public static let maxTensorElements = 1 << 31

    /// Loads the model at `path`; external data files are read from its folder.
    public static func load(_ path: String) throws -> ONNXModel {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ONNXError.io(path: path, reason: "\(error)")
        }
        let base = (URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent()).path
        return try load(bytes: data, baseDirectory: base, name: path)
    }

    /// Loads a model from its serialized bytes. `baseDirectory` is where external data files are looked up
    /// (nil: a model with external data is an error).
    public static func load(bytes: Data, baseDirectory: String? = nil, name: String = "<bytes>") throws -> ONNXModel {
        let proto = try parseModel(bytes, name: name)
        return try ONNXModel(proto: proto, baseDirectory: baseDirectory)
    }

    /// Loads a model from its serialized bytes.
    public static func load(bytes: [UInt8], baseDirectory: String? = nil) throws -> ONNXModel {
        try load(bytes: Data(bytes), baseDirectory: baseDirectory)
    }

    /// Parses a ModelProto, turning SwiftProtobuf's decoding errors and git-LFS pointers into `ONNXError`s.
    static func parseModel(_ data: Data, name: String) throws -> Onnx_ModelProto {
        if data.starts(with: Array("version https://git-lfs.github.com/spec/v1".utf8)) {
            throw ONNXError.gitLFSPointer(path: name)
        }
        if data.isEmpty { throw ONNXError.malformed(field: "model", reason: "the file is empty") }
        do {
            var options = BinaryDecodingOptions()
            options.messageDepthLimit = 64
            return try Onnx_ModelProto(serializedBytes: data, options: options)
        } catch {
            throw ONNXError.malformed(field: "model", reason: "not a valid ModelProto (\(error))")
        }
    }

    /// Parses a serialized TensorProto (the conformance suite's input_*.pb/output_*.pb files) into a tensor.
    public static func loadTensor(_ path: String) throws -> (name: String, tensor: Tensor) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ONNXError.io(path: path, reason: "\(error)")
        }
        let p: Onnx_TensorProto
        do { p = try Onnx_TensorProto(serializedBytes: data) } catch {
            throw ONNXError.malformed(field: path, reason: "not a valid TensorProto (\(error))")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return (p.name, try ONNXTensorCodec.decode(p, field: path, baseDirectory: base))
    }

    /// Writes `tensor` as a serialized TensorProto named `name` (raw little-endian data, the format `loadTensor`
    /// reads and `onnx.numpy_helper.to_array` accepts), atomically. Write errors throw `SerializationError`.
    public static func saveTensor(_ tensor: Tensor, name: String = "", to path: String) throws {
        let bytes: [UInt8] = try ONNXTensorCodec.encode(tensor, name: name).serializedBytes()
        try AtomicFile.write(bytes, to: path)
    }

    /// `loadTensor` that also reads the types SwiftTorch has no dtype for: the storage tensor and that ONNX type.
    static func loadTypedTensor(_ path: String) throws -> (name: String, tensor: Tensor, type: Int32?) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ONNXError.io(path: path, reason: "\(error)")
        }
        let p: Onnx_TensorProto
        do { p = try Onnx_TensorProto(serializedBytes: data) } catch {
            throw ONNXError.malformed(field: path, reason: "not a valid TensorProto (\(error))")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let (t, type) = try ONNXEmulated.decodeTyped(p, field: path, baseDirectory: base)
        return (p.name, t, type)
    }

    /// The ONNX name of an element type (`FLOAT`, `INT8` …).
    public static func dataTypeName(_ t: Int32) -> String {
        if let d = Onnx_TensorProto.DataType(rawValue: Int(t)) { return "\(d)".uppercased() }
        return "unknown"
    }

    /// The operator types of the default domain that `onnx.load` can run.
    /// (Ops of another domain are named with it, e.g. `ai.onnx.preview.training.Adam`.)
    public static var supportedOperators: [String] {
        Set(ONNXOps.table.keys).union(ONNXEmulated.kernels.keys).union(ONNXControlFlow.ops).sorted()
    }
}

/// A loaded ONNX graph that runs like a module: nodes in topological order evaluated on Torch tensors through
/// the op table, initializers held as tensors, intermediate values freed after their last use.
public final class ONNXModel {
    /// The inputs a caller provides (graph inputs that are not initializers), in the graph's order.
    public let inputNames: [String]
    /// The graph's outputs, in order.
    public let outputNames: [String]
    /// The model's IR version, the default domain's opset, and who wrote the file.
    public let irVersion: Int64
    public let opsetVersion: Int64
    public let producerName: String
    /// Weights and other constants by name (initializers, Constant nodes and values folded at load time).
    public private(set) var constants: [String: Tensor]
    /// The initializer names in file order (the weights a state dict of this model has).
    public let initializerNames: [String]
    /// The device the constants live on.
    public private(set) var device: Device = .cpu
    /// The ONNX element type of each constant of a type SwiftTorch has no dtype for (see `ONNXEmulated`).
    private(set) var constantTypes: [String: Int32] = [:]

    struct InputSpec { let name: String; let dtype: DType?; let dims: [Dim]?; var emulated: Int32? = nil }
    enum Dim { case value(Int), param(String), unknown }

    let inputSpecs: [InputSpec]
    let nodes: [(node: ONNXNode, kernel: ONNXKernel)]
    /// For each node position, the values whose last use it is (freed after it runs).
    let releases: [[String]]

    init(proto: Onnx_ModelProto, baseDirectory: String?) throws {
        irVersion = proto.irVersion
        producerName = proto.producerName
        guard proto.irVersion <= onnx.maxIRVersion else {
            throw ONNXError.unsupportedIRVersion(proto.irVersion, maximum: onnx.maxIRVersion)
        }
        guard proto.irVersion >= 0 else { throw ONNXError.malformed(field: "ir_version", reason: "negative (\(proto.irVersion))") }
        var opset: Int64?
        for (i, o) in proto.opsetImport.enumerated() where o.domain == "" || o.domain == "ai.onnx" {
            guard o.version >= 1 else {
                throw ONNXError.malformed(field: "opset_import[\(i)].version", reason: "must be at least 1 (got \(o.version))")
            }
            guard o.version <= onnx.maxOpsetVersion else {
                throw ONNXError.unsupportedOpset(domain: o.domain, version: o.version, maximum: onnx.maxOpsetVersion)
            }
            opset = o.version
        }
        guard proto.hasGraph else { throw ONNXError.malformed(field: "graph", reason: "the model has no graph") }
        let g = proto.graph
        let opsetVersion = opset ?? 1
        self.opsetVersion = opsetVersion

        // Initializers.
        var constants: [String: Tensor] = [:]
        var constantTypes: [String: Int32] = [:]
        var initNames: [String] = []
        for (i, t) in g.initializer.enumerated() {
            let field = "graph.initializer[\(i)]"
            guard !t.name.isEmpty else { throw ONNXError.malformed(field: "\(field).name", reason: "an initializer needs a name") }
            let (value, type) = try ONNXEmulated.decodeTyped(t, field: field, baseDirectory: baseDirectory)
            constants[t.name] = value
            if let type { constantTypes[t.name] = type }
            initNames.append(t.name)
        }
        if !g.sparseInitializer.isEmpty {
            throw ONNXError.malformed(field: "graph.sparse_initializer[0]", reason: "sparse initializers are not supported")
        }
        initializerNames = initNames

        // Graph inputs (those with an initializer are constants a caller may override; only the others are required).
        var specs: [InputSpec] = []
        var defined = Set(constants.keys)
        for (i, v) in g.input.enumerated() {
            guard !v.name.isEmpty else { throw ONNXError.malformed(field: "graph.input[\(i)].name", reason: "an input needs a name") }
            defined.insert(v.name)
            if constants[v.name] != nil { continue }
            var dtype: DType?
            var dims: [Dim]?
            var emulated: Int32?
            if v.hasType, case .tensorType(let tt)? = v.type.value {
                if tt.hasElemType, ONNXEmulated.isEmulated(tt.elemType) {
                    emulated = tt.elemType
                    dtype = ONNXEmulated.storage(of: tt.elemType)
                } else if tt.hasElemType {
                    guard let d = ONNXTensorCodec.dtype(of: tt.elemType) else {
                        throw ONNXError.unsupportedDataType(field: "graph.input[\(i)].type.tensor_type.elem_type", dataType: tt.elemType)
                    }
                    dtype = d
                }
                if tt.hasShape {
                    dims = tt.shape.dim.map { d in
                        switch d.value {
                        case .dimValue(let v)?: return v >= 0 && v <= Int64(Int32.max) ? .value(Int(v)) : .unknown
                        case .dimParam(let p)?: return p.isEmpty ? .unknown : .param(p)
                        case nil: return .unknown
                        }
                    }
                }
            }
            specs.append(InputSpec(name: v.name, dtype: dtype, dims: dims, emulated: emulated))
        }
        inputSpecs = specs
        inputNames = specs.map(\.name)

        // Nodes: operators known, outputs produced once, inputs defined; then a topological order.
        var producer: [String: Int] = [:]
        var parsed: [ONNXNode] = []
        for (i, n) in g.node.enumerated() {
            let node = ONNXNode(index: i, proto: n, opset: opsetVersion, baseDirectory: baseDirectory)
            if !ONNXOps.isKnown(ONNXOps.key(node)) {
                throw ONNXError.unsupportedOperator(op: n.opType, domain: node.domain, opset: opsetVersion, node: node.label)
            }
            for (k, o) in n.output.enumerated() where !o.isEmpty {
                if producer[o] != nil || defined.contains(o) {
                    throw ONNXError.malformed(field: "graph.node[\(i)].output[\(k)]", reason: "'\(o)' is produced more than once")
                }
                producer[o] = i
            }
            parsed.append(node)
        }
        var indegree = [Int](repeating: 0, count: parsed.count)
        var consumers = [[Int]](repeating: [], count: parsed.count)
        for (i, n) in parsed.enumerated() {
            for (k, name) in (n.inputs + n.implicitInputs).enumerated() where !name.isEmpty {
                if let p = producer[name] {
                    indegree[i] += 1
                    consumers[p].append(i)
                } else if !defined.contains(name) {
                    throw ONNXError.undefinedValue(field: "graph.node[\(i)].input[\(k)]", name: name)
                }
            }
        }
        var ready = (0..<parsed.count).filter { indegree[$0] == 0 }.reversed() as [Int]
        var order: [Int] = []
        order.reserveCapacity(parsed.count)
        while let i = ready.popLast() {
            order.append(i)
            for c in consumers[i].reversed() {
                indegree[c] -= 1
                if indegree[c] == 0 { ready.append(c) }
            }
        }
        if order.count < parsed.count {
            let first = (0..<parsed.count).first { indegree[$0] > 0 }!
            throw ONNXError.graphCycle(field: "graph.node[\(first)]", node: parsed[first].name.isEmpty ? parsed[first].opType : parsed[first].name)
        }
        var outs: [String] = []
        for (i, o) in g.output.enumerated() {
            guard producer[o.name] != nil || defined.contains(o.name) else {
                throw ONNXError.undefinedValue(field: "graph.output[\(i)]", name: o.name)
            }
            outs.append(o.name)
        }
        outputNames = outs

        // Constant folding: nodes whose inputs are all constants (not overridable graph inputs) run now.
        let overridable = Set(g.input.map(\.name))
        var foldableValue: (String) -> Bool = { name in name.isEmpty || (constants[name] != nil && !overridable.contains(name)) }
        var kept: [(ONNXNode, ONNXKernel)] = []
        for i in order {
            let node = parsed[i]
            let kernel = ONNXOps.table[ONNXOps.key(node)] ?? { n, _ in throw n.fail("runs only through its typed kernel or as control flow") }
            if ONNXOps.foldable.contains(node.opType), node.inputs.allSatisfy(foldableValue),
               !ONNXEmulated.alwaysTyped.contains(node.opType), !node.inputs.contains(where: { constantTypes[$0] != nil }),
               node.inputs.allSatisfy({ $0.isEmpty || constants[$0]!.numel <= 1 << 16 }) {
                let ins = ONNXInputs(values: node.inputs.map { $0.isEmpty ? nil : constants[$0] }, node: node)
                let results = try torch.noGrad { try kernel(node, ins) }
                for (k, o) in node.outputs.enumerated() where !o.isEmpty && k < results.count { constants[o] = results[k] }
                continue
            }
            kept.append((node, kernel))
        }
        foldableValue = { _ in false }
        kept = ONNXFusion.fuseRelu(kept, graphOutputs: Set(outs))
        nodes = kept

        // Free each intermediate after its last use (graph outputs and constants are kept).
        var lastUse: [String: Int] = [:]
        for (pos, (node, _)) in kept.enumerated() {
            for name in node.inputs + node.implicitInputs where !name.isEmpty && constants[name] == nil { lastUse[name] = pos }
        }
        var rel = [[String]](repeating: [], count: kept.count)
        let outSet = Set(outs)
        for (name, pos) in lastUse where !outSet.contains(name) { rel[pos].append(name) }
        releases = rel
        self.constants = constants
        self.constantTypes = constantTypes
    }

    /// The shape the graph declares for the input `name`: one entry per dim, the size of a fixed dim or nil for a
    /// symbolic (`batch`) or unknown one. Nil when the input declares no shape or is not one of `inputNames`.
    public func declaredShape(ofInput name: String) -> [Int?]? {
        guard let dims = inputSpecs.first(where: { $0.name == name })?.dims else { return nil }
        return dims.map { if case .value(let v) = $0 { return v } else { return nil } }
    }

    /// Runs the graph on named inputs; returns every graph output by name.
    public func run(_ inputs: [String: Tensor]) throws -> [String: Tensor] {
        try runTyped(inputs, types: [:]).values
    }

    /// Runs the graph on named inputs, `types` naming the ONNX element type of inputs of an emulated type (an input
    /// the graph declares of such a type takes that type anyway); returns every graph output by name, with the
    /// ONNX element type of those of an emulated type.
    func runTyped(_ inputs: [String: Tensor], types inputTypes: [String: Int32]) throws -> (values: [String: Tensor], types: [String: Int32]) {
        var values = constants
        var types = constantTypes
        for (name, t) in inputTypes where ONNXEmulated.isEmulated(t) { types[name] = t }
        for name in inputs.keys where !inputNames.contains(name) && constants[name] == nil {
            throw ONNXError.invalidInput(name: name, reason: "not an input of the model (inputs: \(inputNames))")
        }
        var symbols: [String: Int] = [:]
        for spec in inputSpecs {
            guard let t = inputs[spec.name] else {
                throw ONNXError.invalidInput(name: spec.name, reason: "missing (the model's inputs: \(inputNames))")
            }
            if let d = spec.dtype, d != t.dtype {
                throw ONNXError.invalidInput(name: spec.name, reason: "expected \(d), got \(t.dtype)")
            }
            if let dims = spec.dims {
                guard dims.count == t.dim else {
                    throw ONNXError.invalidInput(name: spec.name, reason: "expected rank \(dims.count), got shape \(t.shape)")
                }
                for (k, d) in dims.enumerated() {
                    switch d {
                    case .value(let v) where v != t.shape[k]:
                        throw ONNXError.invalidInput(name: spec.name, reason: "dim \(k) must be \(v), got shape \(t.shape)")
                    case .param(let p):
                        if let s = symbols[p], s != t.shape[k] {
                            throw ONNXError.invalidInput(name: spec.name, reason: "dim \(k) ('\(p)') is \(t.shape[k]), but '\(p)' is \(s) in another input")
                        }
                        symbols[p] = t.shape[k]
                    default: break
                    }
                }
            }
        }
        for (name, t) in inputs { values[name] = t }
        for spec in inputSpecs { if let e = spec.emulated { types[spec.name] = e } }
        try torch.noGrad {
            for (pos, (node, kernel)) in nodes.enumerated() {
                try ONNXControlFlow.runNode(node, kernel, &values, &types)
                for name in releases[pos] { values[name] = nil }
            }
        }
        var result: [String: Tensor] = [:]
        var resultTypes: [String: Int32] = [:]
        for name in outputNames {
            guard let v = values[name] else { throw ONNXError.undefinedValue(field: "graph.output", name: name) }
            result[name] = v
            if let t = types[name] { resultTypes[name] = t }
        }
        return (result, resultTypes)
    }

    /// Runs the graph on positional inputs; returns the outputs in the graph's order.
    public func run(_ inputs: [Tensor]) throws -> [Tensor] {
        guard inputs.count == inputNames.count else {
            throw ONNXError.invalidInput(name: "*", reason: "the model takes \(inputNames.count) inputs, got \(inputs.count)")
        }
        let r = try run(Dictionary(uniqueKeysWithValues: zip(inputNames, inputs)))
        return outputNames.map { r[$0]! }
    }

    /// Runs a model of one input and one output (stops with the error's message otherwise, as a module would).
    public func callAsFunction(_ x: Tensor) -> Tensor {
        precondition(inputNames.count == 1 && outputNames.count == 1,
                     "ONNXModel(x): the model has \(inputNames.count) inputs and \(outputNames.count) outputs; use run(_:)")
        do {
            return try run([x])[0]
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The initializers by name, as a module's state dict (file order).
    public func stateDict() -> [(String, Tensor)] { initializerNames.compactMap { n in constants[n].map { (n, $0) } } }

    /// Moves the constants to `device`; returns self.
    @discardableResult
    public func to(_ device: Device) -> ONNXModel {
        for (k, v) in constants where v.device != device { constants[k] = v.to(device) }
        self.device = device
        return self
    }

    /// Inference only: present so an ONNXModel reads like a module in eval mode.
    @discardableResult
    public func eval() -> ONNXModel { self }
}
