import Torch

extension models {
    /// A residual block ResNet can stack: ``BasicBlock`` (two 3×3 convolutions) or ``Bottleneck``
    /// (1×1, 3×3, 1×1 with `expansion` 4).
    public protocol ResNetBlock: nn.Module {
        /// Output channels divided by `planes`.
        static var expansion: Int { get }
        /// A block from `inplanes` to `planes * expansion` channels; `downsample` adapts the
        /// shortcut when the stride or channel count changes.
        init(_ inplanes: Int, _ planes: Int, stride: Int, downsample: nn.Module?, groups: Int, baseWidth: Int,
             dilation: Int)
    }

    /// ResNet-18/34's block: conv3×3 → BN → ReLU → conv3×3 → BN, plus the shortcut, then ReLU.
    public final class BasicBlock: nn.Module, ResNetBlock {
        public static let expansion = 1
        public var conv1: nn.Module
        public var bn1: nn.Module
        public var relu: nn.Module
        public var conv2: nn.Module
        public var bn2: nn.Module
        public var downsample: nn.Module?
        public let stride: Int

        public init(_ inplanes: Int, _ planes: Int, stride: Int = 1, downsample: nn.Module? = nil, groups: Int = 1,
                    baseWidth: Int = 64, dilation: Int = 1) {
            precondition(groups == 1 && baseWidth == 64, "BasicBlock only supports groups=1 and base_width=64")
            precondition(dilation == 1, "Dilation > 1 not supported in BasicBlock")
            conv1 = nn.Conv2d(inplanes, planes, kernelSize: 3, stride: stride, padding: 1, bias: false)
            bn1 = nn.BatchNorm2d(planes)
            relu = nn.ReLU(inplace: true)
            conv2 = nn.Conv2d(planes, planes, kernelSize: 3, stride: 1, padding: 1, bias: false)
            bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample
            self.stride = stride
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            // Each conv → bn (→ relu) is one convolution in eval mode (nn.convBatchNorm).
            var out = nn.convBatchNorm(conv1, bn1, then: relu, x)
            out = nn.convBatchNorm(conv2, bn2, out)
            let identity = downsample.map { $0(x) } ?? x
            return relu(out + identity)
        }
    }

    /// ResNet-50/101/152's block: conv1×1 → conv3×3 (with the stride and groups) → conv1×1 to
    /// `planes * 4` channels, each followed by BN (and ReLU but the last), plus the shortcut, then ReLU.
    public final class Bottleneck: nn.Module, ResNetBlock {
        public static let expansion = 4
        public var conv1: nn.Module
        public var bn1: nn.Module
        public var conv2: nn.Module
        public var bn2: nn.Module
        public var conv3: nn.Module
        public var bn3: nn.Module
        public var relu: nn.Module
        public var downsample: nn.Module?
        public let stride: Int

        public init(_ inplanes: Int, _ planes: Int, stride: Int = 1, downsample: nn.Module? = nil, groups: Int = 1,
                    baseWidth: Int = 64, dilation: Int = 1) {
            let width = planes * baseWidth / 64 * groups
            conv1 = nn.Conv2d(inplanes, width, kernelSize: 1, stride: 1, bias: false)
            bn1 = nn.BatchNorm2d(width)
            conv2 = nn.Conv2d(width, width, kernelSize: 3, stride: stride, padding: dilation, dilation: dilation,
                              groups: groups, bias: false)
            bn2 = nn.BatchNorm2d(width)
            conv3 = nn.Conv2d(width, planes * Self.expansion, kernelSize: 1, stride: 1, bias: false)
            bn3 = nn.BatchNorm2d(planes * Self.expansion)
            relu = nn.ReLU(inplace: true)
            self.downsample = downsample
            self.stride = stride
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            var out = nn.convBatchNorm(conv1, bn1, then: relu, x)
            out = nn.convBatchNorm(conv2, bn2, then: relu, out)
            out = nn.convBatchNorm(conv3, bn3, out)
            let identity = downsample.map { $0(x) } ?? x
            return relu(out + identity)
        }
    }

