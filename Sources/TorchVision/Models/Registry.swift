import Torch

extension models {
    /// One entry of the model registry: torchvision's name, the builder and what it needs.
    public struct ModelEntry: Sendable {
        /// torchvision's name (`resnet18`, `vgg16_bn`, `mobilenet_v3_small`), as in `get_model`.
        public let name: String
        /// The Swift builder's name (`resnet18`, `vgg16Bn`, `mobilenetV3Small`).
        public let builder: String
        /// The smallest square input (pixels) the network accepts (torchvision's `min_size`).
        public let minSize: Int
        /// The default pretrained weights (torchvision's `DEFAULT`), the ones `pretrained: true` loads.
        public let defaultWeights: Weights
        let make: @Sendable (Int) -> nn.Module
        let makePretrained: @Sendable (Int?) throws -> nn.Module
    }

    private static func entry<M: nn.Module>(_ name: String, _ builder: String, minSize: Int = 32, _ weights: Weights,
                                            _ make: @escaping @Sendable (Int) -> M,
                                            _ pretrained: @escaping @Sendable (Int?) throws -> M) -> ModelEntry {
        ModelEntry(name: name, builder: builder, minSize: minSize, defaultWeights: weights, make: { make($0) },
                   makePretrained: { try pretrained($0) })
    }

    /// Every classification model, in torchvision's alphabetical order of `list_models()`.
    public static let registry: [ModelEntry] = [
        entry("alexnet", "alexnet", minSize: 63, .alexnetImageNet1kV1, { alexnet(numClasses: $0) }, { try alexnet(pretrained: true, numClasses: $0) }),
        entry("densenet121", "densenet121", .densenet121ImageNet1kV1, { densenet121(numClasses: $0) }, { try densenet121(pretrained: true, numClasses: $0) }),
        entry("efficientnet_b0", "efficientnetB0", .efficientnetB0ImageNet1kV1, { efficientnetB0(numClasses: $0) }, { try efficientnetB0(pretrained: true, numClasses: $0) }),
        entry("googlenet", "googlenet", .googlenetImageNet1kV1, { googlenet(numClasses: $0, auxLogits: false) }, { try googlenet(pretrained: true, numClasses: $0) }),
        entry("mnasnet1_0", "mnasnet1_0", .mnasnet1_0ImageNet1kV1, { mnasnet1_0(numClasses: $0) }, { try mnasnet1_0(pretrained: true, numClasses: $0) }),
        entry("mobilenet_v2", "mobilenetV2", .mobilenetV2ImageNet1kV2, { mobilenetV2(numClasses: $0) }, { try mobilenetV2(pretrained: true, numClasses: $0) }),
        entry("mobilenet_v3_large", "mobilenetV3Large", .mobilenetV3LargeImageNet1kV2, { mobilenetV3Large(numClasses: $0) }, { try mobilenetV3Large(pretrained: true, numClasses: $0) }),
        entry("mobilenet_v3_small", "mobilenetV3Small", .mobilenetV3SmallImageNet1kV1, { mobilenetV3Small(numClasses: $0) }, { try mobilenetV3Small(pretrained: true, numClasses: $0) }),
        entry("resnet101", "resnet101", .resnet101ImageNet1kV2, { resnet101(numClasses: $0) }, { try resnet101(pretrained: true, numClasses: $0) }),
        entry("resnet152", "resnet152", .resnet152ImageNet1kV2, { resnet152(numClasses: $0) }, { try resnet152(pretrained: true, numClasses: $0) }),
        entry("resnet18", "resnet18", .resnet18ImageNet1kV1, { resnet18(numClasses: $0) }, { try resnet18(pretrained: true, numClasses: $0) }),
        entry("resnet34", "resnet34", .resnet34ImageNet1kV1, { resnet34(numClasses: $0) }, { try resnet34(pretrained: true, numClasses: $0) }),
        entry("resnet50", "resnet50", .resnet50ImageNet1kV2, { resnet50(numClasses: $0) }, { try resnet50(pretrained: true, numClasses: $0) }),
        entry("resnext50_32x4d", "resnext50_32x4d", .resnext50_32x4dImageNet1kV2, { resnext50_32x4d(numClasses: $0) }, { try resnext50_32x4d(pretrained: true, numClasses: $0) }),
        entry("shufflenet_v2_x1_0", "shufflenetV2_x1_0", .shufflenetV2_x1_0ImageNet1kV1, { shufflenetV2_x1_0(numClasses: $0) }, { try shufflenetV2_x1_0(pretrained: true, numClasses: $0) }),
        entry("squeezenet1_0", "squeezenet1_0", .squeezenet1_0ImageNet1kV1, { squeezenet1_0(numClasses: $0) }, { try squeezenet1_0(pretrained: true, numClasses: $0) }),
        entry("squeezenet1_1", "squeezenet1_1", .squeezenet1_1ImageNet1kV1, { squeezenet1_1(numClasses: $0) }, { try squeezenet1_1(pretrained: true, numClasses: $0) }),
        entry("vgg11", "vgg11", .vgg11ImageNet1kV1, { vgg11(numClasses: $0) }, { try vgg11(pretrained: true, numClasses: $0) }),
        entry("vgg11_bn", "vgg11Bn", .vgg11BnImageNet1kV1, { vgg11Bn(numClasses: $0) }, { try vgg11Bn(pretrained: true, numClasses: $0) }),
        entry("vgg13", "vgg13", .vgg13ImageNet1kV1, { vgg13(numClasses: $0) }, { try vgg13(pretrained: true, numClasses: $0) }),
        entry("vgg13_bn", "vgg13Bn", .vgg13BnImageNet1kV1, { vgg13Bn(numClasses: $0) }, { try vgg13Bn(pretrained: true, numClasses: $0) }),
        entry("vgg16", "vgg16", .vgg16ImageNet1kV1, { vgg16(numClasses: $0) }, { try vgg16(pretrained: true, numClasses: $0) }),
        entry("vgg16_bn", "vgg16Bn", .vgg16BnImageNet1kV1, { vgg16Bn(numClasses: $0) }, { try vgg16Bn(pretrained: true, numClasses: $0) }),
        entry("vgg19", "vgg19", .vgg19ImageNet1kV1, { vgg19(numClasses: $0) }, { try vgg19(pretrained: true, numClasses: $0) }),
        entry("vgg19_bn", "vgg19Bn", .vgg19BnImageNet1kV1, { vgg19Bn(numClasses: $0) }, { try vgg19Bn(pretrained: true, numClasses: $0) }),
        entry("wide_resnet50_2", "wideResnet50_2", .wideResnet50_2ImageNet1kV2, { wideResnet50_2(numClasses: $0) }, { try wideResnet50_2(pretrained: true, numClasses: $0) }),
    ]

