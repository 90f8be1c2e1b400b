// torch.save: writes PyTorch's zip checkpoint format exactly as torch 2.x does (docs/formats.md
// §1.2–1.4): a protocol-2 `data.pkl` in which each tensor is `_rebuild_tensor_v2(storage, offset,
// size, stride, requires_grad, OrderedDict())` and each storage a persistent id
// `('storage', torch.<X>Storage, key, 'cpu', numel)`; one STORED, 64-byte-aligned record per
// storage (written once however many tensors share it); the small metadata records; all through an
// atomic temporary-file-and-rename write.

extension torch {
    /// Saves `value` to `path` in PyTorch's checkpoint format, readable by
    /// `torch.load(path, weights_only=True)` in PyTorch and by ``load(_:mapLocation:)``.
    ///
    /// ```swift
    /// try torch.save(mynet.stateDict(), "mymodel.pth")
    /// try torch.save(["epoch": 5, "loss": 0.25,
    ///                 "model_state_dict": StateValue(mynet.stateDict()),
    ///                 "optimizer_state_dict": opt.stateDict()], "checkpoint.pt")
    /// ```
    ///
    /// Tensors keep their dtype, shape, strides and storage offset; tensors that share a storage
    /// (tied weights, views) share it again after loading, and the storage is written once, whole
    /// (saving a slice saves the storage it views, as in PyTorch). Dictionaries are written as
    /// Python dicts, in order.
    ///
    /// The write is atomic: the checkpoint is written to a temporary file in the same folder,
    /// synced and renamed over `path`, so an interrupted save never leaves a truncated file there.
    /// - Throws: ``SerializationError`` on I/O errors, or when two tensors view the same storage
    ///   with different dtypes.
    public static func save(_ value: StateValue, _ path: String) throws {
        try TorchCheckpointWriter.save(value, orderedDict: false, to: path)
    }

    /// Saves one tensor (`torch.save(tensor, path)`).
    public static func save(_ tensor: Tensor, _ path: String) throws {
        try TorchCheckpointWriter.save(.tensor(tensor), orderedDict: false, to: path)
    }

    /// Saves a state dict, given as ordered (name, tensor) pairs, as a `collections.OrderedDict`
    /// (what `model.state_dict()` is in PyTorch).
    public static func save(_ stateDict: [(String, Tensor)], _ path: String) throws {
        try TorchCheckpointWriter.save(StateValue(stateDict), orderedDict: true, to: path)
    }
}

/// Encodes values as a torch.save zip archive.
struct TorchCheckpointWriter {
    /// One storage to write: the memory, its dtype and its key (`"0"`, `"1"`, … in order of first
    /// appearance in the pickle).
    struct StorageRecord {
        var storage: Storage
        var dtype: DType
        var key: String
        var numel: Int
    }

    private(set) var records: [StorageRecord] = []
    private var keyOfStorage: [ObjectIdentifier: Int] = [:]
    /// Whether `.dict` values at the top level become `collections.OrderedDict`.
    let topLevelOrderedDict: Bool

    init(topLevelOrderedDict: Bool) {
        self.topLevelOrderedDict = topLevelOrderedDict
    }

    /// Saves `value` to `path` atomically.
    static func save(_ value: StateValue, orderedDict: Bool, to path: String) throws {
        var w = TorchCheckpointWriter(topLevelOrderedDict: orderedDict)
        let pickle = try w.pickle(value)
        let name = archiveName(forPath: path)
        try ZipWriter.atomicWrite(to: path) { zip in try w.writeArchive(pickle: pickle, name: name, into: &zip) }
    }

    /// The archive's top folder: the file's base name without its extension, as PyTorch's
    /// `PyTorchStreamWriter` makes it (`model.pt` → `model`), or `archive`.
    static func archiveName(forPath path: String) -> String {
        var base = Substring(path)
        if let slash = base.lastIndex(where: { $0 == "/" || $0 == "\\" }) { base = base[base.index(after: slash)...] }
        if let dot = base.lastIndex(of: ".") { base = base[..<dot] }
        return base.isEmpty ? "archive" : String(base)
    }

    // MARK: Pickle

    /// The `data.pkl` stream for `value`; collects the storages to write.
    mutating func pickle(_ value: StateValue) throws -> [UInt8] {
        try Pickler.dumps(try encode(value, topLevel: true))
    }

