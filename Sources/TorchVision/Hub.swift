import Torch

extension torch.hub {
    /// The repositories `load`, `list` and `help` know: TorchVision's models as `pytorch/vision`
    /// (also with a tag, `pytorch/vision:v0.10.0`, as the tutorials write it).
    static func checkRepository(_ repo: String) throws {
        let base = repo.split(separator: ":").first.map(String.init) ?? repo
        guard base == "pytorch/vision" else { throw HubError.unknownRepository(repo) }
    }

    /// `torch.hub.load(repo, model, pretrained=...)` for TorchVision's models, with the weights
    /// looked for in the hub cache (nothing is downloaded).
    ///
    /// ```swift
    /// let model = try torch.hub.load("pytorch/vision", "resnet18", pretrained: true)
    /// let fresh = try torch.hub.load("pytorch/vision:v0.10.0", "mobilenet_v2", numClasses: 10)
    /// ```
    /// - Throws: `torch.hub.HubError` for an unknown repository or model; `models.WeightsError` naming the
    ///   URL and the cache path when pretrained weights are not cached.
    public static func load(_ repo: String, _ model: String, pretrained: Bool = false, numClasses: Int? = nil) throws -> nn.Module {
        try checkRepository(repo)
        return try models.getModel(model, numClasses: numClasses, pretrained: pretrained)
    }

    /// `torch.hub.list(repo)`: the entrypoints (model names) of `repo`.
    public static func list(_ repo: String) throws -> [String] {
        try checkRepository(repo)
        return models.listModels()
    }

    /// `torch.hub.help(repo, model)`: what the entrypoint builds and which weights it loads.
    public static func help(_ repo: String, _ model: String) throws -> String {
        try checkRepository(repo)
        guard let e = models.entry(named: model) else {
            throw HubError.unknownModel(repo: repo, model: model, available: models.listModels())
        }
        let w = e.defaultWeights
        return """
            \(e.name): torchvision's \(e.name) (Swift: models.\(e.builder)(numClasses:)), inputs N×3×H×W with H, W ≥ \(e.minSize).
            pretrained: true loads \(w.name) (\(w.numClasses) classes) from \(w.localPath)
            (torchvision downloads it from \(w.url)).
            """
    }
}
