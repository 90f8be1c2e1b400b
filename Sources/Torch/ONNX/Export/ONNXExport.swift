// `torch.onnx.export`: records a model's forward pass on example inputs and writes one ONNX ModelProto
// (docs/onnx.md, "Export").

/// Why `torch.onnx.export` stopped without writing a file.
public enum ONNXExportError: Error, CustomStringConvertible, Equatable {
    /// An op (or a layer setting) with no ONNX form, with the path of the module that called it
    /// (PyTorch's `UnsupportedOperatorError`).
    case unsupportedOperator(op: String, module: String, reason: String)
    /// An opset outside the range the exporter writes.
    case unsupportedOpset(Int, supported: ClosedRange<Int>)
    /// Inconsistent arguments (names, dynamic axes, inputs).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .unsupportedOperator(let op, let module, let reason):
            return "Exporting the operator '\(op)' to ONNX is not supported (module '\(module.isEmpty ? "<model>" : module)'): \(reason)"
        case .unsupportedOpset(let v, let r):
            return "Unsupported ONNX opset version: \(v) (the exporter writes opsets \(r.lowerBound)...\(r.upperBound))"
        case .invalidArgument(let m): return "torch.onnx.export: \(m)"
        }
    }
}

extension onnx {
    /// The opsets `export` writes; 18 is the default.
    public static let exportOpsets: ClosedRange<Int> = 13...20
    /// The IR version of exported files.
    public static let exportIRVersion: Int64 = 8

    /// Warnings of the last export (also printed to standard error as `UserWarning:` lines).
    nonisolated(unsafe) public internal(set) static var lastExportWarnings: [String] = []

    /// Exports `model` to the ONNX file at `path`, recording its forward pass on `args`
    /// (PyTorch's `torch.onnx.export`).
    ///
    /// ```swift
    /// let model = models.resnet18()
    /// try torch.onnx.export(model, torch.randn(1, 3, 224, 224), "resnet18.onnx",
    ///                       inputNames: ["input"], outputNames: ["logits"],
    ///                       dynamicAxes: ["input": [0: "batch"], "logits": [0: "batch"]])
    /// let back = try onnx.load("resnet18.onnx")
    /// ```
    ///
    /// The model runs in eval mode (a model in train mode is switched, with a warning, and switched back
    /// afterwards). Weights become initializers named from the state dict (`layer1.0.conv1.weight`);
    /// `dynamicAxes` makes the listed dims symbolic. The file is written atomically.
    ///
    /// - Throws: ``ONNXExportError`` for an op with no ONNX form (naming the op and the module path), an opset
    ///   outside ``exportOpsets`` or bad names; `SerializationError` when the file cannot be written.
    public static func export(_ model: nn.Module, _ args: Tensor, _ path: String, inputNames: [String]? = nil,
                              outputNames: [String]? = nil, dynamicAxes: [String: [Int: String]] = [:],
                              opsetVersion: Int = 18, exportParams: Bool = true, doConstantFolding: Bool = true) throws {
        try export(model, [args], path, inputNames: inputNames, outputNames: outputNames, dynamicAxes: dynamicAxes,
                   opsetVersion: opsetVersion, exportParams: exportParams, doConstantFolding: doConstantFolding)
    }

    /// Exports a model called on several inputs: `forward` receives the graph's input tensors (by default
    /// `args.count` must then be 1 and the model is called on it) and returns the outputs.
    ///
    /// ```swift
    /// try torch.onnx.export(net, [a, b], "two.onnx", inputNames: ["a", "b"]) { xs in [net.combine(xs[0], xs[1])] }
    /// ```
    public static func export(_ model: nn.Module, _ args: [Tensor], _ path: String, inputNames: [String]? = nil,
                              outputNames: [String]? = nil, dynamicAxes: [String: [Int: String]] = [:],
                              opsetVersion: Int = 18, exportParams: Bool = true, doConstantFolding: Bool = true,
                              forward: (([Tensor]) -> [Tensor])? = nil) throws {
        let proto = try exportModel(model, args, inputNames: inputNames, outputNames: outputNames,
                                    dynamicAxes: dynamicAxes, opsetVersion: opsetVersion,
                                    exportParams: exportParams, doConstantFolding: doConstantFolding, forward: forward)
        let bytes: [UInt8] = try proto.serializedBytes()
        try AtomicFile.write(bytes, to: path)
    }

