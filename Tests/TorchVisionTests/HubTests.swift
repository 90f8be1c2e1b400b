import Foundation
import XCTest
import Torch
@testable import TorchVision

final class HubTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("vhub-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        setenv("TORCH_HOME", dir, 1)
    }

    override func tearDown() {
        unsetenv("TORCH_HOME")
        torch.hub.setDir(nil)
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testRegistryNamesAndBuilders() throws {
        let names = models.listModels()
        XCTAssertEqual(names, names.sorted())
        XCTAssertTrue(names.contains("resnet18") && names.contains("vgg16_bn") && names.contains("mobilenet_v3_small"))
        XCTAssertEqual(models.entry(named: "vgg16Bn")?.name, "vgg16_bn")
        XCTAssertEqual(models.entry(named: "ResNet18")?.defaultWeights.fileName, "resnet18-f37072fd.pth")
        let net = try models.getModel("resnet18", numClasses: 7)
        XCTAssertTrue(net is models.ResNet)
        XCTAssertEqual(net(torch.randn(2, 3, 32, 32)).shape, [2, 7])
        XCTAssertThrowsError(try models.getModel("resnet19")) { e in
            XCTAssertTrue("\(e)".contains("has no model 'resnet19'"), "\(e)")
        }
    }

    func testHubLoadListHelp() throws {
        XCTAssertEqual(try torch.hub.list("pytorch/vision"), models.listModels())
        XCTAssertTrue(try torch.hub.help("pytorch/vision:v0.10.0", "resnet18").contains("resnet18-f37072fd.pth"))
        let m = try torch.hub.load("pytorch/vision", "mobilenet_v2", numClasses: 3)
        XCTAssertEqual(m.parameters().last?.shape, [3])
        XCTAssertThrowsError(try torch.hub.load("facebookresearch/dino", "x")) { e in
            XCTAssertTrue("\(e)".contains("unknown hub repository"))
        }
    }

    func testPretrainedWeightsComeFromTheCacheOrTheErrorNamesURLAndPath() throws {
        let path = dir + "/hub/checkpoints/resnet18-f37072fd.pth"
        XCTAssertEqual(models.checkpointDirectory, dir + "/hub/checkpoints")
        XCTAssertThrowsError(try torch.hub.load("pytorch/vision", "resnet18", pretrained: true)) { e in
            let text = "\(e)"
            XCTAssertTrue(text.contains("https://download.pytorch.org/models/resnet18-f37072fd.pth"), text)
            XCTAssertTrue(text.contains(path), text)
        }
        // A cached file (here our own ResNet-18's weights under torchvision's name) is used.
        let source = models.resnet18()
        try FileManager.default.createDirectory(atPath: dir + "/hub/checkpoints", withIntermediateDirectories: true)
        try torch.save(source.stateDict(), path)
        let loaded = try torch.hub.load("pytorch/vision", "resnet18", pretrained: true)
        XCTAssertEqual(loaded.stateDict()["fc.weight"]!.toArray(as: Float.self), source.stateDict()["fc.weight"]!.toArray(as: Float.self))
        let sd = try torch.hub.loadStateDictFromURL(models.Weights.resnet18ImageNet1kV1.url)
        XCTAssertEqual(sd.count, source.stateDict().count)
        // setDir moves the cache.
        torch.hub.setDir(dir + "/other")
        XCTAssertEqual(models.checkpointDirectory, dir + "/other/checkpoints")
    }

    func testChartAsPNG() throws {
        var chart = utils.plot.LineChart(title: "loss", width: 300, height: 200)
        chart.plot([1, 0.5, 0.2], label: "train")
        try chart.savePNG(dir + "/c.png")
        let img = try io.readImage(dir + "/c.png")
        XCTAssertEqual(img.shape, [3, 200, 300])
        XCTAssertEqual(img.toArray(as: UInt8.self), chart.render().toArray(as: UInt8.self), "PNG is lossless")
    }
}
