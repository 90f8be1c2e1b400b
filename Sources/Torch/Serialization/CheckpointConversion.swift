extension torch {
    /// What ``convertCheckpoint(_:_:key:metadata:)`` did.
    public struct CheckpointConversion: Sendable {
        /// Tensors written.
        public let tensorCount: Int
        /// Their payload in bytes.
        public let byteCount: Int
        /// Non-tensor entries left out (their dotted names).
        public let skipped: [String]
        /// The entry used as the state dict when the file held a wrapper dictionary
        /// (`state_dict`, `model_state_dict`, `model`, or the `key:` given).
        public let entry: String?
    }

    /// Why a checkpoint could not be converted.
    public enum ConversionError: Error, CustomStringConvertible {
        /// Exactly one of the two paths must end in `.safetensors`.
        case ambiguousDirection(input: String, output: String)
        /// The `key:` entry is not in the file.
        case missingEntry(path: String, key: String)
        /// The file holds no tensors (maybe a wrapper whose entry must be chosen with `key:`).
        case noTensors(path: String)

        public var description: String {
            switch self {
            case let .ambiguousDirection(input, output):
                return "exactly one of '\(input)' and '\(output)' must end in .safetensors (PyTorch .pt/.pth/.bin/.ckpt ↔ safetensors)"
            case let .missingEntry(path, key):
                return "'\(path)' has no entry '\(key)'"
            case let .noTensors(path):
                return "'\(path)' holds no tensors to convert (choose the entry holding the state dict with --key)"
            }
        }
    }

    /// Converts a PyTorch checkpoint (`.pt`/`.pth`/`.bin`/`.ckpt`, zip or legacy) to safetensors,
    /// or safetensors to a PyTorch checkpoint, by the output's extension.
    ///
    /// To safetensors, the file is loaded like `torch.load(weights_only=True)`; its state dict
    /// is the entry `key`, else the one `state_dict`/`model_state_dict`/`model` entry of a
    /// wrapper dictionary, else the whole file. Nested dictionaries are flattened with dotted names and
    /// non-tensor entries skipped; `metadata` (default `{"format": "pt"}`) goes in the header.
    /// From safetensors, the tensors are saved as a state dict (an `OrderedDict`).
    ///
    /// ```swift
    /// let r = try torch.convertCheckpoint("model.pth", "model.safetensors")
    /// print("wrote \(r.tensorCount) tensors")
    /// ```
    /// - Throws: ``ConversionError``, or ``SerializationError`` when a file cannot be read or written.
    @discardableResult
    public static func convertCheckpoint(_ input: String, _ output: String, key: String? = nil,
                                         metadata: [String: String] = ["format": "pt"]) throws -> CheckpointConversion {
        let toSafetensors = output.hasSuffix(".safetensors"), fromSafetensors = input.hasSuffix(".safetensors")
        guard toSafetensors != fromSafetensors else { throw ConversionError.ambiguousDirection(input: input, output: output) }
        if fromSafetensors {
            let tensors = try safetensors.loadFile(input)
            try torch.save(tensors, output)
            return CheckpointConversion(tensorCount: tensors.count, byteCount: payload(tensors), skipped: [], entry: nil)
        }
        var value = try torch.load(input)
        var entry: String?
        if let key {
            guard let v = value[key] else { throw ConversionError.missingEntry(path: input, key: key) }
            value = v
            entry = key
        } else if value.dictValue != nil {
            // A wrapper (`{"epoch": ..., "model_state_dict": {...}, "optimizer_state_dict": ...}`)
            // names its state dict; a plain state dict has none of these entries.
            let candidates = ["state_dict", "model_state_dict", "model"].filter { value[$0]?.dictValue != nil }
            if candidates.count == 1 {
                entry = candidates[0]
                value = value[candidates[0]]!
            }
        }
        if let t = value.tensorValue { value = .dict([(key: "tensor", value: .tensor(t))]) }
        var tensors: [(String, Tensor)] = []
        var skipped: [String] = []
        flatten(value, prefix: "", into: &tensors, skipped: &skipped)
        guard !tensors.isEmpty else { throw ConversionError.noTensors(path: input) }
        try safetensors.saveFile(tensors, output, metadata: metadata)
        return CheckpointConversion(tensorCount: tensors.count, byteCount: payload(tensors), skipped: skipped, entry: entry)
    }

    private static func payload(_ tensors: [(String, Tensor)]) -> Int {
        tensors.reduce(0) { $0 + $1.1.numel * $1.1.elementSize }
    }

    /// Flattens a dictionary of tensors (nested dictionaries get dotted names); collects skipped names.
    private static func flatten(_ v: StateValue, prefix: String, into out: inout [(String, Tensor)], skipped: inout [String]) {
        guard case let .dict(entries) = v else { return }
        for (k, x) in entries {
            let name = prefix + (k.stringValue ?? k.intValue.map(String.init) ?? k.description)
            switch x {
            case let .tensor(t): out.append((name, t))
            case .dict: flatten(x, prefix: name + ".", into: &out, skipped: &skipped)
            default: skipped.append(name)
            }
        }
    }
}
