import ArgumentParser
import Foundation
import Torch
import TorchVision

/// `swifttorch`: trains and evaluates the tutorial MLP (Linear–BatchNorm1d–ReLU ×2 → Linear) on a
/// dataset. With no arguments it trains on the 8×8 handwritten digits shipped inside the package.
@main
struct SwiftTorchCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swifttorch",
        abstract: "Train and evaluate an MLP classifier with SwiftTorch.",
        subcommands: [Train.self, Evaluate.self],
        defaultSubcommand: Train.self)
}

/// Options shared by both subcommands.
struct DataOptions: ParsableArguments {
    @Option(help: "digits (embedded, 8×8), fashion-mnist or mnist.")
    var dataset: DatasetName = .digits

    @Option(help: "Folder with the IDX files of fashion-mnist/mnist.")
    var dataDir: String = "/usr/share/datasets/fashion-mnist"

    @Option(help: "Mini-batch size.")
    var batchSize: Int = 64

    @Option(help: "Intra-op threads (default: all cores).")
    var threads: Int?
}

enum DatasetName: String, ExpressibleByArgument, CaseIterable {
    case digits
    case fashionMnist = "fashion-mnist"
    case mnist
}

struct Train: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Train the MLP and report test accuracy after each epoch.")

    @OptionGroup var data: DataOptions

    @Option(help: "Number of epochs.")
    var epochs: Int?

    @Option(help: "Learning rate (SGD).")
    var lr: Double = 0.1

    @Option(help: "SGD momentum.")
    var momentum: Double = 0.5

    @Option(help: "Divide the learning rate by 10 every this many epochs (0: never).")
    var decayEvery: Int = 5

    @Option(help: "Hidden layer sizes, comma separated.")
    var hidden: String?

    @Option(help: "Random seed.")
    var seed: UInt64 = 0

    @Option(help: "Save the trained model's state dict here (a PyTorch .pt zip file).")
    var save: String?

    mutating func run() throws {
        if let t = data.threads { torch.setNumThreads(t) }
        torch.manualSeed(seed)
        let split = try loadSplit(data)
        let sizes = try hiddenSizes(hidden ?? (data.dataset == .digits ? "128,64" : "300,100"))
        let model = makeMLP(inputs: split.features, hidden: sizes, classes: 10)
        let nEpochs = epochs ?? (data.dataset == .digits ? 20 : 20)
        print("dataset \(data.dataset.rawValue): \(split.trainX.size(0)) train / \(split.testX.size(0)) test samples, \(split.features) features")
        print(model)
        let opt = optim.SGD(model.parameters(), lr: lr, momentum: momentum)
        let sched: optim.lrScheduler.StepLR? = decayEvery > 0 ? optim.lrScheduler.StepLR(opt, stepSize: decayEvery, gamma: 0.1) : nil
        let lossFn = nn.CrossEntropyLoss()
        let loader = DataLoader(TensorDataset(split.trainX, split.trainY), batchSize: data.batchSize, shuffle: true)
        let start = Date()
        var accuracy = 0.0
        for epoch in 1...max(nEpochs, 1) {
            model.train()
            var total = 0.0, batches = 0
            let t0 = Date()
            for (x, y) in loader {
                opt.zeroGrad()
                let loss = lossFn(model(x), y)
                loss.backward()
                opt.step()
                total += loss.item()
                batches += 1
            }
            sched?.step()
            accuracy = evaluate(model, split.testX, split.testY)
            print(String(format: "epoch %2d/%d  loss %.4f  test accuracy %.4f  lr %.4g  (%.2f s)", epoch, nEpochs,
                         total / Double(max(batches, 1)), accuracy, opt.paramGroups[0].lr, Date().timeIntervalSince(t0)))
        }
        print(String(format: "final test accuracy %.4f in %.2f s", accuracy, Date().timeIntervalSince(start)))
        if let save {
            try torch.save(model.stateDict(), save)
            print("saved state dict to \(save)")
        }
    }
}

