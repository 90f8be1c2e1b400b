// The graph that `torch.onnx.export` records: value names for tensors (by object identity), the nodes, the
// initializers, and the module path used in error messages. The mappings from SwiftTorch to ONNX nodes are
// in ExportModuleMappings.swift (layers) and ExportOpMappings.swift (tensor ops).

final class ExportSession {
    let opset: Int
    let exportParams: Bool
    /// `doConstantFolding`: an op whose inputs are all initializers becomes an initializer holding its value.
    let foldConstants: Bool
    /// True while an op or a mapped layer computes its value: nothing inside it records.
    var suspended = false
    var nodes: [Onnx_NodeProto] = []
    var initializers: [Onnx_TensorProto] = []
    /// Weights fed as graph inputs (exportParams: false), in first-use order.
    var parameterInputs: [(name: String, tensor: Tensor)] = []
    /// The first problem met; the export throws it once the forward pass is over.
    var error: ONNXExportError?

    /// Current value name of each traced tensor; `kept` holds the tensors so no identifier is reused.
    private var names: [ObjectIdentifier: String] = [:]
    private var kept: [Tensor] = []
    private(set) var dtypes: [String: DType] = [:]
    private(set) var shapes: [String: [Int]] = [:]
    /// Parameters and buffers by identity → their state-dict names; modules → their paths.
    private let stateNames: [ObjectIdentifier: String]
    private let modulePaths: [ObjectIdentifier: String]
    private var stateEmitted = Set<String>()
    private var pathStack: [String] = []
    private var bypass: ObjectIdentifier?
    private var counter = 0
    private var usedNames = Set<String>()

    init(model: nn.Module?, opset: Int, exportParams: Bool, foldConstants: Bool = true) {
        self.opset = opset
        self.exportParams = exportParams
        self.foldConstants = foldConstants
        var state: [ObjectIdentifier: String] = [:], paths: [ObjectIdentifier: String] = [:]
        if let model {
            for (n, p) in model.namedParameters() { state[ObjectIdentifier(p)] = n }
            for (n, b) in model.namedBuffers() { state[ObjectIdentifier(b)] = n }
            for (n, m) in model.namedModules() { paths[ObjectIdentifier(m)] = n }
        }
        stateNames = state
        modulePaths = paths
    }

    // MARK: Recording

    func suspend<R>(_ body: () -> R) -> R {
        let was = suspended
        suspended = true
        defer { suspended = was }
        return body()
    }

    /// Where the recording is, for messages: the innermost module's path ("" for the model itself).
    var modulePath: String { pathStack.last ?? "" }

    func fail(_ e: ONNXExportError) { if error == nil { error = e } }

    func unsupported(_ op: String, _ reason: String) {
        fail(.unsupportedOperator(op: op, module: modulePath, reason: reason))
    }

    func recordOp(_ op: TracedOp, _ inputs: [Tensor], _ out: Tensor) { recordOp(op, inputs, [out]) }

    /// Adds the nodes of `op` on `inputs`, whose results `outs` hold; with constant folding, an op whose inputs
    /// are all initializers gives initializers instead (PyTorch's `do_constant_folding`).
    func recordOp(_ op: TracedOp, _ inputs: [Tensor], _ outs: [Tensor]) {
        guard error == nil else { return }
        suspend {
            var ins: [String] = []
            for t in inputs {
                guard let n = valueName(t) else { return }
                ins.append(n)
            }
            if foldConstants, !op.isAlias, ins.allSatisfy(isInitializer) {
                for o in outs { _ = constant(o) }
                foldedNodes += 1
                return
            }
            if outs.count == 1, !op.hasSeveralOutputs {
                ExportOpMappings.emit(op, inputs, ins, outs[0], self)
            } else {
                ExportTensorOps.emitSeveral(op, inputs, ins, outs, self)
            }
        }
    }

    /// Ops folded into initializers by constant folding (for tests and the docs).
    private(set) var foldedNodes = 0

    /// Whether `name` is an initializer (a weight with exportParams, or a constant), not a graph input or node.
    func isInitializer(_ name: String) -> Bool {
        name.hasPrefix("onnx::Constant_") || (exportParams && stateEmitted.contains(name))
    }

