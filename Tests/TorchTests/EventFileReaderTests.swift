import Foundation
import XCTest
@testable import Torch

final class EventFileReaderTests: XCTestCase {
    func testScalarsReadBackAcrossFilesAndTruncatedTails() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evr-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let w = try SummaryWriter(logDir: dir)
        for step in 0..<3 {
            w.addScalar("Loss/train", 1.0 / Double(step + 1), step)
            w.addScalar("Accuracy/test", 0.5 + 0.1 * Double(step), step)
        }
        w.addScalars("lr", ["a": 0.1], 0)
        w.addText("note", "hello", 0)
        try w.close()
        let s = try utils.tensorboard.EventFileReader.scalars(logDir: dir)
        XCTAssertEqual(s["Loss/train"]?.map(\.step), [0, 1, 2])
        XCTAssertEqual(s["Loss/train"]?.map(\.value) ?? [], [1, Double(Float(0.5)), Double(Float(1.0 / 3))])
        XCTAssertEqual(s["Accuracy/test"]?.count, 3)
        XCTAssertEqual(s["lr_a/lr"]?.map(\.value), [Double(Float(0.1))])
        XCTAssertEqual(s.count, 3)

        // A killed writer's half record at the end is ignored; a flipped byte is an error.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.eventFilePath)))
        let whole = bytes
        bytes.removeLast(5)
        try Data(bytes).write(to: URL(fileURLWithPath: w.eventFilePath))
        XCTAssertEqual(try utils.tensorboard.EventFileReader.scalars(inFile: w.eventFilePath)["Loss/train"]?.count, 3)
        var corrupt = whole
        corrupt[40] ^= 0xFF
        try Data(corrupt).write(to: URL(fileURLWithPath: w.eventFilePath))
        XCTAssertThrowsError(try utils.tensorboard.EventFileReader.scalars(logDir: dir))
    }
}

final class CheckpointConversionTests: XCTestCase {
    func testPthToSafetensorsAndBack() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("conv-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        // A training checkpoint: the state dict is picked out of the wrapper.
        let sd = StateValue.dict(model.stateDict().map { (key: .string($0.key), value: .tensor($0.value)) })
        try torch.save(.dict([(key: .string("epoch"), value: .int(3)), (key: .string("model_state_dict"), value: sd),
                              (key: .string("rng"), value: .tensor(torch.zeros(4)))]), dir + "/ckpt.pt")
        let r = try torch.convertCheckpoint(dir + "/ckpt.pt", dir + "/m.safetensors")
        XCTAssertEqual(r.entry, "model_state_dict")
        XCTAssertEqual(r.tensorCount, 4)
        XCTAssertEqual(r.byteCount, (12 + 4 + 8 + 2) * 4)
        let back = try torch.convertCheckpoint(dir + "/m.safetensors", dir + "/m.pth")
        XCTAssertEqual(back.tensorCount, 4)
        let copy = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        try copy.loadStateDict(torch.load(dir + "/m.pth"))
        XCTAssertEqual(copy[0].parameters()[0].toArray(as: Float.self), model[0].parameters()[0].toArray(as: Float.self))
        XCTAssertThrowsError(try torch.convertCheckpoint(dir + "/m.pth", dir + "/x.pt")) { e in
            XCTAssertTrue("\(e)".contains("must end in .safetensors"))
        }
        XCTAssertThrowsError(try torch.convertCheckpoint(dir + "/ckpt.pt", dir + "/y.safetensors", key: "nope")) { e in
            XCTAssertTrue("\(e)".contains("has no entry 'nope'"))
        }
    }
}
