import Torch

extension models {
    /// SqueezeNet's Fire module: a 1×1 `squeeze` convolution, then 1×1 and 3×3 `expand` convolutions
    /// whose ReLU outputs are concatenated along channels.
    public final class Fire: nn.Module {
        public var squeeze: nn.Module
        public var squeezeActivation: nn.Module
        public var expand1x1: nn.Module
        public var expand1x1Activation: nn.Module
        public var expand3x3: nn.Module
        public var expand3x3Activation: nn.Module

        public init(_ inplanes: Int, _ squeezePlanes: Int, _ expand1x1Planes: Int, _ expand3x3Planes: Int) {
            squeeze = nn.Conv2d(inplanes, squeezePlanes, kernelSize: 1)
            squeezeActivation = nn.ReLU(inplace: true)
            expand1x1 = nn.Conv2d(squeezePlanes, expand1x1Planes, kernelSize: 1)
            expand1x1Activation = nn.ReLU(inplace: true)
            expand3x3 = nn.Conv2d(squeezePlanes, expand3x3Planes, kernelSize: 3, padding: 1)
            expand3x3Activation = nn.ReLU(inplace: true)
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let s = squeezeActivation(squeeze(x))
            return torch.cat([expand1x1Activation(expand1x1(s)), expand3x3Activation(expand3x3(s))], dim: 1)
        }
    }

    /// torchvision's SqueezeNet 1.0 or 1.1: `features` (a strided stem, max pools with ceil mode and
    /// Fire modules) and `classifier` (dropout, a 1×1 convolution to the classes, ReLU, global average pooling).
    ///
    /// Convolutions are kaiming-uniform with zero bias, except the final one, N(0, 0.01²).
    public final class SqueezeNet: nn.Module {
        /// Which of the two architectures.
        public enum Version: String, Sendable { case v1_0 = "1_0", v1_1 = "1_1" }

        public var features: nn.Module
        public var classifier: nn.Module
        public let numClasses: Int

        public init(version: Version = .v1_0, numClasses: Int = 1000, dropout: Double = 0.5) {
            self.numClasses = numClasses
            func pool() -> nn.Module { nn.MaxPool2d(kernelSize: 3, stride: 2, ceilMode: true) }
            switch version {
            case .v1_0:
                features = nn.Sequential(
                    nn.Conv2d(3, 96, kernelSize: 7, stride: 2), nn.ReLU(inplace: true), pool(),
                    Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
                    Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                    pool(), Fire(512, 64, 256, 256))
            case .v1_1:
                features = nn.Sequential(
                    nn.Conv2d(3, 64, kernelSize: 3, stride: 2), nn.ReLU(inplace: true), pool(),
                    Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                    Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                    Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
            }
            let finalConv = nn.Conv2d(512, numClasses, kernelSize: 1)
            classifier = nn.Sequential(nn.Dropout(p: dropout), finalConv, nn.ReLU(inplace: true), nn.AdaptiveAvgPool2d([1, 1]))
            super.init()
            for m in modules() {
                guard let c = m as? nn.Conv2d else { continue }
                if c === finalConv { nn.init_.normal_(c.weight, mean: 0, std: 0.01) } else { nn.init_.kaimingUniform_(c.weight) }
                if let b = c.bias { nn.init_.zeros_(b) }
            }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(features(x)).flatten(startDim: 1)
        }
    }
}

extension models.Weights {
    public static let squeezenet1_0ImageNet1kV1 = models.Weights(
        name: "SqueezeNet1_0_Weights.IMAGENET1K_V1", arch: "squeezenet1_0",
        url: "https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth")
    public static let squeezenet1_1ImageNet1kV1 = models.Weights(
        name: "SqueezeNet1_1_Weights.IMAGENET1K_V1", arch: "squeezenet1_1",
        url: "https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth")
}

extension models {
    /// SqueezeNet 1.0, randomly initialised (torchvision's `squeezenet1_0()`).
    public static func squeezenet1_0(numClasses: Int = 1000) -> SqueezeNet { SqueezeNet(version: .v1_0, numClasses: numClasses) }
    /// SqueezeNet 1.0 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func squeezenet1_0(weights: Weights, numClasses: Int? = nil) throws -> SqueezeNet {
        try build("squeezenet1_0", weights, numClasses) { squeezenet1_0(numClasses: $0) }
    }
    /// SqueezeNet 1.0; `pretrained: true` loads `.squeezenet1_0ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func squeezenet1_0(pretrained: Bool, numClasses: Int? = nil) throws -> SqueezeNet {
        try build("squeezenet1_0", pretrained ? .squeezenet1_0ImageNet1kV1 : nil, numClasses) { squeezenet1_0(numClasses: $0) }
    }
    /// SqueezeNet 1.1 (2.4× cheaper than 1.0), randomly initialised (torchvision's `squeezenet1_1()`).
    public static func squeezenet1_1(numClasses: Int = 1000) -> SqueezeNet { SqueezeNet(version: .v1_1, numClasses: numClasses) }
    /// SqueezeNet 1.1 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func squeezenet1_1(weights: Weights, numClasses: Int? = nil) throws -> SqueezeNet {
        try build("squeezenet1_1", weights, numClasses) { squeezenet1_1(numClasses: $0) }
    }
    /// SqueezeNet 1.1; `pretrained: true` loads `.squeezenet1_1ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func squeezenet1_1(pretrained: Bool, numClasses: Int? = nil) throws -> SqueezeNet {
        try build("squeezenet1_1", pretrained ? .squeezenet1_1ImageNet1kV1 : nil, numClasses) { squeezenet1_1(numClasses: $0) }
    }
}
