import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `swifttorch onnx-run model.onnx --input x.pb --output y.pb`: an ONNX file run on inputs stored as TensorProtos.
struct ONNXRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onnx-run",
        abstract: "Run an ONNX model on inputs stored as ONNX TensorProto files (.pb) and write its outputs.",
        discussion: """
            Each --input file is matched to the model's input of the name it stores, or else by position. The first \
            output is written to --output, every output to --output-dir (<output name>.pb); the outputs' shapes are \
            printed. scripts/check-onnx-import uses it to compare SwiftTorch with PyTorch:
              swifttorch onnx-run model.onnx --input input_0.pb --output output_0.pb
            """)

    @Argument(help: "The .onnx file (an external data file is read from its folder).")
    var model: String

    @Option(name: .customLong("input"), help: ArgumentHelp("An input TensorProto file (repeat for several inputs).", valueName: "file"))
    var inputs: [String] = []

    @Option(help: ArgumentHelp("Write the first output here, as a TensorProto.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("Write every output here, as <name>.pb.", valueName: "folder"))
    var outputDir: String?

    @Option(help: "Intra-op threads (positive; default: all cores).")
    var threads: Int?

    func validate() throws {
        guard access(model, F_OK) == 0 else { throw ValidationError("'\(model)': no such file") }
        for i in inputs where access(i, F_OK) != 0 { throw ValidationError("--input '\(i)': no such file") }
        if let threads, threads <= 0 { throw ValidationError("--threads must be a positive integer (got \(threads))") }
        if let outputDir, !PathString.isDirectory(outputDir) { throw ValidationError("--output-dir '\(outputDir)': no such folder") }
    }

    mutating func run() throws {
        if let threads { torch.setNumThreads(threads) }
        let m = try onnx.load(model)
        var feed: [String: Tensor] = [:]
        for (k, path) in inputs.enumerated() {
            let (name, t) = try onnx.loadTensor(path)
            if m.inputNames.contains(name) {
                feed[name] = t
            } else if k < m.inputNames.count {
                feed[m.inputNames[k]] = t
            } else {
                throw CLIError.invalidData(path: path, reason: "the model has \(m.inputNames.count) inputs (\(m.inputNames.joined(separator: ", ")))")
            }
        }
        let outs = try m.run(feed)
        for (k, name) in m.outputNames.enumerated() {
            let y = outs[name]!
            print("\(name): \(y.dtype) \(y.shape)")
            if k == 0, let output { try onnx.saveTensor(y, name: name, to: output) }
            if let outputDir { try onnx.saveTensor(y, name: name, to: outputDir + "/" + name.replacing("/", with: "_") + ".pb") }
        }
    }
}
