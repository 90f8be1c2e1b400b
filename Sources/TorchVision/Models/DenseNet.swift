import Torch

extension models {
    /// One layer of a dense block: BN → ReLU → 1×1 conv to `bnSize·growthRate` channels → BN → ReLU →
    /// 3×3 conv to `growthRate` channels, applied to the concatenation of all earlier features.
    public final class DenseLayer: nn.Module {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "_DenseLayer" }
        public var norm1: nn.Module
        public var relu1: nn.Module
        public var conv1: nn.Module
        public var norm2: nn.Module
        public var relu2: nn.Module
        public var conv2: nn.Module
        public let dropRate: Double

        public init(_ numInputFeatures: Int, growthRate: Int, bnSize: Int, dropRate: Double) {
            norm1 = nn.BatchNorm2d(numInputFeatures)
            relu1 = nn.ReLU(inplace: true)
            conv1 = nn.Conv2d(numInputFeatures, bnSize * growthRate, kernelSize: 1, stride: 1, bias: false)
            norm2 = nn.BatchNorm2d(bnSize * growthRate)
            relu2 = nn.ReLU(inplace: true)
            conv2 = nn.Conv2d(bnSize * growthRate, growthRate, kernelSize: 3, stride: 1, padding: 1, bias: false)
            self.dropRate = dropRate
            super.init()
        }

        /// The new features computed from all previous ones.
        public func forward(features: [Tensor]) -> Tensor {
            let bottleneck = conv1(relu1(norm1(torch.cat(features, dim: 1))))
            let out = conv2(relu2(norm2(bottleneck)))
            return dropRate > 0 ? F.dropout(out, p: dropRate, training: training) : out
        }

