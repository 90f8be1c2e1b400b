// nn.Module state dicts through files: the Rosetta lines of docs/architecture.md §1
// `try torch.save(mynet.stateDict(), "mymodel.pth")` and
// `try mynet.loadStateDict(torch.load("mymodel.pth"))`, with a network saved by PyTorch.

import Foundation
import XCTest
@testable import Torch

private final class MyNeuralNet: nn.Module {
    let inputToHiddenLayer = nn.Linear(2, 8)
    let hiddenLayerActivation = nn.ReLU()
    let hiddenToOutputLayer = nn.Linear(8, 1)
    override func forward(_ x: Tensor) -> Tensor {
        hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
    }
}

final class ModuleCheckpointTests: XCTestCase {
    /// A PyTorch-saved state dict (snake_case keys) loads into the camelCase Swift network and
    /// reproduces PyTorch's outputs.
    func testLoadTorchSavedNetwork() throws {
        let c = try XCTUnwrap(loadFixtureCases("saveload").first { $0["name"] as? String == "mynet" })
        let mynet = MyNeuralNet()
        try mynet.loadStateDict(torch.load(saveLoadFixtures.appendingPathComponent(c["file"] as! String).path))
        assertClose(mynet(fixtureTensor(c["input"]!)), fixtureTensor(c["output"]!), atol: 1e-5, rtol: 1e-5)
    }

    func testRosettaSaveThenLoad() throws {
        let path = try makeTemporaryFolder(self).appendingPathComponent("mymodel.pth").path
        let mynet = MyNeuralNet()
        let x = torch.tensor([[10, 11]]).float()
        try torch.save(mynet.stateDict(), path)
        let other = MyNeuralNet()
        try other.loadStateDict(torch.load(path))
        assertIdentical(other(x), mynet(x))
        // A checkpoint dictionary holding the state dict, the optimizer and the epoch.
        let opt = optim.SGD(mynet.parameters(), lr: 0.01, momentum: 0.9)
        opt.zeroGrad()
        mynet(x).sum().backward()
        opt.step()
        try torch.save(["epoch": 1, "model_state_dict": StateValue(mynet.stateDict()),
                        "optimizer_state_dict": opt.stateDict()], path)
        let ck = try torch.load(path)
        let third = MyNeuralNet()
        try third.loadStateDict(XCTUnwrap(ck["model_state_dict"]))
        let opt3 = optim.SGD(third.parameters(), lr: 0.01, momentum: 0.9)
        try opt3.loadStateDict(XCTUnwrap(ck["optimizer_state_dict"]))
        assertIdentical(third(x), mynet(x))
        XCTAssertEqual(try XCTUnwrap(ck["model_state_dict"]).stateDict().keys, mynet.stateDict().keys)
        XCTAssertThrowsError(try third.loadStateDict(ck), "a checkpoint dictionary is not a state dict")
    }
}
