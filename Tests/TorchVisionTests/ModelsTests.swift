import XCTest
import Foundation
@testable import TorchVision
@testable import Torch

private let fixtureDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// Cases of Tests/Fixtures/models.json (written by scripts/fixtures/models.py).
private func modelCases() throws -> [[String: Any]] {
    let data = try Data(contentsOf: fixtureDir.appendingPathComponent("models.json"))
    return (try JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
}

/// The builder of each fixture model, under torchvision's function name.
private let builders: [String: () -> nn.Module] = [
    "resnet18": { models.resnet18() },
    "resnet34": { models.resnet34() },
    "resnet50": { models.resnet50() },
    "resnet101": { models.resnet101() },
    "resnet152": { models.resnet152() },
    "resnext50_32x4d": { models.resnext50_32x4d() },
    "wide_resnet50_2": { models.wideResnet50_2() },
    "lenet5": { models.lenet5() },
    "alexnet": { models.alexnet() },
    "vgg11": { models.vgg11() }, "vgg11_bn": { models.vgg11Bn() },
    "vgg13": { models.vgg13() }, "vgg13_bn": { models.vgg13Bn() },
    "vgg16": { models.vgg16() }, "vgg16_bn": { models.vgg16Bn() },
    "vgg19": { models.vgg19() }, "vgg19_bn": { models.vgg19Bn() },
    "mobilenet_v2": { models.mobilenetV2() },
    "squeezenet1_0": { models.squeezenet1_0() },
    "squeezenet1_1": { models.squeezenet1_1() },
    "densenet121": { models.densenet121() },
    "mobilenet_v3_small": { models.mobilenetV3Small() },
    "mobilenet_v3_large": { models.mobilenetV3Large() },
    "shufflenet_v2_x1_0": { models.shufflenetV2_x1_0() },
    "mnasnet1_0": { models.mnasnet1_0() },
    "googlenet": { models.googlenet() },
    "efficientnet_b0": { models.efficientnetB0() },
]

/// Models with more parameters than this take minutes to build in a debug build (random init of
/// every weight), so their key/shape check runs only with SWIFTTORCH_SLOW_TESTS=1.
private let largeModelParameters = 15_000_000

/// The fixture script's `fill`: deterministic contents for every floating state-dict tensor.
private func fill(_ model: nn.Module) {
    for (k, (name, t)) in model.stateDict().items.map({ ($0.key, $0.value) }).enumerated() {
        guard t.dtype == .float32 else { continue }
        precondition(t.isContiguous)
        let leaf = name.split(separator: ".").last.map(String.init) ?? name
        let n = t.numel
        let p = t.pointer(Float.self)
        let fanScale = t.dim >= 2 ? (4.0 / Double(n / t.shape[0])).squareRoot() : 0
        for i in 0..<n {
            let s = sin(Double(i) * 0.37 + Double(k))
            let v: Double
            if leaf == "running_var" { v = 1 + 0.1 * abs(s) }
            else if leaf == "weight" && t.dim >= 2 { v = s * fanScale }
            else if leaf == "weight" { v = 1 + 0.1 * s }
            else { v = 0.1 * s }
            p[i] = Float(v)
        }
        t.storage.bumpVersion()
    }
}

/// x[i] = sin(0.05 i + 0.3), row-major.
private func modelInput(_ shape: [Int]) -> Tensor {
    let n = shape.reduce(1, *)
    let t = torch.empty(shape)
    let p = t.pointer(Float.self)
    for i in 0..<n { p[i] = Float(sin(Double(i) * 0.05 + 0.3)) }
    return t
}

private func decode(_ any: Any) -> (shape: [Int], data: [Double]) {
    let d = any as! [String: Any]
    return (d["shape"] as! [Int], (d["data"] as! [Any]).map { ($0 as! NSNumber).doubleValue })
}

final class ModelsTests: XCTestCase {
    /// Checks the state-dict keys (in order), shapes and parameter count of each fixture model `include` selects.
    private func checkKeysAndShapes(_ include: (Int) -> Bool) throws -> Int {
        let cases = try modelCases().filter { $0["kind"] as? String == "keys" }
        var checked = 0
        for c in cases where include(c["parameters"] as! Int) {
            let name = c["model"] as! String
            guard let make = builders[name] else { XCTFail("no builder for fixture model \(name)"); continue }
            let model = make()
            let expected = (c["keys"] as! [[Any]]).map { ($0[0] as! String, $0[1] as! [Int]) }
            let sd = model.stateDict()
            XCTAssertEqual(sd.keys, expected.map { $0.0 }, "\(name): state-dict keys")
            for (k, shape) in expected {
                XCTAssertEqual(sd[k]?.shape, shape, "\(name): shape of \(k)")
            }
            let count = model.parameters().reduce(0) { $0 + $1.numel }
            XCTAssertEqual(count, c["parameters"] as! Int, "\(name): parameter count")
            checked += 1
        }
        return checked
    }

    /// Every fixture model up to 15M parameters has torchvision's state-dict keys, in torchvision's
    /// order, with its shapes; the parameter count matches too. Every fixture model has a builder.
    func testStateDictKeysAndShapesMatchTorchvision() throws {
        let names = try modelCases().filter { $0["kind"] as? String == "keys" }.map { $0["model"] as! String }
        XCTAssertEqual(Set(names), Set(builders.keys))
        XCTAssertGreaterThanOrEqual(try checkKeysAndShapes { $0 <= largeModelParameters }, 5)
    }

    /// The same for the models over 15M parameters (ResNet-34 and up, AlexNet, VGG): minutes
    /// in a debug build, so only with SWIFTTORCH_SLOW_TESTS=1.
    func testLargeModelsStateDictKeysAndShapesMatchTorchvision() throws {
        guard ProcessInfo.processInfo.environment["SWIFTTORCH_SLOW_TESTS"] == "1" else {
            throw XCTSkip("set SWIFTTORCH_SLOW_TESTS=1 to build the models over 15M parameters")
        }
        XCTAssertGreaterThanOrEqual(try checkKeysAndShapes { $0 > largeModelParameters }, 5)
    }

    /// Eval-mode outputs equal torchvision's after the same deterministic fill of every tensor.
    func testEvalOutputsMatchTorchvision() throws {
        let cases = try modelCases().filter { $0["kind"] as? String == "output" }
        XCTAssertFalse(cases.isEmpty)
        for c in cases {
            let name = c["model"] as! String
            let model = builders[name]!()
            fill(model)
            model.eval()
            let y = torch.noGrad { model(modelInput(c["input_shape"] as! [Int])) }
            let (shape, want) = decode(c["output"]!)
            XCTAssertEqual(y.shape, shape, name)
            let got = y.contiguous().toArray(as: Float.self).map(Double.init)
            let scale = want.map(abs).max() ?? 1
            var worst = 0.0
            for (g, w) in zip(got, want) { worst = max(worst, abs(g - w) / (1e-3 * (abs(w) + 0.01 * scale))) }
            XCTAssertLessThanOrEqual(worst, 1, "\(name): outputs differ from torchvision beyond 1e-3 relative")
        }
    }

    /// `print(model)` shows torchvision's module tree.
    func testReprMatchesTorchvision() throws {
        let cases = try modelCases().filter { $0["kind"] as? String == "repr" }
        XCTAssertFalse(cases.isEmpty)
        for c in cases {
            let name = c["model"] as! String
            let got = builders[name]!().description
            let want = c["repr"] as! String
            if got != want {
                let g = got.split(separator: "\n", omittingEmptySubsequences: false)
                let w = want.split(separator: "\n", omittingEmptySubsequences: false)
                let i = (0..<Swift.min(g.count, w.count)).first { g[$0] != w[$0] } ?? Swift.min(g.count, w.count)
                XCTFail("\(name): repr differs at line \(i + 1): got `\(i < g.count ? g[i] : "<end>")`, torchvision `\(i < w.count ? w[i] : "<end>")`")
            }
        }
    }

    /// Tutorial 001: `model.fc = nn.Linear(512, 10)` replaces the head; the state dict and outputs follow.
    func testReplacingTheClassifierUpdatesStateDict() {
        let model = models.resnet18()
        model.fc = nn.Linear(512, 10)
        let sd = model.stateDict()
        XCTAssertEqual(sd["fc.weight"]?.shape, [10, 512])
        XCTAssertEqual(sd["fc.bias"]?.shape, [10])
        XCTAssertEqual(sd.keys.last, "fc.bias")
        XCTAssertTrue(model.parameters().contains { $0 === (model.fc as! nn.Linear).weight })
        let y = torch.noGrad { model.eval()(torch.randn(2, 3, 32, 32)) }
        XCTAssertEqual(y.shape, [2, 10])

        let lenet = models.LeNet5()
        lenet.classifier = nn.Sequential(nn.Linear(400, 5))
        XCTAssertEqual(lenet.stateDict().keys.suffix(2), ["classifier.0.weight", "classifier.0.bias"])
        XCTAssertEqual(lenet(torch.randn(1, 3, 32, 32)).shape, [1, 5])
    }

    /// `nn.SyncBatchNorm.convertSyncBatchnorm` reaches every BatchNorm of torchvision's architectures
    /// (stored properties, Sequentials, arrays, registered blocks) and keeps the state dict and repr.
    func testConvertSyncBatchnormReplacesEveryBatchNormOfTheModels() {
        for name in ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0", "mnasnet1_0", "efficientnet_b0",
                     "densenet121"] {
            let model = builders[name]!()
            let keys = model.stateDict().keys
            let repr = model.description
            let count = model.modules().filter { $0 is nn.BatchNormBase }.count
            XCTAssertGreaterThan(count, 0, name)
            XCTAssertTrue(nn.SyncBatchNorm.convertSyncBatchnorm(model) === model, name)
            XCTAssertEqual(model.modules().filter { $0 is nn.SyncBatchNorm }.count, count, name)
            XCTAssertFalse(model.modules().contains { $0 is nn.BatchNorm2d }, name)
            XCTAssertEqual(model.stateDict().keys, keys, name)
            XCTAssertEqual(model.description, repr.replacingOccurrences(of: "BatchNorm2d(", with: "SyncBatchNorm("), name)
        }
    }

    /// torchvision's initialisation: conv weights kaiming-normal with fan-out (std √(2/fanOut)),
    /// BN ones/zeros, and `zeroInitResidual` zeroing the last BN of each block.
    func testResNetInitialisation() {
        torch.manualSeed(0)
        let model = models.ResNet(block: models.Bottleneck.self, layers: [1, 1, 1, 1], numClasses: 10,
                                  zeroInitResidual: true)
        let w = (model.conv1 as! nn.Conv2d).weight
        let std = w.std().item()
        XCTAssertEqual(std, (2.0 / Double(64 * 49)).squareRoot(), accuracy: 0.01)
        let bn = model.bn1 as! nn.BatchNorm2d
        XCTAssertEqual(bn.weight!.sum().item(), 64)
        XCTAssertEqual(bn.bias!.abs().sum().item(), 0)
        let block = (model.layer1 as! nn.Sequential)[0] as! models.Bottleneck
        XCTAssertEqual((block.bn3 as! nn.BatchNorm2d).weight!.abs().sum().item(), 0)
        XCTAssertEqual((block.bn2 as! nn.BatchNorm2d).weight!.sum().item(), 64)
    }

    /// A missing checkpoint throws an error naming torchvision's URL and the exact path to save it at.
    func testMissingWeightsFileThrowsWithURLAndPath() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("torchhome-missing-\(getpid())").path
        setenv("TORCH_HOME", home, 1)
        defer { unsetenv("TORCH_HOME") }
        XCTAssertThrowsError(try models.resnet18(pretrained: true)) { error in
            guard case let models.WeightsError.fileNotFound(weights, url, path) = error else {
                return XCTFail("unexpected error \(error)")
            }
            XCTAssertEqual(weights, "ResNet18_Weights.IMAGENET1K_V1")
            XCTAssertEqual(url, "https://download.pytorch.org/models/resnet18-f37072fd.pth")
            XCTAssertEqual(path, home + "/hub/checkpoints/resnet18-f37072fd.pth")
            let message = String(describing: error)
            XCTAssertTrue(message.contains(url) && message.contains(path), message)
        }
        XCTAssertEqual(models.Weights.resnet18ImageNet1kV1.fileName, "resnet18-f37072fd.pth")
    }

    /// A checkpoint in `$TORCH_HOME/hub/checkpoints` is loaded; a wrong one gives a typed error.
    func testWeightsLoadFromHubCache() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("torchhome-\(getpid())")
        let dir = home.appendingPathComponent("hub/checkpoints")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        setenv("TORCH_HOME", home.path, 1)
        defer { unsetenv("TORCH_HOME") }

        let source = models.squeezenet1_1()
        fill(source)
        let path = dir.appendingPathComponent("squeezenet1_1-b8a52dc0.pth").path
        try torch.save(source.stateDict(), path)
        let loaded = try models.squeezenet1_1(weights: .squeezenet1_1ImageNet1kV1)
        let loadedState = loaded.stateDict()
        XCTAssertEqual(loadedState.keys, source.stateDict().keys)
        for (k, t) in source.stateDict().items.map({ ($0.key, $0.value) }) {
            XCTAssertTrue(torch.equal(t, loadedState[k]!), k)
        }
        let viaFlag = try models.squeezenet1_1(pretrained: true)
        XCTAssertTrue(torch.equal(viaFlag.stateDict()["classifier.1.bias"]!, source.stateDict()["classifier.1.bias"]!))
        let untouched = try models.squeezenet1_1(pretrained: false, numClasses: 7)
        XCTAssertEqual(untouched.stateDict()["classifier.1.bias"]?.shape, [7])

        // A SqueezeNet 1.0 file that holds SqueezeNet 1.1's tensors does not fit.
        try torch.save(source.stateDict(), dir.appendingPathComponent("squeezenet1_0-b66bff10.pth").path)
        XCTAssertThrowsError(try models.squeezenet1_0(pretrained: true)) { error in
            guard case models.WeightsError.mismatch = error else { return XCTFail("unexpected error \(error)") }
        }
        // Garbage is reported as unreadable, not a crash.
        try Data("not a checkpoint".utf8).write(to: dir.appendingPathComponent("resnet18-f37072fd.pth"))
        XCTAssertThrowsError(try models.resnet18(pretrained: true)) { error in
            guard case models.WeightsError.unreadable = error else { return XCTFail("unexpected error \(error)") }
        }
    }

    /// torchvision's DenseNet checkpoints use `denselayerN.norm.1`-style keys; they are renamed on load.
    func testDenseNetLegacyKeysAreRenamed() {
        let t = torch.zeros(3)
        let renamed = models.DenseNet.renameLegacyKeys([
            ("features.denseblock1.denselayer1.norm.1.weight", t),
            ("features.denseblock4.denselayer16.conv.2.weight", t),
            ("features.denseblock1.denselayer1.norm1.weight", t),
            ("features.norm5.running_var", t),
        ]).map { $0.0 }
        XCTAssertEqual(renamed, ["features.denseblock1.denselayer1.norm1.weight",
                                 "features.denseblock4.denselayer16.conv2.weight",
                                 "features.denseblock1.denselayer1.norm1.weight",
                                 "features.norm5.running_var"])
    }

    /// GoogLeNet returns auxiliary logits only in training mode; without aux heads their keys are gone.
    func testGoogLeNetAuxiliaryOutputs() {
        let model = models.googlenet(numClasses: 5)
        let x = torch.randn(2, 3, 64, 64)
        let train = model.forwardWithAux(x)
        XCTAssertEqual(train.logits.shape, [2, 5])
        XCTAssertEqual(train.aux1?.shape, [2, 5])
        XCTAssertEqual(train.aux2?.shape, [2, 5])
        model.eval()
        let eval = torch.noGrad { model.forwardWithAux(x) }
        XCTAssertNil(eval.aux1)
        XCTAssertNil(eval.aux2)
        model.aux1 = nil
        model.aux2 = nil
        XCTAssertFalse(model.stateDict().keys.contains { $0.hasPrefix("aux") })
    }

    /// StochasticDepth: identity in eval mode and at p = 0; in training each row is either zeroed or
    /// scaled by 1/(1-p).
    func testStochasticDepth() {
        let x = torch.ones(64, 3, 2, 2)
        let sd = models.StochasticDepth(0.5, mode: .row)
        XCTAssertTrue(torch.equal(sd.eval()(x), x))
        sd.train()
        let y = sd(x).toArray(as: Float.self)
        var zeros = 0
        for r in 0..<64 {
            let row = Set(y[(r * 12)..<((r + 1) * 12)])
            XCTAssertEqual(row.count, 1)
            XCTAssertTrue(row == [0] || row == [2], "row \(r): \(row)")
            if row == [0] { zeros += 1 }
        }
        XCTAssertGreaterThan(zeros, 10)
        XCTAssertLessThan(zeros, 54)
        XCTAssertTrue(torch.equal(models.StochasticDepth(0, mode: .batch)(x), x))
        XCTAssertEqual(sd.description, "StochasticDepth(p=0.5, mode=row)")
    }
}
