// ONNX inference (issue 35): a model file through onnx.load, timed as `resnet18_fwd` times the module itself.
// scripts/bench-onnx-resnet18 runs both next to ONNX Runtime on the same file; PyTorch has no twin here.
import Foundation
import Torch
import TorchVision

/// An ONNX file run by SwiftTorch on one 3×224×224 image under noGrad (ms): the file `SWIFTTORCH_BENCH_ONNX_FILE`
/// names (scripts/bench-onnx-resnet18 writes a PyTorch-exported ResNet-18 there), else models.resnet18() written
/// by SwiftTorch's own `torch.onnx.export` into a temporary file.
func onnxFileForwardCase(_ s: BenchSettings) -> BenchResult {
    var path = ProcessInfo.processInfo.environment["SWIFTTORCH_BENCH_ONNX_FILE"] ?? ""
    var temporary: String?
    if path.isEmpty {
        path = PathString.temporaryDirectory() + "/swifttorch-bench-resnet18-\(getpid()).onnx"
        temporary = path
        do {
            try torch.onnx.export(models.resnet18().eval(), torch.randn(1, 3, 224, 224), path,
                                  inputNames: ["input"], outputNames: ["output"])
        } catch {
            return .skip("cannot export models.resnet18(): \(error)")
        }
    }
    defer { if let temporary { unlink(temporary) } }
    let model: ONNXModel
    do { model = try onnx.load(path) } catch { return .skip("\(path): \(error)") }
    guard model.inputNames.count == 1, model.outputNames.count == 1 else {
        return .skip("\(path): the model has \(model.inputNames.count) inputs and \(model.outputNames.count) outputs (1 and 1 needed)")
    }
    let x = torch.randn(1, 3, 224, 224)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(model(x)) }
    }
    return .millis(t)
}

func registerONNXCases() {
    register("onnx_file_fwd", "an ONNX ResNet-18 through onnx.load, batch 1 of 3x224x224 ($SWIFTTORCH_BENCH_ONNX_FILE, "
             + "else models.resnet18() exported by SwiftTorch) (ms)", onnxFileForwardCase)
}
