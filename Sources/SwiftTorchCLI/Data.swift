import ArgumentParser
import Torch
import TorchVision

/// The datasets `--dataset` accepts.
enum DatasetChoice: Equatable, CustomStringConvertible, ExpressibleByArgument {
    case digits, mnist, fashionMNIST, cifar10
    /// An ImageFolder tree: `<path>/train` and `<path>/val` (or `test`), or one tree split 80/20.
    case folder(String)

    init?(argument: String) {
        switch argument.lowercased() {
        case "digits": self = .digits
        case "mnist": self = .mnist
        case "fashion-mnist", "fashionmnist", "fashion_mnist": self = .fashionMNIST
        case "cifar10", "cifar-10": self = .cifar10
        default:
            guard argument.hasPrefix("folder:"), argument.count > 7 else { return nil }
            self = .folder(String(argument.dropFirst(7)))
        }
    }

    var description: String {
        switch self {
        case .digits: return "digits"
        case .mnist: return "mnist"
        case .fashionMNIST: return "fashion-mnist"
        case .cifar10: return "cifar10"
        case .folder(let p): return "folder:\(p)"
        }
    }

    static var allValueStrings: [String] { ["digits", "mnist", "fashion-mnist", "cifar10", "folder:<path>"] }

    /// Where the files are looked for when `--data-dir` is not given.
    var defaultDataDir: String? {
        switch self {
        case .mnist: return "/usr/share/datasets/mnist"
        case .fashionMNIST: return "/usr/share/datasets/fashion-mnist"
        case .cifar10: return "/usr/share/datasets/cifar10"
        case .digits, .folder: return nil
        }
    }
}

/// Options that pick and load the data (shared by train, evaluate and summary).
struct DataOptions: ParsableArguments {
    @Option(help: ArgumentHelp("digits (embedded 8×8, 1797 images), mnist, fashion-mnist, cifar10, or folder:<path> (an ImageFolder tree).",
                               valueName: "name"))
    var dataset: DatasetChoice = .digits

    @Option(help: ArgumentHelp("Folder with the dataset's files (default: /usr/share/datasets/<dataset>). The files must be the named dataset's: MNIST and Fashion-MNIST share file names and are told apart by their labels.",
                               valueName: "path"))
    var dataDir: String?

    @Option(help: "Mini-batch size (positive).")
    var batchSize: Int = 64

    @Option(help: "Intra-op threads (positive; default: all cores).")
    var threads: Int?

    @Option(help: "Side of the square images a folder: dataset is resized to (positive).")
    var imageSize: Int = 32

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be a positive integer (got \(batchSize))") }
        if let t = threads, t <= 0 { throw ValidationError("--threads must be a positive integer (got \(t))") }
        guard imageSize > 0 else { throw ValidationError("--image-size must be a positive integer (got \(imageSize))") }
        if dataDir != nil, dataset == .digits {
            throw ValidationError("--data-dir does not apply to --dataset digits (the digits are embedded in the program)")
        }
        if case .folder(let path) = dataset {
            if dataDir != nil { throw ValidationError("--data-dir does not apply to --dataset folder:<path> (the path is the folder)") }
            guard PathString.isDirectory(path) else {
                throw ValidationError("--dataset folder:\(path): no such folder")
            }
        }
    }

    /// Applies `--threads`.
    func applyThreads() {
        if let t = threads { torch.setNumThreads(t) }
    }
}

/// Both splits in memory: normalised float images N×C×H×W and int64 labels.
struct DataSplit {
    let trainX: Tensor, trainY: Tensor, testX: Tensor, testY: Tensor
    let classes: Int
    /// C, H, W of one image.
    var imageShape: [Int] { Array(trainX.shape.dropFirst()) }
}