    /// torchvision's ResNet: a 7×7 stem (`conv1`, `bn1`, `relu`, `maxpool`), four stages
    /// `layer1`…`layer4` of residual blocks, global average pooling and the classifier `fc`.
    ///
    /// Convolutions are initialised kaiming-normal (fan-out, ReLU gain), BatchNorms to ones and
    /// zeros; `zeroInitResidual` zeroes the last BN weight of each block, as torchvision does. Every
    /// child is a `var` of type `nn.Module`, so heads and stems can be replaced:
    ///
    /// ```swift
    /// let model = models.resnet18()
    /// model.fc = nn.Linear(512, 10)          // state dict now has fc.weight [10, 512]
    /// ```
    public final class ResNet: nn.Module {
        public var conv1: nn.Module
        public var bn1: nn.Module
        public var relu: nn.Module
        public var maxpool: nn.Module
        public var layer1: nn.Module
        public var layer2: nn.Module
        public var layer3: nn.Module
        public var layer4: nn.Module
        public var avgpool: nn.Module
        public var fc: nn.Module

        /// - Parameters:
        ///   - block: ``BasicBlock`` or ``Bottleneck``.
        ///   - layers: number of blocks in each of the four stages.
        ///   - numClasses: outputs of `fc`.
        ///   - zeroInitResidual: start each residual branch at zero (last BN weight 0).
        ///   - groups: groups of the 3×3 convolutions (ResNeXt).
        ///   - widthPerGroup: channels per group at the first stage (64; 128 for Wide ResNet).
        ///   - replaceStrideWithDilation: per stage 2–4, use dilation instead of stride 2.
        public init<B: ResNetBlock>(block: B.Type, layers: [Int], numClasses: Int = 1000, zeroInitResidual: Bool = false,
                                    groups: Int = 1, widthPerGroup: Int = 64,
                                    replaceStrideWithDilation: [Bool] = [false, false, false]) {
            precondition(layers.count == 4, "ResNet: layers must have 4 entries, got \(layers)")
            precondition(replaceStrideWithDilation.count == 3,
                         "replace_stride_with_dilation should be None or a 3-element tuple, got \(replaceStrideWithDilation)")
            var inplanes = 64
            var dilation = 1
            func makeLayer(_ planes: Int, _ blocks: Int, stride: Int = 1, dilate: Bool = false) -> nn.Sequential {
                var stride = stride
                let previousDilation = dilation
                if dilate {
                    dilation *= stride
                    stride = 1
                }
                var downsample: nn.Module? = nil
                if stride != 1 || inplanes != planes * B.expansion {
                    downsample = nn.Sequential(
                        nn.Conv2d(inplanes, planes * B.expansion, kernelSize: 1, stride: stride, bias: false),
                        nn.BatchNorm2d(planes * B.expansion))
                }
                var blocksList: [nn.Module] = [B(inplanes, planes, stride: stride, downsample: downsample, groups: groups,
                                                 baseWidth: widthPerGroup, dilation: previousDilation)]
                inplanes = planes * B.expansion
                for _ in 1..<Swift.max(blocks, 1) {
                    blocksList.append(B(inplanes, planes, stride: 1, downsample: nil, groups: groups,
                                        baseWidth: widthPerGroup, dilation: dilation))
                }
                return nn.Sequential(blocksList)
            }
            conv1 = nn.Conv2d(3, 64, kernelSize: 7, stride: 2, padding: 3, bias: false)
            bn1 = nn.BatchNorm2d(64)
            relu = nn.ReLU(inplace: true)
            maxpool = nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1)
            layer1 = makeLayer(64, layers[0])
            layer2 = makeLayer(128, layers[1], stride: 2, dilate: replaceStrideWithDilation[0])
            layer3 = makeLayer(256, layers[2], stride: 2, dilate: replaceStrideWithDilation[1])
            layer4 = makeLayer(512, layers[3], stride: 2, dilate: replaceStrideWithDilation[2])
            avgpool = nn.AdaptiveAvgPool2d([1, 1])
            fc = nn.Linear(512 * B.expansion, numClasses)
            super.init()
            for m in modules() {
                if let c = m as? nn.Conv2d {
                    nn.init_.kaimingNormal_(c.weight, mode: .fanOut, nonlinearity: .relu)
                } else if let bn = m as? nn.BatchNorm2d {
                    nn.init_.ones_(bn.weight!)
                    nn.init_.zeros_(bn.bias!)
                }
            }
            if zeroInitResidual {
                for m in modules() {
                    if let b = m as? Bottleneck, let bn = b.bn3 as? nn.BatchNorm2d, let w = bn.weight { nn.init_.zeros_(w) }
                    if let b = m as? BasicBlock, let bn = b.bn2 as? nn.BatchNorm2d, let w = bn.weight { nn.init_.zeros_(w) }
                }
            }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            var y = nn.convBatchNorm(conv1, bn1, then: relu, pool: maxpool, x)
            y = layer4(layer3(layer2(layer1(y))))
            return fc(avgpool(y).flatten(startDim: 1))
        }
    }
}

