// torch.save / torch.load with nn.Module state dicts: `torch.save(model.stateDict(), path)` and
// `try model.loadStateDict(torch.load(path))`, as in PyTorch.

extension torch {
    /// Saves a module's state dict (`torch.save(model.state_dict(), path)`) as a
    /// `collections.OrderedDict`, PyTorch's checkpoint format.
    ///
    /// ```swift
    /// try torch.save(mynet.stateDict(), "mymodel.pth")
    /// try mynet.loadStateDict(torch.load("mymodel.pth"))
    /// ```
    /// - Throws: ``SerializationError`` on I/O errors. The write is atomic, as for every `torch.save`.
    public static func save(_ stateDict: OrderedDict<Tensor>, _ path: String) throws {
        try save(Array(zip(stateDict.keys, stateDict.values)), path)
    }
}

extension StateValue {
    /// A `.dict` holding a module's state dict, to nest it in a checkpoint.
    ///
    /// ```swift
    /// try torch.save(["epoch": .int(epoch), "model_state_dict": StateValue(model.stateDict()),
    ///                 "optimizer_state_dict": opt.stateDict()], "checkpoint.pt")
    /// ```
    public init(_ stateDict: OrderedDict<Tensor>) {
        self.init(Array(zip(stateDict.keys, stateDict.values)))
    }

    /// The state dict in this value (a `.dict` of string keys and tensors) as an `OrderedDict`.
    /// - Throws: ``SerializationError/invalidCheckpoint(reason:)`` if it is not a state dict.
    public func stateDict() throws -> OrderedDict<Tensor> {
        OrderedDict(try stateDictPairs())
    }
}

extension nn.Module {
    /// Loads a state dict returned by ``torch/load(_:mapLocation:)``:
    /// `try model.loadStateDict(torch.load("model.pth"))`. The value must be a dictionary of
    /// tensors (a checkpoint dictionary's entry, such as `checkpoint["model_state_dict"]!`, works
    /// too). Keys match as when loading an `OrderedDict<Tensor>` (snake_case keys find camelCase
    /// properties).
    /// - Throws: ``SerializationError/invalidCheckpoint(reason:)`` when the value is not a
    ///   dictionary of tensors; `StateDictLoadError` for missing, unexpected or mis-shaped entries.
    @discardableResult
    public final func loadStateDict(_ stateDict: StateValue, strict: Bool = true) throws
        -> (missingKeys: [String], unexpectedKeys: [String]) {
        try loadStateDict(stateDict.stateDictPairs(), strict: strict)
    }
}
