import XCTest
@testable import Torch
import TutorialModels

/// `summary(model, [2])` prints exactly what torchsummary 1.5.1 prints (fixtures from
/// scripts/fixtures/summary.py).
final class SummaryTests: XCTestCase {
    private func expected(_ name: String) throws -> (text: String, input: [Int], batch: Int) {
        let c = try XCTUnwrap(loadFixtureCases("summary").first { $0["name"] as? String == name }, name)
        return (c["text"] as! String, c["input"] as! [Int], c["batch_size"] as? Int ?? -1)
    }

    private func check(_ name: String, _ model: nn.Module, file: StaticString = #filePath, line: UInt = #line) throws {
        let e = try expected(name)
        let text = summary(model, e.input, batchSize: e.batch, printed: false)
        XCTAssertEqual(text, e.text, name, file: file, line: line)
        if text != e.text { print(text) }
    }

    func testTutorial002Sequential() throws {
        let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
        try check("tutorial002", model)
        try check("tutorial002_batch16", model)
        XCTAssertEqual(summary(model, inputSize: [2], printed: false), try expected("tutorial002").text)
        XCTAssertEqual(utils.summary(model, [2], printed: false), try expected("tutorial002").text)
    }

    func testFrozenWeightCountsAsNonTrainable() throws {
        let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
        (model[0] as! nn.Linear).weight.requiresGrad = false
        try check("frozen", model)
    }

    func testTutorial000MLP() throws {
        try check("mlp", TutorialMLP(784, 300, 100, 10))
    }

    func testConvNets() throws {
        try check("fashion_cnn", FashionCNN())
        try check("lenet5", TutorialLeNet5())
    }

    func testHooksAreRemovedAfterwards() throws {
        let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU())
        _ = summary(model, [2], printed: false)
        // A second run numbers from 1 again: no hook of the first run is left behind.
        XCTAssertTrue(summary(model, [2], printed: false).contains("Linear-1"))
        XCTAssertFalse(summary(model, [2], printed: false).contains("Linear-3"))
    }

    func testNumberFormatting() {
        XCTAssertEqual(groupedThousands(0), "0")
        XCTAssertEqual(groupedThousands(999), "999")
        XCTAssertEqual(groupedThousands(1000), "1,000")
        XCTAssertEqual(groupedThousands(11_689_512), "11,689,512")
        XCTAssertEqual(groupedThousands(-1234), "-1,234")
    }
}
