import ArgumentParser
import Torch

/// `swifttorch`: trains, evaluates and inspects models with SwiftTorch. With no arguments it trains
/// the tutorial MLP on the 8×8 handwritten digits shipped inside the package.
@main
struct SwiftTorchCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swifttorch",
        abstract: "Train, evaluate and inspect PyTorch-style models with SwiftTorch.",
        discussion: """
            With no subcommand, `train` runs: the tutorial MLP on the embedded 8×8 digits (seconds).
            Examples:
              swifttorch train --model cnn --dataset fashion-mnist --epochs 3 --logdir runs/cnn --checkpoint cnn.pt
              swifttorch train --resume cnn.pt --epochs 5
              swifttorch evaluate --checkpoint cnn.pt
              swifttorch summary --model resnet18 --dataset cifar10
              swifttorch plot runs/cnn
            """,
        version: torch.version,
        subcommands: [Train.self, Evaluate.self, SummaryCommand.self, Convert.self, Plot.self, Info.self, ONNXConformance.self, Export.self, ONNXRun.self],
        defaultSubcommand: Train.self)
}

/// Errors from the CLI's checks of what the user gave (files, data folders, checkpoints);
/// ArgumentParser prints `Error: <description>` for them and exits with status 1.
enum CLIError: Error, CustomStringConvertible {
    case missingResource(String)
    case wrongDataset(requested: String, found: String, folder: String)
    case badCheckpoint(path: String, reason: String)
    case invalidData(path: String, reason: String)
    case unwritable(path: String, reason: String)
    case noScalars(logDir: String)

    var description: String {
        switch self {
        case .missingResource(let n):
            return "the embedded dataset file \(n) is missing from the package resources"
        case let .wrongDataset(requested, found, folder):
            return "--data-dir '\(folder)' holds \(found), not \(requested); point --data-dir at the \(requested) files"
        case let .badCheckpoint(path, reason):
            return "'\(path)': \(reason)"
        case let .invalidData(path, reason):
            return "'\(path)': \(reason)"
        case let .unwritable(path, reason):
            return "cannot write '\(path)': \(reason)"
        case .noScalars(let dir):
            return "no TensorBoard scalars found under '\(dir)' (expected events.out.tfevents.* files written by `swifttorch train --logdir`)"
        }
    }
}

