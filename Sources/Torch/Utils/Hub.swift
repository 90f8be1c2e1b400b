// torch.hub's cache: where downloaded checkpoints live, and loading one by its URL. TorchVision
// extends `torch.hub` with `load`, `list` and `help` for its models.

extension torch {
    /// PyTorch's `torch.hub`: the checkpoint cache under ``getDir()`` and, with TorchVision
    /// imported, `torch.hub.load("pytorch/vision", "resnet18", pretrained: true)`, `list` and `help`.
    ///
    /// Nothing is downloaded (there is no network access here): files must already be where
    /// PyTorch caches them, `$TORCH_HOME/hub/checkpoints/` with torchvision's file names.
    ///
    /// ```swift
    /// let sd = try torch.hub.loadStateDictFromURL("https://download.pytorch.org/models/resnet18-f37072fd.pth")
    /// print(torch.hub.getDir())                      // ~/.cache/torch/hub
    /// ```
    public enum hub {
        nonisolated(unsafe) private static var customDir: String?
        private static let lock = PosixLock()

        /// Why a hub lookup failed.
        public enum HubError: Error, CustomStringConvertible {
            /// The checkpoint for `url` is not in the cache at `path` (no download is attempted).
            case checkpointNotFound(url: String, path: String)
            /// The file at `path` exists but is not a readable state dict.
            case unreadableCheckpoint(path: String, underlying: Error)
            /// `repo` is not a repository this build knows (only `pytorch/vision`).
            case unknownRepository(String)
            /// `repo` has no entrypoint `model`; `available` lists those it has.
            case unknownModel(repo: String, model: String, available: [String])

            public var description: String {
                switch self {
                case let .checkpointNotFound(url, path):
                    return "the checkpoint \(url) is not in the hub cache: there is no network access here, so download it "
                        + "elsewhere and save it as '\(path)' (set TORCH_HOME or call torch.hub.setDir to use another cache folder)"
                case let .unreadableCheckpoint(path, underlying):
                    return "cannot read the cached checkpoint '\(path)': \(underlying)"
                case let .unknownRepository(repo):
                    return "unknown hub repository '\(repo)': only 'pytorch/vision' (TorchVision's models, with `import TorchVision`) is available"
                case let .unknownModel(repo, model, available):
                    return "'\(repo)' has no model '\(model)'; available: \(available.joined(separator: ", "))"
                }
            }
        }

        /// The hub folder (`torch.hub.get_dir()`): the folder set by ``setDir(_:)``, else
        /// `$TORCH_HOME/hub`, where `TORCH_HOME` defaults to `$XDG_CACHE_HOME/torch` and then to
        /// `~/.cache/torch`, as in PyTorch (environment read at each call).
        public static func getDir() -> String {
            if let d = lock.withLock({ customDir }) { return d }
            let env = ProcessInfo.processInfo.environment
            let torchHome: String
            if let h = env["TORCH_HOME"], !h.isEmpty {
                torchHome = h
            } else if let x = env["XDG_CACHE_HOME"], !x.isEmpty {
                torchHome = PathString.join(x, "torch")
            } else {
                torchHome = PathString.join(PathString.homeDirectory(), ".cache/torch")
            }
            return PathString.join(PathString.expandingTilde(torchHome), "hub")
        }

        /// Sets the hub folder (`torch.hub.set_dir`); nil goes back to the environment's.
        public static func setDir(_ dir: String?) {
            lock.withLock { customDir = dir.map { PathString.expandingTilde($0) } }
        }

        /// The file name a URL's checkpoint is cached under: its last path component, as PyTorch.
        public static func fileName(forURL url: String) -> String {
            let path = URL(string: url)?.path ?? url
            return PathString.lastComponent(path)
        }

        /// Loads the state dict PyTorch would download from `url`, from the cache
        /// (`torch.hub.load_state_dict_from_url`): `<modelDir>/<fileName>`, `modelDir` defaulting
        /// to `getDir()/checkpoints` and `fileName` to the URL's last component.
        ///
        /// - Throws: ``HubError/checkpointNotFound(url:path:)`` naming the URL and the path to put
        ///   the file at when it is not cached; ``HubError/unreadableCheckpoint(path:underlying:)``
        ///   when it is not a state dict.
        public static func loadStateDictFromURL(_ url: String, modelDir: String? = nil, mapLocation: Device? = nil,
                                                fileName: String? = nil) throws -> OrderedDict<Tensor> {
            let dir = modelDir ?? PathString.join(getDir(), "checkpoints")
            let path = PathString.join(dir, fileName ?? self.fileName(forURL: url))
            guard FileManager.default.fileExists(atPath: path) else {
                throw HubError.checkpointNotFound(url: url, path: path)
            }
            do {
                return OrderedDict(try torch.loadStateDict(path, mapLocation: mapLocation))
            } catch {
                throw HubError.unreadableCheckpoint(path: path, underlying: error)
            }
        }
    }
}