extension models.Weights {
    public static let resnet18ImageNet1kV1 = models.Weights(
        name: "ResNet18_Weights.IMAGENET1K_V1", arch: "resnet18", url: "https://download.pytorch.org/models/resnet18-f37072fd.pth")
    public static let resnet34ImageNet1kV1 = models.Weights(
        name: "ResNet34_Weights.IMAGENET1K_V1", arch: "resnet34", url: "https://download.pytorch.org/models/resnet34-b627a593.pth")
    public static let resnet50ImageNet1kV1 = models.Weights(
        name: "ResNet50_Weights.IMAGENET1K_V1", arch: "resnet50", url: "https://download.pytorch.org/models/resnet50-0676ba61.pth")
    public static let resnet50ImageNet1kV2 = models.Weights(
        name: "ResNet50_Weights.IMAGENET1K_V2", arch: "resnet50", url: "https://download.pytorch.org/models/resnet50-11ad3fa6.pth")
    public static let resnet101ImageNet1kV1 = models.Weights(
        name: "ResNet101_Weights.IMAGENET1K_V1", arch: "resnet101", url: "https://download.pytorch.org/models/resnet101-63fe2227.pth")
    public static let resnet101ImageNet1kV2 = models.Weights(
        name: "ResNet101_Weights.IMAGENET1K_V2", arch: "resnet101", url: "https://download.pytorch.org/models/resnet101-cd907fc2.pth")
    public static let resnet152ImageNet1kV1 = models.Weights(
        name: "ResNet152_Weights.IMAGENET1K_V1", arch: "resnet152", url: "https://download.pytorch.org/models/resnet152-394f9c45.pth")
    public static let resnet152ImageNet1kV2 = models.Weights(
        name: "ResNet152_Weights.IMAGENET1K_V2", arch: "resnet152", url: "https://download.pytorch.org/models/resnet152-f82ba261.pth")
    public static let resnext50_32x4dImageNet1kV1 = models.Weights(
        name: "ResNeXt50_32X4D_Weights.IMAGENET1K_V1", arch: "resnext50_32x4d",
        url: "https://download.pytorch.org/models/resnext50_32x4d-7cdf4587.pth")
    public static let resnext50_32x4dImageNet1kV2 = models.Weights(
        name: "ResNeXt50_32X4D_Weights.IMAGENET1K_V2", arch: "resnext50_32x4d",
        url: "https://download.pytorch.org/models/resnext50_32x4d-1a0047aa.pth")
    public static let wideResnet50_2ImageNet1kV1 = models.Weights(
        name: "Wide_ResNet50_2_Weights.IMAGENET1K_V1", arch: "wide_resnet50_2",
        url: "https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth")
    public static let wideResnet50_2ImageNet1kV2 = models.Weights(
        name: "Wide_ResNet50_2_Weights.IMAGENET1K_V2", arch: "wide_resnet50_2",
        url: "https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth")
}

