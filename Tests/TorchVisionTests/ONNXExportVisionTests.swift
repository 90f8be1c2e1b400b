import XCTest
@testable import Torch
import TorchVision

/// `torch.onnx.export` on TorchVision models: ResNet-18 and ShuffleNetV2 (2×3×64×64) always; every model of
/// `models.listModels()` with SWIFTTORCH_ONNX_EXPORT_ALL_MODELS=1 (SWIFTTORCH_ONNX_EXPORT_MODELS=a,b limits them
/// to those names). Each is exported at batch 2 with a symbolic batch, read back with `onnx.load` and must match
/// the model's eval output within 1e-4 + 1e-3·|ref|; with SWIFTTORCH_ONNX_EXPORT_DIR set the files and their
/// inputs/outputs at batch 2, 1 and 5 (`<name>.b2.in.input.npy`, `<name>.b2.out.output.npy`, ...) go there for
/// scripts/check-onnx-export. At 64×64 the adaptive average pool of AlexNet and the VGGs upsamples 1×1 → 7×7 (6×6),
/// which no ONNX pool does; it is exported as MatMuls.
final class ONNXExportVisionTests: XCTestCase {
    func testResNet18() throws {
        torch.manualSeed(0)
        let model = models.resnet18(numClasses: 10)
        warm(model, torch.randn(4, 3, 64, 64))
        let result = try roundTrip("resnet18", model, torch.randn(2, 3, 64, 64))
        XCTAssertNil(result, result ?? "")
    }

    func testShuffleNetV2() throws {
        torch.manualSeed(0)
        let model = models.shufflenetV2_x1_0(numClasses: 10)
        warm(model, torch.randn(4, 3, 64, 64))
        let result = try roundTrip("shufflenet_v2_x1_0_test", model, torch.randn(2, 3, 64, 64))
        XCTAssertNil(result, result ?? "")
    }

    func testListedModels() throws {
        guard ProcessInfo.processInfo.environment["SWIFTTORCH_ONNX_EXPORT_ALL_MODELS"] == "1" else {
            throw XCTSkip("set SWIFTTORCH_ONNX_EXPORT_ALL_MODELS=1 to export every TorchVision model")
        }
        let only = ProcessInfo.processInfo.environment["SWIFTTORCH_ONNX_EXPORT_MODELS"].map {
            Set($0.split(separator: ",").map(String.init))
        }
        var report: [String] = []
        for name in models.listModels() where only?.contains(name) ?? true {
            torch.manualSeed(0)
            let entry = models.entry(named: name)!
            let side = Swift.max(64, entry.minSize)
            let model = try models.getModel(name, numClasses: 10)
            let outcome: String
            warm(model, torch.randn(2, 3, side, side))
            do { outcome = try roundTrip(name, model, torch.randn(2, 3, side, side)) ?? "ok" } catch { outcome = "\(error)" }
            report.append("\(name): \(outcome)")
        }
        print(report.joined(separator: "\n"))
    }

    private func warm(_ model: nn.Module, _ x: Tensor) {
        model.train()
        torch.noGrad { _ = model(x) }
        model.eval()
    }

    /// Nil when the round trip matches, else what went wrong.
    private func roundTrip(_ name: String, _ model: nn.Module, _ x: Tensor) throws -> String? {
        model.eval()
        let ref = torch.noGrad { model(x) }
        let dir = ProcessInfo.processInfo.environment["SWIFTTORCH_ONNX_EXPORT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        let folder = dir ?? (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp")
        _ = mkdir(folder, 0o755)
        let path = folder + "/\(name)\(dir == nil ? ".\(getpid())" : "").onnx"
        defer { if dir == nil { _ = unlink(path) } }
        try torch.onnx.export(model, x, path, inputNames: ["input"], outputNames: ["output"],
                              dynamicAxes: ["input": [0: "batch"], "output": [0: "batch"]])
        let y = try onnx.load(path).run(["input": x])["output"]!
        guard y.shape == ref.shape else { return "shape \(y.shape) vs \(ref.shape)" }
        let a = y.toArray(as: Double.self), b = ref.toArray(as: Double.self)
        var worst = 0.0
        for i in a.indices where !(Swift.abs(a[i] - b[i]) <= 1e-4 + 1e-3 * Swift.abs(b[i])) {
            worst = Swift.max(worst, Swift.abs(a[i] - b[i]))
        }
        if let dir {
            // The reference at batch 1 and 5 as well, for ONNX Runtime (the file's batch is symbolic).
            let rest = Array(x.shape.dropFirst())
            for (tag, input) in [("b2", x), ("b1", torch.randn([1] + rest)), ("b5", torch.randn([5] + rest))] {
                try npy(input, dir + "/\(name).\(tag).in.input.npy")
                try npy(input === x ? ref : torch.noGrad { model(input) }, dir + "/\(name).\(tag).out.output.npy")
            }
        }
        return worst > 0 ? "max abs diff \(worst) over tolerance" : nil
    }

    private func npy(_ t: Tensor, _ path: String) throws {
        let shape = t.shape.map(String.init).joined(separator: ", ") + (t.dim == 1 ? "," : "")
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(shape)), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        var bytes: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)]
        bytes += Array(header.utf8)
        t.detach().contiguous().to(.float32).toArray(as: Float.self).withUnsafeBytes { bytes += $0 }
        try AtomicFile.write(bytes, to: path)
    }
}