    /// A recurrent layer's call, recorded under the layer's module path (it may be called through its tuple
    /// form, which does not pass `Module.callAsFunction`).
    func recordRecurrent(_ m: nn.RNNBase, _ input: Tensor, _ h0: Tensor?, _ c0: Tensor?, _ r: (Tensor, Tensor, Tensor?)) {
        guard error == nil else { return }
        let path = modulePaths[ObjectIdentifier(m)] ?? m.typeName
        let push = pathStack.last != path
        if push { pathStack.append(path) }
        defer { if push { pathStack.removeLast() } }
        suspend {
            guard let xn = valueName(input) else { return }
            var hn: String?, cn: String?
            if let h0 { guard let n = valueName(h0) else { return }; hn = n }
            if let c0 { guard let n = valueName(c0) else { return }; cn = n }
            ExportRecurrent.emit(m, input, xn, h0: hn, c0: cn, r, self)
        }
    }

    func callModule(_ m: nn.Module, _ x: Tensor) -> Tensor? {
        let id = ObjectIdentifier(m)
        if bypass == id { bypass = nil; return nil }
        if error != nil { return suspend { m(x) } }
        pathStack.append(modulePaths[id] ?? m.typeName)
        defer { pathStack.removeLast() }
        if ExportModuleMappings.isMapped(m) {
            let y = suspend { m(x) }
            suspend { if let xn = valueName(x) { ExportModuleMappings.emit(m, x, xn, y, self) } }
            return y
        }
        bypass = id
        let y = m(x)
        _ = suspend { valueName(y) }   // an output no traced op made stops the export here, naming this module
        return y
    }

    // MARK: Values

    /// The value name of `t`: a traced value, a parameter or buffer (an initializer named from the state dict),
    /// or a constant. A tensor computed from the inputs by an op that was not recorded fails the export.
    func valueName(_ t: Tensor) -> String? {
        if let n = names[ObjectIdentifier(t)] { return n }
        if let s = stateNames[ObjectIdentifier(t)] { return stateValue(t, s) }
        if let fn = t.gradFn {
            unsupported(fn.name.hasSuffix("Backward0") || fn.name.hasSuffix("Backward1") ? String(fn.name.dropLast(9)) : fn.name,
                        "the op that made this value has no ONNX export mapping")
            return nil
        }
        return constant(t)
    }

    /// Gives `t` the value `name` (the output of the node just added).
    func bind(_ t: Tensor, _ name: String) {
        let id = ObjectIdentifier(t)
        if names[id] == nil { kept.append(t) }
        names[id] = name
        dtypes[name] = t.dtype
        shapes[name] = t.shape
    }

    func hasName(_ t: Tensor) -> Bool { names[ObjectIdentifier(t)] != nil }

    func fresh(_ hint: String) -> String {
        counter += 1
        let prefix = modulePath.isEmpty ? "" : "/" + modulePath.split(separator: ".").joined(separator: "/") + "/"
        var n = "\(prefix)\(hint)_output_\(counter)"
        while usedNames.contains(n) { counter += 1; n = "\(prefix)\(hint)_output_\(counter)" }
        usedNames.insert(n)
        return n
    }

    private func stateValue(_ t: Tensor, _ name: String) -> String {
        if stateEmitted.insert(name).inserted {
            if exportParams { initializers.append(ExportSession.tensorProto(t, name: name)) }
            else { parameterInputs.append((name, t)) }
            dtypes[name] = t.dtype
            shapes[name] = t.shape
            usedNames.insert(name)
        }
        return name
    }

    /// A weight of a mapped layer: named from the state dict when it is one, else a new constant.
    func weight(_ t: Tensor) -> String {
        if let s = stateNames[ObjectIdentifier(t)] { return stateValue(t, s) }
        return constant(t)
    }

    /// The values of the constants, so a constant wanted as another type is written in that type, not Cast.
    private var constantValues: [String: Tensor] = [:]

    /// A new initializer holding `t`'s values (cast to `dtype` when given); `t` is then known by it unless `bind`
    /// is false.
    func constant(_ t: Tensor, as dtype: DType? = nil, bind: Bool = true) -> String {
        counter += 1
        let name = "onnx::Constant_\(counter)"
        let v = dtype.map { t.detach().to($0) } ?? t.detach()
        initializers.append(ExportSession.tensorProto(v, name: name))
        usedNames.insert(name)
        dtypes[name] = v.dtype
        shapes[name] = v.shape
        constantValues[name] = v
        if bind && !t.isWrappedNumber { self.bind(t, name) }
        return name
    }

