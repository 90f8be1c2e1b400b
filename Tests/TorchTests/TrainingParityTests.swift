import Foundation
import XCTest
@testable import Torch
import TutorialModels

/// Whole training runs against PyTorch (issue 3, "Correctness"): tutorial 002's add-two-numbers network
/// and the first 20 steps of tutorial 000's MLP reproduce PyTorch's loss history within 1e-4 relative.
/// Golden values: scripts/fixtures/training.py → Tests/Fixtures/training.json.
final class TrainingParityTests: XCTestCase {
    private func fixture(_ name: String) throws -> [String: Any] {
        try XCTUnwrap(loadFixtureCases("training").first { $0["name"] as? String == name }, "fixture case \(name)")
    }

    /// Relative comparison of two loss histories, reporting the first step that differs.
    private func assertLosses(_ actual: [Double], _ expected: [Double], rtol: Double, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(actual.count, expected.count, "\(what): number of steps", file: file, line: line)
        for (i, (a, e)) in zip(actual, expected).enumerated() where !(Swift.abs(a - e) <= rtol * Swift.abs(e)) {
            XCTFail("\(what): step \(i) loss \(a) vs PyTorch \(e) (rtol \(rtol))", file: file, line: line)
            return
        }
    }

    private func stateDict(_ encoded: Any) -> OrderedDict<Tensor> {
        // JSON objects lose their order; loadStateDict matches by key, so order does not matter here.
        OrderedDict((encoded as! [String: Any]).map { ($0.key, fixtureTensor($0.value)) })
    }

    private func camelCase(_ key: String) -> String {
        key.split(separator: ".").map { part in
            let words = part.split(separator: "_")
            return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
        }.joined(separator: ".")
    }

    // MARK: - Tutorial 002: add two numbers

    final class MyNeuralNet: nn.Module {
        let inputToHiddenLayer = nn.Linear(2, 8)
        let hiddenLayerActivation = nn.ReLU()
        let hiddenToOutputLayer = nn.Linear(8, 1)
        override func forward(_ x: Tensor) -> Tensor {
            hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
        }
    }

