import ArgumentParser
import Torch

struct Evaluate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate a saved model or an ONNX model on the test split.",
        discussion: """
            --checkpoint takes the training state of `train --checkpoint` (model and dataset are then read from it \
            unless given) or a plain state dict (`train --save`, or PyTorch's torch.save(model.state_dict()) for the \
            same architecture).
            --onnx takes an ONNX file instead (`swifttorch export`, PyTorch's torch.onnx.export, ...): its first \
            input gets the test images, flattened when it is 2-D, else as they are, or adapted as `train` adapts \
            them for --model when that is given (lenet5, a TorchVision model); its first output is read as logits. \
            A fixed batch size in the file is honoured.
            """)

    @OptionGroup var data: DataOptions
    @OptionGroup var net: ModelOptions

    @Option(help: ArgumentHelp("The saved model.", valueName: "path"))
    var checkpoint: String?

    @Option(name: .customLong("onnx"), help: ArgumentHelp("An ONNX model to evaluate instead of --checkpoint.", valueName: "path"))
    var onnxModel: String?

    func validate() throws {
        switch (checkpoint, onnxModel) {
        case (nil, nil): throw ValidationError("give the model to evaluate: --checkpoint <path> or --onnx <path>")
        case (.some, .some): throw ValidationError("--checkpoint and --onnx exclude each other")
        case (let path?, nil):
            guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("--checkpoint '\(path)': no such file") }
        case (nil, let path?):
            guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("--onnx '\(path)': no such file") }
        }
    }

    mutating func run() throws {
        data.applyThreads()
        if let path = onnxModel { return try evaluateONNX(path) }
        // A training checkpoint names its model and data; a plain state dict relies on the options.
        let saved = try CheckpointFile(checkpoint!)
        var data = self.data
        if data.dataset == .digits, let d = saved.dataset { data.dataset = d }
        let split = try loadData(data, trainSplit: false)
        let (model, kind) = try saved.loadModel(saved.modelOptions(net), dataset: data.dataset, imageShape: split.imageShape,
                                                classes: split.classes)
        let (loss, acc) = Trainer(model: model, optimizer: optim.SGD(model.module.parameters(), lr: 0), scheduler: nil,
                                  perBatchScheduler: false).evaluate(split.testX, split.testY, batchSize: 256)
        print("model \(kind.name) on \(data.dataset): \(split.testX.size(0)) test images")
        print(String(cFormat: "test loss %.4f  test accuracy %.4f", loss, acc))
    }

    /// `--onnx`: the test split through the file's first input and output, in batches of 256 (or the file's fixed
    /// batch size, the last batch padded with zeros); mean cross-entropy and accuracy as for a checkpoint.
    func evaluateONNX(_ path: String) throws {
        let model = try onnx.load(path)
        guard let inputName = model.inputNames.first, let outputName = model.outputNames.first else {
            throw CLIError.invalidData(path: path, reason: "the model has no input or no output")
        }
        let split = try loadData(data, trainSplit: false)
        let declared = model.declaredShape(ofInput: inputName)
        let adapt: (Tensor) -> Tensor
        let adaptation: String
        if let declared, declared.count == 2 {
            adapt = { $0.reshape($0.size(0), -1) }
            adaptation = "images flattened"
        } else if net.model != "mlp", let kind = ModelKind(net.model) {
            let prepared = makeModel(kind, hidden: nil, imageShape: split.imageShape, classes: split.classes,
                                     defaultHidden: defaultHiddenSizes(data.dataset))
            adapt = prepared.adapt
            adaptation = prepared.adaptation + " (--model \(kind.name))"
        } else {
            adapt = { $0 }
            adaptation = "images as they are"
        }
        let sample = adapt(split.testX[0..<1])
        if let declared {
            let fits = declared.count == sample.dim && zip(declared.dropFirst(), sample.shape.dropFirst()).allSatisfy { $0 == nil || $0 == $1 }
            guard fits else {
                let want = declared.map { $0.map(String.init) ?? "?" }.joined(separator: "×")
                throw CLIError.invalidData(path: path, reason: "its input '\(inputName)' is \(want), the \(data.dataset) images give "
                    + sample.shape.dropFirst().map(String.init).joined(separator: "×") + " (\(adaptation)); "
                    + "give --model with the network it was exported from to adapt the images as train does")
            }
        }
        let batchSize = declared?.first.flatMap { $0 } ?? 256
        let n = split.testX.size(0)
        var lossSum = 0.0, correct = 0.0
        try torch.noGrad {
            for start in stride(from: 0, to: n, by: batchSize) {
                let end = Swift.min(n, start + batchSize)
                var x = adapt(split.testX[start..<end])
                if end - start < batchSize {
                    x = torch.cat([x, torch.zeros([batchSize - (end - start)] + Array(x.shape.dropFirst()))])
                }
                var out = try model.run([inputName: x])[outputName]!
                guard out.dim == 2, out.size(0) == batchSize, out.size(1) == split.classes, out.dtype.isFloatingPoint else {
                    throw CLIError.invalidData(path: path, reason: "its output '\(outputName)' is \(out.dtype) \(out.shape); "
                        + "logits [\(batchSize), \(split.classes)] are needed for the \(split.classes) classes of \(data.dataset)")
                }
                out = out[0..<(end - start)].float()
                let labels = split.testY[start..<end]
                lossSum += F.crossEntropy(out, labels).item() * Double(end - start)
                correct += (out.argmax(dim: 1) .== labels).sum().item()
            }
        }
        print("model \(PathString.lastComponent(path)) (ONNX opset \(model.opsetVersion)) on \(data.dataset): \(n) test images, \(adaptation)")
        print(String(cFormat: "test loss %.4f  test accuracy %.4f", lossSum / Double(Swift.max(n, 1)), correct / Double(Swift.max(n, 1))))
    }
}