/// The first ten training labels of MNIST and Fashion-MNIST: their files have the same names, so
/// the labels tell which one a folder holds.
private let mnistSignature = [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
private let fashionSignature = [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]

/// The bytes of a file embedded in DigitsData.swift (gzipped, base64 in lines).
private func embeddedFile(_ base64: String, _ name: String) throws -> [UInt8] {
    guard let packed = Data(base64Encoded: base64.filter { $0 != "\n" }) else { throw CLIError.missingResource(name) }
    return try Gzip.decompress([UInt8](packed), maxOutputSize: 1 << 20)
}

/// Loads `options.dataset`. `trainSplit: false` skips the training split (evaluate).
func loadData(_ options: DataOptions, trainSplit: Bool = true) throws -> DataSplit {
    switch options.dataset {
    case .digits:
        let images = try datasets.IDX.decode(embeddedFile(digitsImagesIDXGzipBase64, "digits-images-idx3-ubyte"),
                                             source: "digits-images-idx3-ubyte").float().reshape(-1, 1, 8, 8) / 16.0
        let labels = try datasets.IDX.decode(embeddedFile(digitsLabelsIDXGzipBase64, "digits-labels-idx1-ubyte"),
                                             source: "digits-labels-idx1-ubyte").long()
        // A fixed 80/20 split: the first 1437 samples train, the last 360 test; standardised with
        // the training split's mean and standard deviation.
        let n = images.size(0), nTrain = n * 4 / 5
        let mean = images[0..<nTrain].mean(), std = images[0..<nTrain].std()
        let x = (images - mean) / std
        return DataSplit(trainX: x[0..<nTrain], trainY: labels[0..<nTrain], testX: x[nTrain..<n], testY: labels[nTrain..<n],
                         classes: 10)
    case .mnist, .fashionMNIST:
        let isMNIST = options.dataset == .mnist
        let dir = options.dataDir ?? options.dataset.defaultDataDir!
        let (mean, std) = isMNIST ? (0.1307, 0.3081) : (0.2860, 0.3530)
        let normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [mean], std: [std])])
        func split(_ train: Bool) throws -> (Tensor, Tensor) {
            let ds = isMNIST ? try datasets.MNIST(root: dir, train: train, transform: normalize)
                             : try datasets.FashionMNIST(root: dir, train: train, transform: normalize)
            if train || !trainSplit {
                let first = ds.targets[0..<Swift.min(10, ds.count)].toArray(as: Int.self)
                let found = first == mnistSignature ? "MNIST" : first == fashionSignature ? "Fashion-MNIST" : nil
                let wanted = isMNIST ? "MNIST" : "Fashion-MNIST"
                // Test files have their own signatures; only a recognised mismatch is an error.
                let testFound = first == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9] ? "MNIST" : first == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7] ? "Fashion-MNIST" : nil
                if let f = found ?? testFound, f != wanted { throw CLIError.wrongDataset(requested: wanted, found: f, folder: dir) }
            }
            return ds.collatedBatch(Array(0..<ds.count))!
        }
        let test = try split(false)
        let train = trainSplit ? try split(true) : (test.0[0..<0], test.1[0..<0])
        return DataSplit(trainX: train.0, trainY: train.1, testX: test.0, testY: test.1, classes: 10)
    case .cifar10:
        let dir = options.dataDir ?? options.dataset.defaultDataDir!
        let normalize = transforms.Compose([transforms.ToTensor(),
                                            transforms.Normalize(mean: [0.4914, 0.4822, 0.4465], std: [0.2470, 0.2435, 0.2616])])
        func split(_ train: Bool) throws -> (Tensor, Tensor) {
            let ds = try datasets.CIFAR10(root: dir, train: train, transform: normalize)
            return ds.collatedBatch(Array(0..<ds.count))!
        }
        let test = try split(false)
        let train = trainSplit ? try split(true) : (test.0[0..<0], test.1[0..<0])
        return DataSplit(trainX: train.0, trainY: train.1, testX: test.0, testY: test.1, classes: 10)
    case .folder(let root):
        return try loadFolder(root, size: options.imageSize)
    }
}

/// An ImageFolder tree resized to `size`×`size` RGB and normalised with ImageNet's statistics:
/// `<root>/train` + `<root>/val` (or `test`) when present, else every fifth image is held out.
private func loadFolder(_ root: String, size: Int) throws -> DataSplit {
    let transform = transforms.Compose([transforms.Resize([size, size]), transforms.ToTensor(),
                                        transforms.Normalize(mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])])
    func tensors(_ ds: datasets.ImageFolder, _ indices: [Int]) throws -> (Tensor, Tensor) {
        guard !indices.isEmpty else { return (torch.zeros(0, 3, size, size), torch.zeros(0, dtype: .int64)) }
        let samples = try indices.map { try ds.load($0) }
        return (torch.stack(samples.map(\.0)), torch.tensor(samples.map(\.1), dtype: .int64))
    }
    let fm = FileManager.default
    let holdout = ["val", "test"].map { PathString.join(root, $0) }.first { fm.fileExists(atPath: $0) }
    let trainRoot = PathString.join(root, "train")
    if let holdout, fm.fileExists(atPath: trainRoot) {
        let train = try datasets.ImageFolder(root: trainRoot, transform: transform)
        let test = try datasets.ImageFolder(root: holdout, transform: transform)
        guard train.classes == test.classes else {
            throw CLIError.invalidData(path: root, reason: "train/ has classes \(train.classes) but \(PathString.lastComponent(holdout))/ has \(test.classes)")
        }
        let (a, b) = try tensors(train, Array(0..<train.count)), (c, d) = try tensors(test, Array(0..<test.count))
        return DataSplit(trainX: a, trainY: b, testX: c, testY: d, classes: train.classes.count)
    }
    let ds = try datasets.ImageFolder(root: root, transform: transform)
    let all = Array(0..<ds.count)
    let (a, b) = try tensors(ds, all.filter { $0 % 5 != 4 }), (c, d) = try tensors(ds, all.filter { $0 % 5 == 4 })
    return DataSplit(trainX: a, trainY: b, testX: c, testY: d, classes: ds.classes.count)
}