extension models {
    /// ResNet-18 (`BasicBlock`, [2, 2, 2, 2]), randomly initialised (torchvision's `resnet18()`).
    public static func resnet18(numClasses: Int = 1000) -> ResNet {
        ResNet(block: BasicBlock.self, layers: [2, 2, 2, 2], numClasses: numClasses)
    }
    /// ResNet-18 with `weights` loaded from the hub cache (torchvision's `resnet18(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet18(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet18", weights, numClasses) { resnet18(numClasses: $0) }
    }
    /// ResNet-18; `pretrained: true` loads `.resnet18ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet18(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet18", pretrained ? .resnet18ImageNet1kV1 : nil, numClasses) { resnet18(numClasses: $0) }
    }

    /// ResNet-34 (`BasicBlock`, [3, 4, 6, 3]), randomly initialised (torchvision's `resnet34()`).
    public static func resnet34(numClasses: Int = 1000) -> ResNet {
        ResNet(block: BasicBlock.self, layers: [3, 4, 6, 3], numClasses: numClasses)
    }
    /// ResNet-34 with `weights` loaded from the hub cache (torchvision's `resnet34(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet34(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet34", weights, numClasses) { resnet34(numClasses: $0) }
    }
    /// ResNet-34; `pretrained: true` loads `.resnet34ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet34(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet34", pretrained ? .resnet34ImageNet1kV1 : nil, numClasses) { resnet34(numClasses: $0) }
    }

    /// ResNet-50 (`Bottleneck`, [3, 4, 6, 3]), randomly initialised (torchvision's `resnet50()`).
    public static func resnet50(numClasses: Int = 1000) -> ResNet {
        ResNet(block: Bottleneck.self, layers: [3, 4, 6, 3], numClasses: numClasses)
    }
    /// ResNet-50 with `weights` loaded from the hub cache (torchvision's `resnet50(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet50(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet50", weights, numClasses) { resnet50(numClasses: $0) }
    }
    /// ResNet-50; `pretrained: true` loads `.resnet50ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet50(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet50", pretrained ? .resnet50ImageNet1kV1 : nil, numClasses) { resnet50(numClasses: $0) }
    }

    /// ResNet-101 (`Bottleneck`, [3, 4, 23, 3]), randomly initialised (torchvision's `resnet101()`).
    public static func resnet101(numClasses: Int = 1000) -> ResNet {
        ResNet(block: Bottleneck.self, layers: [3, 4, 23, 3], numClasses: numClasses)
    }
    /// ResNet-101 with `weights` loaded from the hub cache (torchvision's `resnet101(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet101(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet101", weights, numClasses) { resnet101(numClasses: $0) }
    }
    /// ResNet-101; `pretrained: true` loads `.resnet101ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet101(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet101", pretrained ? .resnet101ImageNet1kV1 : nil, numClasses) { resnet101(numClasses: $0) }
    }

    /// ResNet-152 (`Bottleneck`, [3, 8, 36, 3]), randomly initialised (torchvision's `resnet152()`).
    public static func resnet152(numClasses: Int = 1000) -> ResNet {
        ResNet(block: Bottleneck.self, layers: [3, 8, 36, 3], numClasses: numClasses)
    }
    /// ResNet-152 with `weights` loaded from the hub cache (torchvision's `resnet152(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet152(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet152", weights, numClasses) { resnet152(numClasses: $0) }
    }
    /// ResNet-152; `pretrained: true` loads `.resnet152ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnet152(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnet152", pretrained ? .resnet152ImageNet1kV1 : nil, numClasses) { resnet152(numClasses: $0) }
    }

    /// ResNeXt-50 32×4d (`Bottleneck`, [3, 4, 6, 3], 32 groups of width 4), randomly initialised (torchvision's `resnext50_32x4d()`).
    public static func resnext50_32x4d(numClasses: Int = 1000) -> ResNet {
        ResNet(block: Bottleneck.self, layers: [3, 4, 6, 3], numClasses: numClasses, groups: 32, widthPerGroup: 4)
    }
    /// ResNeXt-50 32×4d with `weights` loaded from the hub cache (torchvision's `resnext50_32x4d(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnext50_32x4d(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("resnext50_32x4d", weights, numClasses) { resnext50_32x4d(numClasses: $0) }
    }
    /// ResNeXt-50 32×4d; `pretrained: true` loads `.resnext50_32x4dImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func resnext50_32x4d(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("resnext50_32x4d", pretrained ? .resnext50_32x4dImageNet1kV1 : nil, numClasses) { resnext50_32x4d(numClasses: $0) }
    }

    /// Wide ResNet-50-2 (`Bottleneck`, [3, 4, 6, 3], inner widths doubled), randomly initialised (torchvision's `wide_resnet50_2()`).
    public static func wideResnet50_2(numClasses: Int = 1000) -> ResNet {
        ResNet(block: Bottleneck.self, layers: [3, 4, 6, 3], numClasses: numClasses, widthPerGroup: 128)
    }
    /// Wide ResNet-50-2 with `weights` loaded from the hub cache (torchvision's `wide_resnet50_2(weights=...)`).
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func wideResnet50_2(weights: Weights, numClasses: Int? = nil) throws -> ResNet {
        try build("wide_resnet50_2", weights, numClasses) { wideResnet50_2(numClasses: $0) }
    }
    /// Wide ResNet-50-2; `pretrained: true` loads `.wideResnet50_2ImageNet1kV1` from the hub cache.
    /// - Throws: ``WeightsError`` when the file is missing or does not fit.
    public static func wideResnet50_2(pretrained: Bool, numClasses: Int? = nil) throws -> ResNet {
        try build("wide_resnet50_2", pretrained ? .wideResnet50_2ImageNet1kV1 : nil, numClasses) { wideResnet50_2(numClasses: $0) }
    }
}
