import Torch

extension models {
    /// torchvision's VGG: `features` (3×3 convolutions, optionally with BatchNorm, and 2×2 max pools),
    /// 7×7 adaptive average pooling and a three-layer `classifier` with dropout.
    ///
    /// With `initWeights` (the default) convolutions are kaiming-normal (fan-out) with zero bias,
    /// BatchNorms ones/zeros and linear layers N(0, 0.01²) with zero bias, as in torchvision.
    public final class VGG: nn.Module {
        public var features: nn.Module
        public var avgpool: nn.Module
        public var classifier: nn.Module

        /// - Parameters:
        ///   - features: the convolutional part, e.g. `VGG.makeLayers(VGG.configD, batchNorm: true)`.
        ///   - numClasses: outputs of the last linear layer.
        ///   - initWeights: apply torchvision's initialisation.
        ///   - dropout: probability of the two dropout layers.
        public init(features: nn.Module, numClasses: Int = 1000, initWeights: Bool = true, dropout: Double = 0.5) {
            self.features = features
            avgpool = nn.AdaptiveAvgPool2d([7, 7])
            classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace: true), nn.Dropout(p: dropout),
                nn.Linear(4096, 4096), nn.ReLU(inplace: true), nn.Dropout(p: dropout),
                nn.Linear(4096, numClasses))
            super.init()
            if initWeights { models.initWeights(self) }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(avgpool(features(x)).flatten(startDim: 1))
        }

        /// One entry of a VGG configuration: a 3×3 convolution to that many channels, or a max pool.
        public enum LayerSpec: Equatable, ExpressibleByIntegerLiteral {
            case conv(Int)
            case maxPool
            public init(integerLiteral value: Int) { self = .conv(value) }
        }

        /// Configurations A (VGG-11), B (13), D (16) and E (19).
        public static let configA: [LayerSpec] = [64, .maxPool, 128, .maxPool, 256, 256, .maxPool, 512, 512, .maxPool,
                                                  512, 512, .maxPool]
        public static let configB: [LayerSpec] = [64, 64, .maxPool, 128, 128, .maxPool, 256, 256, .maxPool, 512, 512,
                                                  .maxPool, 512, 512, .maxPool]
        public static let configD: [LayerSpec] = [64, 64, .maxPool, 128, 128, .maxPool, 256, 256, 256, .maxPool,
                                                  512, 512, 512, .maxPool, 512, 512, 512, .maxPool]
        public static let configE: [LayerSpec] = [64, 64, .maxPool, 128, 128, .maxPool, 256, 256, 256, 256, .maxPool,
                                                  512, 512, 512, 512, .maxPool, 512, 512, 512, 512, .maxPool]

        /// The `features` Sequential of a configuration: conv (+ BatchNorm) + ReLU per `.conv`,
        /// a 2×2 max pool per `.maxPool`, starting from 3 channels.
        public static func makeLayers(_ config: [LayerSpec], batchNorm: Bool = false) -> nn.Sequential {
            var layers: [nn.Module] = []
            var inChannels = 3
            for spec in config {
                switch spec {
                case .maxPool:
                    layers.append(nn.MaxPool2d(kernelSize: 2, stride: 2))
                case .conv(let v):
                    layers.append(nn.Conv2d(inChannels, v, kernelSize: 3, padding: 1))
                    if batchNorm { layers.append(nn.BatchNorm2d(v)) }
                    layers.append(nn.ReLU(inplace: true))
                    inChannels = v
                }
            }
            return nn.Sequential(layers)
        }
    }
}

extension models.Weights {
    public static let vgg11ImageNet1kV1 = models.Weights(
        name: "VGG11_Weights.IMAGENET1K_V1", arch: "vgg11", url: "https://download.pytorch.org/models/vgg11-8a719046.pth")
    public static let vgg11BnImageNet1kV1 = models.Weights(
        name: "VGG11_BN_Weights.IMAGENET1K_V1", arch: "vgg11_bn", url: "https://download.pytorch.org/models/vgg11_bn-6002323d.pth")
    public static let vgg13ImageNet1kV1 = models.Weights(
        name: "VGG13_Weights.IMAGENET1K_V1", arch: "vgg13", url: "https://download.pytorch.org/models/vgg13-19584684.pth")
    public static let vgg13BnImageNet1kV1 = models.Weights(
        name: "VGG13_BN_Weights.IMAGENET1K_V1", arch: "vgg13_bn", url: "https://download.pytorch.org/models/vgg13_bn-abd245e5.pth")
    public static let vgg16ImageNet1kV1 = models.Weights(
        name: "VGG16_Weights.IMAGENET1K_V1", arch: "vgg16", url: "https://download.pytorch.org/models/vgg16-397923af.pth")
    public static let vgg16BnImageNet1kV1 = models.Weights(
        name: "VGG16_BN_Weights.IMAGENET1K_V1", arch: "vgg16_bn", url: "https://download.pytorch.org/models/vgg16_bn-6c64b313.pth")
    public static let vgg19ImageNet1kV1 = models.Weights(
        name: "VGG19_Weights.IMAGENET1K_V1", arch: "vgg19", url: "https://download.pytorch.org/models/vgg19-dcbb9e9d.pth")
    public static let vgg19BnImageNet1kV1 = models.Weights(
        name: "VGG19_BN_Weights.IMAGENET1K_V1", arch: "vgg19_bn", url: "https://download.pytorch.org/models/vgg19_bn-c79401a0.pth")
}

