/// The glue between module state dicts (`OrderedDict<Tensor>`) and files, so the tutorials' lines
/// work as written:
///
/// ```swift
/// try torch.save(mynet.stateDict(), "mymodel.pth")
/// try mynet.loadStateDict(torch.load("mymodel.pth"))
/// ```
extension torch {
    /// Saves a module's state dict as a PyTorch zip checkpoint (an `OrderedDict` of tensors).
    public static func save(_ stateDict: OrderedDict<Tensor>, _ path: String) throws {
        try save(Array(zip(stateDict.keys, stateDict.values)), path)
    }
}

extension StateValue {
    /// A state dict as a checkpoint value (e.g. inside `["model": StateValue(model.stateDict()), "epoch": 3]`).
    public init(_ stateDict: OrderedDict<Tensor>) {
        self = .dict(zip(stateDict.keys, stateDict.values).map { (key: .string($0.0), value: .tensor($0.1)) })
    }
}

extension nn.Module {
    /// Loads a state dict read by `torch.load` (a dictionary of tensors).
    /// - Throws: ``SerializationError`` when the value is not a dictionary of tensors, or the
    ///   module's state-dict error when keys or shapes don't match.
    @discardableResult
    public final func loadStateDict(_ value: StateValue, strict: Bool = true) throws -> (missingKeys: [String], unexpectedKeys: [String]) {
        try loadStateDict(value.stateDictPairs(), strict: strict)
    }
}
