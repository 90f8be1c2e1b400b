import Torch

/// torchvision's `models`: the classic image-classification networks, with torchvision's module
/// names, so their state dicts have exactly torchvision's keys and shapes and torchvision's `.pth`
/// checkpoints load into them.
///
/// Builders are torchvision's function names in lowerCamelCase, with digits and the `x`/`_`
/// of size suffixes kept where they carry meaning: `resnet18`, `resnext50_32x4d`, `wideResnet50_2`,
/// `vgg16Bn`, `mobilenetV2`, `mobilenetV3Small`, `squeezenet1_1`, `shufflenetV2_x1_0`,
/// `mnasnet1_0`, `efficientnetB0`.
///
/// ```swift
/// let model = models.resnet18()                     // random init, torchvision's scheme
/// model.fc = nn.Linear(512, 10)                     // replace the head; the state dict follows
/// let pretrained = try models.resnet18(pretrained: true)   // from $TORCH_HOME/hub/checkpoints/
/// ```
public enum models {}

extension models {
    /// A set of pretrained weights torchvision can download: where it comes from and what it fits.
    ///
    /// Nothing is downloaded: the file must already be in the hub cache (see ``checkpointDirectory``),
    /// where `torch.hub` / torchvision would have put it.
    public struct Weights: Sendable, Equatable, CustomStringConvertible {
        /// torchvision's enum member, e.g. `ResNet18_Weights.IMAGENET1K_V1`.
        public let name: String
        /// The builder these weights belong to, e.g. `resnet18`.
        public let arch: String
        /// Where torchvision downloads the file from.
        public let url: String
        /// Number of output classes of the saved classifier.
        public let numClasses: Int

        public init(name: String, arch: String, url: String, numClasses: Int = 1000) {
            self.name = name
            self.arch = arch
            self.url = url
            self.numClasses = numClasses
        }

        /// The file's name, the last component of `url` (e.g. `resnet18-f37072fd.pth`).
        public var fileName: String { String(url.split(separator: "/").last ?? Substring(url)) }

        /// Where the file is expected: `checkpointDirectory/fileName`.
        public var localPath: String { PathString.join(models.checkpointDirectory, fileName) }

        public var description: String { name }
    }

    /// Why pretrained weights could not be loaded.
    public enum WeightsError: Error, CustomStringConvertible {
        /// The checkpoint is not in the hub cache; torchvision would download it from `url`.
        case fileNotFound(weights: String, url: String, path: String)
        /// The file exists but is not a readable checkpoint of a state dict.
        case unreadable(path: String, underlying: Error)
        /// The state dict does not fit the model (missing, unexpected or mis-shaped tensors).
        case mismatch(path: String, underlying: StateDictLoadError)

        public var description: String {
            switch self {
            case let .fileNotFound(weights, url, path):
                return "pretrained weights \(weights) not found at '\(path)'. There is no network access here: "
                    + "download \(url) and save it as '\(path)' (set TORCH_HOME to use another cache directory)."
            case let .unreadable(path, underlying):
                return "cannot read the checkpoint '\(path)': \(underlying)"
            case let .mismatch(path, underlying):
                return "the checkpoint '\(path)' does not fit the model: \(underlying)"
            }
        }
    }

    /// torch.hub's cache of downloaded checkpoints: `torch.hub.getDir()/checkpoints`, that is
    /// `$TORCH_HOME/hub/checkpoints`, where `TORCH_HOME` defaults to `$XDG_CACHE_HOME/torch` and
    /// then to `~/.cache/torch` (read at each call; `torch.hub.setDir` overrides it).
    public static var checkpointDirectory: String {
        PathString.join(torch.hub.getDir(), "checkpoints")
    }

    /// Loads `weights` from the hub cache into `model` (strict), after `transform` renames keys
    /// where old checkpoints differ from today's modules.
    static func load<M: nn.Module>(_ weights: Weights, into model: M,
                                   transform: ([(String, Tensor)]) -> [(String, Tensor)] = { $0 }) throws -> M {
        let path = weights.localPath
        guard FileManager.default.fileExists(atPath: path) else {
            throw WeightsError.fileNotFound(weights: weights.name, url: weights.url, path: path)
        }
        let pairs: [(String, Tensor)]
        do {
            pairs = try torch.loadStateDict(path)
        } catch {
            throw WeightsError.unreadable(path: path, underlying: error)
        }
        do {
            try model.loadStateDict(transform(pairs))
        } catch let e as StateDictLoadError {
            throw WeightsError.mismatch(path: path, underlying: e)
        }
        return model
    }

    /// Builds with `make(numClasses)` and, when `weights` is given, loads them: the shared body of
    /// the builders' `weights:`/`pretrained:` overloads. As in torchvision, the weights must belong
    /// to `arch` and fix the number of classes (`numClasses`, when given, must agree).
    static func build<M: nn.Module>(_ arch: String, _ weights: Weights?, _ numClasses: Int?,
                                    transform: ([(String, Tensor)]) -> [(String, Tensor)] = { $0 },
                                    _ make: (Int) -> M) throws -> M {
        guard let w = weights else { return make(numClasses ?? 1000) }
        precondition(w.arch == arch, "\(arch): weights \(w.name) belong to \(w.arch), not \(arch)")
        if let n = numClasses {
            precondition(n == w.numClasses,
                         "\(arch): num_classes=\(n) does not match the \(w.numClasses) classes of weights \(w.name)")
        }
        guard FileManager.default.fileExists(atPath: w.localPath) else {
            throw WeightsError.fileNotFound(weights: w.name, url: w.url, path: w.localPath)
        }
        return try load(w, into: make(w.numClasses), transform: transform)
    }
}

extension models {
    /// torchvision's `_make_divisible`: `v` rounded to the nearest multiple of `divisor` (at least
    /// `minValue`, default `divisor`), never more than 10% below `v`.
    static func makeDivisible(_ v: Double, _ divisor: Int, minValue: Int? = nil) -> Int {
        let minV = minValue ?? divisor
        var newV = Swift.max(minV, Int(v + Double(divisor) / 2) / divisor * divisor)
        if Double(newV) < 0.9 * v { newV += divisor }
        return newV
    }

    /// torchvision's common initialisation of convolution/BN/linear layers in the newer models:
    /// convolutions kaiming-normal (fan-out) with zero bias, norms ones/zeros, linears N(0, 0.01²)
    /// with zero bias (`linearStd` changes the std; nil leaves linear layers as built).
    static func initWeights(_ model: nn.Module, linearStd: Double? = 0.01) {
        for m in model.modules() {
            if let c = m as? nn.Conv2d {
                nn.init_.kaimingNormal_(c.weight, mode: .fanOut, nonlinearity: .relu)
                if let b = c.bias { nn.init_.zeros_(b) }
            } else if let bn = m as? nn.BatchNorm2d {
                if let w = bn.weight { nn.init_.ones_(w) }
                if let b = bn.bias { nn.init_.zeros_(b) }
            } else if let gn = m as? nn.GroupNorm {
                if let w = gn.weight { nn.init_.ones_(w) }
                if let b = gn.bias { nn.init_.zeros_(b) }
            } else if let l = m as? nn.Linear, let std = linearStd {
                nn.init_.normal_(l.weight, mean: 0, std: std)
                if let b = l.bias { nn.init_.zeros_(b) }
            }
        }
    }
}