    /// The ModelProto `export` would write, as serialized bytes.
    public static func exportBytes(_ model: nn.Module, _ args: [Tensor], inputNames: [String]? = nil,
                                   outputNames: [String]? = nil, dynamicAxes: [String: [Int: String]] = [:],
                                   opsetVersion: Int = 18, exportParams: Bool = true, doConstantFolding: Bool = true,
                                   forward: (([Tensor]) -> [Tensor])? = nil) throws -> [UInt8] {
        try exportModel(model, args, inputNames: inputNames, outputNames: outputNames, dynamicAxes: dynamicAxes,
                        opsetVersion: opsetVersion, exportParams: exportParams, doConstantFolding: doConstantFolding,
                        forward: forward).serializedBytes()
    }

    static func warn(_ message: String) {
        lastExportWarnings.append(message)
        fputs("UserWarning: " + message + "\n", stderr)
    }

    static func exportModel(_ model: nn.Module, _ args: [Tensor], inputNames: [String]?, outputNames: [String]?,
                            dynamicAxes: [String: [Int: String]], opsetVersion: Int, exportParams: Bool,
                            doConstantFolding: Bool = true,
                            forward: (([Tensor]) -> [Tensor])?) throws -> Onnx_ModelProto {
        lastExportWarnings = []
        guard exportOpsets.contains(opsetVersion) else {
            throw ONNXExportError.unsupportedOpset(opsetVersion, supported: exportOpsets)
        }
        guard !args.isEmpty else { throw ONNXExportError.invalidArgument("args is empty") }
        guard forward != nil || args.count == 1 else {
            throw ONNXExportError.invalidArgument("a module takes one input; pass forward: to export \(args.count) inputs")
        }
        let inNames = inputNames ?? (args.count == 1 ? ["input"] : args.indices.map { "input_\($0)" })
        guard inNames.count == args.count else {
            throw ONNXExportError.invalidArgument("\(inNames.count) input names for \(args.count) inputs")
        }
        guard Set(inNames).count == inNames.count else { throw ONNXExportError.invalidArgument("duplicate input names") }
        guard ONNXTrace.session == nil else { throw ONNXExportError.invalidArgument("an export is already running") }

        // Eval mode for the recording, each module's own mode restored afterwards.
        let modes = model.modules().map { ($0, $0.training) }
        if model.training {
            warn("You are exporting the model in training mode; it is exported in inference (eval) mode, and " +
                 "its training mode is restored afterwards. Call model.eval() before exporting to silence this.")
        }
        model.eval()
        defer { for (m, t) in modes { m.training = t } }

        let session = ExportSession(model: model, opset: opsetVersion, exportParams: exportParams,
                                    foldConstants: doConstantFolding)
        // Graph inputs: fresh non-leaf tensors (so in-place ops on them are allowed) that require grad when they
        // can, so a value computed from them by an op without a mapping is recognised by its grad_fn.
        let inputs: [Tensor] = torch.enableGrad {
            args.map { a in a.dtype.isFloatingPoint ? a.detach().requiresGrad_() * 1 : a.detach().clone() }
        }
        for (t, n) in zip(inputs, inNames) { session.bind(t, n) }

        ONNXTrace.session = session
        ONNXTrace.owner = pthread_self()
        ONNXTrace.isOn = true
        let outputs: [Tensor] = torch.enableGrad {
            defer { ONNXTrace.isOn = false; ONNXTrace.session = nil; ONNXTrace.owner = nil }
            if let forward { return forward(inputs) }
            return [model(inputs[0])]
        }
        if let e = session.error { throw e }

        let outNames = outputNames ?? (outputs.count == 1 ? ["output"] : outputs.indices.map { "output_\($0)" })
        guard outNames.count == outputs.count else {
            throw ONNXExportError.invalidArgument("\(outNames.count) output names for \(outputs.count) outputs")
        }
        for name in dynamicAxes.keys where !inNames.contains(name) && !outNames.contains(name) {
            throw ONNXExportError.invalidArgument("dynamicAxes names '\(name)', which is neither an input nor an output")
        }
        return try ExportGraphBuilder.model(session, inputs: Array(zip(inNames, inputs)),
                                            outputs: Array(zip(outNames, outputs)), dynamicAxes: dynamicAxes)
    }
}

extension torch {
    /// `torch.onnx`: ``onnx/export(_:_:_:inputNames:outputNames:dynamicAxes:opsetVersion:exportParams:doConstantFolding:)``
    /// and ``onnx/load(_:)``.
    public typealias onnx = Torch.onnx
}