    func constInts(_ v: [Int]) -> String { constant(torch.tensor(v.map(Int64.init), dtype: .int64)) }
    func constScalar(_ v: Double, _ dtype: DType) -> String { constant(torch.tensor([v]).reshape([]), as: dtype) }

    // MARK: Nodes

    /// Adds a node; returns its output names (fresh ones unless given).
    @discardableResult
    func node(_ op: String, _ inputs: [String], outputs: Int = 1, named: [String]? = nil,
              _ attributes: [Onnx_AttributeProto] = []) -> [String] {
        var n = Onnx_NodeProto()
        n.opType = op
        n.input = inputs
        n.output = named ?? (0..<outputs).map { _ in fresh(op) }
        n.name = "/" + (modulePath.isEmpty ? "" : modulePath.split(separator: ".").joined(separator: "/") + "/") + "\(op)_\(nodes.count)"
        n.attribute = attributes
        nodes.append(n)
        return n.output
    }

    /// One node whose single output is `out`'s value.
    func emit(_ op: String, _ inputs: [String], _ out: Tensor, _ attributes: [Onnx_AttributeProto] = []) {
        bind(out, node(op, inputs, attributes)[0])
    }

    /// `name` as `dtype`: a Cast node when the value has another type.
    func cast(_ name: String, to dtype: DType) -> String {
        guard let d = dtypes[name], d != dtype else { return name }
        // A constant (a Python number such as the 2 of `x * 2`) is written in the type it is used as, as PyTorch does.
        if let v = constantValues[name] { return constant(v, as: dtype, bind: false) }
        let o = node("Cast", [name], [attr("to", Int(ONNXTensorCodec.dataType(of: dtype)))])[0]
        dtypes[o] = dtype
        shapes[o] = shapes[name]
        return o
    }

    // MARK: Protobuf helpers

    static func tensorProto(_ t: Tensor, name: String) -> Onnx_TensorProto {
        var p = Onnx_TensorProto()
        p.name = name
        p.dims = t.shape.map(Int64.init)
        var c = t.detach().cpu().contiguous()
        if c.dtype == .float16 || c.dtype == .bfloat16 { c = c.to(.float32) }
        p.dataType = ONNXTensorCodec.dataType(of: c.dtype)
        switch c.dtype {
        case .float64: p.rawData = c.toArray(as: Double.self).withUnsafeBytes { Data($0) }
        case .int64: p.rawData = c.toArray(as: Int64.self).withUnsafeBytes { Data($0) }
        case .int32: p.rawData = c.toArray(as: Int32.self).withUnsafeBytes { Data($0) }
        case .uint8: p.rawData = c.toArray(as: UInt8.self).withUnsafeBytes { Data($0) }
        case .bool: p.rawData = Data(c.toArray(as: Bool.self).map { $0 ? UInt8(1) : 0 })
        default: p.rawData = c.toArray(as: Float.self).withUnsafeBytes { Data($0) }
        }
        return p
    }
}

func attr(_ name: String, _ v: Int) -> Onnx_AttributeProto {
    var a = Onnx_AttributeProto(); a.name = name; a.type = .int; a.i = Int64(v); return a
}
func attr(_ name: String, _ v: [Int]) -> Onnx_AttributeProto {
    var a = Onnx_AttributeProto(); a.name = name; a.type = .ints; a.ints = v.map(Int64.init); return a
}
func attr(_ name: String, _ v: Double) -> Onnx_AttributeProto {
    var a = Onnx_AttributeProto(); a.name = name; a.type = .float; a.f = Float(v); return a
}
func attr(_ name: String, _ v: String) -> Onnx_AttributeProto {
    var a = Onnx_AttributeProto(); a.name = name; a.type = .string; a.s = Data(v.utf8); return a
}
func attr(_ name: String, _ v: [String]) -> Onnx_AttributeProto {
    var a = Onnx_AttributeProto(); a.name = name; a.type = .strings; a.strings = v.map { Data($0.utf8) }; return a
}
