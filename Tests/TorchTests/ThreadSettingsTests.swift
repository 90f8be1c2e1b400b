import Foundation
import XCTest
@testable import Torch

/// `torch.setNumThreads` / `getNumThreads` / `setNumInteropThreads` / `getNumInteropThreads` and the intra-op
/// default from `OMP_NUM_THREADS`, `MKL_NUM_THREADS` and `SWIFTTORCH_NUM_THREADS`, with PyTorch's behaviour.
///
/// The pool reads the environment once, at its first use, and the inter-op count may be set once per process,
/// so those checks run in a child process: this test binary started again on `testChildProcessBody` alone, with
/// `SWIFTTORCH_THREAD_TEST_CHILD` naming what the child does and the variables under test set. The child prints
/// `THREADS intra=N interop=M` lines; a broken rule stops it with a precondition failure (a signal).
final class ThreadSettingsTests: XCTestCase {
    // MARK: The child's side

    /// Does nothing in the ordinary test run; in a child started by `child(_:_:)`, runs the named scenario.
    func testChildProcessBody() {
        guard let mode = ProcessInfo.processInfo.environment["SWIFTTORCH_THREAD_TEST_CHILD"] else { return }
        func report(_ label: String = "THREADS") {
            print("\(label) intra=\(torch.getNumThreads()) interop=\(torch.getNumInteropThreads())")
            fflush(stdout)
        }
        switch mode {
        case "report":
            report()
        case "set-intra":  // the setter wins over the environment
            torch.setNumThreads(2)
            report()
            torch.setNumThreads(1000)
            report()
        case "set-intra-zero":
            torch.setNumThreads(0)
            report("AFTER")
        case "interop-twice":
            torch.setNumInteropThreads(3)
            report()
            torch.setNumInteropThreads(3)  // even with the same value, PyTorch raises
            report("AFTER")
        case "interop-zero":
            torch.setNumInteropThreads(0)
            report("AFTER")
        case "interop-after-start":
            let size = startInteropWork()
            print("STARTED \(size)")
            report()
            torch.setNumInteropThreads(2)
            report("AFTER")
        case "interop-set-then-start":
            torch.setNumInteropThreads(5)
            report()
            print("STARTED \(startInteropWork())")
            report()
        default:
            XCTFail("unknown child mode \(mode)")
        }
    }

    // MARK: Launching

    struct ChildRun {
        var status: Int32
        /// Ended by a signal (a precondition failure) rather than exiting.
        var crashed: Bool
        var stdout: String
        var stderr: String

        /// (intra, interop) of each `<label> intra=N interop=M` line, in order.
        func threads(_ label: String = "THREADS") -> [(Int, Int)] {
            stdout.split(separator: "\n").compactMap { line -> (Int, Int)? in
                guard line.hasPrefix(label + " ") else { return nil }
                var intra: Int?, interop: Int?
                for part in line.split(separator: " ") {
                    if part.hasPrefix("intra=") { intra = Int(part.dropFirst(6)) }
                    if part.hasPrefix("interop=") { interop = Int(part.dropFirst(8)) }
                }
                guard let a = intra, let b = interop else { return nil }
                return (a, b)
            }
        }
    }