    /// The registry entry for `name`: torchvision's name (`vgg16_bn`) or the Swift builder's
    /// (`vgg16Bn`), case-insensitively.
    public static func entry(named name: String) -> ModelEntry? {
        let key = name.lowercased()
        return registry.first { $0.name == key || $0.builder.lowercased() == key }
    }

    /// torchvision's `list_models()`: the names ``getModel(_:numClasses:pretrained:)`` accepts.
    public static func listModels() -> [String] { registry.map(\.name) }

    /// torchvision's `get_model(name, weights=..., num_classes=...)`: builds a model by name.
    ///
    /// ```swift
    /// let net = try models.getModel("resnet18", numClasses: 10)
    /// let pretrained = try models.getModel("mobilenet_v2", pretrained: true)   // from the hub cache
    /// ```
    /// - Throws: `torch.hub.HubError.unknownModel` for an unknown name; ``WeightsError`` when
    ///   `pretrained` weights are missing from the cache or do not fit.
    public static func getModel(_ name: String, numClasses: Int? = nil, pretrained: Bool = false) throws -> nn.Module {
        guard let e = entry(named: name) else {
            throw torch.hub.HubError.unknownModel(repo: "pytorch/vision", model: name, available: listModels())
        }
        if pretrained { return try e.makePretrained(numClasses) }
        return e.make(numClasses ?? 1000)
    }
}
