import Torch

/// ONNX models on the GPU (issue 35): PyTorch's exports of the seed models in `Tests/Fixtures/onnx/pytorch/` (CNNs,
/// the MLP with BatchNorm, the LSTM and GRU language models; TorchScript and dynamo files) loaded with `onnx.load`,
/// moved with `.to(cuda)`, run on a device copy of the fixture's input, and compared with the same file on the CPU
/// and with PyTorch's output stored beside it. Run from the project root; without the fixtures one line says so.
func runONNXChecks() {
    let root = "Tests/Fixtures/onnx/pytorch"
    let models = ["lenet5", "conv_net", "mlp", "two_layer_net", "adder", "lstm_lm", "gru_lm"]
    guard PathString.isDirectory(root) else {
        return print("SKIP onnx: \(root) not found (run cuda-check from the project root)")
    }
    for model in models {
        for exporter in ["torchscript", "dynamo"] {
            let name = "onnx \(model) \(exporter)"
            do {
                let (inputName, x) = try onnx.loadTensor("\(root)/\(model)/input_0.pb")
                let (_, expected) = try onnx.loadTensor("\(root)/\(model)/output_0.pb")
                let cpuModel = try onnx.load("\(root)/\(model)/\(exporter).onnx")
                let gpuModel = try onnx.load("\(root)/\(model)/\(exporter).onnx").to(cuda)
                let output = cpuModel.outputNames[0]
                let onCPU = try torch.noGrad { try cpuModel.run([inputName: x])[output]! }
                let onGPU = try torch.noGrad { try gpuModel.run([inputName: x.to(cuda)])[output]! }
                // PyTorch's rule for the seed models' files: max abs diff ≤ 1e-4 + 1e-3·|ref|.
                let worst = (onGPU.cpu() - expected).abs() - (expected.abs() * 1e-3 + 1e-4)
                guard worst.max().item() <= 0 else {
                    report(name + " vs PyTorch", false, "max excess over 1e-4 + 1e-3·|ref|: \(worst.max().item())")
                    continue
                }
                check(name + " GPU vs CPU", tol: 1e-4, { onGPU }, { onCPU })
            } catch {
                report(name, false, "\(error)")
            }
        }
    }
}