    /// The running test binary (`swift test` runs it directly on Linux).
    static var testBinary: String {
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return exe }
        return CommandLine.arguments[0]
    }

    /// Starts this binary on `testChildProcessBody` with `mode` and `environment` (the thread variables of this
    /// process removed first), optionally under `launcher` (say `taskset -c 0`), and waits for it.
    func child(_ mode: String, _ environment: [String: String] = [:], launcher: [String] = []) throws -> ChildRun {
        var env = ProcessInfo.processInfo.environment
        for k in ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "SWIFTTORCH_NUM_THREADS"] { env[k] = nil }
        env["SWIFTTORCH_THREAD_TEST_CHILD"] = mode
        env["SWIFT_BACKTRACE"] = "enable=no"
        env.merge(environment) { $1 }
        let p = Process()
        let testName = "TorchTests.ThreadSettingsTests/testChildProcessBody"
        if launcher.isEmpty {
            p.executableURL = URL(fileURLWithPath: Self.testBinary)
            p.arguments = [testName]
        } else {
            p.executableURL = URL(fileURLWithPath: launcher[0])
            p.arguments = Array(launcher.dropFirst()) + [Self.testBinary, testName]
        }
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        final class Box: @unchecked Sendable { var data = Data() }
        let outBox = Box(), errBox = Box()
        let readers = [Thread { outBox.data = out.fileHandleForReading.readDataToEndOfFile() },
                       Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile() }]
        readers.forEach { $0.start() }
        let start = Date()
        while p.isRunning && Date().timeIntervalSince(start) < 120 { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            XCTFail("child \(mode) still running after 120 s: killed")
        }
        p.waitUntilExit()
        while readers.contains(where: { !$0.isFinished }) { usleep(1_000) }
        return ChildRun(status: p.terminationStatus, crashed: p.terminationReason == .uncaughtSignal,
                        stdout: String(decoding: outBox.data, as: UTF8.self),
                        stderr: String(decoding: errBox.data, as: UTF8.self))
    }

    /// (intra, interop) a child reports with `environment`, requiring a clean exit and exactly one report.
    func reported(_ environment: [String: String], file: StaticString = #filePath, line: UInt = #line) throws
        -> (intra: Int, interop: Int, stderr: String) {
        let run = try child("report", environment)
        XCTAssertEqual(run.status, 0, "child with \(environment) failed:\n\(run.stdout)\n\(run.stderr)", file: file, line: line)
        let t = run.threads()
        XCTAssertEqual(t.count, 1, "child with \(environment) printed:\n\(run.stdout)", file: file, line: line)
        return (t.first?.0 ?? -1, t.first?.1 ?? -1, run.stderr)
    }

    /// The default with no variable set (the CPUs of the affinity mask), measured in a child.
    func defaultThreads() throws -> Int {
        let d = try reported([:])
        XCTAssertGreaterThanOrEqual(d.intra, 1)
        XCTAssertEqual(d.intra, d.interop, "both defaults count the same CPUs")
        XCTAssertFalse(d.stderr.contains("Invalid"), d.stderr)
        return d.intra
    }

    // MARK: Getters after setters (in this process)

    func testGetNumThreadsReturnsWhatWasSet() {
        let saved = torch.getNumThreads()
        defer { torch.setNumThreads(saved) }
        for n in [1, 3, 2, 7] {
            torch.setNumThreads(n)
            XCTAssertEqual(torch.getNumThreads(), n)
        }
        torch.setNumThreads(100_000)
        XCTAssertEqual(torch.getNumThreads(), 256, "counts above the pool's 256 slots are capped")
        // A parallel op still gives the one-thread result at any count.
        torch.setNumThreads(3)
        let x = torch.arange(0, 200_000, dtype: .float64)
        XCTAssertEqual((x * 2).sum().item(), 200_000.0 * 199_999.0)
    }

    // MARK: The environment (children)

    func testDefaultIsTheAffinityMask() throws {
        let n = try defaultThreads()
        let taskset = ["/usr/bin/taskset", "/bin/taskset"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let taskset else { throw XCTSkip("taskset not installed: the affinity mask is not checked (default \(n))") }
        // The first CPU this process may use (CPU 0 may be outside a container's set).
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let allowed = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }?
            .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "0"
        let cpu = String(allowed.prefix { $0.isNumber })
        let run = try child("report", launcher: [taskset, "-c", cpu.isEmpty ? "0" : cpu])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.threads().first?.0, 1, "one CPU in the mask gives one intra-op thread")
        XCTAssertEqual(run.threads().first?.1, 1, "and one inter-op thread")
    }

    func testOMPNumThreadsSetsTheDefault() throws {
        let d = try defaultThreads()
        let r = try reported(["OMP_NUM_THREADS": "3"])
        XCTAssertEqual(r.intra, 3)
        XCTAssertEqual(r.interop, d, "the inter-op default reads no variable, as in PyTorch")
        XCTAssertEqual(r.stderr.contains("Invalid"), false)
        XCTAssertEqual(try reported(["OMP_NUM_THREADS": "5"]).intra, 5, "more threads than CPUs are allowed, as in PyTorch")
    }

    func testPrecedenceSwiftTorchOverMKLOverOMP() throws {
        XCTAssertEqual(try reported(["MKL_NUM_THREADS": "4"]).intra, 4)
        XCTAssertEqual(try reported(["OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "4"]).intra, 4)
        XCTAssertEqual(try reported(["SWIFTTORCH_NUM_THREADS": "2"]).intra, 2)
        XCTAssertEqual(try reported(["OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "4", "SWIFTTORCH_NUM_THREADS": "2"]).intra, 2)
        XCTAssertEqual(try reported(["OMP_NUM_THREADS": "3", "SWIFTTORCH_NUM_THREADS": "6"]).intra, 6)
    }

    func testInvalidValuesAreIgnoredWithAWarning() throws {
        let d = try defaultThreads()
        for bad in ["0", "-2", "abc", "", "99999999999", "3abc", "1.5"] {
            let r = try reported(["OMP_NUM_THREADS": bad])
            XCTAssertEqual(r.intra, d, "OMP_NUM_THREADS=\(bad) falls back to the default")
            XCTAssertTrue(r.stderr.contains("Invalid OMP_NUM_THREADS variable value"), "no warning for \(bad): \(r.stderr)")
        }
        // An invalid higher-priority variable falls back to the next one, warning about itself.
        let r = try reported(["OMP_NUM_THREADS": "3", "SWIFTTORCH_NUM_THREADS": "zero"])
        XCTAssertEqual(r.intra, 3)
        XCTAssertTrue(r.stderr.contains("Invalid SWIFTTORCH_NUM_THREADS variable value"), r.stderr)
        let m = try reported(["OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "-1"])
        XCTAssertEqual(m.intra, 3)
        XCTAssertTrue(m.stderr.contains("Invalid MKL_NUM_THREADS variable value"), m.stderr)
    }

    func testValuesAreReadAsOpenMPReadsThem() throws {
        // As libgomp reads OMP_NUM_THREADS under PyTorch: blanks and '+' accepted, a nested-levels list gives its
        // first entry.
        for (text, n) in [(" 3", 3), ("3 ", 3), ("+2", 2), ("4,2", 4), ("007", 7)] {
            let r = try reported(["OMP_NUM_THREADS": text])
            XCTAssertEqual(r.intra, n, "OMP_NUM_THREADS=\"\(text)\"")
            XCTAssertFalse(r.stderr.contains("Invalid"), r.stderr)
        }
    }

    func testSetNumThreadsOverridesTheEnvironment() throws {
        let run = try child("set-intra", ["OMP_NUM_THREADS": "3", "SWIFTTORCH_NUM_THREADS": "5"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.threads().map(\.0), [2, 256])
    }

    func testSetNumThreadsRejectsZero() throws {
        let run = try child("set-intra-zero")
        XCTAssertTrue(run.crashed, "setNumThreads(0) must stop the program (status \(run.status)): \(run.stdout)")
        XCTAssertTrue(run.threads("AFTER").isEmpty)
    }

    // MARK: Inter-op threads: set once, before inter-op work (children)

    func testInteropSetOnceThenGetReturnsIt() throws {
        let run = try child("interop-twice", ["OMP_NUM_THREADS": "2"])
        XCTAssertEqual(run.threads().first?.1, 3, "get after set returns the set count:\n\(run.stdout)\n\(run.stderr)")
        XCTAssertEqual(run.threads().first?.0, 2, "and leaves the intra-op count alone")
        XCTAssertTrue(run.crashed, "a second setNumInteropThreads must stop the program (status \(run.status))")
        XCTAssertTrue(run.threads("AFTER").isEmpty, run.stdout)
    }

    func testInteropRejectsZero() throws {
        let run = try child("interop-zero")
        XCTAssertTrue(run.crashed, "setNumInteropThreads(0) must stop the program (status \(run.status))")
        XCTAssertTrue(run.threads("AFTER").isEmpty)
    }

    func testInteropCannotBeSetAfterInteropWorkStarted() throws {
        let d = try defaultThreads()
        let run = try child("interop-after-start")
        XCTAssertTrue(run.stdout.contains("STARTED \(d)\n"), "work starts with the default count:\n\(run.stdout)")
        XCTAssertEqual(run.threads().first?.1, d)
        XCTAssertTrue(run.crashed, "setNumInteropThreads after inter-op work started must stop the program")
        XCTAssertTrue(run.threads("AFTER").isEmpty, run.stdout)
    }

    func testInteropCountSetBeforeStartIsTheOneUsed() throws {
        let run = try child("interop-set-then-start")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("STARTED 5\n"), run.stdout)
        XCTAssertEqual(run.threads().map(\.1), [5, 5])
    }
}
