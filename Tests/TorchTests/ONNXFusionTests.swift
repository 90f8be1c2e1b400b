import XCTest
@testable import Torch

/// The importer's plan fuses Conv/Add/Gemm/MatMul → Relu into one node only where nothing else reads the
/// intermediate, and a fused graph computes what the file's nodes compute one by one.
final class ONNXFusionTests: XCTestCase {
    typealias M = ONNXImportTests

    /// x → Conv → Relu → Add(·, x) → Relu: two fusable pairs. `extraOutputs` lists intermediates also made graph
    /// outputs (which must stop their pair from fusing).
    func residualBlock(extraOutputs: [String] = []) -> Onnx_ModelProto {
        torch.manualSeed(3)
        return M.model([
            M.node("Conv", ["x", "w", "b"], ["c"], name: "conv", [M.attr("kernel_shape", ints: [3, 3]), M.attr("pads", ints: [1, 1, 1, 1])]),
            M.node("Relu", ["c"], ["r"], name: "relu1"),
            M.node("Add", ["r", "x"], ["s"], name: "add"),
            M.node("Relu", ["s"], ["y"], name: "relu2"),
        ], inputs: [M.valueInfo("x", ["batch", 4, 6, 6])], outputs: ["y"] + extraOutputs,
           initializers: [("w", torch.randn(4, 4, 3, 3) * 0.3), ("b", torch.randn(4))])
    }

    func testConvReluAndAddReluFuseAndMatchTheNodesRunOneByOne() throws {
        let fused = try onnx.load(bytes: M.bytes(residualBlock()))
        XCTAssertEqual(fused.nodes.map(\.node.opType), ["Conv", "Add"])
        XCTAssertEqual(fused.nodes.map { $0.node.unfused.map(\.name) }, [["conv", "relu1"], ["add", "relu2"]])
        XCTAssertEqual(fused.nodes.map(\.node.outputs), [["r"], ["y"]])

        let x = torch.randn(2, 4, 6, 6)
        let w = fused.constants["w"]!, b = fused.constants["b"]!
        let expected = (F.conv2d(x, w, b, padding: 1).relu() + x).relu()
        let y = try fused.run(["x": x])["y"]!
        XCTAssertEqual(y.shape, [2, 4, 6, 6])
        XCTAssertLessThanOrEqual((y - expected).abs().max().item(), 1e-6)
        XCTAssertEqual(y.min().item(), 0, "the Relu ran")
    }

    func testAnIntermediateThatIsAGraphOutputOrReadTwiceIsNotFused() throws {
        let kept = try onnx.load(bytes: M.bytes(residualBlock(extraOutputs: ["c"])))
        XCTAssertEqual(kept.nodes.map(\.node.opType), ["Conv", "Relu", "Add"], "only Add → Relu fuses")
        let x = torch.randn(1, 4, 6, 6)
        let out = try kept.run(["x": x])
        XCTAssertEqual(out["c"]!.min().item() < 0, true, "the Conv's own output keeps its negatives")

        // `c` read by the Relu and by a second Add.
        let m = M.model([
            M.node("Add", ["x", "x"], ["c"]), M.node("Relu", ["c"], ["r"]), M.node("Add", ["r", "c"], ["y"]),
        ], inputs: [M.valueInfo("x", [5])], outputs: ["y"])
        let model = try onnx.load(bytes: M.bytes(m))
        XCTAssertEqual(model.nodes.count, 3)
        let v = Tensor([-2, -1, 0, 1, 2] as [Float], shape: [5])
        XCTAssertEqual(try model.run(["x": v])["y"]!.toArray(as: Float.self), [-4, -2, 0, 4, 8])
    }

    func testGemmReluFusesInAnMLP() throws {
        let (m, w) = ONNXImportTests.mlp()
        let model = try onnx.load(bytes: M.bytes(m))
        XCTAssertEqual(model.nodes.map(\.node.opType), ["Gemm", "Gemm"])
        let x = torch.randn(3, 8)
        let expected = F.linear(F.linear(x, w["w1"]!, w["b1"]!).relu(), w["w2"]!, w["b2"]!)
        XCTAssertLessThanOrEqual((try model.run(["x": x])["y"]! - expected).abs().max().item(), 1e-5)
    }

    /// Values of an emulated element type (int8 here) run the typed kernels: the fused node falls back to its two
    /// nodes, with the result (or the error) the unfused graph gives.
    func testEmulatedElementTypesRunTheFusedNodesOneByOne() throws {
        func graph(_ outputs: [String]) -> Onnx_ModelProto {
            M.model([M.node("Cast", ["x"], ["b"], [M.attr("to", int: 3)]), M.node("Add", ["b", "b"], ["s"]),
                     M.node("Relu", ["s"], ["y"])], inputs: [M.valueInfo("x", [3], elemType: 7)], outputs: outputs)
        }
        let fused = try onnx.load(bytes: M.bytes(graph(["y"])))
        let plain = try onnx.load(bytes: M.bytes(graph(["y", "s"])))
        XCTAssertEqual(fused.nodes.count, 2)
        XCTAssertEqual(plain.nodes.count, 3)
        let x = ["x": Tensor([100, -3, 20] as [Int64], shape: [3])]
        func outcome(_ model: ONNXModel) -> String {
            do {
                let (v, t) = try model.runTyped(x, types: [:])
                return "\(v["y"]!.toArray(as: Int64.self)) \(t["y"].map(String.init) ?? "-")"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(outcome(fused), outcome(plain))
    }
}
