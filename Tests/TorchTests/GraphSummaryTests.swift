import Foundation
import XCTest
@testable import Torch

private final class Residual: nn.Module {
    let fc1 = nn.Linear(4, 4)
    let relu = nn.ReLU()
    let head = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    override func forward(_ x: Tensor) -> Tensor { head(relu(relu(fc1(x)) + x)) }
}

final class GraphSummaryTests: XCTestCase {
    func testAddGraphWritesScopedNodesShapesAndDataflow() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let model = Residual()
        model.train()
        let writer = try SummaryWriter(logDir: dir)
        writer.addGraph(model, torch.randn(2, 4))
        try writer.close()
        XCTAssertTrue(model.training, "the mode is restored")

        let records = try utils.tensorboard.EventFileReader.records(writer.eventFilePath)
        XCTAssertEqual(records.count, 2)
        let event = try ProtoReader.fields(records[1])
        let graph = try ProtoReader.fields(event.first { $0.field == 4 }!.value.bytes!)
        var nodes: [(name: String, op: String, inputs: [String], shape: [Int], attr: String)] = []
        for n in graph where n.field == 1 {
            let f = try ProtoReader.fields(n.value.bytes!)
            func str(_ v: ProtoReader.Value) -> String { String(decoding: v.bytes!, as: UTF8.self) }
            var shape: [Int] = [], attr = ""
            for entry in f where entry.field == 5 {
                let e = try ProtoReader.fields(entry.value.bytes!)
                let key = str(e.first { $0.field == 1 }!.value), value = try ProtoReader.fields(e.first { $0.field == 2 }!.value.bytes!)
                if key == "attr" { attr = str(value.first { $0.field == 2 }!.value) }
                if key == "_output_shapes" {
                    let list = try ProtoReader.fields(value.first { $0.field == 1 }!.value.bytes!)
                    let s = try ProtoReader.fields(list.first { $0.field == 7 }!.value.bytes!)
                    shape = try s.filter { $0.field == 2 }.map { Int(try ProtoReader.fields($0.value.bytes!)[0].value.varint!) }
                }
            }
            nodes.append((str(f.first { $0.field == 1 }!.value), str(f.first { $0.field == 2 }!.value),
                          f.filter { $0.field == 3 }.map { str($0.value) }, shape, attr))
        }
        XCTAssertEqual(nodes.map(\.name), ["input/input", "Residual/Linear[fc1]", "Residual/ReLU[relu]", "Residual/ReLU[relu]_1",
                                           "Residual/Sequential[head]/Linear[0]", "Residual/Sequential[head]/Tanh[1]", "output/output"])
        XCTAssertEqual(nodes.map(\.op), ["IO Node", "Linear", "ReLU", "ReLU", "Linear", "Tanh", "IO Node"])
        XCTAssertEqual(nodes[1].inputs, ["input/input"])
        XCTAssertEqual(nodes[2].inputs, ["Residual/Linear[fc1]"])
        XCTAssertEqual(Set(nodes[3].inputs), ["Residual/ReLU[relu]", "input/input"], "the residual + joins both")
        XCTAssertEqual(nodes[6].inputs, ["Residual/Sequential[head]/Tanh[1]"])
        XCTAssertEqual(nodes[0].shape, [2, 4])
        XCTAssertEqual(nodes[4].shape, [2, 3])
        XCTAssertEqual(nodes[1].attr, "in_features=4, out_features=4, bias=True")
    }
}

final class EmbeddingSummaryTests: XCTestCase {
    func testAddEmbeddingWritesProjectorFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("emb-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try SummaryWriter(logDir: dir)
        writer.addEmbedding(torch.tensor([[1.5, 2], [3, 4], [5, 6]]), metadata: ["a", "b", "c"],
                            labelImg: torch.ones(3, 1, 2, 2), globalStep: 7)
        writer.addEmbedding(torch.zeros(1, 2), tag: "second")
        try writer.close()
        XCTAssertEqual(try String(contentsOfFile: dir + "/00007/default/tensors.tsv", encoding: .utf8), "1.5\t2.0\n3.0\t4.0\n5.0\t6.0\n")
        XCTAssertEqual(try String(contentsOfFile: dir + "/00007/default/metadata.tsv", encoding: .utf8), "a\nb\nc\n")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/00007/default/sprite.png"))
        let config = try String(contentsOfFile: dir + "/projector_config.pbtxt", encoding: .utf8)
        XCTAssertTrue(config.hasPrefix("embeddings {\ntensor_name: \"default:00007\"\ntensor_path: \"00007/default/tensors.tsv\"\nmetadata_path: \"00007/default/metadata.tsv\"\nsprite {\nimage_path: \"00007/default/sprite.png\"\nsingle_image_dim: 2\nsingle_image_dim: 2\n}\n}\n"), config)
        XCTAssertTrue(config.contains("tensor_name: \"second:00000\""))
    }
}
