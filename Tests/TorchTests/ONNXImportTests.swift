import Foundation
import XCTest
@testable import Torch

/// `onnx.load`: small ModelProtos built here run and match the same computation written with Torch ops; every
/// kind of bad file throws the ONNXError naming its field; 10,000 mutated files only ever throw.
final class ONNXImportTests: XCTestCase {
    // MARK: - Building models

    static func node(_ op: String, _ inputs: [String], _ outputs: [String], name: String = "",
                     _ attributes: [Onnx_AttributeProto] = []) -> Onnx_NodeProto {
        var n = Onnx_NodeProto()
        n.opType = op; n.input = inputs; n.output = outputs; n.name = name; n.attribute = attributes
        return n
    }
    static func attr(_ name: String, int: Int) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .int; a.i = Int64(int); return a
    }
    static func attr(_ name: String, ints: [Int]) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .ints; a.ints = ints.map { Int64($0) }; return a
    }
    static func attr(_ name: String, float: Float) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .float; a.f = float; return a
    }
    static func valueInfo(_ name: String, _ dims: [Any], elemType: Int32 = 1) -> Onnx_ValueInfoProto {
        var v = Onnx_ValueInfoProto()
        v.name = name
        var tt = Onnx_TypeProto.Tensor()
        tt.elemType = elemType
        var shape = Onnx_TensorShapeProto()
        shape.dim = dims.map { d in
            var dim = Onnx_TensorShapeProto.Dimension()
            if let i = d as? Int { dim.dimValue = Int64(i) } else if let s = d as? String { dim.dimParam = s }
            return dim
        }
        tt.shape = shape
        v.type.tensorType = tt
        return v
    }
    static func model(_ nodes: [Onnx_NodeProto], inputs: [Onnx_ValueInfoProto], outputs: [String],
                      initializers: [(String, Tensor)] = [], irVersion: Int64 = 8, opset: Int64 = 18) -> Onnx_ModelProto {
        var m = Onnx_ModelProto()
        m.irVersion = irVersion
        var o = Onnx_OperatorSetIdProto(); o.domain = ""; o.version = opset
        m.opsetImport = [o]
        m.producerName = "swifttorch-tests"
        var g = Onnx_GraphProto()
        g.name = "test"
        g.node = nodes
        g.input = inputs
        g.output = outputs.map { var v = Onnx_ValueInfoProto(); v.name = $0; return v }
        g.initializer = initializers.map { ONNXTensorCodec.encode($0.1, name: $0.0) }
        m.graph = g
        return m
    }
    static func bytes(_ m: Onnx_ModelProto) -> Data { try! m.serializedData() }

    /// Gemm+Relu+Gemm, weights [out, in] as PyTorch's exporter writes them (transB = 1).
    static func mlp() -> (Onnx_ModelProto, [String: Tensor]) {
        torch.manualSeed(0)
        let w = ["w1": torch.randn(16, 8), "b1": torch.randn(16), "w2": torch.randn(3, 16), "b2": torch.randn(3)]
        let m = model([
            node("Gemm", ["x", "w1", "b1"], ["h"], name: "fc1", [attr("transB", int: 1)]),
            node("Relu", ["h"], ["r"], name: "relu"),
            node("Gemm", ["r", "w2", "b2"], ["y"], name: "fc2", [attr("transB", int: 1)]),
        ], inputs: [valueInfo("x", ["batch", 8])], outputs: ["y"],
           initializers: ["w1", "b1", "w2", "b2"].map { ($0, w[$0]!) })
        return (m, w)
    }

    static func convNet() -> (Onnx_ModelProto, [String: Tensor]) {
        torch.manualSeed(1)
        let w: [String: Tensor] = [
            "conv.weight": torch.randn(4, 3, 3, 3) * 0.3, "conv.bias": torch.randn(4),
            "bn.weight": torch.rand(4) + 0.5, "bn.bias": torch.randn(4),
            "bn.running_mean": torch.randn(4) * 0.1, "bn.running_var": torch.rand(4) + 0.5,
        ]
        let m = model([
            node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name: "conv",
                 [attr("kernel_shape", ints: [3, 3]), attr("pads", ints: [1, 1, 1, 1]), attr("strides", ints: [1, 1])]),
            node("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"], ["b"], name: "bn",
                 [attr("epsilon", float: 1e-5)]),
            node("Relu", ["b"], ["r"]),
            node("MaxPool", ["r"], ["p"], [attr("kernel_shape", ints: [2, 2]), attr("strides", ints: [2, 2])]),
            node("GlobalAveragePool", ["p"], ["g"]),
            node("Flatten", ["g"], ["y"], [attr("axis", int: 1)]),
        ], inputs: [valueInfo("x", ["batch", 3, 8, 8])], outputs: ["y"],
           initializers: w.keys.sorted().map { ($0, w[$0]!) })
        return (m, w)
    }

    // MARK: - Running

    func testGemmReluMLPMatchesTorch() throws {
        let (m, w) = Self.mlp()
        let model = try onnx.load(bytes: Self.bytes(m))
        XCTAssertEqual(model.inputNames, ["x"])
        XCTAssertEqual(model.outputNames, ["y"])
        let x = torch.randn(5, 8)
        let want = F.linear(F.linear(x, w["w1"]!, w["b1"]!).relu(), w["w2"]!, w["b2"]!)
        let got = model(x)
        XCTAssertEqual(got.shape, [5, 3])
        XCTAssertTrue(got.allclose(want, rtol: 1e-5, atol: 1e-6))
        // By name, and at another batch size (the symbolic dim).
        let y2 = try model.run(["x": torch.randn(2, 8)])["y"]!
        XCTAssertEqual(y2.shape, [2, 3])
        XCTAssertEqual(model.stateDict().map(\.0), ["w1", "b1", "w2", "b2"])
    }

    func testConvBatchNormReluPoolMatchesTorch() throws {
        let (m, w) = Self.convNet()
        let model = try onnx.load(bytes: Self.bytes(m))
        let x = torch.randn(2, 3, 8, 8)
        var want = F.conv2d(x, w["conv.weight"]!, w["conv.bias"]!, padding: 1)
        want = F.batchNorm(want, w["bn.running_mean"]!, w["bn.running_var"]!, weight: w["bn.weight"]!, bias: w["bn.bias"]!,
                           training: false, eps: 1e-5).relu()
        want = F.maxPool2d(want, 2, stride: 2)
        want = F.adaptiveAvgPool2d(want, 1).flatten(startDim: 1)
        let got = model(x)
        XCTAssertEqual(got.shape, [2, 4])
        XCTAssertTrue(got.allclose(want, rtol: 1e-4, atol: 1e-5), "\(got) vs \(want)")
    }

    func testShapeChainIsFoldedAndRuns() throws {
        // x [N, 4, 2] → Shape → Gather(0) → Unsqueeze → Concat([-1]) → Reshape: the flatten exporters write.
        var minus1 = Onnx_AttributeProto(); minus1.name = "value"; minus1.type = .tensor
        minus1.t = ONNXTensorCodec.encode(Tensor([Int64(-1)], shape: [1]))
        var zero = Onnx_AttributeProto(); zero.name = "value"; zero.type = .tensor
        zero.t = ONNXTensorCodec.encode(Tensor([Int64(0)], shape: []))
        let m = Self.model([
            Self.node("Shape", ["x"], ["s"]),
            Self.node("Constant", [], ["zero"], [zero]),
            Self.node("Gather", ["s", "zero"], ["n"], [Self.attr("axis", int: 0)]),
            Self.node("Constant", [], ["axes"], [{ var a = zero; a.t = ONNXTensorCodec.encode(Tensor([Int64(0)], shape: [1])); return a }()]),
            Self.node("Unsqueeze", ["n", "axes"], ["n1"]),
            Self.node("Constant", [], ["m1"], [minus1]),
            Self.node("Concat", ["n1", "m1"], ["shape"], [Self.attr("axis", int: 0)]),
            Self.node("Reshape", ["x", "shape"], ["y"]),
        ], inputs: [Self.valueInfo("x", ["N", 4, 2])], outputs: ["y"])
        let model = try onnx.load(bytes: Self.bytes(m))
        XCTAssertEqual(model.nodes.count, 5, "the three Constants are folded at load time")
        let x = torch.randn(3, 4, 2)
        XCTAssertTrue(model(x).equal(x.reshape([3, 8])))
    }

    func testExternalDataIsReadFromTheModelsFolder() throws {
        let (m0, w) = Self.mlp()
        var m = m0
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("onnx-ext-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var blob = Data()
        for i in m.graph.initializer.indices {
            var t = m.graph.initializer[i]
            let offset = blob.count
            blob.append(t.rawData)
            t.clearRawData()
            t.dataLocation = .external
            t.externalData = [("location", "model.onnx.data"), ("offset", "\(offset)"), ("length", "\(blob.count - offset)")].map {
                var e = Onnx_StringStringEntryProto(); e.key = $0.0; e.value = $0.1; return e
            }
            m.graph.initializer[i] = t
        }
        try blob.write(to: dir.appendingPathComponent("model.onnx.data"))
        try Self.bytes(m).write(to: dir.appendingPathComponent("model.onnx"))
        let model = try onnx.load(dir.appendingPathComponent("model.onnx").path)
        let x = torch.randn(2, 8)
        XCTAssertTrue(model(x).allclose(F.linear(F.linear(x, w["w1"]!, w["b1"]!).relu(), w["w2"]!, w["b2"]!), rtol: 1e-5, atol: 1e-6))

        // Missing file.
        try FileManager.default.removeItem(at: dir.appendingPathComponent("model.onnx.data"))
        assertThrows(try onnx.load(dir.appendingPathComponent("model.onnx").path), field: "graph.initializer[0]") {
            if case .externalData(_, let r) = $0 { return r.contains("does not exist") } else { return false }
        }
        // Bytes only: no folder to read from.
        assertThrows(try onnx.load(bytes: Self.bytes(m)), field: "graph.initializer[0]") {
            if case .externalData = $0 { return true } else { return false }
        }
        // A location outside the model's folder.
        for loc in ["../secret.bin", "/etc/passwd", "a/../../x"] {
            var bad = m
            bad.graph.initializer[0].externalData[0].value = loc
            assertThrows(try onnx.load(bytes: Self.bytes(bad), baseDirectory: dir.path), field: "graph.initializer[0]") {
                if case .externalData(_, let r) = $0 { return r.contains("outside") } else { return false }
            }
        }
    }

    func testInputsAreChecked() throws {
        let model = try onnx.load(bytes: Self.bytes(Self.mlp().0))
        XCTAssertThrowsError(try model.run([:])) { XCTAssertTrue("\($0)".contains("missing")) }
        XCTAssertThrowsError(try model.run(["x": torch.randn(2, 7)])) { XCTAssertTrue("\($0)".contains("dim 1 must be 8")) }
        XCTAssertThrowsError(try model.run(["x": torch.randn(2, 8).double()])) { XCTAssertTrue("\($0)".contains("float32")) }
        XCTAssertThrowsError(try model.run(["x": torch.randn(2, 8), "z": torch.randn(1)])) { XCTAssertTrue("\($0)".contains("not an input")) }
    }

    // MARK: - Bad files

    func assertThrows(_ body: @autoclosure () throws -> ONNXModel, field: String?, file: StaticString = #filePath,
                      line: UInt = #line, _ matches: (ONNXError) -> Bool) {
        do {
            _ = try body()
            XCTFail("expected an ONNXError", file: file, line: line)
        } catch let e as ONNXError {
            XCTAssertTrue(matches(e), "unexpected error: \(e)", file: file, line: line)
            if let field { XCTAssertTrue((e.field ?? "").hasPrefix(field), "\(e.field ?? "nil") is not \(field): \(e)", file: file, line: line) }
        } catch {
            XCTFail("not an ONNXError: \(error)", file: file, line: line)
        }
    }

    func testRandomAndTruncatedBytesAreMalformed() {
        var rng = SystemRandomNumberGenerator()
        let random = Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &rng) })
        assertThrows(try onnx.load(bytes: random), field: nil) {
            if case .malformed = $0 { return true }
            if case .unsupportedIRVersion = $0 { return true }
            return false
        }
        let good = Self.bytes(Self.mlp().0)
        // Cut in the middle of the weights.
        assertThrows(try onnx.load(bytes: good.prefix(good.count / 2)), field: "model") {
            if case .malformed = $0 { return true } else { return false }
        }
        assertThrows(try onnx.load(bytes: Data()), field: "model") { if case .malformed = $0 { return true } else { return false } }
    }

    func testGitLFSPointerIsNamed() throws {
        let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146\nsize 46781234\n"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("onnx-lfs-\(UUID().uuidString).onnx")
        try pointer.write(to: dir, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertThrowsError(try onnx.load(dir.path)) {
            XCTAssertEqual($0 as? ONNXError, .gitLFSPointer(path: dir.path))
            XCTAssertTrue("\($0)".contains("git lfs pull"))
        }
    }

    func testShortRawDataAndBadDims() {
        var m = Self.mlp().0
        m.graph.initializer[1].rawData = m.graph.initializer[1].rawData.prefix(10)
        assertThrows(try onnx.load(bytes: Self.bytes(m)), field: "graph.initializer[1].raw_data") {
            if case .invalidTensor(_, let r) = $0 { return r.contains("10 bytes") } else { return false }
        }
        var overflow = Self.mlp().0
        overflow.graph.initializer[0].dims = [Int64.max / 2, 4, 4]
        assertThrows(try onnx.load(bytes: Self.bytes(overflow)), field: "graph.initializer[0].dims") {
            if case .invalidTensor(_, let r) = $0 { return r.contains("overflows") } else { return false }
        }
        var huge = Self.mlp().0
        huge.graph.initializer[0].dims = [1 << 20, 1 << 20]
        assertThrows(try onnx.load(bytes: Self.bytes(huge)), field: "graph.initializer[0].dims") {
            if case .invalidTensor(_, let r) = $0 { return r.contains("bound") } else { return false }
        }
        var negative = Self.mlp().0
        negative.graph.initializer[0].dims = [-16, -8]
        assertThrows(try onnx.load(bytes: Self.bytes(negative)), field: "graph.initializer[0].dims[0]") {
            if case .invalidTensor = $0 { return true } else { return false }
        }
        var typed = Self.mlp().0
        typed.graph.initializer[3].clearRawData()
        typed.graph.initializer[3].floatData = [1, 2]
        assertThrows(try onnx.load(bytes: Self.bytes(typed)), field: "graph.initializer[3].float_data") {
            if case .invalidTensor = $0 { return true } else { return false }
        }
        var complex = Self.mlp().0
        complex.graph.initializer[3].dataType = 14
        assertThrows(try onnx.load(bytes: Self.bytes(complex)), field: "graph.initializer[3].data_type") {
            if case .unsupportedDataType(_, 14) = $0 { return true } else { return false }
        }
        // int8 is read (into int64 storage), so float32 bytes relabelled as int8 are too many.
        var int8 = Self.mlp().0
        int8.graph.initializer[3].dataType = 3
        assertThrows(try onnx.load(bytes: Self.bytes(int8)), field: "graph.initializer[3].raw_data") {
            if case .invalidTensor(_, let r) = $0 { return r.contains("12 bytes") } else { return false }
        }
    }

    func testGraphStructureErrors() {
        var undefined = Self.mlp().0
        undefined.graph.node[1].input = ["nowhere"]
        assertThrows(try onnx.load(bytes: Self.bytes(undefined)), field: "graph.node[1].input[0]") {
            $0 == .undefinedValue(field: "graph.node[1].input[0]", name: "nowhere")
        }
        var badOutput = Self.mlp().0
        badOutput.graph.output[0].name = "zz"
        assertThrows(try onnx.load(bytes: Self.bytes(badOutput)), field: "graph.output[0]") {
            if case .undefinedValue = $0 { return true } else { return false }
        }
        // relu reads fc2's output, fc2 reads relu's: a cycle.
        var cycle = Self.mlp().0
        cycle.graph.node[1].input = ["y"]
        cycle.graph.output[0].name = "r"
        assertThrows(try onnx.load(bytes: Self.bytes(cycle)), field: "graph.node[1]") {
            if case .graphCycle = $0 { return true } else { return false }
        }
        var twice = Self.mlp().0
        twice.graph.node[2].output = ["h"]
        assertThrows(try onnx.load(bytes: Self.bytes(twice)), field: "graph.node[2].output[0]") {
            if case .malformed = $0 { return true } else { return false }
        }
        var unsupported = Self.mlp().0
        unsupported.graph.node[1].opType = "FancyRelu"
        assertThrows(try onnx.load(bytes: Self.bytes(unsupported)), field: "graph.node[1]") {
            $0 == .unsupportedOperator(op: "FancyRelu", domain: "", opset: 18, node: "graph.node[1] ('relu', FancyRelu)")
        }
        var domain = Self.mlp().0
        domain.graph.node[1].domain = "com.example"
        assertThrows(try onnx.load(bytes: Self.bytes(domain)), field: "graph.node[1]") {
            if case .unsupportedOperator(_, "com.example", _, _) = $0 { return true } else { return false }
        }
        var attribute = Self.mlp().0
        attribute.graph.node[0].attribute[0].type = .float
        XCTAssertThrowsError(try onnx.load(bytes: Self.bytes(attribute)).run(["x": torch.randn(1, 8)])) {
            guard let e = $0 as? ONNXError, case .invalidAttribute(let f, _) = e else { return XCTFail("\($0)") }
            XCTAssertTrue(f.hasPrefix("graph.node[0].attribute[0]"), f)
        }
    }

    func testVersionsNewerThanSupported() {
        let (m0, _) = Self.mlp()
        var ir = m0; ir.irVersion = onnx.maxIRVersion + 1
        assertThrows(try onnx.load(bytes: Self.bytes(ir)), field: "ir_version") {
            $0 == .unsupportedIRVersion(onnx.maxIRVersion + 1, maximum: onnx.maxIRVersion)
        }
        var op = m0; op.opsetImport[0].version = onnx.maxOpsetVersion + 1
        assertThrows(try onnx.load(bytes: Self.bytes(op)), field: "opset_import") {
            if case .unsupportedOpset(_, onnx.maxOpsetVersion + 1, _) = $0 { return true } else { return false }
        }
        var noGraph = m0; noGraph.clearGraph()
        assertThrows(try onnx.load(bytes: Self.bytes(noGraph)), field: "graph") { if case .malformed = $0 { return true } else { return false } }
    }

    // MARK: - Fuzzing

    /// 10,000 mutations (byte flips, truncations, insertions, deletions, varint length changes) of the two small
    /// models: each loads and runs or throws an ONNXError; none crashes, none takes long.
    func testFuzzedFilesOnlyThrow() throws {
        let seeds = [Self.bytes(Self.mlp().0), Self.bytes(Self.convNet().0)]
        let inputs = [torch.randn(2, 8), torch.randn(1, 3, 8, 8)]
        var state: UInt64 = 0x9E3779B97F4A7C15
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: state >> 33)
        }
        var loaded = 0, ran = 0, threw = 0
        let start = Date()
        for i in 0..<10_000 {
            let which = i % 2
            var b = [UInt8](seeds[which])
            for _ in 0..<(1 + next() % 4) {
                guard !b.isEmpty else { break }
                let p = next() % b.count
                switch next() % 6 {
                case 0: b[p] ^= UInt8(truncatingIfNeeded: 1 << (next() % 8))
                case 1: b[p] = UInt8(truncatingIfNeeded: next())
                case 2: b.removeSubrange(p..<min(b.count, p + 1 + next() % 16))
                case 3: b.insert(contentsOf: (0..<(1 + next() % 8)).map { _ in UInt8(truncatingIfNeeded: next()) }, at: p)
                case 4: b = Array(b.prefix(p))
                default: b[p] = b[p] &+ UInt8(truncatingIfNeeded: 1 + next() % 3)   // length prefixes off by a little
                }
            }
            do {
                let model = try onnx.load(bytes: b)
                loaded += 1
                if model.inputNames.count == 1, model.outputNames.count >= 1 {
                    _ = try model.run([model.inputNames[0]: inputs[which]])
                    ran += 1
                }
            } catch is ONNXError {
                threw += 1
            }
        }
        let seconds = Date().timeIntervalSince(start)
        print("onnx fuzz: 10000 files, \(loaded) loaded, \(ran) ran, \(threw) threw, \(seconds) s")
        XCTAssertGreaterThanOrEqual(loaded + threw, 10_000)
        XCTAssertGreaterThan(threw, 5_000)
        XCTAssertLessThan(seconds, 60)
    }
}
