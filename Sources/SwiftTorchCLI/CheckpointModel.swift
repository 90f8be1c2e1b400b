import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// A saved model as `evaluate` and `export` read it: the training state `train --checkpoint` writes (whose config
/// names the model, hidden sizes and dataset) or a plain state dict (`train --save`, or PyTorch's
/// `torch.save(model.state_dict())` for the same architecture, which then relies on the options).
struct CheckpointFile {
    let path: String
    /// The training state's `model_state_dict`, or the whole file.
    let weights: StateValue
    /// What a training state records about its run; nil for a plain state dict.
    let config: RunConfig?

    init(_ path: String) throws {
        let file = try torch.load(path)
        self.path = path
        config = file["config"].flatMap(RunConfig.init)
        weights = file["model_state_dict"] ?? file
    }

    /// `net` with the checkpoint's model and hidden sizes where the options were left at their defaults.
    func modelOptions(_ net: ModelOptions) -> ModelOptions {
        var net = net
        if let config {
            if net.model == "mlp" && config.model != "mlp" { net.model = config.model }
            if net.hidden == nil && !config.hidden.isEmpty { net.hidden = config.hidden }
        }
        return net
    }

    /// The dataset the checkpoint was trained on, when it records one.
    var dataset: DatasetChoice? { config.flatMap { DatasetChoice(argument: $0.dataset) } }

    /// Builds the network `net` names for `dataset`'s images (`imageShape`, C×H×W) and `classes`, and loads the
    /// weights into it; weights that do not fit throw `CLIError.badCheckpoint` with one line per mismatch.
    func loadModel(_ net: ModelOptions, dataset: DatasetChoice, imageShape: [Int], classes: Int) throws -> (PreparedModel, ModelKind) {
        guard let kind = ModelKind(net.model) else { throw ValidationError("--model '\(net.model)': unknown model") }
        let defaultHidden = defaultHiddenSizes(dataset)
        let model = makeModel(kind, hidden: try net.hidden.map(hiddenSizes), imageShape: imageShape, classes: classes,
                              defaultHidden: defaultHidden)
        do {
            try model.module.loadStateDict(weights)
        } catch let e as StateDictLoadError {
            let hidden = kind == .mlp ? " --hidden \(net.hidden ?? defaultHidden.map(String.init).joined(separator: ","))" : ""
            throw CLIError.badCheckpoint(path: path, reason: "does not fit --model \(kind.name)\(hidden) on \(dataset):\n"
                + e.errorMessages.map { "  " + $0 }.joined(separator: "\n"))
        }
        return (model, kind)
    }
}

/// The mlp's hidden sizes when `--hidden` is not given: 128,64 on the digits, 300,100 otherwise.
func defaultHiddenSizes(_ dataset: DatasetChoice) -> [Int] { dataset == .digits ? [128, 64] : [300, 100] }

/// One image's shape (C, H, W) and the class count of `dataset`, without reading its files: digits 1×8×8, MNIST and
/// Fashion-MNIST 1×28×28, CIFAR-10 3×32×32 (10 classes), a folder 3×`imageSize`×`imageSize` with one class per
/// subfolder; `classes` overrides the count.
func datasetImageShape(_ dataset: DatasetChoice, imageSize: Int, classes: Int? = nil) -> (shape: [Int], classes: Int) {
    var count = 10
    let shape: [Int]
    switch dataset {
    case .digits: shape = [1, 8, 8]
    case .mnist, .fashionMNIST: shape = [1, 28, 28]
    case .cifar10: shape = [3, 32, 32]
    case .folder(let path):
        shape = [3, imageSize, imageSize]
        if let d = opendir(path) {
            var n = 0
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if !name.hasPrefix(".") { n += 1 }
            }
            closedir(d)
            if n > 0 { count = n }
        }
    }
    return (shape, classes ?? count)
}
