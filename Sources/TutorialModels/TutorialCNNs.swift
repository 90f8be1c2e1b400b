import Torch

/// The Fashion-MNIST CNN of issue 9's accuracy targets, shared by the tests, benchmarks and the CLI:
/// two 3×3 convolutions (32 and 64 channels, padding 1), each followed by BatchNorm2d, ReLU and 2×2 max pooling,
/// then Linear(64·7·7, 128), ReLU, Linear(128, 10). Its PyTorch twin is `FashionCNN` in scripts/bench_pytorch.py.
/// `inChannels` and `imageSize` (square images, at least 4) adapt it to other datasets (`swifttorch --model cnn`).
public final class FashionCNN: nn.Module {
    public let features: nn.Sequential
    public let classifier: nn.Sequential

    public init(inChannels: Int = 1, imageSize: Int = 28, numClasses: Int = 10) {
        precondition(imageSize >= 4, "FashionCNN: imageSize must be at least 4 (got \(imageSize))")
        features = nn.Sequential(
            nn.Conv2d(inChannels, 32, 3, padding: 1), nn.BatchNorm2d(32), nn.ReLU(inplace: true), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding: 1), nn.BatchNorm2d(64), nn.ReLU(inplace: true), nn.MaxPool2d(2))
        let side = imageSize / 2 / 2
        classifier = nn.Sequential(nn.Linear(64 * side * side, 128), nn.ReLU(inplace: true), nn.Linear(128, numClasses))
        super.init()
    }

    public override func forward(_ x: Tensor) -> Tensor {
        classifier(features(x).flatten(startDim: 1))
    }
}

/// Tutorial 001's LeNet-5 for 3×32×32 inputs (`features`: two 5×5 convolutions with ReLU and 2×2 max pooling;
/// `classifier`: 400 → 120 → 84 → classes), for the benchmarks that time it against PyTorch.
public final class TutorialLeNet5: nn.Module {
    public let features: nn.Sequential
    public let classifier: nn.Sequential

    public init(inChannels: Int = 3, numClasses: Int = 10) {
        features = nn.Sequential(
            nn.Conv2d(inChannels, 6, kernelSize: 5), nn.ReLU(inplace: true), nn.MaxPool2d(kernelSize: 2, stride: 2),
            nn.Conv2d(6, 16, kernelSize: 5), nn.ReLU(inplace: true), nn.MaxPool2d(kernelSize: 2, stride: 2))
        classifier = nn.Sequential(nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace: true), nn.Linear(120, 84),
                                   nn.ReLU(inplace: true), nn.Linear(84, numClasses))
        super.init()
    }

    public override func forward(_ x: Tensor) -> Tensor {
        let f = features(x)
        return classifier(f.view(f.size(0), -1))
    }
}
