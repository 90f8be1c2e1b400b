// Atomic writes clean up after writers that were killed (issue 36): the next atomic write into a
// folder removes the temporary files `.<name>.tmp-<pid>-<random>` of any destination whose process
// is gone, and leaves live writers' files and files of any other naming alone.

import Foundation
import XCTest
@testable import Torch
#if canImport(Glibc)
import Glibc
#endif

final class AtomicFileTests: XCTestCase {
    /// A pid that is not running: that of a child process that has exited and been reaped.
    private func deadPID() throws -> pid_t {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/true")
        try p.run()
        p.waitUntilExit()
        return p.processIdentifier
    }

    func testSaveRemovesStaleTemporariesOfAnyDestinationInTheFolder() throws {
        let dir = try makeTemporaryFolder(self).path
        let dead = try deadPID()
        XCTAssertTrue(kill(dead, 0) != 0 && errno == ESRCH, "pid \(dead) should be gone")
        let staleSame = "\(dir)/.model.pt.tmp-\(dead)-k3x9"          // the destination's own leftover
        let staleOther = "\(dir)/.other.safetensors.tmp-\(dead)-0a"  // another destination's leftover
        let live = "\(dir)/.other.pt.tmp-\(getpid())-zz9"            // a write in progress in this process
        let liveInit = "\(dir)/.x.pt.tmp-1-abc"                       // pid 1 is alive
        let unrelated = [
            "\(dir)/.model.pt.tmp-\(dead)-ABC",    // random part not lowercase base 36
            "\(dir)/.model.pt.tmp-\(dead)-",       // no random part
            "\(dir)/model.pt.tmp-\(dead)-abc",     // no leading dot
            "\(dir)/..tmp-\(dead)-abc",            // no destination name
            "\(dir)/.model.pt.temp-\(dead)-abc",   // another marker
            "\(dir)/.model.pt.tmp-x\(dead)-abc",   // pid not a number
            "\(dir)/notes.txt",
        ]
        for f in [staleSame, staleOther, live, liveInit] + unrelated {
            XCTAssertTrue(FileManager.default.createFile(atPath: f, contents: Data(count: 16)), f)
        }
        let staleFolder = "\(dir)/.folder.tmp-\(dead)-q1"                  // a folder with that naming: kept
        try FileManager.default.createDirectory(atPath: staleFolder, withIntermediateDirectories: false)

        try torch.save(nn.Linear(2, 2).stateDict(), "\(dir)/model.pt")

        XCTAssertFalse(FileManager.default.fileExists(atPath: staleSame))
        XCTAssertFalse(FileManager.default.fileExists(atPath: staleOther))
        for f in [live, liveInit, staleFolder, "\(dir)/model.pt"] + unrelated {
            XCTAssertTrue(FileManager.default.fileExists(atPath: f), "\(f) should be kept")
        }
        XCTAssertEqual(try torch.loadStateDict("\(dir)/model.pt").count, 2)
        // Nothing stale is left, so an explicit sweep removes nothing more.
        XCTAssertEqual(AtomicFile.removeStaleTemporaries(inFolder: dir), [])
    }

    func testRemoveStaleTemporariesOfOneDestination() throws {
        let dir = try makeTemporaryFolder(self).path
        let dead = try deadPID()
        let mine = "\(dir)/.a.pt.tmp-\(dead)-1", other = "\(dir)/.b.pt.tmp-\(dead)-2"
        for f in [mine, other] { XCTAssertTrue(FileManager.default.createFile(atPath: f, contents: nil)) }
        XCTAssertEqual(AtomicFile.removeStaleTemporaries(of: "\(dir)/a.pt"), [mine])
        XCTAssertTrue(FileManager.default.fileExists(atPath: other))
        XCTAssertEqual(AtomicFile.removeStaleTemporaries(inFolder: dir), [other])
    }

    func testTemporaryFileNameParsing() {
        XCTAssertEqual(AtomicFile.temporaryFileOwner(".model.pt.tmp-123-abc")?.destination, "model.pt")
        XCTAssertEqual(AtomicFile.temporaryFileOwner(".model.pt.tmp-123-abc")?.pid, 123)
        XCTAssertEqual(AtomicFile.temporaryFileOwner(".a.tmp-b.tmp-7-z")?.destination, "a.tmp-b")
        XCTAssertEqual(AtomicFile.temporaryFileOwner(".a-b.pt.tmp-9-0")?.destination, "a-b.pt")
        for name in [".model.pt", ".tmp-1-a", "..tmp-1-a", ".m.tmp--a", ".m.tmp-1-", ".m.tmp-1-A", ".m.tmp-0-a",
                     ".m.tmp-99999999999-a", ".m.tmp-1-abcdefghijklmn", "m.tmp-1-a", ".m.tmp-1-a.b"] {
            XCTAssertNil(AtomicFile.temporaryFileOwner(name), name)
        }
        // The names write(to:_:) makes are recognised.
        let suffix = String(UInt64.max, radix: 36)
        XCTAssertEqual(AtomicFile.temporaryFileOwner(".w.pt.tmp-\(getpid())-\(suffix)")?.pid, getpid())
    }
}
