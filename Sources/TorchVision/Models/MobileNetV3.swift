import Torch

extension models {
    /// One MobileNetV3 block's configuration (channel counts already scaled by the width multiplier).
    public struct InvertedResidualConfig: Sendable {
        public let inputChannels: Int
        public let kernel: Int
        public let expandedChannels: Int
        public let outChannels: Int
        /// With a squeeze-and-excitation layer.
        public let useSE: Bool
        /// Hardswish (true) or ReLU (false).
        public let useHardswish: Bool
        public let stride: Int
        public let dilation: Int

        /// `activation` is torchvision's `"HS"` (hardswish) or `"RE"` (ReLU).
        public init(_ inputChannels: Int, _ kernel: Int, _ expandedChannels: Int, _ outChannels: Int, _ useSE: Bool,
                    _ activation: String, _ stride: Int, _ dilation: Int, widthMult: Double = 1) {
            precondition(activation == "HS" || activation == "RE", "activation must be \"HS\" or \"RE\", got \(activation)")
            self.inputChannels = Self.adjustChannels(inputChannels, widthMult)
            self.kernel = kernel
            self.expandedChannels = Self.adjustChannels(expandedChannels, widthMult)
            self.outChannels = Self.adjustChannels(outChannels, widthMult)
            self.useSE = useSE
            useHardswish = activation == "HS"
            self.stride = stride
            self.dilation = dilation
        }

        /// `channels · widthMult` rounded to a multiple of 8.
        public static func adjustChannels(_ channels: Int, _ widthMult: Double) -> Int {
            makeDivisible(Double(channels) * widthMult, 8)
        }
    }

    /// MobileNetV3's block, in `block`: optional 1×1 expansion, depthwise k×k convolution, optional
    /// squeeze-and-excitation (hard-sigmoid gate), linear 1×1 projection; residual when shapes allow.
    public final class InvertedResidualV3: nn.Module {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "InvertedResidual" }
        public var block: nn.Module
        public let outChannels: Int
        let useResConnect: Bool

        public init(_ cnf: InvertedResidualConfig, norm: @escaping (Int) -> nn.Module) {
            precondition(1 <= cnf.stride && cnf.stride <= 2, "illegal stride value")
            useResConnect = cnf.stride == 1 && cnf.inputChannels == cnf.outChannels
            let act: () -> nn.Module = cnf.useHardswish ? { nn.Hardswish(inplace: true) } : { nn.ReLU(inplace: true) }
            var layers: [nn.Module] = []
            if cnf.expandedChannels != cnf.inputChannels {
                layers.append(Conv2dNormActivation(cnf.inputChannels, cnf.expandedChannels, kernelSize: 1, norm: norm,
                                                   activation: act))
            }
            layers.append(Conv2dNormActivation(cnf.expandedChannels, cnf.expandedChannels, kernelSize: cnf.kernel,
                                               stride: cnf.dilation > 1 ? 1 : cnf.stride, groups: cnf.expandedChannels,
                                               dilation: cnf.dilation, norm: norm, activation: act))
            if cnf.useSE {
                layers.append(SqueezeExcitation(cnf.expandedChannels, makeDivisible(Double(cnf.expandedChannels / 4), 8),
                                                scaleActivation: nn.Hardsigmoid()))
            }
            layers.append(Conv2dNormActivation(cnf.expandedChannels, cnf.outChannels, kernelSize: 1, norm: norm,
                                               activation: nil))
            block = nn.Sequential(layers)
            outChannels = cnf.outChannels
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let y = block(x)
            return useResConnect ? y + x : y
        }
    }

    /// torchvision's MobileNetV3: `features` (hardswish stem, the configured blocks, a 1×1 conv to 6×
    /// the last block's channels), `avgpool`, and `classifier` (linear, hardswish, dropout, linear).
    /// BatchNorms use eps 0.001 and momentum 0.01; init as ``MobileNetV2``.
    public final class MobileNetV3: nn.Module {
        public var features: nn.Module
        public var avgpool: nn.Module
        public var classifier: nn.Module

        public init(_ setting: [InvertedResidualConfig], lastChannel: Int, numClasses: Int = 1000, dropout: Double = 0.2) {
            precondition(!setting.isEmpty, "The inverted_residual_setting should not be empty")
            let norm: (Int) -> nn.Module = { nn.BatchNorm2d($0, eps: 0.001, momentum: 0.01) }
            var layers: [nn.Module] = [
                Conv2dNormActivation(3, setting[0].inputChannels, kernelSize: 3, stride: 2, norm: norm,
                                     activation: { nn.Hardswish(inplace: true) }),
            ]
            for cnf in setting { layers.append(InvertedResidualV3(cnf, norm: norm)) }
            let lastIn = setting[setting.count - 1].outChannels
            layers.append(Conv2dNormActivation(lastIn, 6 * lastIn, kernelSize: 1, norm: norm,
                                               activation: { nn.Hardswish(inplace: true) }))
            features = nn.Sequential(layers)
            avgpool = nn.AdaptiveAvgPool2d(1)
            classifier = nn.Sequential(nn.Linear(6 * lastIn, lastChannel), nn.Hardswish(inplace: true),
                                       nn.Dropout(p: dropout, inplace: true), nn.Linear(lastChannel, numClasses))
            super.init()
            initWeights(self)
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(avgpool(features(x)).flatten(startDim: 1))
        }

        /// torchvision's block table for `"mobilenet_v3_large"` or `"mobilenet_v3_small"` and the
        /// classifier's hidden width; `reducedTail` halves the last stage, `dilated` dilates it.
        public static func config(_ arch: String, widthMult: Double = 1, reducedTail: Bool = false, dilated: Bool = false)
            -> (setting: [InvertedResidualConfig], lastChannel: Int) {
            let r = reducedTail ? 2 : 1, d = dilated ? 2 : 1
            func c(_ i: Int, _ k: Int, _ e: Int, _ o: Int, _ se: Bool, _ a: String, _ s: Int, _ dil: Int) -> InvertedResidualConfig {
                InvertedResidualConfig(i, k, e, o, se, a, s, dil, widthMult: widthMult)
            }
            switch arch {
            case "mobilenet_v3_large":
                return ([
                    c(16, 3, 16, 16, false, "RE", 1, 1), c(16, 3, 64, 24, false, "RE", 2, 1),
                    c(24, 3, 72, 24, false, "RE", 1, 1), c(24, 5, 72, 40, true, "RE", 2, 1),
                    c(40, 5, 120, 40, true, "RE", 1, 1), c(40, 5, 120, 40, true, "RE", 1, 1),
                    c(40, 3, 240, 80, false, "HS", 2, 1), c(80, 3, 200, 80, false, "HS", 1, 1),
                    c(80, 3, 184, 80, false, "HS", 1, 1), c(80, 3, 184, 80, false, "HS", 1, 1),
                    c(80, 3, 480, 112, true, "HS", 1, 1), c(112, 3, 672, 112, true, "HS", 1, 1),
                    c(112, 5, 672, 160 / r, true, "HS", 2, d), c(160 / r, 5, 960 / r, 160 / r, true, "HS", 1, d),
                    c(160 / r, 5, 960 / r, 160 / r, true, "HS", 1, d),
                ], InvertedResidualConfig.adjustChannels(1280 / r, widthMult))
            case "mobilenet_v3_small":
                return ([
                    c(16, 3, 16, 16, true, "RE", 2, 1), c(16, 3, 72, 24, false, "RE", 2, 1),
                    c(24, 3, 88, 24, false, "RE", 1, 1), c(24, 5, 96, 40, true, "HS", 2, 1),
                    c(40, 5, 240, 40, true, "HS", 1, 1), c(40, 5, 240, 40, true, "HS", 1, 1),
                    c(40, 5, 120, 48, true, "HS", 1, 1), c(48, 5, 144, 48, true, "HS", 1, 1),
                    c(48, 5, 288, 96 / r, true, "HS", 2, d), c(96 / r, 5, 576 / r, 96 / r, true, "HS", 1, d),
                    c(96 / r, 5, 576 / r, 96 / r, true, "HS", 1, d),
                ], InvertedResidualConfig.adjustChannels(1024 / r, widthMult))
            default:
                preconditionFailure("Unsupported model type \(arch)")
            }
        }
    }
}