struct Evaluate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Evaluate a saved state dict on the test split.")

    @OptionGroup var data: DataOptions

    @Option(help: "State dict saved by `swifttorch train --save` (or by PyTorch for the same model).")
    var checkpoint: String

    @Option(help: "Hidden layer sizes used when training, comma separated.")
    var hidden: String?

    mutating func run() throws {
        if let t = data.threads { torch.setNumThreads(t) }
        let split = try loadSplit(data)
        let sizes = try hiddenSizes(hidden ?? (data.dataset == .digits ? "128,64" : "300,100"))
        let model = makeMLP(inputs: split.features, hidden: sizes, classes: 10)
        try model.loadStateDict(torch.load(checkpoint))
        print(String(format: "test accuracy %.4f", evaluate(model, split.testX, split.testY)))
    }
}

/// Parses "300,100".
func hiddenSizes(_ s: String) throws -> [Int] {
    let sizes = s.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }) else {
        throw ValidationError("--hidden expects positive integers separated by commas (got '\(s)')")
    }
    return sizes
}

/// The tutorial's MLP: (Linear → BatchNorm1d → ReLU) per hidden size, then Linear.
func makeMLP(inputs: Int, hidden: [Int], classes: Int) -> nn.Sequential {
    var layers: [nn.Module] = []
    var width = inputs
    for h in hidden {
        layers.append(nn.Linear(width, h))
        layers.append(nn.BatchNorm1d(h))
        layers.append(nn.ReLU())
        width = h
    }
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(layers)
}

/// Fraction of correctly classified samples, in eval mode without autograd.
func evaluate(_ model: nn.Module, _ x: Tensor, _ y: Tensor) -> Double {
    model.eval()
    return torch.noGrad {
        let predicted = model(x).argmax(dim: 1)
        return (predicted .== y).sum().item() / Double(y.size(0))
    }
}

/// Flattened, normalised features and int64 labels for both splits.
struct Split {
    let trainX: Tensor, trainY: Tensor, testX: Tensor, testY: Tensor
    var features: Int { trainX.size(1) }
}

/// Errors from loading the CLI's data.
enum CLIError: Error, CustomStringConvertible {
    case missingResource(String)
    var description: String {
        switch self {
        case .missingResource(let n): return "the embedded dataset file \(n) is missing from the package resources"
        }
    }
}

func loadSplit(_ options: DataOptions) throws -> Split {
    switch options.dataset {
    case .digits:
        guard let imagesURL = Bundle.module.url(forResource: "digits-images-idx3-ubyte", withExtension: nil),
              let labelsURL = Bundle.module.url(forResource: "digits-labels-idx1-ubyte", withExtension: nil) else {
            throw CLIError.missingResource("digits-*-idx*-ubyte")
        }
        let images = try datasets.IDX.read(imagesURL.path).float().reshape(-1, 64) / 16.0
        let labels = try datasets.IDX.read(labelsURL.path).long()
        // A fixed 80/20 split: the first 1437 samples train, the last 360 test.
        let n = images.size(0), nTrain = n * 4 / 5
        let mean = images[0..<nTrain].mean(), std = images[0..<nTrain].std()
        let x = (images - mean) / std
        return Split(trainX: x[0..<nTrain], trainY: labels[0..<nTrain], testX: x[nTrain..<n], testY: labels[nTrain..<n])
    case .fashionMnist, .mnist:
        let normalize = transforms.Compose([transforms.ToTensor(),
                                            transforms.Normalize(mean: [0.5], std: [0.5])])
        func tensors(train: Bool) throws -> (Tensor, Tensor) {
            let ds = options.dataset == .mnist
                ? try datasets.MNIST(root: options.dataDir, train: train, transform: normalize)
                : try datasets.FashionMNIST(root: options.dataDir, train: train, transform: normalize)
            let (x, y) = ds.collatedBatch(Array(0..<ds.count))!
            return (x.reshape(x.size(0), -1), y)
        }
        let (trainX, trainY) = try tensors(train: true)
        let (testX, testY) = try tensors(train: false)
        return Split(trainX: trainX, trainY: trainY, testX: testX, testY: testY)
    }
}