    private mutating func encode(_ v: StateValue, topLevel: Bool = false) throws -> PickleValue {
        switch v {
        case .none: return .none
        case let .bool(b): return .bool(b)
        case let .int(i): return .int(Int64(i))
        case let .double(d): return .float(d)
        case let .string(s): return .string(s)
        case let .tensor(t): return try encode(t)
        case let .list(a): return .list(try a.map { try encode($0) })
        case let .tuple(a): return .tuple(try a.map { try encode($0) })
        case let .dict(entries):
            var out: [(key: PickleValue, value: PickleValue)] = []
            out.reserveCapacity(entries.count)
            for (k, x) in entries { out.append((key: try encode(k), value: try encode(x))) }
            return topLevel && topLevelOrderedDict ? .orderedDict(out) : .dict(out)
        }
    }

    private mutating func encode(_ t: Tensor) throws -> PickleValue {
        let s = t.storage
        let id = ObjectIdentifier(s)
        let index: Int
        if let i = keyOfStorage[id] {
            index = i
            guard records[i].dtype == t.dtype else {
                throw SerializationError.invalidArgument(
                    "torch.save: cannot save multiple tensors that view the same data as different types (\(records[i].dtype) and \(t.dtype))")
            }
        } else {
            index = records.count
            keyOfStorage[id] = index
            records.append(StorageRecord(storage: s, dtype: t.dtype, key: String(index), numel: s.byteCount / t.dtype.itemSize))
        }
        let r = records[index]
        let pid: PickleValue = .persistentID(.tuple([
            .string("storage"), .global(module: "torch", name: CheckpointDTypes.storageClass(of: t.dtype)),
            .string(r.key), .string(s.device.description), .int(Int64(r.numel)),
        ]))
        return .reduce(callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"), args: .tuple([
            pid, .int(Int64(t.storageOffset)),
            .tuple(t.shape.map { .int(Int64($0)) }), .tuple(t.strides.map { .int(Int64($0)) }),
            .bool(t.requiresGrad), .orderedDict([]),
        ]))
    }

    // MARK: Archive

    /// Writes the records in the order torch 2.x does: data.pkl, .format_version,
    /// .storage_alignment, byteorder, data/0…N-1, version, .data/serialization_id.
    func writeArchive(pickle: [UInt8], name: String, into zip: inout ZipWriter) throws {
        let p = name + "/"
        try zip.addEntry(name: p + "data.pkl", bytes: pickle)
        try zip.addEntry(name: p + ".format_version", bytes: Array("1".utf8))
        try zip.addEntry(name: p + ".storage_alignment", bytes: Array("64".utf8))
        try zip.addEntry(name: p + "byteorder", bytes: Array("little".utf8))
        for r in records {
            let n = r.numel * r.dtype.itemSize
            if r.storage.device != .cpu {
                // A GPU storage is written from one host copy of its bytes (PyTorch records its location, "cuda:0").
                let host = StorageTransfer.moved(r.storage, to: .cpu)
                try withExtendedLifetime(host) {
                    try zip.addEntry(name: p + "data/" + r.key, bytes: UnsafeRawBufferPointer(start: host.data, count: n))
                }
                continue
            }
            try withExtendedLifetime(r.storage) {
                try zip.addEntry(name: p + "data/" + r.key, bytes: UnsafeRawBufferPointer(start: r.storage.data, count: n))
            }
        }
        try zip.addEntry(name: p + "version", bytes: Array("3\n".utf8))
        try zip.addEntry(name: p + ".data/serialization_id", bytes: Array(serializationID(pickle: pickle, prefix: p).utf8))
    }

    /// 40 decimal digits identifying the archive (PyTorch logs it; nothing checks it): a hash of
    /// the record names and one of the pickle and storage sizes, each zero-padded to 20 digits.
    private func serializationID(pickle: [UInt8], prefix: String) -> String {
        var names = FNV1a()
        var content = FNV1a()
        names.add(prefix + "data.pkl")
        content.add(UInt64(CRC32.checksum(pickle)))
        for r in records {
            names.add(prefix + "data/" + r.key)
            content.add(UInt64(r.numel * r.dtype.itemSize))
        }
        func pad(_ v: UInt64) -> String {
            let s = String(v)
            return String(repeating: "0", count: 20 - s.count) + s
        }
        return pad(names.value) + pad(content.value)
    }
}

/// 64-bit FNV-1a.
private struct FNV1a {
    var value: UInt64 = 0xCBF2_9CE4_8422_2325
    mutating func add(_ byte: UInt8) { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    mutating func add(_ s: String) { for b in s.utf8 { add(b) } }
    mutating func add(_ v: UInt64) { for k in 0..<8 { add(UInt8(truncatingIfNeeded: v >> (8 * UInt64(k)))) } }
}