extension models.Weights {
    public static let mobilenetV3LargeImageNet1kV1 = models.Weights(
        name: "MobileNet_V3_Large_Weights.IMAGENET1K_V1", arch: "mobilenet_v3_large",
        url: "https://download.pytorch.org/models/mobilenet_v3_large-8738ca79.pth")
    public static let mobilenetV3LargeImageNet1kV2 = models.Weights(
        name: "MobileNet_V3_Large_Weights.IMAGENET1K_V2", arch: "mobilenet_v3_large",
        url: "https://download.pytorch.org/models/mobilenet_v3_large-5c1a4163.pth")
    public static let mobilenetV3SmallImageNet1kV1 = models.Weights(
        name: "MobileNet_V3_Small_Weights.IMAGENET1K_V1", arch: "mobilenet_v3_small",
        url: "https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth")
}

extension models {
    private static func mobilenetV3(_ arch: String, _ numClasses: Int) -> MobileNetV3 {
        let (setting, last) = MobileNetV3.config(arch)
        return MobileNetV3(setting, lastChannel: last, numClasses: numClasses)
    }

    /// MobileNetV3-Large, randomly initialised (torchvision's `mobilenet_v3_large()`).
    public static func mobilenetV3Large(numClasses: Int = 1000) -> MobileNetV3 { mobilenetV3("mobilenet_v3_large", numClasses) }
    /// MobileNetV3-Large with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func mobilenetV3Large(weights: Weights, numClasses: Int? = nil) throws -> MobileNetV3 {
        try build("mobilenet_v3_large", weights, numClasses) { mobilenetV3Large(numClasses: $0) }
    }
    /// MobileNetV3-Large; `pretrained: true` loads `.mobilenetV3LargeImageNet1kV1`. - Throws: ``WeightsError``.
    public static func mobilenetV3Large(pretrained: Bool, numClasses: Int? = nil) throws -> MobileNetV3 {
        try build("mobilenet_v3_large", pretrained ? .mobilenetV3LargeImageNet1kV1 : nil, numClasses) {
            mobilenetV3Large(numClasses: $0)
        }
    }
    /// MobileNetV3-Small, randomly initialised (torchvision's `mobilenet_v3_small()`).
    public static func mobilenetV3Small(numClasses: Int = 1000) -> MobileNetV3 { mobilenetV3("mobilenet_v3_small", numClasses) }
    /// MobileNetV3-Small with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func mobilenetV3Small(weights: Weights, numClasses: Int? = nil) throws -> MobileNetV3 {
        try build("mobilenet_v3_small", weights, numClasses) { mobilenetV3Small(numClasses: $0) }
    }
    /// MobileNetV3-Small; `pretrained: true` loads `.mobilenetV3SmallImageNet1kV1`. - Throws: ``WeightsError``.
    public static func mobilenetV3Small(pretrained: Bool, numClasses: Int? = nil) throws -> MobileNetV3 {
        try build("mobilenet_v3_small", pretrained ? .mobilenetV3SmallImageNet1kV1 : nil, numClasses) {
            mobilenetV3Small(numClasses: $0)
        }
    }
}
