/// Node fusions the importer applies to its plan, as ONNX Runtime's graph optimizer does.
///
/// PyTorch's exporters fold each eval-mode BatchNorm into its Conv, so a CNN's file is runs of Conv → Relu and
/// Add → Relu. Run node by node, every Relu is one more pass over the activations and one more tensor. A fused
/// node runs its producer and then clamps the producer's fresh output in place (`relu_`), as SwiftTorch's own eval
/// forward does (`nn.convBatchNorm`, `ReLU(inplace: true)`).
enum ONNXFusion {
    /// Producers whose output is always a new tensor that nothing else holds, so a Relu may clamp it in place.
    static let producers: Set<String> = ["Conv", "Add", "Gemm", "MatMul"]

    /// `plan` with each producer → Relu pair whose intermediate nothing else reads (no other node, not a graph
    /// output) merged into one node that writes the Relu's outputs. The merged node keeps both original nodes in
    /// `unfused`, so an input of an emulated element type still runs them one by one.
    static func fuseRelu(_ plan: [(ONNXNode, ONNXKernel)], graphOutputs: Set<String>) -> [(ONNXNode, ONNXKernel)] {
        var readers: [String: [Int]] = [:]
        for (pos, (node, _)) in plan.enumerated() {
            for name in node.inputs + node.implicitInputs where !name.isEmpty { readers[name, default: []].append(pos) }
        }
        var result: [(ONNXNode, ONNXKernel)] = []
        var merged = Set<Int>()
        for (pos, (node, kernel)) in plan.enumerated() where !merged.contains(pos) {
            guard producers.contains(node.opType), node.domain.isEmpty, node.outputs.count == 1,
                  let out = node.outputs.first, !out.isEmpty, !graphOutputs.contains(out),
                  let users = readers[out], users.count == 1, users[0] > pos else {
                result.append((node, kernel))
                continue
            }
            let relu = plan[users[0]].0
            guard relu.opType == "Relu", relu.domain.isEmpty, relu.inputs == [out], relu.outputs.count == 1 else {
                result.append((node, kernel))
                continue
            }
            var fused = node
            fused.outputs = relu.outputs
            fused.unfused = [node, relu]
            merged.insert(users[0])
            result.append((fused, { n, ins in
                var r = try kernel(n, ins)
                r[0] = r[0].relu_()
                return r
            }))
        }
        return result
    }
}
