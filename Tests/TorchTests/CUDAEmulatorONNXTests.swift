import XCTest
@testable import Torch

/// `onnx.load(...).to(.cuda)`: PyTorch's exports of the seed CNNs and the MLP run on the emulated GPU (weights moved
/// by `ONNXModel.to`, the input on the device) and give the CPU's output, for both of PyTorch's exporters.
final class CUDAEmulatorONNXTests: CUDAEmulatorTestCase {
    private func check(_ model: String) throws {
        let dir = ONNXPyTorchFixtureTests.folder.appendingPathComponent(model).path
        let (inputName, x) = try onnx.loadTensor(dir + "/input_0.pb")
        for exporter in ONNXPyTorchFixtureTests.exporters {
            let path = "\(dir)/\(exporter).onnx"
            assertSameOnBothDevices("\(model) \(exporter)", tol: 1e-5) { device in
                let m = try! onnx.load(path).to(device)
                return [try! m.run([inputName: x.to(device)])[m.outputNames[0]]!]
            }
        }
    }

    func testLeNet5() throws { try check("lenet5") }
    func testConvNet() throws { try check("conv_net") }
    func testMLPWithBatchNorm() throws { try check("mlp") }
    func testLSTMLanguageModel() throws { try check("lstm_lm") }
    func testGRULanguageModel() throws { try check("gru_lm") }
}