extension models {
    /// The shared body of the eight VGG builders.
    private static func vgg(_ arch: String, _ config: [VGG.LayerSpec], _ bn: Bool, _ weights: Weights?,
                            _ numClasses: Int?) throws -> VGG {
        try build(arch, weights, numClasses) { vgg(config, bn, $0) }
    }

    private static func vgg(_ config: [VGG.LayerSpec], _ bn: Bool, _ numClasses: Int) -> VGG {
        VGG(features: VGG.makeLayers(config, batchNorm: bn), numClasses: numClasses)
    }

    /// VGG-11 (configuration A), randomly initialised.
    public static func vgg11(numClasses: Int = 1000) -> VGG { vgg(VGG.configA, false, numClasses) }
    /// VGG-11 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg11(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg11", VGG.configA, false, weights, numClasses)
    }
    /// VGG-11; `pretrained: true` loads `.vgg11ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg11(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg11", VGG.configA, false, pretrained ? .vgg11ImageNet1kV1 : nil, numClasses)
    }
    /// VGG-11 with BatchNorm, randomly initialised.
    public static func vgg11Bn(numClasses: Int = 1000) -> VGG { vgg(VGG.configA, true, numClasses) }
    /// VGG-11 with BatchNorm and `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg11Bn(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg11_bn", VGG.configA, true, weights, numClasses)
    }
    /// VGG-11 with BatchNorm; `pretrained: true` loads `.vgg11BnImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg11Bn(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg11_bn", VGG.configA, true, pretrained ? .vgg11BnImageNet1kV1 : nil, numClasses)
    }
    /// VGG-13 (configuration B), randomly initialised.
    public static func vgg13(numClasses: Int = 1000) -> VGG { vgg(VGG.configB, false, numClasses) }
    /// VGG-13 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg13(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg13", VGG.configB, false, weights, numClasses)
    }
    /// VGG-13; `pretrained: true` loads `.vgg13ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg13(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg13", VGG.configB, false, pretrained ? .vgg13ImageNet1kV1 : nil, numClasses)
    }
    /// VGG-13 with BatchNorm, randomly initialised.
    public static func vgg13Bn(numClasses: Int = 1000) -> VGG { vgg(VGG.configB, true, numClasses) }
    /// VGG-13 with BatchNorm and `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg13Bn(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg13_bn", VGG.configB, true, weights, numClasses)
    }
    /// VGG-13 with BatchNorm; `pretrained: true` loads `.vgg13BnImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg13Bn(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg13_bn", VGG.configB, true, pretrained ? .vgg13BnImageNet1kV1 : nil, numClasses)
    }
    /// VGG-16 (configuration D), randomly initialised.
    public static func vgg16(numClasses: Int = 1000) -> VGG { vgg(VGG.configD, false, numClasses) }
    /// VGG-16 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg16(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg16", VGG.configD, false, weights, numClasses)
    }
    /// VGG-16; `pretrained: true` loads `.vgg16ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg16(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg16", VGG.configD, false, pretrained ? .vgg16ImageNet1kV1 : nil, numClasses)
    }
    /// VGG-16 with BatchNorm, randomly initialised.
    public static func vgg16Bn(numClasses: Int = 1000) -> VGG { vgg(VGG.configD, true, numClasses) }
    /// VGG-16 with BatchNorm and `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg16Bn(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg16_bn", VGG.configD, true, weights, numClasses)
    }
    /// VGG-16 with BatchNorm; `pretrained: true` loads `.vgg16BnImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg16Bn(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg16_bn", VGG.configD, true, pretrained ? .vgg16BnImageNet1kV1 : nil, numClasses)
    }
    /// VGG-19 (configuration E), randomly initialised.
    public static func vgg19(numClasses: Int = 1000) -> VGG { vgg(VGG.configE, false, numClasses) }
    /// VGG-19 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg19(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg19", VGG.configE, false, weights, numClasses)
    }
    /// VGG-19; `pretrained: true` loads `.vgg19ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg19(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg19", VGG.configE, false, pretrained ? .vgg19ImageNet1kV1 : nil, numClasses)
    }
    /// VGG-19 with BatchNorm, randomly initialised.
    public static func vgg19Bn(numClasses: Int = 1000) -> VGG { vgg(VGG.configE, true, numClasses) }
    /// VGG-19 with BatchNorm and `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func vgg19Bn(weights: Weights, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg19_bn", VGG.configE, true, weights, numClasses)
    }
    /// VGG-19 with BatchNorm; `pretrained: true` loads `.vgg19BnImageNet1kV1`. - Throws: ``WeightsError``.
    public static func vgg19Bn(pretrained: Bool, numClasses: Int? = nil) throws -> VGG {
        try vgg("vgg19_bn", VGG.configE, true, pretrained ? .vgg19BnImageNet1kV1 : nil, numClasses)
    }
}
