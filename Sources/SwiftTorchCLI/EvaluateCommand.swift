import ArgumentParser
import Torch

struct Evaluate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate a saved model on the test split.",
        discussion: """
            --checkpoint takes the training state of `train --checkpoint` (model and dataset are then read from it \
            unless given) or a plain state dict (`train --save`, or PyTorch's torch.save(model.state_dict()) for the \
            same architecture).
            """)

    @OptionGroup var data: DataOptions
    @OptionGroup var net: ModelOptions

    @Option(help: ArgumentHelp("The saved model.", valueName: "path"))
    var checkpoint: String

    func validate() throws {
        guard FileManager.default.fileExists(atPath: checkpoint) else {
            throw ValidationError("--checkpoint '\(checkpoint)': no such file")
        }
    }

    mutating func run() throws {
        data.applyThreads()
        let file = try torch.load(checkpoint)
        // A training checkpoint names its model and data; a plain state dict relies on the options.
        let config = file["config"].flatMap(RunConfig.init)
        let weights = file["model_state_dict"] ?? file
        var data = self.data, net = self.net
        if let config {
            if net.model == "mlp" && config.model != "mlp" { net.model = config.model }
            if net.hidden == nil && !config.hidden.isEmpty { net.hidden = config.hidden }
            if data.dataset == .digits, let d = DatasetChoice(argument: config.dataset) { data.dataset = d }
        }
        let kind = ModelKind(net.model)!
        let split = try loadData(data, trainSplit: false)
        let model = makeModel(kind, hidden: try net.hidden.map(hiddenSizes), imageShape: split.imageShape, classes: split.classes,
                              defaultHidden: data.dataset == .digits ? [128, 64] : [300, 100])
        do {
            try model.module.loadStateDict(weights)
        } catch let e as StateDictLoadError {
            throw CLIError.badCheckpoint(path: checkpoint, reason: "does not fit --model \(kind.name)"
                + (kind == .mlp ? " --hidden \(net.hidden ?? (data.dataset == .digits ? "128,64" : "300,100"))" : "")
                + " on \(data.dataset):\n" + e.errorMessages.map { "  " + $0 }.joined(separator: "\n"))
        }
        let (loss, acc) = Trainer(model: model, optimizer: optim.SGD(model.module.parameters(), lr: 0), scheduler: nil,
                                  perBatchScheduler: false).evaluate(split.testX, split.testY, batchSize: 256)
        print("model \(kind.name) on \(data.dataset): \(split.testX.size(0)) test images")
        print(String(cFormat: "test loss %.4f  test accuracy %.4f", loss, acc))
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
        let shape: [Int]
        var classCount = 10
        switch dataset {
        case .digits: shape = [1, 8, 8]
        case .mnist, .fashionMNIST: shape = [1, 28, 28]
        case .cifar10: shape = [3, 32, 32]
        case .folder(let path):
            shape = [3, imageSize, imageSize]
            if let n = try? FileManager.default.contentsOfDirectory(atPath: path).filter({ !$0.hasPrefix(".") }).count { classCount = n }
        }
        let kind = ModelKind(net.model)!
        let model = makeModel(kind, hidden: try net.hidden.map(hiddenSizes), imageShape: shape, classes: classes ?? classCount,
                              defaultHidden: dataset == .digits ? [128, 64] : [300, 100])
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
