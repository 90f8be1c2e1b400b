import Torch

extension models {
    /// GoogLeNet's convolution unit: a bias-free convolution, BatchNorm (eps 0.001), ReLU.
    public final class BasicConv2d: nn.Module {
        public var conv: nn.Module
        public var bn: nn.Module

        public init(_ inChannels: Int, _ outChannels: Int, kernelSize: Int, stride: Int = 1, padding: Int = 0) {
            conv = nn.Conv2d(inChannels, outChannels, kernelSize: kernelSize, stride: stride, padding: padding, bias: false)
            bn = nn.BatchNorm2d(outChannels, eps: 0.001)
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor { F.relu(bn(conv(x)), inplace: true) }
    }

    /// An Inception module: 1×1, 1×1→3×3, 1×1→3×3 and maxpool→1×1 branches concatenated along channels.
    public final class Inception: nn.Module {
        public var branch1: nn.Module
        public var branch2: nn.Module
        public var branch3: nn.Module
        public var branch4: nn.Module

        public init(_ inChannels: Int, _ ch1x1: Int, _ ch3x3red: Int, _ ch3x3: Int, _ ch5x5red: Int, _ ch5x5: Int,
                    _ poolProj: Int) {
            branch1 = BasicConv2d(inChannels, ch1x1, kernelSize: 1)
            branch2 = nn.Sequential(BasicConv2d(inChannels, ch3x3red, kernelSize: 1),
                                    BasicConv2d(ch3x3red, ch3x3, kernelSize: 3, padding: 1))
            // torchvision uses a 3×3 kernel here too (a known deviation from the paper's 5×5), kept for its weights.
            branch3 = nn.Sequential(BasicConv2d(inChannels, ch5x5red, kernelSize: 1),
                                    BasicConv2d(ch5x5red, ch5x5, kernelSize: 3, padding: 1))
            branch4 = nn.Sequential(nn.MaxPool2d(kernelSize: 3, stride: 1, padding: 1, ceilMode: true),
                                    BasicConv2d(inChannels, poolProj, kernelSize: 1))
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            torch.cat([branch1(x), branch2(x), branch3(x), branch4(x)], dim: 1)
        }
    }

    /// GoogLeNet's auxiliary classifier: 4×4 adaptive average pool, 1×1 conv to 128, `fc1` (2048 → 1024),
    /// ReLU, dropout, `fc2`.
    public final class InceptionAux: nn.Module {
        public var conv: nn.Module
        public var fc1: nn.Module
        public var fc2: nn.Module
        public var dropout: nn.Module

        public init(_ inChannels: Int, _ numClasses: Int, dropout: Double = 0.7) {
            conv = BasicConv2d(inChannels, 128, kernelSize: 1)
            fc1 = nn.Linear(2048, 1024)
            fc2 = nn.Linear(1024, numClasses)
            self.dropout = nn.Dropout(p: dropout)
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let y = conv(F.adaptiveAvgPool2d(x, [4, 4])).flatten(startDim: 1)
            return fc2(dropout(F.relu(fc1(y), inplace: true)))
        }
    }

    /// torchvision's GoogLeNet (Inception v1). `forward` returns the main logits; in training mode with
    /// `aux1`/`aux2` present, ``forwardWithAux(_:)`` also returns the auxiliary logits (torchvision's
    /// `GoogLeNetOutputs(logits, aux_logits2, aux_logits1)`).
    ///
    /// With `initWeights`, convolutions and linears are truncated-normal (std 0.01, cut at ±2), BN ones/zeros.
    public final class GoogLeNet: nn.Module {
        public var conv1: nn.Module
        public var maxpool1: nn.Module
        public var conv2: nn.Module
        public var conv3: nn.Module
        public var maxpool2: nn.Module
        public var inception3a: nn.Module
        public var inception3b: nn.Module
        public var maxpool3: nn.Module
        public var inception4a: nn.Module
        public var inception4b: nn.Module
        public var inception4c: nn.Module
        public var inception4d: nn.Module
        public var inception4e: nn.Module
        public var maxpool4: nn.Module
        public var inception5a: nn.Module
        public var inception5b: nn.Module
        public var aux1: nn.Module?
        public var aux2: nn.Module?
        public var avgpool: nn.Module
        public var dropout: nn.Module
        public var fc: nn.Module
        /// Whether the auxiliary heads' outputs are produced in training mode.
        public var auxLogits: Bool
        /// Re-normalise inputs from ImageNet statistics to [-1, 1] per channel (the pretrained weights expect it).
        public var transformInput: Bool

