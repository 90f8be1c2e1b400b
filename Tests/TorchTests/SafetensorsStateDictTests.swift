import XCTest
@testable import Torch

/// `safetensors.saveFile(model.stateDict(), path)` / `model.loadStateDict(safetensors.loadFile(path))`
/// as written in Python, next to the older array-of-pairs form.
final class SafetensorsStateDictTests: XCTestCase {
    func testStateDictRoundTripAsInPython() throws {
        let dir = try makeTemporaryFolder(self)
        let path = dir.appendingPathComponent("model.safetensors").path
        torch.manualSeed(0)
        let model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        try safetensors.saveFile(model.stateDict(), path)
        let other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        try other.loadStateDict(safetensors.loadFile(path))
        let x = torch.randn(5, 3)
        XCTAssertEqual(other(x).toArray(as: Float.self), model(x).toArray(as: Float.self))
        XCTAssertEqual(try safetensors.loadFile(path).map { $0.0 }, ["0.bias", "0.weight", "2.bias", "2.weight"])
        // The dictionary, state-dict and pair forms write the same bytes.
        let sd = model.stateDict()
        let pairs = sd.map { ($0.key, $0.value) }
        var dict: [String: Tensor] = [:]
        for (k, v) in pairs { dict[k] = v }
        let a = try safetensors.save(sd), b = try safetensors.save(pairs), c = try safetensors.save(dict)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a, c)
        let dictPath = dir.appendingPathComponent("dict.safetensors").path
        try safetensors.saveFile(dict, dictPath)
        XCTAssertEqual(try safetensors.loadFile(dictPath).count, 4)
    }
}