    private func checkAddTwoNumbers(_ kind: String) throws {
        let c = try fixture("add_two_numbers_\(kind)")
        let net = MyNeuralNet()
        try net.loadStateDict(stateDict(c["initial"]!))
        let X = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]]).float()
        let Y = torch.tensor([[3], [7], [11], [15]]).float()
        let lossFunc = nn.MSELoss()
        let opt = optim.SGD(net.parameters(), lr: 0.001)
        var batches: [(Tensor, Tensor)] = []
        if kind == "full_batch" {
            batches = Array(repeating: (X, Y), count: 50)
        } else {
            let dl = DataLoader(TensorDataset(X, Y), batchSize: 2, shuffle: false)
            for _ in 0..<50 { for (x, y) in dl { batches.append((x, y)) } }
        }
        var lossHistory: [Double] = []
        for (x, y) in batches {
            opt.zeroGrad()
            let lossValue = lossFunc(net(x), y)
            lossValue.backward()
            opt.step()
            lossHistory.append(lossValue.item())
        }
        assertLosses(lossHistory, c["losses"] as! [Double], rtol: 1e-4, "add_two_numbers \(kind)")
        // PyTorch's keys are snake_case (input_to_hidden_layer.weight), the Swift properties camelCase.
        let final = c["final"] as! [String: Any]
        let sd = net.stateDict()
        XCTAssertEqual(sd.count, final.count)
        for (name, expected) in final {
            let value = try XCTUnwrap(sd[camelCase(name)], "no \(name) in the Swift state dict \(sd.keys)")
            assertMatches(value, expected, tol: Tolerance(atol: 1e-5, rtol: 1e-4), "final \(name)")
        }
        assertMatches(net(torch.tensor([[10.0, 11.0]]).float()).detach(), c["prediction_10_11"]!,
                      tol: Tolerance(atol: 1e-4, rtol: 1e-4), "prediction on [[10, 11]]")
    }

    func testAddTwoNumbersFullBatchMatchesPyTorch() throws { try checkAddTwoNumbers("full_batch") }

    func testAddTwoNumbersDataLoaderMatchesPyTorch() throws { try checkAddTwoNumbers("dataloader") }

    // MARK: - Tutorial 000: the MLP's first 20 steps

    /// The checksums scripts/fixtures/training.py's `checksum` stores: sum, sum of |x|, a
    /// position-weighted sum and the first values, all in float64.
    private func assertChecksum(_ t: Tensor, _ expected: Any, rtol: Double, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        let e = expected as! [String: Any]
        XCTAssertEqual(t.shape, e["shape"] as! [Int], "\(what): shape", file: file, line: line)
        let v = t.detach().toArray(as: Double.self)
        let n = Double(Swift.max(1, v.count))
        var sum = 0.0, absSum = 0.0, weighted = 0.0
        for (i, x) in v.enumerated() { sum += x; absSum += Swift.abs(x); weighted += x * (Double(i) / n) }
        // Sums cancel, so they are compared relative to the sum of magnitudes.
        let scale = Swift.max(absSum, 1e-30)
        XCTAssertEqual(absSum, e["abs_sum"] as! Double, accuracy: rtol * scale, "\(what): sum of |x|", file: file, line: line)
        XCTAssertEqual(sum, e["sum"] as! Double, accuracy: rtol * scale, "\(what): sum", file: file, line: line)
        XCTAssertEqual(weighted, e["weighted_sum"] as! Double, accuracy: rtol * scale, "\(what): weighted sum", file: file, line: line)
        for (i, h) in (e["head"] as! [Double]).enumerated() {
            XCTAssertEqual(v[i], h, accuracy: 1e-5 + rtol * Swift.abs(h), "\(what): element \(i)", file: file, line: line)
        }
    }

    func testMLPFirst20StepsMatchPyTorch() throws {
        let c = try fixture("mlp_20_steps")
        let steps = c["steps"] as! Int, batch = c["batch"] as! Int
        // Initial weights: the constructor after manualSeed(0) draws PyTorch's exact uniform samples.
        torch.manualSeed(0)
        let model = TutorialMLP(28 * 28, 300, 100, 10)
        let initial = c["initial"] as! [String: Any]
        for (name, value) in model.stateDict() where value.dtype.isFloatingPoint {
            assertChecksum(value, initial[name]!, rtol: 1e-12, "initial \(name)")
        }
        torch.manualSeed(1)
        let xs = torch.rand(steps, batch, 28 * 28) * 2 - 1
        assertChecksum(xs, c["inputs"]!, rtol: 1e-12, "inputs")
        let labels = fixtureTensor(c["labels"]!)
        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)
        model.train()
        var losses: [Double] = [], correct: [Int] = []
        for i in 0..<steps {
            let label = labels[i]
            let out = model(xs[i])
            let loss = criterion(out, label)
            optimizer.zeroGrad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            let (_, pred) = out.max(dim: 1)
            correct.append(Int((pred .== label).sum().item()))
        }
        assertLosses(losses, c["losses"] as! [Double], rtol: 1e-4, "MLP")
        assertLosses(losses, c["losses_float64"] as! [Double], rtol: 1e-4, "MLP against PyTorch's float64 run")
        XCTAssertEqual(correct, c["correct"] as! [Int], "correct predictions per step")

        // Final state: within 3× float32's own rounding noise (PyTorch's float32 run against its float64 run,
        // measured per tensor by the fixture script), plus a float32 ulp-sized floor.
        let final = c["final"] as! [String: Any]
        let sd = model.stateDict()
        XCTAssertEqual(Set(sd.keys), Set(final.keys))
        for (name, value) in sd {
            let e = final[name] as! [String: Any]
            if let v = e["value"] as? Int {
                XCTAssertEqual(Int(value.item()), v, name)
                continue
            }
            let tol = Tolerance(atol: 3 * (e["noise"] as! Double) + 1e-7, rtol: 1e-6)
            if let t = e["tensor"] {
                assertMatches(value, t, tol: tol, "final \(name)")
            } else {
                assertChecksum(value, e["checksum"]!, rtol: 1e-4, "final \(name)")
                assertMatches(value.slice(0, start: 0, end: value.size(0), step: 75).contiguous(), e["rows"]!,
                              tol: tol, "final \(name) every 75th row")
            }
        }
        model.eval()
        let evalOut = torch.noGrad { model(xs[0].narrow(0, 0, 8)) }
        assertMatches(evalOut, c["eval_out"]!, tol: Tolerance(atol: 3 * (c["eval_noise"] as! Double) + 1e-6, rtol: 1e-6),
                      "eval-mode output")
    }
}