        public override func forward(_ x: Tensor) -> Tensor { forward(features: [x]) }
    }

    /// A dense block (a ModuleDict of `denselayer1`, `denselayer2`, …): each layer sees the
    /// concatenation of the input and every earlier layer's output; returns all of them concatenated.
    /// Between two dense blocks: BN → ReLU → 1×1 conv to `numOutputFeatures` channels → 2×2 average pool
    /// (torchvision's `_Transition`).
    public final class DenseTransition: nn.Sequential {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "_Transition" }
        public init(numInputFeatures: Int, numOutputFeatures: Int) {
            super.init([
                ("norm", nn.BatchNorm2d(numInputFeatures) as nn.Module),
                ("relu", nn.ReLU(inplace: true)),
                ("conv", nn.Conv2d(numInputFeatures, numOutputFeatures, kernelSize: 1, stride: 1, bias: false)),
                ("pool", nn.AvgPool2d(kernelSize: 2, stride: 2)),
            ])
        }
    }

    public final class DenseBlock: nn.ModuleDict {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "_DenseBlock" }
        public init(numLayers: Int, numInputFeatures: Int, bnSize: Int, growthRate: Int, dropRate: Double) {
            super.init((0..<numLayers).map { i in
                ("denselayer\(i + 1)", DenseLayer(numInputFeatures + i * growthRate, growthRate: growthRate,
                                                  bnSize: bnSize, dropRate: dropRate) as nn.Module)
            })
        }

        public override func forward(_ x: Tensor) -> Tensor {
            var features = [x]
            for layer in values { features.append((layer as! DenseLayer).forward(features: features)) }
            return torch.cat(features, dim: 1)
        }
    }

    /// torchvision's DenseNet-BC: `features` (a 7×7 stem `conv0`/`norm0`/`relu0`/`pool0`, dense blocks
    /// joined by transitions BN → ReLU → 1×1 conv halving the channels → 2×2 average pool, and `norm5`),
    /// then ReLU, global average pooling and the linear `classifier`.
    ///
    /// Convolutions are kaiming-normal (fan-in), BN ones/zeros, the classifier's bias zero.
    public final class DenseNet: nn.Module {
        public var features: nn.Module
        public var classifier: nn.Module

        public init(growthRate: Int = 32, blockConfig: [Int] = [6, 12, 24, 16], numInitFeatures: Int = 64, bnSize: Int = 4,
                    dropRate: Double = 0, numClasses: Int = 1000) {
            var layers: [(String, nn.Module)] = [
                ("conv0", nn.Conv2d(3, numInitFeatures, kernelSize: 7, stride: 2, padding: 3, bias: false)),
                ("norm0", nn.BatchNorm2d(numInitFeatures)),
                ("relu0", nn.ReLU(inplace: true)),
                ("pool0", nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1)),
            ]
            var numFeatures = numInitFeatures
            for (i, numLayers) in blockConfig.enumerated() {
                layers.append(("denseblock\(i + 1)", DenseBlock(numLayers: numLayers, numInputFeatures: numFeatures,
                                                                 bnSize: bnSize, growthRate: growthRate, dropRate: dropRate)))
                numFeatures += numLayers * growthRate
                if i != blockConfig.count - 1 {
                    layers.append(("transition\(i + 1)", DenseTransition(numInputFeatures: numFeatures,
                                                                           numOutputFeatures: numFeatures / 2)))
                    numFeatures /= 2
                }
            }
            layers.append(("norm5", nn.BatchNorm2d(numFeatures)))
            features = nn.Sequential(layers)
            classifier = nn.Linear(numFeatures, numClasses)
            super.init()
            for m in modules() {
                if let c = m as? nn.Conv2d {
                    nn.init_.kaimingNormal_(c.weight)
                } else if let bn = m as? nn.BatchNorm2d {
                    nn.init_.ones_(bn.weight!)
                    nn.init_.zeros_(bn.bias!)
                } else if let l = m as? nn.Linear, let b = l.bias {
                    nn.init_.zeros_(b)
                }
            }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let out = F.relu(features(x), inplace: true)
            return classifier(F.adaptiveAvgPool2d(out, [1, 1]).flatten(startDim: 1))
        }

        /// Renames the old `denselayerN.norm.1`-style keys of torchvision's DenseNet checkpoints
        /// to today's `denselayerN.norm1`.
        static func renameLegacyKeys(_ pairs: [(String, Tensor)]) -> [(String, Tensor)] {
            // torchvision's ^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$,
            // matched by hand (Foundation's NSRegularExpression would link its ICU data into a static binary):
            // the dot between groups 1 and 2 goes.
            let kinds: Set<Substring> = ["norm", "relu", "conv"], numbers: Set<Substring> = ["1", "2"]
            let names: Set<Substring> = ["weight", "bias", "running_mean", "running_var"]
            return pairs.map { key, t in
                let parts = key.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count >= 4, names.contains(parts[parts.count - 1]), numbers.contains(parts[parts.count - 2]),
                      kinds.contains(parts[parts.count - 3]) else { return (key, t) }
                let layer = parts[parts.count - 4]
                var stem = layer
                while let last = stem.last, last.isASCII, last.isNumber { stem = stem.dropLast() }
                guard stem.count < layer.count, stem.hasSuffix("denselayer") else { return (key, t) }
                return (parts[..<(parts.count - 2)].joined(separator: ".") + parts[(parts.count - 2)...].joined(separator: "."), t)
            }
        }
    }
}

extension models.Weights {
    public static let densenet121ImageNet1kV1 = models.Weights(
        name: "DenseNet121_Weights.IMAGENET1K_V1", arch: "densenet121",
        url: "https://download.pytorch.org/models/densenet121-a639ec97.pth")
}

extension models {
    /// DenseNet-121 (growth 32, blocks [6, 12, 24, 16]), randomly initialised (torchvision's `densenet121()`).
    public static func densenet121(numClasses: Int = 1000) -> DenseNet { DenseNet(numClasses: numClasses) }
    /// DenseNet-121 with `weights` from the hub cache (old `norm.1`-style keys are renamed). - Throws: ``WeightsError``.
    public static func densenet121(weights: Weights, numClasses: Int? = nil) throws -> DenseNet {
        try build("densenet121", weights, numClasses, transform: DenseNet.renameLegacyKeys) { densenet121(numClasses: $0) }
    }
    /// DenseNet-121; `pretrained: true` loads `.densenet121ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func densenet121(pretrained: Bool, numClasses: Int? = nil) throws -> DenseNet {
        try build("densenet121", pretrained ? .densenet121ImageNet1kV1 : nil, numClasses,
                  transform: DenseNet.renameLegacyKeys) { densenet121(numClasses: $0) }
    }
}
