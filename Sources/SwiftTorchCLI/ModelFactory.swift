import ArgumentParser
import Torch
import TorchVision
import TutorialModels

/// Options that pick the network (shared by train, evaluate and summary).
struct ModelOptions: ParsableArguments {
    @Option(help: ArgumentHelp("""
        mlp, cnn, lenet5, resnet18 or any TorchVision model (swifttorch info lists them). Inputs are adapted: \
        mlp flattens the images; cnn (2×[3×3 conv, BatchNorm, ReLU, 2×2 max pool], Linear 128) takes them as they are; \
        lenet5 wants 32×32 (28×28 images are zero-padded by 2 as in LeNet-5's paper, other sizes resized bilinearly); \
        TorchVision models get grayscale repeated to 3 channels and images smaller than 32×32 (alexnet: 64×64) \
        resized up bilinearly, with the classifier sized to the dataset's classes.
        """, valueName: "name"))
    var model: String = "mlp"

    @Option(help: ArgumentHelp("Hidden layer sizes of the mlp, comma separated (default 128,64 on digits, 300,100 otherwise).",
                               valueName: "sizes"))
    var hidden: String?

    func validate() throws {
        guard ModelKind(model) != nil else {
            throw ValidationError("unknown --model '\(model)'; choose mlp, cnn, lenet5 or one of: \(models.listModels().joined(separator: ", "))")
        }
        if let hidden {
            if ModelKind(model) != .mlp { throw ValidationError("--hidden applies only to --model mlp") }
            _ = try hiddenSizes(hidden)
        }
    }
}

/// The networks the CLI builds.
enum ModelKind: Equatable {
    case mlp, cnn, lenet5
    /// A TorchVision model by its torchvision name.
    case vision(String)

    init?(_ name: String) {
        switch name.lowercased() {
        case "mlp": self = .mlp
        case "cnn": self = .cnn
        case "lenet5", "lenet": self = .lenet5
        default:
            guard let e = models.entry(named: name) else { return nil }
            self = .vision(e.name)
        }
    }

    var name: String {
        switch self {
        case .mlp: return "mlp"
        case .cnn: return "cnn"
        case .lenet5: return "lenet5"
        case .vision(let n): return n
        }
    }
}

/// Parses "300,100".
func hiddenSizes(_ s: String) throws -> [Int] {
    let parts = s.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingWhitespace()) }
    guard !parts.isEmpty, parts.allSatisfy({ ($0 ?? 0) > 0 }) else {
        throw ValidationError("--hidden expects positive integers separated by commas (got '\(s)')")
    }
    return parts.map { $0! }
}

/// A network with the batch-wise input adaptation it needs for the dataset's images.
struct PreparedModel {
    let module: nn.Module
    /// Turns a batch of the dataset's images (N×C×H×W) into the network's input.
    let adapt: (Tensor) -> Tensor
    /// The network's input shape for one sample (C, H, W or features), for `summary`.
    let inputShape: [Int]
    /// What `adapt` does, in words.
    let adaptation: String

    func callAsFunction(_ x: Tensor) -> Tensor { module(adapt(x)) }
}

/// The tutorial MLP: (Linear → BatchNorm1d → ReLU) per hidden size, then Linear.
func makeMLP(inputs: Int, hidden: [Int], classes: Int) -> nn.Sequential {
    var layers: [nn.Module] = []
    var width = inputs
    for h in hidden {
        layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU()]
        width = h
    }
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(layers)
}

/// Builds `kind` for images of `imageShape` (C, H, W) and `classes` outputs.
func makeModel(_ kind: ModelKind, hidden: [Int]?, imageShape: [Int], classes: Int, defaultHidden: [Int]) -> PreparedModel {
    let (c, h, w) = (imageShape[0], imageShape[1], imageShape[2])
    func resized(_ x: Tensor, _ s: Int) -> Tensor {
        x.size(2) == s && x.size(3) == s ? x : F.interpolate(x, size: [s, s], mode: .bilinear, alignCorners: false)
    }
    switch kind {
    case .mlp:
        let features = c * h * w
        return PreparedModel(module: makeMLP(inputs: features, hidden: hidden ?? defaultHidden, classes: classes),
                             adapt: { $0.reshape($0.size(0), -1) }, inputShape: [features],
                             adaptation: "images flattened to \(features) features")
    case .cnn:
        let side = Swift.max(h, w, 4)
        return PreparedModel(module: FashionCNN(inChannels: c, imageSize: side, numClasses: classes),
                             adapt: { resized($0, side) }, inputShape: [c, side, side],
                             adaptation: h == w && h >= 4 ? "images as they are (\(c)×\(h)×\(w))" : "images resized to \(side)×\(side)")
    case .lenet5:
        let padded = h == 28 && w == 28
        return PreparedModel(module: models.LeNet5(inChannels: c, numClasses: classes),
                             adapt: { padded ? F.pad($0, [2, 2, 2, 2]) : resized($0, 32) }, inputShape: [c, 32, 32],
                             adaptation: padded ? "28×28 images zero-padded to 32×32" : (h == 32 && w == 32 ? "images as they are" : "images resized to 32×32"))
    case .vision(let name):
        let entry = models.entry(named: name)!
        let minSide = entry.minSize > 32 ? 64 : 32
        let side = Swift.min(h, w) < minSide ? minSide : nil
        let module = try! models.getModel(name, numClasses: classes)   // no weights: cannot fail
        var steps: [String] = []
        if c == 1 { steps.append("grayscale repeated to 3 channels") }
        if let side { steps.append("resized to \(side)×\(side)") }
        return PreparedModel(module: module, adapt: { x in
            let rgb = x.size(1) == 1 ? x.expand(x.size(0), 3, x.size(2), x.size(3)) : x
            return side.map { resized(rgb, $0) } ?? rgb
        }, inputShape: [3, side ?? h, side ?? w], adaptation: steps.isEmpty ? "images as they are" : steps.joined(separator: ", "))
    }
}
