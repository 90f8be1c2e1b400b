import XCTest
@testable import Torch
import TutorialModels

/// `torch.onnx.export`: each model is exported, read back with `onnx.load`, and run on the same input; the
/// outputs must match the model's eval output (1e-4 + 1e-3·|ref|). With SWIFTTORCH_ONNX_EXPORT_DIR set, the
/// files and their inputs/outputs (.npy) are also written there for scripts/check-onnx-export (onnxruntime).
final class ONNXExportTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        dir = ONNXExportCheck.tempDir() + "/onnx-export-\(UInt32.random(in: 0...UInt32.max))"
        _ = mkdir(dir, 0o755)
        torch.manualSeed(0)
    }

    override func tearDown() { _ = try? ONNXExportCheck.removeTree(dir) }

    func testMLP() throws {
        let model = TutorialMLP(20, 32, 16, 5)
        warmBatchNorm(model, torch.randn(8, 20))
        try ONNXExportCheck.roundTrip("mlp", model, torch.randn(2, 20), dir: dir)
    }

    func testCLIStyleMLPSequential() throws {
        let model = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
        warmBatchNorm(model, torch.randn(8, 12))
        try ONNXExportCheck.roundTrip("mlp_sequential", model, torch.randn(2, 12), dir: dir)
    }

    func testFashionCNN() throws {
        let model = FashionCNN(inChannels: 1, imageSize: 28, numClasses: 10)
        warmBatchNorm(model, torch.randn(4, 1, 28, 28))
        try ONNXExportCheck.roundTrip("cnn", model, torch.randn(2, 1, 28, 28), dir: dir)
    }

    func testLeNet5() throws {
        let model = TutorialLeNet5(inChannels: 3, numClasses: 10)
        try ONNXExportCheck.roundTrip("lenet5", model, torch.randn(2, 3, 32, 32), dir: dir)
    }

    func testBatchNormAndActivations() throws {
        let model = ExportActivationZoo()
        warmBatchNorm(model, torch.randn(6, 3, 8, 8))
        try ONNXExportCheck.roundTrip("bn_activations", model, torch.randn(2, 3, 8, 8), dir: dir)
    }

    func testOpsFromCustomForward() throws {
        let model = ExportCustomOps()
        try ONNXExportCheck.roundTrip("custom_ops", model, torch.randn(2, 4, 6), dir: dir)
    }

    func testLayerNormGroupNormEmbeddingLikeLayers() throws {
        let model = nn.Sequential(nn.Conv1d(4, 8, 3, padding: 1, paddingMode: .reflect), nn.GroupNorm(2, 8), nn.SiLU(),
                                  nn.Conv1d(8, 8, 3, padding: ConvPadding.same, groups: 2), nn.AvgPool1d(2),
                                  nn.LayerNorm(4), nn.Flatten(), nn.Linear(32, 6), nn.LogSoftmax(dim: 1))
        try ONNXExportCheck.roundTrip("norms", model, torch.randn(2, 4, 8), dir: dir)
    }

    func testDynamicBatch() throws {
        let model = TutorialLeNet5(inChannels: 1, numClasses: 10)
        let path = dir + "/dyn.onnx"
        try torch.onnx.export(model, torch.randn(2, 1, 32, 32), path, inputNames: ["input"], outputNames: ["logits"],
                              dynamicAxes: ["input": [0: "batch"], "logits": [0: "batch"]])
        let back = try onnx.load(path)
        for n in [1, 5] {
            let x = torch.randn(n, 1, 32, 32)
            let ref = torch.noGrad { model(x) }
            let y = try back.run(["input": x])["logits"]!
            ONNXExportCheck.assertMatches(y, ref, "batch \(n)")
        }
        let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(path))
        XCTAssertEqual(proto.graph.input[0].type.tensorType.shape.dim[0].dimParam, "batch")
        XCTAssertEqual(proto.irVersion, 8)
        XCTAssertEqual(proto.opsetImport.first?.version, 18)
        XCTAssertTrue(proto.graph.initializer.contains { $0.name == "features.0.weight" })
    }

    func testUnsupportedOpNamesOpAndModule() throws {
        let model = nn.Sequential(nn.Linear(4, 4), ExportUnsupported())
        XCTAssertThrowsError(try torch.onnx.export(model, torch.randn(2, 4), dir + "/bad.onnx")) { e in
            guard case ONNXExportError.unsupportedOperator(let op, let module, _) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(op, "aten::index")
            XCTAssertEqual(module, "1")
        }
        XCTAssertFalse(ONNXExportCheck.exists(dir + "/bad.onnx"), "no file is written")
    }

    func testTrainModeWarnsAndIsRestored() throws {
        let model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
        model.train()
        (model[2] as nn.Module).train(false)   // a mixed state is restored as it was
        try torch.onnx.export(model, torch.randn(3, 4), dir + "/train.onnx")
        XCTAssertTrue(onnx.lastExportWarnings.contains { $0.contains("training mode") })
        XCTAssertTrue(model.training)
        XCTAssertTrue(model[1].training)
        XCTAssertFalse(model[2].training)
        let back = try onnx.load(dir + "/train.onnx")
        XCTAssertFalse(back.nodes.contains { $0.node.opType == "Dropout" })
        model.eval()
        try torch.onnx.export(model, torch.randn(3, 4), dir + "/eval.onnx")
        XCTAssertTrue(onnx.lastExportWarnings.isEmpty)
    }

    func testBadOpset() {
        let model = nn.Linear(2, 2)
        for v in [12, 21, 0] {
            XCTAssertThrowsError(try torch.onnx.export(model, torch.randn(1, 2), dir + "/o.onnx", opsetVersion: v)) { e in
                XCTAssertEqual(e as? ONNXExportError, .unsupportedOpset(v, supported: 13...20))
            }
        }
        for v in [13, 17, 20] {
            XCTAssertNoThrow(try ONNXExportCheck.roundTrip("linear_opset\(v)", model, torch.randn(2, 2), dir: dir, opset: v))
        }
    }

    func testWriteErrorThrows() {
        XCTAssertThrowsError(try torch.onnx.export(nn.Linear(2, 2), torch.randn(1, 2), dir + "/missing/folder/m.onnx"))
    }

    func testNoHookCostWhenIdle() {
        XCTAssertFalse(ONNXTrace.isOn)
        XCTAssertNil(ONNXTrace.session)
    }

    private func warmBatchNorm(_ model: nn.Module, _ x: Tensor) {
        model.train()
        torch.noGrad { for _ in 0..<3 { _ = model(x * 2 + 0.5) } }
        model.eval()
    }
}

