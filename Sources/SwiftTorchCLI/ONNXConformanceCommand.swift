import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `swifttorch onnx-conformance DIR`: ONNX's backend node tests (scripts/fetch-onnx-conformance) run through
/// `onnx.load`; one line per test, and `N/M passed` last.
struct ONNXConformance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onnx-conformance",
        abstract: "Run ONNX's backend node conformance tests (onnx/backend/test/data/node) through onnx.load.",
        discussion: """
            Fetch the suite with scripts/fetch-onnx-conformance (onnx 1.22.0, 1,765 tests), then:
              swifttorch onnx-conformance ~/.cache/swifttorch/onnx-conformance/onnx/backend/test/data/node
            Each test runs with the suite's rule (rtol 1e-3, atol 1e-7, dtype exact) and is reported as PASS, FAIL \
            (what differs) or UNSUPPORTED (why). Tests run in worker processes, so a test that crashes is reported \
            as a failure and the run goes on.
            """)

    @Argument(help: "The folder of test folders (each with model.onnx and test_data_set_*).")
    var directory: String

    @Option(help: "Only tests whose name contains this.")
    var filter: String?

    @Option(help: ArgumentHelp("Write the expectations file (name, status, reason) here.", valueName: "file"))
    var writeExpectations: String?

    @Flag(help: "Run every test in this process (faster, but a crash ends the run).")
    var inProcess = false

    @Option(help: .hidden)
    var workerFrom: Int?

    func validate() throws {
        guard PathString.isDirectory(directory) else {
            throw ValidationError("'\(directory)': no such folder (fetch the suite with scripts/fetch-onnx-conformance)")
        }
    }

    mutating func run() throws {
        let names = onnx.conformance.tests(in: directory).filter { filter == nil || $0.firstRange(of: filter!) != nil }
        if let start = workerFrom {
            // Worker: run from `start`, one machine-readable line per test, flushed before the next begins.
            for name in names.dropFirst(start) {
                let r = onnx.conformance.runTest("\(directory)/\(name)")
                let detail = r.detail.replacing("\n", with: " ").replacing("\t", with: " ")
                print("@@\t\(r.name)\t\(r.status.rawValue)\t\(detail)")
                fflush(stdout)
            }
            return
        }
        var results: [onnx.conformance.Result] = []
        if inProcess {
            results = names.map { name in
                let r = onnx.conformance.runTest("\(directory)/\(name)")
                print(r); fflush(stdout)
                return r
            }
        } else {
            results = try runInWorkers(names)
        }
        if let path = writeExpectations {
            var text = "# ONNX node conformance (onnx 1.22.0) with SwiftTorch: test<TAB>status<TAB>reason for a non-pass.\n"
            text += "# Written by `swifttorch onnx-conformance DIR --write-expectations FILE`; checked by ONNXConformanceTests.\n"
            for r in results { text += "\(r.name)\t\(r.status.rawValue)\t\(r.status == .pass ? "" : r.detail)\n" }
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let passed = results.filter { $0.status == .pass }.count
        let unsupported = results.filter { $0.status == .unsupported }.count
        print("\(results.count - passed - unsupported) failed, \(unsupported) unsupported")
        print("\(passed)/\(results.count) passed")
    }

    /// Runs the tests in child processes of this executable, restarting after a test that crashes.
    func runInWorkers(_ names: [String]) throws -> [onnx.conformance.Result] {
        var results: [onnx.conformance.Result] = []
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).path
        // This program's own file (/proc/self/exe) when argv[0] is not a path to it.
        let executable = FileManager.default.isExecutableFile(atPath: exe) ? exe
            : ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? exe)
        while results.count < names.count {
            var args = ["onnx-conformance", directory, "--worker-from", String(results.count)]
            if let filter { args += ["--filter", filter] }
            let p = ChildProcess(executable: executable, arguments: args, standardOutput: .pipe, standardError: .discard)
            try p.run()
            var buffer = Data()
            while true {
                let chunk = p.read()
                if chunk.isEmpty { break }
                buffer.append(contentsOf: chunk)
                while let nl = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...nl)
                    let parts = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                    guard parts.count >= 3, parts[0] == "@@", let s = onnx.conformance.Status(rawValue: parts[2]) else { continue }
                    let r = onnx.conformance.Result(name: parts[1], status: s, detail: parts.count > 3 ? parts[3] : "")
                    print(r); fflush(stdout)
                    results.append(r)
                }
            }
            let termination = p.wait()
            if results.count < names.count {
                let how: String
                switch termination {
                case .signalled(let signal): how = "signal \(signal)"
                case .exited(let status): how = "exit status \(status)"
                }
                let r = onnx.conformance.Result(name: names[results.count], status: .fail, detail: "crashed (\(how))")
                print(r); fflush(stdout)
                results.append(r)
            }
        }
        return results
    }
}
