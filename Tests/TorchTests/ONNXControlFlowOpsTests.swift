import Foundation
import XCTest
@testable import Torch

/// The ONNX ops added for the conformance suite whose replay there is not enough on its own: If, Loop and Scan with
/// outer-scope values, LSTM's gate order, values of element types SwiftTorch has no dtype for (int8's wrap-around,
/// float8's rounding and saturation), and bad attributes, which throw the ONNXError naming the field.
final class ONNXControlFlowOpsTests: XCTestCase {
    typealias M = ONNXImportTests

    static func attr(_ name: String, graph: Onnx_GraphProto) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .graph; a.g = graph; return a
    }
    static func attr(_ name: String, string: String) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .string; a.s = Data(string.utf8); return a
    }
    static func graph(_ nodes: [Onnx_NodeProto], inputs: [String], outputs: [String]) -> Onnx_GraphProto {
        var g = Onnx_GraphProto()
        g.name = "body"
        g.node = nodes
        g.input = inputs.map { var v = Onnx_ValueInfoProto(); v.name = $0; return v }
        g.output = outputs.map { var v = Onnx_ValueInfoProto(); v.name = $0; return v }
        return g
    }

    func run(_ m: Onnx_ModelProto, _ inputs: [String: Tensor]) throws -> [String: Tensor] {
        try onnx.load(bytes: M.bytes(m)).run(inputs)
    }

    func testIfRunsTheBranchTheConditionPicksWithOuterValues() throws {
        // then: x + y, else: x - y (x and y come from the enclosing graph).
        let thenG = Self.graph([M.node("Add", ["x", "y"], ["t"])], inputs: [], outputs: ["t"])
        let elseG = Self.graph([M.node("Sub", ["x", "y"], ["e"])], inputs: [], outputs: ["e"])
        let m = M.model([M.node("Mul", ["x", "x"], ["y"]),
                         M.node("If", ["c"], ["z"], [Self.attr("then_branch", graph: thenG), Self.attr("else_branch", graph: elseG)])],
                        inputs: [M.valueInfo("c", [], elemType: 9), M.valueInfo("x", [2])], outputs: ["z"])
        let x = Tensor([1, 3] as [Float], shape: [2])
        XCTAssertEqual(try run(m, ["c": Tensor([true], shape: []), "x": x])["z"]!.toArray(as: Float.self), [2, 12])
        XCTAssertEqual(try run(m, ["c": Tensor([false], shape: []), "x": x])["z"]!.toArray(as: Float.self), [0, -6])
    }

    func testLoopCarriesStateAndStacksScanOutputs() throws {
        // s += i·step, 4 iterations; the scan output collects s after each.
        let body = Self.graph([M.node("Cast", ["i"], ["fi"], [M.attr("to", int: 1)]),
                               M.node("Mul", ["fi", "step"], ["d"]),
                               M.node("Add", ["s", "d"], ["s2"]),
                               M.node("Identity", ["cond"], ["cond2"]),
                               M.node("Identity", ["s2"], ["out"])],
                              inputs: ["i", "cond", "s"], outputs: ["cond2", "s2", "out"])
        let m = M.model([M.node("Loop", ["n", "", "s0"], ["final", "all"], [Self.attr("body", graph: body)])],
                        inputs: [M.valueInfo("n", [], elemType: 7), M.valueInfo("s0", [1]), M.valueInfo("step", [1])],
                        outputs: ["final", "all"])
        let r = try run(m, ["n": Tensor([Int64(4)], shape: []), "s0": Tensor([1] as [Float], shape: [1]),
                            "step": Tensor([2] as [Float], shape: [1])])
        XCTAssertEqual(r["final"]!.toArray(as: Float.self), [13])
        XCTAssertEqual(r["all"]!.shape, [4, 1])
        XCTAssertEqual(r["all"]!.toArray(as: Float.self), [1, 3, 7, 13])
    }

    func testLoopWithoutCarriedValuesStopsOnItsCondition() throws {
        // No loop-carried values: only the condition (i < 2) and a scan output of i·10.
        let body = Self.graph([M.node("Less", ["i", "two"], ["c"]), M.node("Mul", ["i", "ten"], ["out"])],
                              inputs: ["i", "cond"], outputs: ["c", "out"])
        let m = M.model([M.node("Loop", ["", "go"], ["all"], [Self.attr("body", graph: body)])],
                        inputs: [M.valueInfo("go", [], elemType: 9)], outputs: ["all"],
                        initializers: [("two", Tensor([Int64(2)], shape: [])), ("ten", Tensor([Int64(10)], shape: []))])
        let r = try run(m, ["go": Tensor([true], shape: [])])
        XCTAssertEqual(r["all"]!.toArray(as: Int64.self), [0, 10, 20])
    }

    func testScanComputesARunningSumInBothDirections() throws {
        let body = Self.graph([M.node("Add", ["acc", "xi"], ["acc2"]), M.node("Identity", ["acc2"], ["y"])],
                              inputs: ["acc", "xi"], outputs: ["acc2", "y"])
        for (dir, want) in [(0, [1, 3, 6] as [Float]), (1, [3, 5, 6])] {
            let m = M.model([M.node("Scan", ["init", "x"], ["sum", "ys"],
                                    [Self.attr("body", graph: body), M.attr("num_scan_inputs", int: 1),
                                     M.attr("scan_input_directions", ints: [dir])])],
                            inputs: [M.valueInfo("init", [1]), M.valueInfo("x", [3, 1])], outputs: ["sum", "ys"])
            let r = try run(m, ["init": Tensor([0] as [Float], shape: [1]), "x": Tensor([1, 2, 3] as [Float], shape: [3, 1])])
            XCTAssertEqual(r["sum"]!.toArray(as: Float.self), [6])
            XCTAssertEqual(r["ys"]!.toArray(as: Float.self), want, "direction \(dir)")
        }
    }

    func testLSTMGateOrderIsInputOutputForgetCell() throws {
        // One step, hidden size 1, input 1: gates read W rows in the order i, o, f, c.
        let wi: Float = 0.5, wo: Float = -0.3, wf: Float = 2, wc: Float = 0.8
        let w = Tensor([wi, wo, wf, wc], shape: [1, 4, 1])
        let r = Tensor([Float](repeating: 0, count: 4), shape: [1, 4, 1])
        let c0 = Tensor([0.25] as [Float], shape: [1, 1, 1])
        let m = M.model([M.node("LSTM", ["x", "W", "R", "", "", "", "c0"], ["y", "h", "c"], [M.attr("hidden_size", int: 1)])],
                        inputs: [M.valueInfo("x", [1, 1, 1])], outputs: ["y", "h", "c"],
                        initializers: [("W", w), ("R", r), ("c0", c0)])
        let out = try run(m, ["x": Tensor([1] as [Float], shape: [1, 1, 1])])
        func sig(_ v: Float) -> Float { 1 / (1 + exp(-v)) }
        let c = sig(wf) * 0.25 + sig(wi) * tanh(wc)
        let h = sig(wo) * tanh(c)
        XCTAssertEqual(out["c"]!.toArray(as: Float.self)[0], c, accuracy: 1e-6)
        XCTAssertEqual(out["h"]!.toArray(as: Float.self)[0], h, accuracy: 1e-6)
        XCTAssertEqual(out["y"]!.shape, [1, 1, 1, 1])
    }

    func testInt8ArithmeticWrapsAndKeepsItsType() throws {
        let m = M.model([M.node("Cast", ["x"], ["b"], [M.attr("to", int: 3)]), M.node("Add", ["b", "b"], ["s"]),
                         M.node("Greater", ["s", "b"], ["g"])],
                        inputs: [M.valueInfo("x", [3], elemType: 7)], outputs: ["s", "g"])
        let model = try onnx.load(bytes: M.bytes(m))
        let (values, types) = try model.runTyped(["x": Tensor([100, -3, 200] as [Int64], shape: [3])], types: [:])
        // 200 wraps to -56 in int8; 100 + 100 = 200 wraps to -56; -56 + -56 = -112.
        XCTAssertEqual(values["s"]!.toArray(as: Int64.self), [-56, -6, -112])
        XCTAssertEqual(types["s"], 3, "INT8")
        XCTAssertEqual(values["g"]!.toArray(as: Bool.self), [false, false, false])
        XCTAssertNil(types["g"])
    }

    func testFloat8CastRoundsToNearestEvenAndSaturates() throws {
        for (sat, big) in [(1, 448.0), (0, Double.nan)] {
            let m = M.model([M.node("Cast", ["x"], ["y"], [M.attr("to", int: 17), M.attr("saturate", int: sat)])],
                            inputs: [M.valueInfo("x", [4])], outputs: ["y"])
            let (v, t) = try onnx.load(bytes: M.bytes(m)).runTyped(["x": Tensor([0.3, -1000, 0.0078125, 17] as [Float], shape: [4])], types: [:])
            let y = v["y"]!.toArray(as: Double.self)
            XCTAssertEqual(t["y"], 17, "FLOAT8E4M3FN")
            XCTAssertEqual(y[0], 0.3125)                    // 1.2·2⁻² rounds to 1.25·2⁻²
            if big.isNaN { XCTAssertTrue(y[1].isNaN) } else { XCTAssertEqual(y[1], -big) }
            XCTAssertEqual(y[2], 0.0078125)                 // 2⁻⁷, a subnormal of E4M3FN
            XCTAssertEqual(y[3], 16)                        // 17 = 1.0625·2⁴: a tie, to even
        }
    }

    func testBadAttributesThrowErrorsNamingTheField() throws {
        let w = Tensor([Float](repeating: 0.1, count: 4), shape: [1, 4, 1])
        let lstm = M.model([M.node("LSTM", ["x", "W", "R"], ["y"], [Self.attr("direction", string: "sideways")])],
                           inputs: [M.valueInfo("x", [1, 1, 1])], outputs: ["y"], initializers: [("W", w), ("R", w)])
        XCTAssertThrowsError(try run(lstm, ["x": Tensor([1] as [Float], shape: [1, 1, 1])])) { e in
            guard case let .invalidAttribute(field, _)? = e as? ONNXError else { return XCTFail("\(e)") }
            XCTAssertTrue(field.contains("direction"), field)
        }
        let shift = M.model([M.node("BitShift", ["a", "a"], ["y"], [Self.attr("direction", string: "UP")])],
                            inputs: [M.valueInfo("a", [2], elemType: 2)], outputs: ["y"])
        XCTAssertThrowsError(try run(shift, ["a": Tensor([1, 2] as [UInt8], shape: [2])])) { e in
            guard case let .invalidAttribute(field, _)? = e as? ONNXError else { return XCTFail("\(e)") }
            XCTAssertTrue(field.contains("direction"), field)
        }
        let loop = M.model([M.node("Loop", ["n", ""], [])], inputs: [M.valueInfo("n", [], elemType: 7)], outputs: ["n"])
        XCTAssertThrowsError(try run(loop, ["n": Tensor([Int64(2)], shape: [])])) { e in
            guard case let .invalidNode(field, reason)? = e as? ONNXError else { return XCTFail("\(e)") }
            XCTAssertTrue(field.hasPrefix("graph.node[0]") && reason.contains("body"), "\(field): \(reason)")
        }
        // A uint64 value of 2^63 or more is reported as unsupported, not wrapped into a negative int64.
        var p = Onnx_TensorProto()
        p.dataType = 13; p.dims = [1]; p.uint64Data = [UInt64(1) << 63]
        XCTAssertThrowsError(try ONNXEmulated.decode(p, field: "t", baseDirectory: nil)) { e in
            guard case let .invalidTensor(field, reason)? = e as? ONNXError else { return XCTFail("\(e)") }
            XCTAssertEqual(field, "t")
            XCTAssertTrue(reason.contains("not supported"), reason)
        }
    }
}
