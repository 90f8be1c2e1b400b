import Foundation
import XCTest
@testable import Torch
import TutorialModels

/// Models exported by PyTorch itself (scripts/make_onnx_fixtures.py): each seed model written by
/// `torch.onnx.export(dynamo=False)` (opset 17) and by the dynamo exporter (opset 18, LeNet-5's weights in an
/// external `dynamo.onnx.data`), loaded with `onnx.load` and run on an input at another batch size (and sequence
/// length) than the one exported. SwiftTorch's output must match PyTorch's eager output within 1e-4 + 1e-3·|ref|.
final class ONNXPyTorchFixtureTests: XCTestCase {
    static let folder = fixturesURL.appendingPathComponent("onnx/pytorch")
    static let exporters = ["torchscript", "dynamo"]

    static func makeTemporaryFolder(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs both files of `model` on its input; returns the largest absolute difference of each.
    @discardableResult
    func check(_ model: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Double] {
        let dir = Self.folder.appendingPathComponent(model).path
        let (inputName, x) = try onnx.loadTensor(dir + "/input_0.pb")
        let (_, ref) = try onnx.loadTensor(dir + "/output_0.pb")
        var worst: [String: Double] = [:]
        for exporter in Self.exporters {
            let path = "\(dir)/\(exporter).onnx"
            let m = try onnx.load(path)
            XCTAssertEqual(m.inputNames, [inputName], "\(model) \(exporter)", file: file, line: line)
            let y = try m.run([inputName: x])[m.outputNames[0]]!
            XCTAssertEqual(y.shape, ref.shape, "\(model) \(exporter)", file: file, line: line)
            guard y.shape == ref.shape else { continue }
            let a = y.toArray(as: Double.self), b = ref.toArray(as: Double.self)
            var d = 0.0
            for i in a.indices {
                let e = Swift.abs(a[i] - b[i])
                if !(e <= 1e-4 + 1e-3 * Swift.abs(b[i])) {
                    XCTFail("\(model) \(exporter): element \(i) is \(a[i]), PyTorch \(b[i])", file: file, line: line)
                    break
                }
                d = Swift.max(d, e)
            }
            worst[exporter] = d
            let pad = { (s: String, n: Int) in s + String(repeating: " ", count: Swift.max(0, n - s.count)) }
            print("onnx fixture \(pad(model, 14)) \(pad(exporter, 12)) opset \(m.opsetVersion), \(m.nodes.count) nodes run, "
                  + String(cFormat: "max abs diff %.3e", d))
        }
        return worst
    }

    func testTutorialMLPWithBatchNorm() throws { try check("mlp") }
    func testAdder() throws { try check("adder") }
    func testTwoLayerNet() throws { try check("two_layer_net") }
    func testConvNet() throws { try check("conv_net") }
    func testLeNet5() throws { try check("lenet5") }
    func testLSTMLanguageModel() throws { try check("lstm_lm") }
    func testGRULanguageModel() throws { try check("gru_lm") }

    /// Every model folder the generator wrote has a test above.
    func testManifestListsTheTestedModels() throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("manifest.json"))
        let obj = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        let names = (obj["models"] as! [[String: Any]]).map { $0["name"] as! String }
        XCTAssertEqual(Set(names), ["mlp", "adder", "two_layer_net", "conv_net", "lenet5", "lstm_lm", "gru_lm"])
    }

    /// The dynamo LeNet-5 keeps its weights in `dynamo.onnx.data`; without that file the load names it.
    func testExternalDataFileIsRead() throws {
        let src = Self.folder.appendingPathComponent("lenet5").path
        let proto = try Onnx_ModelProto(serializedBytes: try Data(contentsOf: URL(fileURLWithPath: src + "/dynamo.onnx")))
        XCTAssertTrue(proto.graph.initializer.contains { $0.dataLocation == .external })
        let bytes = try Data(contentsOf: URL(fileURLWithPath: src + "/dynamo.onnx"))
        let empty = try Self.makeTemporaryFolder("onnx-noext")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        XCTAssertThrowsError(try onnx.load(bytes: bytes, baseDirectory: empty)) { e in
            XCTAssertTrue("\(e)".contains("dynamo.onnx.data"), "\(e)")
        }
    }

    // MARK: - Round trip: PyTorch's file → state dict → torch.save/load → SwiftTorch's export

    /// The initializers of a PyTorch-exported file go into the SwiftTorch module of the same layout, which is saved
    /// with `torch.save`, loaded into a fresh module with `torch.load` and exported with `torch.onnx.export`; that
    /// file, read back, gives the imported file's outputs bit for bit (the module's own forward within 1e-6).
    func roundTrip(_ model: String, exporter: String, make: () -> nn.Module, allowMissing: Set<String> = [],
                   file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = Self.folder.appendingPathComponent(model).path
        let (inputName, x) = try onnx.loadTensor(dir + "/input_0.pb")
        let (_, ref) = try onnx.loadTensor(dir + "/output_0.pb")
        let imported = try onnx.load("\(dir)/\(exporter).onnx")
        let y0 = imported(x)

        let module = make()
        let keys = Set(module.stateDict().keys)
        let weights = imported.stateDict().filter { keys.contains($0.0) }
        let (missing, unexpected) = try module.loadStateDict(weights, strict: false)
        XCTAssertEqual(Set(missing), allowMissing, "\(model) \(exporter): missing weights", file: file, line: line)
        XCTAssertEqual(unexpected, [], file: file, line: line)

        let tmp = try Self.makeTemporaryFolder("onnx-roundtrip")
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        try torch.save(module.stateDict(), tmp + "/weights.pt")
        let fresh = make()
        _ = try fresh.loadStateDict(torch.loadStateDict(tmp + "/weights.pt"), strict: allowMissing.isEmpty)
        fresh.eval()
        try torch.onnx.export(fresh, x, tmp + "/back.onnx", inputNames: [inputName], outputNames: ["output"],
                              dynamicAxes: [inputName: [0: "batch"], "output": [0: "batch"]])
        let back = try onnx.load(tmp + "/back.onnx")
        let y1 = back(x)
        XCTAssertTrue(y1.equal(y0), "\(model) \(exporter): re-exported file differs by \((y1 - y0).abs().max().item())",
                      file: file, line: line)
        // The module's own forward: exact for LeNet-5; eager BatchNorm1d and ONNX BatchNormalization differ by an ulp.
        let eager = torch.noGrad { fresh(x) }
        XCTAssertTrue(eager.allclose(y0, rtol: 1e-6, atol: 1e-6), "\(model) \(exporter): module differs by \((eager - y0).abs().max().item())",
                      file: file, line: line)
        XCTAssertTrue(y1.allclose(ref, rtol: 1e-3, atol: 1e-4), "\(model) \(exporter) vs PyTorch", file: file, line: line)
    }

    func testLeNet5RoundTripsThroughStateDictAndExport() throws {
        for exporter in Self.exporters {
            try roundTrip("lenet5", exporter: exporter, make: { TutorialLeNet5(inChannels: 1, numClasses: 10) })
        }
    }

    /// Only the TorchScript file keeps the MLP's BatchNorm (the dynamo exporter folds it into the Linear layers);
    /// ONNX has no `num_batches_tracked`, which inference does not use.
    func testTutorialMLPRoundTripsThroughStateDictAndExport() throws {
        try roundTrip("mlp", exporter: "torchscript", make: { TutorialMLP(64, 32, 16, 10) },
                      allowMissing: ["layer1.1.num_batches_tracked", "layer2.1.num_batches_tracked"])
    }
}
