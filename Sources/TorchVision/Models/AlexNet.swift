import Torch

extension models {
    /// torchvision's AlexNet (the "one weird trick" variant): five convolutions in `features`,
    /// 6×6 adaptive average pooling, and a three-layer `classifier` with dropout.
    public final class AlexNet: nn.Module {
        public var features: nn.Module
        public var avgpool: nn.Module
        public var classifier: nn.Module

        /// - Parameters:
        ///   - numClasses: outputs of the last linear layer.
        ///   - dropout: probability of the two dropout layers.
        public init(numClasses: Int = 1000, dropout: Double = 0.5) {
            features = nn.Sequential(
                nn.Conv2d(3, 64, kernelSize: 11, stride: 4, padding: 2), nn.ReLU(inplace: true),
                nn.MaxPool2d(kernelSize: 3, stride: 2),
                nn.Conv2d(64, 192, kernelSize: 5, padding: 2), nn.ReLU(inplace: true),
                nn.MaxPool2d(kernelSize: 3, stride: 2),
                nn.Conv2d(192, 384, kernelSize: 3, padding: 1), nn.ReLU(inplace: true),
                nn.Conv2d(384, 256, kernelSize: 3, padding: 1), nn.ReLU(inplace: true),
                nn.Conv2d(256, 256, kernelSize: 3, padding: 1), nn.ReLU(inplace: true),
                nn.MaxPool2d(kernelSize: 3, stride: 2))
            avgpool = nn.AdaptiveAvgPool2d([6, 6])
            classifier = nn.Sequential(
                nn.Dropout(p: dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace: true),
                nn.Dropout(p: dropout), nn.Linear(4096, 4096), nn.ReLU(inplace: true),
                nn.Linear(4096, numClasses))
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(avgpool(features(x)).flatten(startDim: 1))
        }
    }
}

extension models.Weights {
    public static let alexnetImageNet1kV1 = models.Weights(
        name: "AlexNet_Weights.IMAGENET1K_V1", arch: "alexnet", url: "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth")
}

extension models {
    /// AlexNet with PyTorch's default layer initialisation (torchvision's `alexnet()`).
    public static func alexnet(numClasses: Int = 1000) -> AlexNet { AlexNet(numClasses: numClasses) }
    /// AlexNet with `weights` loaded from the hub cache. - Throws: ``WeightsError``.
    public static func alexnet(weights: Weights, numClasses: Int? = nil) throws -> AlexNet {
        try build("alexnet", weights, numClasses) { alexnet(numClasses: $0) }
    }
    /// AlexNet; `pretrained: true` loads `.alexnetImageNet1kV1` from the hub cache. - Throws: ``WeightsError``.
    public static func alexnet(pretrained: Bool, numClasses: Int? = nil) throws -> AlexNet {
        try build("alexnet", pretrained ? .alexnetImageNet1kV1 : nil, numClasses) { alexnet(numClasses: $0) }
    }
}
