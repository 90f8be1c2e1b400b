import Foundation
import XCTest
import Torch
import TorchVision

/// Runs the built `swifttorch` executable as a user would (it sits next to the test bundle in the
/// build products folder: build it with `swift build --build-tests`).
final class CLITests: XCTestCase {
    struct Result {
        let status: Int32
        let exited: Bool
        let stdout: String
        let stderr: String
    }

    var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    var executable: URL {
        get throws {
            #if os(macOS)
            let products = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }!.bundleURL.deletingLastPathComponent()
            #else
            let products = Bundle.main.bundleURL
            #endif
            let url = products.appendingPathComponent("swifttorch")
            guard FileManager.default.isExecutableFile(atPath: url.path) else {
                throw XCTSkip("swifttorch is not built next to the tests (\(url.path)); run `swift build --build-tests`")
            }
            return url
        }
    }

    @discardableResult
    func run(_ args: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let p = Process()
        p.executableURL = try executable
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        var env = ProcessInfo.processInfo.environment
        env["TORCH_HOME"] = dir + "/torch-home"
        p.environment = env
        // Standard error goes to a file, standard output through a pipe read to its end.
        let errPath = dir + "/.stderr-\(UInt32.random(in: 0...UInt32.max))"
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errPath) }
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let out = Pipe()
        p.standardOutput = out
        p.standardError = errHandle
        try p.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        try errHandle.close()
        let errData = try Data(contentsOf: URL(fileURLWithPath: errPath))
        return Result(status: p.terminationStatus, exited: p.terminationReason == .exit,
                      stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Asserts a clean failure: a normal non-zero exit, `message` on standard error, no backtrace.
    func assertFails(_ args: [String], _ message: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try run(args)
        XCTAssertTrue(r.exited, "\(args): killed by signal \(r.status)\n\(r.stderr)", file: file, line: line)
        XCTAssertNotEqual(r.status, 0, "\(args) succeeded", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(message), "\(args): expected '\(message)' in\n\(r.stderr)", file: file, line: line)
        XCTAssertFalse(r.stderr.contains("Fatal error") || r.stderr.contains("Stack dump") || r.stderr.contains("backtrace"),
                       r.stderr, file: file, line: line)
        XCTAssertFalse(r.stdout.contains("epoch 1/"), "\(args): trained before failing", file: file, line: line)
    }

    /// Writes IDX files with the given first labels (the rest zeros) in `folder`.
    func writeFakeMNIST(_ folder: String, trainLabels: [UInt8], testLabels: [UInt8]) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        for (prefix, labels) in [("train", trainLabels), ("t10k", testLabels)] {
            let n = UInt32(labels.count)
            let images = be(0x803) + be(n) + be(28) + be(28) + [UInt8](repeating: 0, count: labels.count * 784)
            try Data(images).write(to: URL(fileURLWithPath: "\(folder)/\(prefix)-images-idx3-ubyte"))
            try Data(be(0x801) + be(n) + labels).write(to: URL(fileURLWithPath: "\(folder)/\(prefix)-labels-idx1-ubyte"))
        }
    }

    func testBadInputGivesOneMessageAndANonZeroExit() throws {
        try assertFails(["train", "--lr=-1"], "--lr must be a positive number (got -1.0)")
        try assertFails(["train", "--batch-size", "0"], "--batch-size must be a positive integer (got 0)")
        try assertFails(["train", "--threads", "0"], "--threads must be a positive integer (got 0)")
        try assertFails(["train", "--epochs", "0"], "--epochs must be a positive integer (got 0)")
        try assertFails(["train", "--model", "resnet19"], "unknown --model 'resnet19'")
        try assertFails(["train", "--optimizer", "lbfgs"], "lbfgs")
        try assertFails(["train", "--save", "/missing/dir/m.pt"], "'/missing/dir/m.pt': --save: the folder '/missing/dir' does not exist")
        try assertFails(["train", "--checkpoint", "/missing/dir/c.pt"], "the folder '/missing/dir' does not exist")
        try assertFails(["train", "--resume", "nothing.pt"], "--resume 'nothing.pt': no such file")
        try assertFails(["train", "--augment", "rotate"], "--augment must be crop, flip or crop,flip (got 'rotate')")
        try assertFails(["train", "--dataset", "folder:/no/such/folder"], "no such folder")
        try assertFails(["train", "--dataset", "digits", "--data-dir", "/tmp"], "--data-dir does not apply to --dataset digits")
        try assertFails(["evaluate", "--checkpoint", "nothing.pt"], "--checkpoint 'nothing.pt': no such file")
        try assertFails(["convert", "a.pt", "b.pt"], "exactly one of <input> and <output> must end in .safetensors")
        try assertFails(["plot", "no-such-logdir"], "no such folder")
        // mnist must not read Fashion-MNIST files (same names): the labels tell them apart.
        let fashion = dir + "/fashion"
        try writeFakeMNIST(fashion, trainLabels: [9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 1], testLabels: [9, 2, 1, 1, 6, 1, 4, 6, 5, 7])
        try assertFails(["train", "--dataset", "mnist", "--data-dir", fashion], "holds Fashion-MNIST, not MNIST")
        let mnist = dir + "/mnist"
        try writeFakeMNIST(mnist, trainLabels: [5, 0, 4, 1, 9, 2, 1, 3, 1, 4], testLabels: [7, 2, 1, 0, 4, 1, 4, 9, 5, 9])
        try assertFails(["evaluate", "--dataset", "fashion-mnist", "--data-dir", mnist, "--checkpoint", "x.pt"], "no such file")
        try assertFails(["train", "--dataset", "fashion-mnist", "--data-dir", mnist], "holds MNIST, not Fashion-MNIST")
        try assertFails(["train", "--dataset", "mnist", "--data-dir", dir + "/empty"], "not found")
    }

    func testDefaultRunTrainsTheDigitsMLP() throws {
        let r = try run([])
        XCTAssertEqual(r.status, 0, r.stderr)
        let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(last.hasPrefix("final test accuracy "), last)
        let accuracy = Double(last.split(separator: " ")[3]) ?? 0
        XCTAssertGreaterThanOrEqual(accuracy, 0.95, last)
        XCTAssertTrue(r.stdout.contains("epoch 20/20"))
        XCTAssertTrue(r.stderr.contains("epoch 1/20: 100% 23/23"), "a plain progress line when not a terminal:\n\(r.stderr.prefix(500))")
    }

    func testMixedPrecisionTrainsTheDigitsModels() throws {
        for (amp, model) in [("bf16", "mlp"), ("fp16", "cnn")] {
            let r = try run(["train", "--amp", amp, "--model", model, "--epochs", "6", "--checkpoint", "amp.pt"])
            XCTAssertEqual(r.status, 0, r.stderr)
            let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
            let accuracy = Double(last.split(separator: " ")[3]) ?? 0
            XCTAssertGreaterThanOrEqual(accuracy, 0.9, "--amp \(amp) --model \(model): \(last)")
            let saved = try torch.load("\(dir)/amp.pt")
            XCTAssertEqual(saved["scaler_state_dict"] != nil, amp == "fp16", "a GradScaler's state is kept with fp16 only")
        }
        try assertFails(["train", "--amp", "fp8"], "fp8")
    }

    func testTrainResumesBitForBitThenEvaluatesPlotsAndConverts() throws {
        let common = ["train", "--epochs", "3", "--step-size", "2", "--hidden", "32,16", "--optimizer", "sgd"]
        let a = try run(common + ["--checkpoint", "a.pt", "--save", "a.pth", "--logdir", "runs/a"])
        XCTAssertEqual(a.status, 0, a.stderr)
        let b1 = try run(Array(common.prefix(1)) + ["--epochs", "2"] + Array(common.dropFirst(3)) + ["--checkpoint", "b.pt"])
        XCTAssertEqual(b1.status, 0, b1.stderr)
        let b2 = try run(common + ["--resume", "b.pt", "--save", "b.pth"])
        XCTAssertEqual(b2.status, 0, b2.stderr)
        XCTAssertTrue(b2.stdout.contains("resumed from 'b.pt' after epoch 2"))
        XCTAssertFalse(b2.stdout.contains("epoch  1/3"))
        func epoch3(_ s: String) -> String {
            let l = s.split(separator: "\n").first { $0.hasPrefix("epoch  3/3") }.map(String.init) ?? "missing"
            return l.components(separatedBy: "  (").first!
        }
        XCTAssertEqual(epoch3(a.stdout), epoch3(b2.stdout))
        let wa = try torch.loadStateDict(dir + "/a.pth"), wb = try torch.loadStateDict(dir + "/b.pth")
        XCTAssertEqual(wa.map(\.0), wb.map(\.0))
        for ((name, x), (_, y)) in zip(wa, wb) {
            XCTAssertEqual(x.toArray(as: Double.self), y.toArray(as: Double.self), "\(name) differs after resume")
        }
        // Resuming with other settings is refused, naming them.
        try assertFails(common + ["--resume", "b.pt", "--lr", "0.5"], "--lr 0.1 (given: 0.5)")
        try assertFails(common + ["--resume", "b.pt", "--augment", "flip"], "pass no --augment")

        // evaluate: the training checkpoint knows its model; a plain state dict needs --hidden.
        let acc = a.stdout.split(separator: "\n").last!.split(separator: " ")[3]
        let e1 = try run(["evaluate", "--checkpoint", "a.pt"])
        XCTAssertEqual(e1.status, 0, e1.stderr)
        XCTAssertTrue(e1.stdout.contains("test accuracy \(acc)"), e1.stdout + " vs " + acc)
        let e2 = try run(["evaluate", "--checkpoint", "a.pth", "--hidden", "32,16"])
        XCTAssertTrue(e2.stdout.contains("test accuracy \(acc)"), e2.stdout + e2.stderr)
        let bad = try run(["evaluate", "--checkpoint", "a.pth", "--hidden", "10"])
        XCTAssertNotEqual(bad.status, 0)
        let mismatches = bad.stderr.split(separator: "\n").filter { $0.contains("size mismatch for") }
        XCTAssertEqual(mismatches.count, Set(mismatches).count, "each mismatch once:\n\(bad.stderr)")
        XCTAssertTrue(bad.stderr.contains("size mismatch for 0.weight") && bad.stderr.contains("size mismatch for 1.running_var"), bad.stderr)

        // plot: the curves of runs/a as SVG and PNG.
        let p = try run(["plot", "runs/a"])
        XCTAssertEqual(p.status, 0, p.stderr)
        for name in ["Loss", "Accuracy", "LR"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/runs/a/plots/\(name).png"), name)
            let svg = try String(contentsOfFile: "\(dir)/runs/a/plots/\(name).svg", encoding: .utf8)
            XCTAssertTrue(svg.contains("<polyline"), name)
        }
        XCTAssertTrue(try String(contentsOfFile: "\(dir)/runs/a/plots/Loss.svg", encoding: .utf8).contains(">train</text>"))

        // convert: the training checkpoint's model to safetensors and back.
        let c1 = try run(["convert", "a.pt", "a.safetensors"])
        XCTAssertEqual(c1.status, 0, c1.stderr)
        XCTAssertTrue(c1.stdout.contains("using the entry 'model_state_dict'") && c1.stdout.contains("wrote 16 tensors"), c1.stdout)
        let c2 = try run(["convert", "a.safetensors", "c.pth"])
        XCTAssertEqual(c2.status, 0, c2.stderr)
        let e3 = try run(["evaluate", "--checkpoint", "c.pth", "--hidden", "32,16"])
        XCTAssertTrue(e3.stdout.contains("test accuracy \(acc)"), e3.stdout + e3.stderr)
    }

    func testSummaryAndInfo() throws {
        let s = try run(["summary", "--model", "lenet5", "--dataset", "mnist"])
        XCTAssertEqual(s.status, 0, s.stderr)
        XCTAssertTrue(s.stdout.contains("28×28 images zero-padded to 32×32"))
        XCTAssertTrue(s.stdout.contains("Total params: 61,706"), s.stdout)
        let r = try run(["summary", "--model", "resnet18", "--dataset", "fashion-mnist"])
        XCTAssertTrue(r.stdout.contains("grayscale repeated to 3 channels, resized to 32×32"), r.stdout)
        XCTAssertTrue(r.stdout.contains("Total params: 11,181,642"), r.stdout)
        let i = try run(["info"])
        XCTAssertEqual(i.status, 0, i.stderr)
        for needle in ["swifttorch \(torch.version)", "threads:", "cpu capability: ", "digits: embedded", "image libraries: libpng", "resnet18"] {
            XCTAssertTrue(i.stdout.contains(needle), needle + "\n" + i.stdout)
        }
        let v = try run(["--version"])
        XCTAssertEqual(v.stdout.trimmingCharacters(in: .whitespacesAndNewlines), torch.version)
    }

    func testTrainsOnAnImageFolderWithOtherOptimizersAndSchedules() throws {
        // Two classes of 8×8 PNGs: dark and bright, 6 each (train 80 % / held out every fifth).
        for (cls, level) in [("dark", 0.1), ("bright", 0.9)] {
            try FileManager.default.createDirectory(atPath: "\(dir)/imgs/\(cls)", withIntermediateDirectories: true)
            for i in 0..<6 {
                let img = ((torch.rand(3, 8, 8) * 0.1 + level) * 255).to(.uint8)
                try io.writePNG(img, "\(dir)/imgs/\(cls)/\(i).png")
            }
        }
        for args in [["--model", "cnn", "--optimizer", "adamw", "--scheduler", "onecycle", "--augment", "crop,flip"],
                     ["--model", "lenet5", "--optimizer", "rmsprop", "--scheduler", "cosine", "--lr", "0.001"]] {
            let r = try run(["train", "--dataset", "folder:imgs", "--image-size", "8", "--epochs", "2", "--batch-size", "4"] + args)
            XCTAssertEqual(r.status, 0, "\(args)\n\(r.stderr)")
            XCTAssertTrue(r.stdout.contains("dataset folder:imgs: 10 train / 2 test images of 3×8×8, 2 classes"), r.stdout)
            XCTAssertTrue(r.stdout.split(separator: "\n").last!.hasPrefix("final test accuracy "), r.stdout)
        }
    }

    /// `evaluate --onnx` on the files `export` writes (symbolic batch, and batch 1) gives the checkpoint's test
    /// accuracy; `onnx-run` writes what `onnx.load` computes; bad uses fail with one message.
    func testEvaluatesAndRunsExportedONNXFiles() throws {
        let t = try run(["train", "--model", "cnn", "--epochs", "1", "--checkpoint", "cnn.pt"])
        XCTAssertEqual(t.status, 0, t.stderr)
        let e = try run(["evaluate", "--checkpoint", "cnn.pt"])
        XCTAssertEqual(e.status, 0, e.stderr)
        let accuracy = String(e.stdout.split(separator: "\n").last!.split(separator: " ").last!)
        for (file, extra) in [("cnn-dyn.onnx", ["--dynamic-batch"]), ("cnn-1.onnx", [])] {
            let x = try run(["export", "--checkpoint", "cnn.pt", file] + extra)
            XCTAssertEqual(x.status, 0, x.stderr)
            let o = try run(["evaluate", "--onnx", file])
            XCTAssertEqual(o.status, 0, o.stderr)
            XCTAssertTrue(o.stdout.contains("360 test images, images as they are"), o.stdout)
            XCTAssertTrue(o.stdout.contains("test accuracy \(accuracy)"), o.stdout + " vs " + e.stdout)
        }
        // The mlp's file takes flattened images.
        XCTAssertEqual(try run(["train", "--epochs", "1", "--hidden", "16", "--checkpoint", "mlp.pt"]).status, 0)
        let m = try run(["evaluate", "--checkpoint", "mlp.pt"])
        let mlpAccuracy = String(m.stdout.split(separator: "\n").last!.split(separator: " ").last!)
        XCTAssertEqual(try run(["export", "--checkpoint", "mlp.pt", "mlp.onnx", "--dynamic-batch"]).status, 0)
        let mo = try run(["evaluate", "--onnx", "mlp.onnx"])
        XCTAssertTrue(mo.stdout.contains("images flattened") && mo.stdout.contains("test accuracy \(mlpAccuracy)"), mo.stdout + mo.stderr)

        try onnx.saveTensor(torch.randn(3, 1, 8, 8), name: "input", to: dir + "/x.pb")
        let r = try run(["onnx-run", "cnn-dyn.onnx", "--input", "x.pb", "--output", "y.pb"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("output: torch.float32 [3, 10]"), r.stdout)
        let want = try onnx.load(dir + "/cnn-dyn.onnx").run(["input": onnx.loadTensor(dir + "/x.pb").tensor])["output"]!
        XCTAssertTrue(try onnx.loadTensor(dir + "/y.pb").tensor.equal(want))

        try torch.onnx.export(nn.Linear(5, 10), torch.randn(1, 5), dir + "/linear.onnx", inputNames: ["input"])
        try assertFails(["evaluate", "--onnx", "linear.onnx"], "its input 'input' is 1×5, the digits images give 64")
        try assertFails(["evaluate"], "--checkpoint <path> or --onnx <path>")
        try assertFails(["evaluate", "--onnx", "cnn-1.onnx", "--checkpoint", "cnn.pt"], "exclude each other")
        try assertFails(["evaluate", "--onnx", "nothing.onnx"], "--onnx 'nothing.onnx': no such file")
        try assertFails(["evaluate", "--onnx", "x.pb"], "not a valid ModelProto")
        try assertFails(["onnx-run", "cnn-dyn.onnx", "--input", "nothing.pb"], "--input 'nothing.pb': no such file")
    }
}
