import Foundation
import XCTest
@testable import Torch

final class HubCacheTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("hub-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        torch.hub.setDir(nil)
        unsetenv("TORCH_HOME")
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testGetDirFollowsTorchHomeAndSetDir() {
        setenv("TORCH_HOME", dir, 1)
        XCTAssertEqual(torch.hub.getDir(), dir + "/hub")
        torch.hub.setDir(dir + "/elsewhere")
        XCTAssertEqual(torch.hub.getDir(), dir + "/elsewhere")
        torch.hub.setDir(nil)
        unsetenv("TORCH_HOME")
        XCTAssertTrue(torch.hub.getDir().hasSuffix("/torch/hub"), torch.hub.getDir())
    }

    func testLoadStateDictFromURLReadsTheCacheOrNamesThePath() throws {
        setenv("TORCH_HOME", dir, 1)
        let url = "https://download.pytorch.org/models/tiny-0123abcd.pth"
        XCTAssertEqual(torch.hub.fileName(forURL: url), "tiny-0123abcd.pth")
        let expected = dir + "/hub/checkpoints/tiny-0123abcd.pth"
        XCTAssertThrowsError(try torch.hub.loadStateDictFromURL(url)) { error in
            guard case let torch.hub.HubError.checkpointNotFound(u, path) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(u, url)
            XCTAssertEqual(path, expected)
            XCTAssertTrue("\(error)".contains(url) && "\(error)".contains(expected))
        }
        try FileManager.default.createDirectory(atPath: dir + "/hub/checkpoints", withIntermediateDirectories: true)
        let model = nn.Linear(3, 2)
        try torch.save(model.stateDict(), expected)
        let sd = try torch.hub.loadStateDictFromURL(url)
        XCTAssertEqual(sd.keys, ["weight", "bias"])
        XCTAssertEqual(sd["weight"]!.toArray(as: Float.self), model.weight.toArray(as: Float.self))
        // modelDir and fileName override the location.
        let other = try torch.hub.loadStateDictFromURL("https://x/y.pth", modelDir: dir + "/hub/checkpoints", fileName: "tiny-0123abcd.pth")
        XCTAssertEqual(other.count, 2)
    }
}

final class StaleTemporaryFileTests: XCTestCase {
    func testSaveRemovesTemporariesOfDeadWriters() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stale-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A pid that has exited: a child we started and waited for.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/true")
        try p.run()
        p.waitUntilExit()
        let dead = p.processIdentifier
        let stale = "\(dir)/.m.pt.tmp-\(dead)-abc"
        let ours = "\(dir)/.m.pt.tmp-\(getpid())-def"        // a write of this process: kept
        let alive = "\(dir)/.m.pt.tmp-1-ghi"                  // init is alive: kept
        let otherTarget = "\(dir)/.n.pt.tmp-\(dead)-jkl"      // another file's, of a dead writer: removed too
        for f in [stale, ours, alive, otherTarget] { XCTAssertTrue(FileManager.default.createFile(atPath: f, contents: Data(count: 64))) }
        try torch.save(nn.Linear(2, 2).stateDict(), "\(dir)/m.pt")
        for f in [stale, otherTarget] { XCTAssertFalse(FileManager.default.fileExists(atPath: f), f) }
        for f in [ours, alive, "\(dir)/m.pt"] { XCTAssertTrue(FileManager.default.fileExists(atPath: f), f) }
        XCTAssertEqual(AtomicFile.removeStaleTemporaries(of: "\(dir)/n.pt"), [])
    }
}

final class GeneratorStateTests: XCTestCase {
    func testStateRoundTripContinuesTheSequence() throws {
        torch.manualSeed(7)
        _ = torch.randn(5)                                  // leaves a cached normal sample
        let state = torch.getRNGState()
        XCTAssertEqual(state.dtype, .uint8)
        let a = torch.randn(3).toArray(as: Float.self) + torch.rand(40).toArray(as: Float.self)
        torch.manualSeed(123)
        try torch.setRNGState(state)
        let b = torch.randn(3).toArray(as: Float.self) + torch.rand(40).toArray(as: Float.self)
        XCTAssertEqual(a, b)
        XCTAssertEqual(torch.initialSeed(), 7)
        XCTAssertThrowsError(try torch.setRNGState(torch.zeros(10, dtype: .uint8)))
        XCTAssertThrowsError(try Generator().setState(state.float()))
    }
}
