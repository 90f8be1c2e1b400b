import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `swifttorch export --checkpoint cnn.pt out.onnx`: the model a checkpoint holds, as an ONNX file.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export a saved model to ONNX (torch.onnx.export).",
        discussion: """
            --checkpoint takes the training state of `train --checkpoint` (model and dataset are read from it unless \
            given) or a plain state dict (then --model, --hidden and --dataset say what it is). The network is \
            exported without the dataset adaptation `train` applies (flattening for the mlp, resizing): its input \
            is what `summary` shows, with a batch dimension in front. The file is read back and run once to check it.
            """)

    @OptionGroup var net: ModelOptions

    @Option(help: ArgumentHelp("The saved model.", valueName: "path"))
    var checkpoint: String

    @Argument(help: "The .onnx file to write.")
    var output: String

    @Option(help: ArgumentHelp("digits, mnist, fashion-mnist, cifar10 or folder:<path>: the image shape and classes (default: the checkpoint's).", valueName: "name"))
    var dataset: DatasetChoice?

    @Option(help: "Side of folder: images.")
    var imageSize: Int = 32

    @Option(help: "Number of classes (default: 10, or the folder's class count).")
    var classes: Int?

    @Flag(help: "Make the batch dimension symbolic (\"batch\") so the file runs on any batch size.")
    var dynamicBatch = false

    @Option(help: "ONNX opset (13–20).")
    var opset: Int = 18

    func validate() throws {
        guard access(checkpoint, F_OK) == 0 else { throw ValidationError("--checkpoint '\(checkpoint)': no such file") }
        guard onnx.exportOpsets.contains(opset) else {
            throw ValidationError("--opset must be in \(onnx.exportOpsets.lowerBound)...\(onnx.exportOpsets.upperBound) (got \(opset))")
        }
        guard imageSize > 0 else { throw ValidationError("--image-size must be a positive integer (got \(imageSize))") }
    }

    mutating func run() throws {
        let saved = try CheckpointFile(checkpoint)
        let dataset = self.dataset ?? saved.dataset ?? .digits
        let (shape, classCount) = datasetImageShape(dataset, imageSize: imageSize, classes: classes)
        let (model, kind) = try saved.loadModel(saved.modelOptions(net), dataset: dataset, imageShape: shape, classes: classCount)
        model.module.eval()
        let batch = dynamicBatch ? 2 : 1
        let x = torch.randn([batch] + model.inputShape)
        try torch.onnx.export(model.module, x, output, inputNames: ["input"], outputNames: ["output"],
                              dynamicAxes: dynamicBatch ? ["input": [0: "batch"], "output": [0: "batch"]] : [:],
                              opsetVersion: opset)
        // Read it back and compare with the model on the same input.
        let back = try onnx.load(output)
        let ref = torch.noGrad { model.module(x) }
        let y = try back.run(["input": x])["output"]!
        let diff = (y - ref).abs().max().item()
        print("model \(kind.name) for \(dataset): input \(([dynamicBatch ? "batch" : "1"] + model.inputShape.map(String.init)).joined(separator: "×")), \(back.initializerNames.count) initializers, opset \(opset)")
        print("wrote \(output); onnx.load round trip: max abs diff \(diff)")
    }
}
