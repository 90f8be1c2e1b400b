import Torch

extension models {
    /// MobileNetV2's inverted residual block: an optional 1×1 expansion (`expandRatio` ≠ 1), a 3×3
    /// depthwise convolution, a linear 1×1 projection, all in `conv`; the input is added back when the
    /// stride is 1 and the channel count is unchanged.
    public final class InvertedResidual: nn.Module {
        public var conv: nn.Module
        public let stride: Int
        public let outChannels: Int
        let useResConnect: Bool

        public init(_ inp: Int, _ oup: Int, stride: Int, expandRatio: Int) {
            precondition(stride == 1 || stride == 2, "stride should be 1 or 2 instead of \(stride)")
            let hidden = inp * expandRatio
            var layers: [nn.Module] = []
            if expandRatio != 1 {
                layers.append(Conv2dNormActivation(inp, hidden, kernelSize: 1, activation: { nn.ReLU6(inplace: true) }))
            }
            layers.append(Conv2dNormActivation(hidden, hidden, stride: stride, groups: hidden,
                                               activation: { nn.ReLU6(inplace: true) }))
            layers.append(nn.Conv2d(hidden, oup, kernelSize: 1, stride: 1, padding: 0, bias: false))
            layers.append(nn.BatchNorm2d(oup))
            conv = nn.Sequential(layers)
            self.stride = stride
            outChannels = oup
            useResConnect = stride == 1 && inp == oup
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            useResConnect ? x + conv(x) : conv(x)
        }
    }

    /// torchvision's MobileNetV2: `features` (a stride-2 stem, 17 inverted residual blocks, a 1×1
    /// convolution to 1280 channels) and `classifier` (dropout, linear). Convolutions kaiming-normal
    /// (fan-out), norms ones/zeros, linear N(0, 0.01²).
    public final class MobileNetV2: nn.Module {
        public var features: nn.Module
        public var classifier: nn.Module
        /// Channels entering the classifier.
        public let lastChannel: Int

        /// - Parameters:
        ///   - numClasses: outputs of the classifier.
        ///   - widthMult: multiplies every layer's channels (rounded to multiples of `roundNearest`).
        ///   - invertedResidualSetting: rows of (expansion t, channels c, repeats n, first stride s).
        ///   - roundNearest: channel counts are rounded to multiples of this.
        ///   - dropout: the classifier's dropout probability.
        public init(numClasses: Int = 1000, widthMult: Double = 1.0, invertedResidualSetting: [[Int]]? = nil,
                    roundNearest: Int = 8, dropout: Double = 0.2) {
            let setting = invertedResidualSetting ?? [
                [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1],
            ]
            precondition(!setting.isEmpty && setting[0].count == 4,
                         "inverted_residual_setting should be non-empty or a 4-element list, got \(setting)")
            var inputChannel = makeDivisible(32 * widthMult, roundNearest)
            lastChannel = makeDivisible(1280 * Swift.max(1.0, widthMult), roundNearest)
            var layers: [nn.Module] = [Conv2dNormActivation(3, inputChannel, stride: 2, activation: { nn.ReLU6(inplace: true) })]
            for row in setting {
                let (t, c, n, s) = (row[0], row[1], row[2], row[3])
                let outputChannel = makeDivisible(Double(c) * widthMult, roundNearest)
                for i in 0..<n {
                    layers.append(InvertedResidual(inputChannel, outputChannel, stride: i == 0 ? s : 1, expandRatio: t))
                    inputChannel = outputChannel
                }
            }
            layers.append(Conv2dNormActivation(inputChannel, lastChannel, kernelSize: 1, activation: { nn.ReLU6(inplace: true) }))
            features = nn.Sequential(layers)
            classifier = nn.Sequential(nn.Dropout(p: dropout), nn.Linear(lastChannel, numClasses))
            super.init()
            initWeights(self)
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(F.adaptiveAvgPool2d(features(x), [1, 1]).flatten(startDim: 1))
        }
    }
}

extension models.Weights {
    public static let mobilenetV2ImageNet1kV1 = models.Weights(
        name: "MobileNet_V2_Weights.IMAGENET1K_V1", arch: "mobilenet_v2",
        url: "https://download.pytorch.org/models/mobilenet_v2-b0353104.pth")
    public static let mobilenetV2ImageNet1kV2 = models.Weights(
        name: "MobileNet_V2_Weights.IMAGENET1K_V2", arch: "mobilenet_v2",
        url: "https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth")
}

extension models {
    /// MobileNetV2, randomly initialised (torchvision's `mobilenet_v2()`).
    public static func mobilenetV2(numClasses: Int = 1000) -> MobileNetV2 { MobileNetV2(numClasses: numClasses) }
    /// MobileNetV2 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func mobilenetV2(weights: Weights, numClasses: Int? = nil) throws -> MobileNetV2 {
        try build("mobilenet_v2", weights, numClasses) { mobilenetV2(numClasses: $0) }
    }
    /// MobileNetV2; `pretrained: true` loads `.mobilenetV2ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func mobilenetV2(pretrained: Bool, numClasses: Int? = nil) throws -> MobileNetV2 {
        try build("mobilenet_v2", pretrained ? .mobilenetV2ImageNet1kV1 : nil, numClasses) { mobilenetV2(numClasses: $0) }
    }
}