/// Conv → BatchNorm2d → each activation module in turn, pooled and classified.
final class ExportActivationZoo: nn.Module {
    let conv = nn.Conv2d(3, 8, 3, padding: 1)
    let bn = nn.BatchNorm2d(8)
    let acts = nn.Sequential(nn.LeakyReLU(negativeSlope: 0.1), nn.ELU(), nn.Hardswish(), nn.GELU(), nn.Softplus(), nn.Tanh(),
                             nn.Sigmoid(), nn.ReLU6(), nn.SELU(), nn.Mish(), nn.Hardsigmoid())
    let pool = nn.MaxPool2d(2)
    let gap = nn.AdaptiveAvgPool2d(2)
    let fc = nn.Linear(32, 4)
    override func forward(_ x: Tensor) -> Tensor {
        let y = gap(pool(acts(bn(conv(x)))))
        return F.softmax(fc(torch.flatten(y, startDim: 1)), dim: 1)
    }
}

/// Tensor ops called from a forward: view, permute, transpose, cat, matmul, reductions, elementwise math.
final class ExportCustomOps: nn.Module {
    let w = nn.Parameter(torch.randn(6, 3))
    override func forward(_ x: Tensor) -> Tensor {
        let a = x.permute(0, 2, 1).transpose(1, 2)                     // back to (N, 4, 6)
        let b = torch.cat([a, x * 2 - 1], dim: 1)                        // (N, 8, 6)
        var c = b.matmul(w)                                              // (N, 8, 3)
        c = (c.exp() + 1).log() / 3 + c.abs().sqrt() * c.neg()
        c += 0.25
        let s = c.sum(dim: 2, keepdim: true) + c.mean(dim: [1], keepdim: true).pow(2)
        return F.relu(s.view(s.size(0), -1)).unsqueeze(1).squeeze(1)
    }
}

final class ExportUnsupported: nn.Module {
    /// A mask together with a position tensor (not mapped: the mask's coordinate count depends on the data).
    override func forward(_ x: Tensor) -> Tensor { x[torch.tensor([true, false]), torch.tensor([1])] }
}

