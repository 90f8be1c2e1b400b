import Foundation
import XCTest

/// Tests that launch programs under `mpirun`: `mpirun(np, args)` runs a built product (default `ddp-worker`)
/// and returns its exit status and output with the `RESULT` lines parsed. Skips, saying what is missing,
/// where mpirun or the product is absent or MPI cannot start.
class MPITestCase: XCTestCase {
    struct Run {
        let status: Int32
        let output: String
        let seconds: Double
        /// `key=value` fields of the first `RESULT <label> ...` line.
        func result(_ label: String) -> [String: String]? {
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("RESULT \(label) ") }) else { return nil }
            var fields: [String: String] = [:]
            for part in line.split(separator: " ").dropFirst(2) {
                let kv = part.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
            }
            return fields
        }
    }

    /// The folder of the built products (the test bundle sits in it).
    static var productsDirectory: URL {
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") { return b.bundleURL.deletingLastPathComponent() }
        return Bundle.main.bundleURL
    }

    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs `mpirun -np <np> <program> <args>` (program: a built product) with a wall-clock limit.
    func mpirun(_ np: Int, _ args: [String], program: String = "ddp-worker", limit: Double = 300,
                environment: [String: String] = [:]) throws -> Run {
        guard let mpirun = Self.findExecutable("mpirun") ?? Self.findExecutable("mpiexec") else {
            throw XCTSkip("mpirun not found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev) to run the distributed tests")
        }
        let worker = Self.productsDirectory.appendingPathComponent(program).path
        guard FileManager.default.isExecutableFile(atPath: worker) else {
            throw XCTSkip("\(program) not built at \(worker) (swift build --build-tests builds it)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: mpirun)
        var mpiArgs = ["-np", "\(np)"]
        if mpirun.hasSuffix("mpirun") { mpiArgs += ["--oversubscribe"] }
        if getuid() == 0 { mpiArgs += ["--allow-run-as-root"] }
        p.arguments = mpiArgs + [worker] + args
        var env = ProcessInfo.processInfo.environment
        env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
        env["SWIFT_BACKTRACE"] = "enable=no"
        env.merge(environment) { $1 }
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        let start = Date()
        try p.run()
        final class Box: @unchecked Sendable { var data = Data() }
        let box = Box()
        let reader = Thread { box.data = out.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        while p.isRunning && Date().timeIntervalSince(start) < limit { usleep(20_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            XCTFail("mpirun \(args) still running after \(limit) s: killed")
        }
        p.waitUntilExit()
        while !reader.isFinished { usleep(1_000) }
        let text = String(decoding: box.data, as: UTF8.self)
        let run = Run(status: p.terminationStatus, output: text, seconds: Date().timeIntervalSince(start))
        if run.status != 0 && (text.contains("not enough slots") || text.contains("ORTE was unable")
                               || text.contains("could not load an MPI library") || text.contains("unable to launch")) {
            throw XCTSkip("MPI cannot start here: \(text.prefix(400))")
        }
        return run
    }
}
