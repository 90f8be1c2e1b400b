// Conversions between `StateValue` and state dicts (ordered name → tensor pairs), so that what
// `torch.load` returns can be handed to `loadStateDict` and state dicts can be nested in checkpoints.

extension StateValue {
    /// A `.dict` with string keys from ordered (name, tensor) pairs, such as a state dict.
    ///
    /// ```swift
    /// let checkpoint: StateValue = ["epoch": 3, "model_state_dict": StateValue(pairs)]
    /// ```
    public init(_ stateDict: [(String, Tensor)]) {
        self = .dict(stateDict.map { (key: .string($0.0), value: .tensor($0.1)) })
    }

    /// A `.tensor`.
    public init(_ tensor: Tensor) {
        self = .tensor(tensor)
    }

    /// The (name, tensor) pairs of a state dict: this value must be a `.dict` whose keys are
    /// strings and whose values are tensors (in file order).
    ///
    /// ```swift
    /// let sd = try torch.load("model.pth").stateDictPairs()
    /// ```
    /// - Throws: ``SerializationError/invalidCheckpoint(reason:)`` naming the first entry that is
    ///   not a (string, tensor) pair, or when the value is not a dictionary.
    public func stateDictPairs() throws -> [(String, Tensor)] {
        guard case let .dict(entries) = self else {
            throw SerializationError.invalidCheckpoint(
                reason: "expected a state dict (a dictionary of tensors) but the value is \(kindName)")
        }
        var out: [(String, Tensor)] = []
        out.reserveCapacity(entries.count)
        for (k, v) in entries {
            guard case let .string(name) = k else {
                throw SerializationError.invalidCheckpoint(reason: "state dict key \(k) is not a string")
            }
            guard case let .tensor(t) = v else {
                throw SerializationError.invalidCheckpoint(
                    reason: "state dict entry '\(name)' is \(v.kindName), not a tensor")
            }
            out.append((name, t))
        }
        return out
    }

    /// A short name of the case, for messages (`"a tensor"`, `"an int"`, …).
    var kindName: String {
        switch self {
        case .none: return "None"
        case .bool: return "a bool"
        case .int: return "an int"
        case .double: return "a float"
        case .string: return "a string"
        case .tensor: return "a tensor"
        case .list: return "a list"
        case .tuple: return "a tuple"
        case .dict: return "a dict"
        }
    }
}

extension torch {
    /// Loads a state dict saved with `torch.save` (by PyTorch or SwiftTorch) as ordered
    /// (name, tensor) pairs.
    ///
    /// ```swift
    /// for (name, t) in try torch.loadStateDict("resnet18.pth") { print(name, t.shape) }
    /// ```
    /// - Throws: ``SerializationError`` when the file is not a valid checkpoint or does not hold
    ///   a dictionary of tensors.
    public static func loadStateDict(_ path: String, mapLocation: Device? = nil) throws -> [(String, Tensor)] {
        try load(path, mapLocation: mapLocation).stateDictPairs()
    }
}