/// Round trips shared by the export tests.
enum ONNXExportCheck {
    /// Exports `model` on `x` with a symbolic batch (dim 0 of input and output), then checks the file on `x` and
    /// on batches of 1 and 5 (`dynamicBatch: false`: `x` alone, static dims).
    static func roundTrip(_ name: String, _ model: nn.Module, _ x: Tensor, dir: String, opset: Int = 18,
                          dynamicBatch: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws {
        var cases = [("b\(x.shape.first ?? 0)", [x])]
        var axes: [String: [Int: String]] = [:]
        if dynamicBatch && x.dim > 0 {
            let rest = Array(x.shape.dropFirst())
            cases += [("b1", [torch.randn([1] + rest, dtype: x.dtype)]), ("b5", [torch.randn([5] + rest, dtype: x.dtype)])]
            axes = ["input": [0: "batch"], "output": [0: "batch"]]
        }
        try roundTripIO(name, model, inputNames: ["input"], outputNames: ["output"], cases: cases, dynamicAxes: axes,
                        dir: dir, opset: opset, file: file, line: line) { xs in [model(xs[0])] }
    }

    /// Exports `forward` (the model's computation on the graph inputs) on the first case's inputs, reads the file
    /// back with `onnx.load` and compares every output with `forward`'s on each case. With
    /// SWIFTTORCH_ONNX_EXPORT_DIR set, leaves `<name>.onnx` and each case's `<name>.<tag>.in.<input>.npy` /
    /// `<name>.<tag>.out.<output>.npy` there for scripts/check-onnx-export.
    static func roundTripIO(_ name: String, _ model: nn.Module, inputNames: [String], outputNames: [String],
                            cases: [(String, [Tensor])], dynamicAxes: [String: [Int: String]] = [:], dir: String,
                            opset: Int = 18, file: StaticString = #filePath, line: UInt = #line,
                            forward: @escaping ([Tensor]) -> [Tensor]) throws {
        model.eval()
        let path = dir + "/\(name).onnx"
        try torch.onnx.export(model, cases[0].1, path, inputNames: inputNames, outputNames: outputNames,
                              dynamicAxes: dynamicAxes, opsetVersion: opset, forward: forward)
        let back = try onnx.load(path)
        let out = ProcessInfo.processInfo.environment["SWIFTTORCH_ONNX_EXPORT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        if let out {
            _ = mkdir(out, 0o755)
            try AtomicFile.write(try ONNXExportCheck.readAll(path), to: out + "/\(name).onnx")
        }
        for (tag, xs) in cases {
            let refs = torch.noGrad { forward(xs) }
            let ys = try back.run(Dictionary(uniqueKeysWithValues: zip(inputNames, xs)))
            for (n, ref) in zip(outputNames, refs) {
                guard let y = ys[n] else { XCTFail("\(name): no output \(n)", file: file, line: line); continue }
                assertMatches(y, ref, "\(name) \(tag) \(n)", file: file, line: line)
            }
            if let out {
                for (n, t) in zip(inputNames, xs) { try writeNpy(t, out + "/\(name).\(tag).in.\(n).npy") }
                for (n, t) in zip(outputNames, refs) { try writeNpy(t, out + "/\(name).\(tag).out.\(n).npy") }
            }
        }
    }

    static func assertMatches(_ y: Tensor, _ ref: Tensor, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(y.shape, ref.shape, what, file: file, line: line)
        guard y.shape == ref.shape else { return }
        let a = y.toArray(as: Double.self), b = ref.toArray(as: Double.self)
        var worst = 0.0
        for i in a.indices {
            let d = Swift.abs(a[i] - b[i])
            if !(d <= 1e-4 + 1e-3 * Swift.abs(b[i])) {
                return XCTFail("\(what): element \(i) \(a[i]) vs \(b[i])", file: file, line: line)
            }
            worst = Swift.max(worst, d)
        }
    }

    /// A float32 (or int64) tensor as a NumPy .npy file.
    static func writeNpy(_ t: Tensor, _ path: String) throws {
        let isInt = t.dtype == .int64
        let shape = t.shape.map(String.init).joined(separator: ", ") + (t.dim == 1 ? "," : "")
        var header = "{'descr': '\(isInt ? "<i8" : "<f4")', 'fortran_order': False, 'shape': (\(shape)), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        var bytes: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)]
        bytes += Array(header.utf8)
        let c = t.detach().contiguous()
        if isInt { c.toArray(as: Int64.self).withUnsafeBytes { bytes += $0 } }
        else { c.to(.float32).toArray(as: Float.self).withUnsafeBytes { bytes += $0 } }
        try AtomicFile.write(bytes, to: path)
    }

    static func readAll(_ path: String) throws -> [UInt8] {
        guard let f = fopen(path, "rb") else { throw ONNXExportError.invalidArgument("cannot open \(path)") }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func tempDir() -> String { ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp" }

    @discardableResult
    static func removeTree(_ path: String) throws -> Bool {
        guard let d = opendir(path) else { return false }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            _ = unlink(path + "/" + name)
        }
        closedir(d)
        return rmdir(path) == 0
    }
}