struct SummaryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summary",
        abstract: "Print a model's layers, output shapes and parameter counts (torchsummary's table).",
        discussion: "The input is one image of --dataset, adapted as `train` adapts it (the data itself is not read).")

    @OptionGroup var net: ModelOptions

    @Option(help: ArgumentHelp("Dataset whose image shape and classes to use: digits (1×8×8), mnist or fashion-mnist (1×28×28), cifar10 (3×32×32), folder:<path> (3×S×S with --image-size).", valueName: "name"))
    var dataset: DatasetChoice = .digits

    @Option(help: "Side of folder: images.")
    var imageSize: Int = 32

    @Option(help: "Number of classes (default: 10, or the folder's class count).")
    var classes: Int?

    func validate() throws {
        guard imageSize > 0 else { throw ValidationError("--image-size must be a positive integer (got \(imageSize))") }
        if let classes, classes <= 0 { throw ValidationError("--classes must be a positive integer (got \(classes))") }
    }

    mutating func run() throws {
        let (shape, classCount) = datasetImageShape(dataset, imageSize: imageSize, classes: classes)
        let kind = ModelKind(net.model)!
        let model = makeModel(kind, hidden: try net.hidden.map(hiddenSizes), imageShape: shape, classes: classCount,
                              defaultHidden: defaultHiddenSizes(dataset))
        print("model \(kind.name) for \(dataset) (\(shape.map(String.init).joined(separator: "×"))): \(model.adaptation)")
        Torch.summary(model.module, inputSize: model.inputShape)
    }
}

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a PyTorch checkpoint to safetensors, or safetensors to a PyTorch checkpoint.",
        discussion: """
            <input>.pt/.pth/.bin/.ckpt → <output>.safetensors: the state dict is the whole file, the --key entry, \
            or the single state_dict/model_state_dict/model entry of a wrapper; nested dictionaries get dotted \
            names, non-tensor entries are skipped and listed. <input>.safetensors → <output>.pt/.pth: an OrderedDict.
            """)

    @Argument(help: "The checkpoint to read.")
    var input: String

    @Argument(help: "The file to write (its folder must exist).")
    var output: String

    @Option(help: "The entry of the input holding the state dict.")
    var key: String?

    @Option(help: ArgumentHelp("Extra safetensors metadata (repeatable).", valueName: "key=value"))
    var metadata: [String] = []

    func validate() throws {
        guard input.hasSuffix(".safetensors") != output.hasSuffix(".safetensors") else {
            throw ValidationError("exactly one of <input> and <output> must end in .safetensors")
        }
        guard FileManager.default.fileExists(atPath: input) else { throw ValidationError("<input> '\(input)': no such file") }
        for m in metadata where !m.contains("=" as Character) { throw ValidationError("--metadata expects key=value (got '\(m)')") }
    }

    mutating func run() throws {
        try checkWritable(output, option: "<output>")
        var meta = ["format": "pt"]
        for m in metadata {
            let eq = m.firstIndex(of: "=")!
            meta[String(m[..<eq])] = String(m[m.index(after: eq)...])
        }
        let r = try torch.convertCheckpoint(input, output, key: key, metadata: meta)
        if let e = r.entry, key == nil { print("using the entry '\(e)' (choose another with --key)") }
        if !r.skipped.isEmpty { print("skipped non-tensor entries: \(r.skipped.joined(separator: ", "))") }
        print("wrote \(r.tensorCount) tensors (\(r.byteCount) bytes) to \(output)")
    }
}
