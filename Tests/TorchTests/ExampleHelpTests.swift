// The example programs (Examples/*) parse their command lines with swift-argument-parser (issue 36):
// `--help` prints the usage and exits 0, an unknown option is an error with a non-zero exit. Each test
// runs one built release binary; none trains anything. A binary that is not built is skipped.
import Foundation
import XCTest

final class ExampleHelpTests: XCTestCase {
    /// The package root: this file is <root>/Tests/TorchTests/ExampleHelpTests.swift.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Run {
        var status: Int32
        var exited: Bool
        var output: String
    }

    /// Runs `.build/release/<name> <args>` with standard output and error together, killed after `limit` seconds
    /// (a program that ignored `--help` would start training).
    func run(_ name: String, _ args: [String], limit: Double = 60) throws -> Run {
        let binary = Self.packageRoot.appendingPathComponent(".build/release/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw XCTSkip("\(name) is not built: \(binary) is missing (build it with `swift build -c release`)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["SWIFT_BACKTRACE"] = "enable=no"
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        final class Box: @unchecked Sendable { var data = Data() }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            box.data = out.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        let start = Date()
        try p.run()
        reader.start()
        while p.isRunning && Date().timeIntervalSince(start) < limit { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            XCTFail("\(name) \(args.joined(separator: " ")) still running after \(limit) s: killed")
        }
        p.waitUntilExit()
        _ = done.wait(timeout: .now() + 10)
        return Run(status: p.terminationStatus, exited: p.terminationReason == .exit,
                   output: String(decoding: box.data, as: UTF8.self))
    }

    /// `<name> --help` prints USAGE and exits 0; `<name> --no-such-option` exits non-zero with an error.
    func checkParsing(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let help = try run(name, ["--help"])
        XCTAssertTrue(help.exited, "\(name) --help did not exit normally: \(help.output)", file: file, line: line)
        XCTAssertEqual(help.status, 0, "\(name) --help: \(help.output)", file: file, line: line)
        XCTAssertTrue(help.output.contains("USAGE"), "\(name) --help printed no usage: \(help.output)", file: file, line: line)
        XCTAssertTrue(help.output.contains("--help"), "\(name) --help does not list its options: \(help.output)", file: file, line: line)

        let bogus = try run(name, ["--no-such-option"])
        XCTAssertTrue(bogus.exited, "\(name) --no-such-option did not exit normally: \(bogus.output)", file: file, line: line)
        XCTAssertNotEqual(bogus.status, 0, "\(name) accepted --no-such-option: \(bogus.output)", file: file, line: line)
        XCTAssertTrue(bogus.output.contains("Error"), "\(name) --no-such-option printed no error: \(bogus.output)", file: file, line: line)
    }

    func testAddTwoNumbers() throws { try checkParsing("add-two-numbers") }
    func testTwoLayerNet() throws { try checkParsing("two-layer-net") }
    func testOptimizerComparison() throws { try checkParsing("optimizer-comparison") }
    func testFashionMNISTMLP() throws { try checkParsing("fashion-mnist-mlp") }
    func testConvertCheckpoint() throws { try checkParsing("convert-checkpoint") }
    func testCheckpoint() throws { try checkParsing("checkpoint") }
    func testConvNet() throws { try checkParsing("conv-net") }
    func testLeNet5() throws { try checkParsing("lenet5") }
    func testResNet18() throws { try checkParsing("resnet18") }
    func testEdgeDetection() throws { try checkParsing("edge-detection") }
    func testAugmentations() throws { try checkParsing("augmentations") }
    func testDDPMNIST() throws { try checkParsing("ddp-mnist") }

    /// A device name that is not auto, cpu, cuda or cuda:N is refused before anything runs, naming the option.
    func testAnUnknownDeviceIsRefused() throws {
        for name in ["add-two-numbers", "two-layer-net", "optimizer-comparison", "fashion-mnist-mlp", "conv-net", "lenet5",
                     "resnet18", "edge-detection"] {
            let r = try run(name, ["--device", "tpu"])
            XCTAssertTrue(r.exited, "\(name) --device tpu did not exit normally: \(r.output)")
            XCTAssertNotEqual(r.status, 0, "\(name) accepted --device tpu: \(r.output)")
            XCTAssertTrue(r.output.contains("--device") && r.output.contains("unknown device 'tpu'"), "\(name): \(r.output)")
        }
    }
}