        public init(numClasses: Int = 1000, auxLogits: Bool = true, transformInput: Bool = false, initWeights: Bool = true,
                    dropout: Double = 0.2, dropoutAux: Double = 0.7) {
            self.auxLogits = auxLogits
            self.transformInput = transformInput
            conv1 = BasicConv2d(3, 64, kernelSize: 7, stride: 2, padding: 3)
            maxpool1 = nn.MaxPool2d(3, stride: 2, ceilMode: true)
            conv2 = BasicConv2d(64, 64, kernelSize: 1)
            conv3 = BasicConv2d(64, 192, kernelSize: 3, padding: 1)
            maxpool2 = nn.MaxPool2d(3, stride: 2, ceilMode: true)
            inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
            inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
            maxpool3 = nn.MaxPool2d(3, stride: 2, ceilMode: true)
            inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
            inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
            inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
            inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
            inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
            maxpool4 = nn.MaxPool2d(2, stride: 2, ceilMode: true)
            inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
            inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
            aux1 = auxLogits ? InceptionAux(512, numClasses, dropout: dropoutAux) : nil
            aux2 = auxLogits ? InceptionAux(528, numClasses, dropout: dropoutAux) : nil
            avgpool = nn.AdaptiveAvgPool2d([1, 1])
            self.dropout = nn.Dropout(p: dropout)
            fc = nn.Linear(1024, numClasses)
            super.init()
            if initWeights {
                for m in modules() {
                    if let c = m as? nn.Conv2d {
                        nn.init_.truncNormal_(c.weight, mean: 0, std: 0.01, a: -2, b: 2)
                    } else if let l = m as? nn.Linear {
                        nn.init_.truncNormal_(l.weight, mean: 0, std: 0.01, a: -2, b: 2)
                    } else if let bn = m as? nn.BatchNorm2d {
                        nn.init_.ones_(bn.weight!)
                        nn.init_.zeros_(bn.bias!)
                    }
                }
            }
        }

        /// The main logits and, in training mode with auxiliary heads, (aux2, aux1) logits.
        public func forwardWithAux(_ input: Tensor) -> (logits: Tensor, aux2: Tensor?, aux1: Tensor?) {
            var x = input
            if transformInput {
                let scale = torch.tensor([0.229 / 0.5, 0.224 / 0.5, 0.225 / 0.5]).view(1, 3, 1, 1)
                let shift = torch.tensor([(0.485 - 0.5) / 0.5, (0.456 - 0.5) / 0.5, (0.406 - 0.5) / 0.5]).view(1, 3, 1, 1)
                x = x * scale + shift
            }
            x = maxpool2(conv3(conv2(maxpool1(conv1(x)))))
            x = inception4a(maxpool3(inception3b(inception3a(x))))
            let a1 = training && auxLogits ? aux1.map { $0(x) } : nil
            x = inception4d(inception4c(inception4b(x)))
            let a2 = training && auxLogits ? aux2.map { $0(x) } : nil
            x = inception5b(inception5a(maxpool4(inception4e(x))))
            let logits = fc(dropout(avgpool(x).flatten(startDim: 1)))
            return (logits, a2, a1)
        }

        public override func forward(_ x: Tensor) -> Tensor { forwardWithAux(x).logits }
    }
}

extension models.Weights {
    public static let googlenetImageNet1kV1 = models.Weights(
        name: "GoogLeNet_Weights.IMAGENET1K_V1", arch: "googlenet", url: "https://download.pytorch.org/models/googlenet-1378be20.pth")
}

extension models {
    /// GoogLeNet with auxiliary classifiers, randomly initialised (torchvision's `googlenet()`).
    public static func googlenet(numClasses: Int = 1000, auxLogits: Bool = true, transformInput: Bool = false) -> GoogLeNet {
        GoogLeNet(numClasses: numClasses, auxLogits: auxLogits, transformInput: transformInput)
    }
    /// GoogLeNet with `weights` from the hub cache; as in torchvision the input transform is on and the
    /// (untrained) auxiliary heads are dropped unless `auxLogits`. - Throws: ``WeightsError``.
    public static func googlenet(weights: Weights, numClasses: Int? = nil, auxLogits: Bool = false,
                                 transformInput: Bool = true) throws -> GoogLeNet {
        let model = try build("googlenet", weights, numClasses) {
            GoogLeNet(numClasses: $0, auxLogits: true, transformInput: transformInput, initWeights: false)
        }
        if !auxLogits {
            model.auxLogits = false
            model.aux1 = nil
            model.aux2 = nil
        }
        return model
    }
    /// GoogLeNet; `pretrained: true` loads `.googlenetImageNet1kV1` (see `googlenet(weights:)`). - Throws: ``WeightsError``.
    public static func googlenet(pretrained: Bool, numClasses: Int? = nil) throws -> GoogLeNet {
        pretrained ? try googlenet(weights: .googlenetImageNet1kV1, numClasses: numClasses)
                   : googlenet(numClasses: numClasses ?? 1000)
    }
}
