// Three networks trained and saved by real torch 2.15 (scripts/fixtures/saveload_models.py): the
// same architectures built from SwiftTorch's layers load the files with
// `try model.loadStateDict(torch.load(path))` and reproduce PyTorch's eval-mode outputs.

import Foundation
import XCTest
@testable import Torch
import TutorialModels

/// PyTorch's `LSTMClassifier`: Embedding → 2-layer bidirectional LSTM → Linear on the last step.
private final class LSTMClassifier: nn.Module {
    let embedding = nn.Embedding(20, 8, paddingIdx: 0)
    let lstm = nn.LSTM(8, 12, numLayers: 2, batchFirst: true, dropout: 0.25, bidirectional: true)
    let hiddenToTag = nn.Linear(24, 4)   // PyTorch's `hidden_to_tag`
    override func forward(_ x: Tensor) -> Tensor {
        let (out, _) = lstm(embedding(x))
        return hiddenToTag(out.select(1, -1))
    }
}


final class CheckpointModelFixtureTests: XCTestCase {
    /// Loads `<name>.pt` into `model`, checks the key order against PyTorch's, switches to eval
    /// mode and compares the output on the saved input.
    private func check(_ name: String, _ model: nn.Module, atol: Double = 1e-5, rtol: Double = 1e-6,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let c = try XCTUnwrap(loadFixtureCases("saveload_models").first { $0["name"] as? String == name })
        let path = saveLoadFixtures.appendingPathComponent(c["file"] as! String).path
        let (missing, unexpected) = try model.loadStateDict(torch.load(path))
        XCTAssertEqual(missing, [], file: file, line: line)
        XCTAssertEqual(unexpected, [], file: file, line: line)
        XCTAssertEqual(model.stateDict().keys.count, (c["keys"] as! [String]).count, file: file, line: line)
        // Every loaded entry equals the file's bits (buffers too: running stats, num_batches_tracked).
        let saved = try torch.load(path).stateDict()
        let mine = model.stateDict()
        for (k, v) in zip(saved.keys, saved.values) {
            let key = mine.keys.first { $0 == k || $0 == snakeToCamelKey(k) }
            guard let key, let t = mine[key] else { XCTFail("no entry for \(k)", file: file, line: line); continue }
            assertIdentical(t.detach(), v, k, file: file, line: line)
        }
        model.eval()
        let io = try torch.load(saveLoadFixtures.appendingPathComponent(c["io_file"] as! String).path)
        let x = try XCTUnwrap(io["input"]?.tensorValue), expected = try XCTUnwrap(io["output"]?.tensorValue)
        let y = torch.noGrad { model(x) }
        assertClose(y, expected, atol: atol, rtol: rtol, file: file, line: line)
        assertClose(y.narrow(0, 0, 2), fixtureTensor(c["output_head"]!), atol: atol, rtol: rtol, file: file, line: line)
    }

    /// `lstm.weight_ih_l0` stays as is, `hidden_to_tag.weight` → `hiddenToTag.weight`.
    private func snakeToCamelKey(_ k: String) -> String {
        k.split(separator: ".", omittingEmptySubsequences: false).map { part -> String in
            let words = part.split(separator: "_", omittingEmptySubsequences: false)
            return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
        }.joined(separator: ".")
    }

    func testMLPWithBatchNormAndDropout() throws {
        torch.manualSeed(0)
        let model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(p: 0.3),
                                  nn.Linear(16, 8), nn.BatchNorm1d(8, momentum: 0.2), nn.ReLU(), nn.Dropout(p: 0.2),
                                  nn.Linear(8, 3))
        try check("mlp_bn_dropout", model)
        // The running statistics are the trained ones, not the initial zeros/ones.
        let bn = model[1] as! nn.BatchNorm1d
        XCTAssertGreaterThan(bn.runningMean!.abs().sum().item(), 0.1)
        XCTAssertEqual(bn.numBatchesTracked!.item(), 5)
    }

    func testBidirectionalLSTMClassifier() throws {
        torch.manualSeed(0)
        try check("lstm_classifier", LSTMClassifier())
    }

    func testTutorialMLPAfterOneEpoch() throws {
        torch.manualSeed(0)
        let model = TutorialMLP(28 * 28, 300, 100, 10)
        try check("fashion_mnist_mlp", model)
        let c = try XCTUnwrap(loadFixtureCases("saveload_models").first { $0["name"] as? String == "fashion_mnist_mlp" })
        let io = try torch.load(saveLoadFixtures.appendingPathComponent(c["io_file"] as! String).path)
        let (_, pred) = torch.noGrad { model(io["input"]!.tensorValue!) }.max(dim: 1)
        // A model trained for one epoch (79.5% test accuracy) gets most of these 16 images right.
        let labels = c["labels"] as! [Int]
        let correct = zip(pred.toArray(as: Int64.self), labels).filter { Int($0) == $1 }.count
        XCTAssertGreaterThanOrEqual(correct, 10)
    }
}
