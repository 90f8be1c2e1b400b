// The last step of `torch.onnx.export`: the recorded nodes and initializers become a GraphProto with named
// inputs and outputs (symbolic dims from `dynamicAxes`), inside a ModelProto of IR version 8.

enum ExportGraphBuilder {
    static func model(_ s: ExportSession, inputs: [(String, Tensor)], outputs: [(String, Tensor)],
                      dynamicAxes: [String: [Int: String]]) throws -> Onnx_ModelProto {
        var nodes = s.nodes
        let inputNames = Set(inputs.map { $0.0 })
        let initNames = Set(s.initializers.map { $0.name })
        var producedBy: [String: Int] = [:]
        for (i, n) in nodes.enumerated() { for o in n.output { producedBy[o] = i } }

        // Give each output value its graph name: rename the producing node's output (and its uses) when the
        // value is made by a node and named once; otherwise add an Identity.
        var renamed: [String: String] = [:]
        var outputValues: [String] = []
        for (name, t) in outputs {
            guard let v = s.suspend({ s.valueName(t) }) else {
                throw s.error ?? ONNXExportError.invalidArgument("output '\(name)' has no value")
            }
            let current = renamed[v] ?? v
            if producedBy[v] != nil, renamed[v] == nil, !inputNames.contains(name), !initNames.contains(name) {
                renamed[v] = name
                for i in nodes.indices {
                    nodes[i].input = nodes[i].input.map { $0 == v ? name : $0 }
                    nodes[i].output = nodes[i].output.map { $0 == v ? name : $0 }
                }
            } else {
                var n = Onnx_NodeProto()
                n.opType = "Identity"
                n.name = "/Identity_\(name)"
                n.input = [current]
                n.output = [name]
                nodes.append(n)
            }
            outputValues.append(name)
        }
        if let e = s.error { throw e }

        var graph = Onnx_GraphProto()
        graph.name = "main_graph"
        graph.node = nodes
        // Initializers no node reads (weights whose only use was folded into a constant) are left out.
        var used = Set(nodes.flatMap(\.input))
        used.formUnion(outputValues)
        graph.initializer = s.initializers.filter { used.contains($0.name) }
        let anyDynamic = !dynamicAxes.isEmpty
        for (name, t) in inputs {
            try graph.input.append(valueInfo(name, t.dtype, t.shape, dynamicAxes[name], unknownWhenUnnamed: false))
        }
        for p in s.parameterInputs {
            try graph.input.append(valueInfo(p.name, p.tensor.dtype, p.tensor.shape, nil, unknownWhenUnnamed: false))
        }
        for (name, t) in outputs {
            try graph.output.append(valueInfo(name, t.dtype, t.shape, dynamicAxes[name], unknownWhenUnnamed: anyDynamic))
        }

        var model = Onnx_ModelProto()
        model.irVersion = onnx.exportIRVersion
        model.producerName = "swifttorch"
        model.producerVersion = "0.1"
        var opset = Onnx_OperatorSetIdProto()
        opset.domain = ""
        opset.version = Int64(s.opset)
        model.opsetImport = [opset]
        model.graph = graph
        return model
    }

    /// A graph input or output: element type and dims, `axes` symbolic. An output whose dims are not named while
    /// some are elsewhere gets unknown dims, so a run at another batch size matches it.
    static func valueInfo(_ name: String, _ dtype: DType, _ shape: [Int], _ axes: [Int: String]?,
                          unknownWhenUnnamed: Bool) throws -> Onnx_ValueInfoProto {
        var v = Onnx_ValueInfoProto()
        v.name = name
        var tt = Onnx_TypeProto.Tensor()
        tt.elemType = ONNXTensorCodec.dataType(of: dtype == .float16 || dtype == .bfloat16 ? dtype : dtype)
        var sh = Onnx_TensorShapeProto()
        for (i, d) in shape.enumerated() {
            var dim = Onnx_TensorShapeProto.Dimension()
            if let a = axes {
                if let p = a[i] ?? a[i - shape.count] { dim.dimParam = p } else { dim.dimValue = Int64(d) }
            } else if !unknownWhenUnnamed {
                dim.dimValue = Int64(d)
            }
            sh.dim.append(dim)
        }
        if let a = axes, let bad = a.keys.first(where: { $0 >= shape.count || $0 < -shape.count }) {
            throw ONNXExportError.invalidArgument("dynamicAxes for '\(name)' names axis \(bad) of a \(shape.count)-D tensor")
        }
        tt.shape = sh
        var type = Onnx_TypeProto()
        type.tensorType = tt
        v.type = type
        return v
    }
}
