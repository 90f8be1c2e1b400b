import XCTest
@testable import Torch

/// `nn.DataParallel` without CUDA: PyTorch's passthrough (the module runs as it is) and the `module.` prefix of
/// its state dict. The multi-device behaviour is in `CUDAEmulatorDataParallelTests`.
final class DataParallelTests: XCTestCase {
    func testWithoutCUDAItRunsTheModule() throws {
        if torch.cuda.isAvailable() {
            throw XCTSkip("CUDA is available in this process (\(torch.cuda.deviceCount()) device(s)); "
                          + "the passthrough is for machines without it")
        }
        torch.manualSeed(1)
        let lin = nn.Linear(3, 2)
        let model = nn.DataParallel(lin)
        XCTAssertTrue(model.module === lin)
        XCTAssertEqual(model.deviceIds, [])
        XCTAssertNil(model.outputDevice)
        let x = torch.randn(4, 3)
        let y = model(x)
        XCTAssertEqual(y.device, .cpu)
        XCTAssertEqual(y.toArray(as: Float.self), lin(x).toArray(as: Float.self))
        y.sum().backward()
        XCTAssertEqual(lin.bias?.grad?.toArray(as: Float.self), [4, 4])
        XCTAssertEqual(model.parameters().count, 2)

        // Keys as PyTorch saves a DataParallel model, and loading them back into one.
        let sd = model.stateDict()
        XCTAssertEqual(Array(sd.keys), ["module.weight", "module.bias"])
        torch.manualSeed(2)
        let other = nn.DataParallel(nn.Linear(3, 2))
        try other.loadStateDict(sd)
        XCTAssertEqual(other.module.stateDict()["weight"]?.toArray(as: Float.self), lin.weight.toArray(as: Float.self))
        // The unwrapped module's own keys, as `model.module.state_dict()` in PyTorch.
        XCTAssertEqual(Array(model.module.stateDict().keys), ["weight", "bias"])
        XCTAssertEqual(model.description, "DataParallel(\n  (module): Linear(in_features=3, out_features=2, bias=True)\n)")
    }
}
