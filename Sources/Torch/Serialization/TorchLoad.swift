// torch.load: reads PyTorch checkpoints — the zip format of PyTorch ≥ 1.6 (STORED or DEFLATE
// records, any record order, little- or big-endian storages) and the legacy pre-1.6 stream format —
// with the allow-list unpickler (the globals `torch.load(weights_only=True)` accepts). Storages of
// STORED records are not copied: tensors point into a private copy-on-write memory mapping of the
// file (docs/formats.md §1).

extension torch {
    /// Loads an object saved with `torch.save` (by PyTorch or by SwiftTorch): a tensor, a state dict,
    /// an optimizer state dict, or a checkpoint dictionary of such values.
    ///
    /// ```swift
    /// let sd = try torch.load("mymodel.pth")
    /// let w = sd["fc.weight"]!.tensorValue!
    /// try opt.loadStateDict(torch.load("optimizer.pth"))
    /// let ckpt = try torch.load("checkpoint.pt")
    /// let epoch = ckpt["epoch"]?.intValue
    /// ```
    ///
    /// Like `torch.load(path, weights_only=True)`, only plain data is accepted: tensors, numbers,
    /// strings, `None`, lists, tuples, dicts and `OrderedDict`s. A file that refers to any other
    /// Python class or function (a pickled `nn.Module`, arbitrary code) is refused with an error
    /// naming it. Tensors are always loaded to the CPU (files saved from CUDA tensors load too).
    /// Tensors that shared a storage when saved (tied weights, views) share one after loading.
    ///
    /// - Parameters:
    ///   - path: the checkpoint file.
    ///   - mapLocation: where to put the tensors: `nil` or `.cpu` (the default: the CPU, whatever device the
    ///     file names, so a checkpoint written on a GPU loads on a machine without one), or `.cuda(i)`.
    ///     Tensors that shared a storage still share one on the device.
    /// - Throws: ``SerializationError`` when the file cannot be read or is not a valid checkpoint, or when
    ///   `mapLocation` is a GPU that is not available.
    public static func load(_ path: String, mapLocation: Device? = nil) throws -> StateValue {
        try checkMapLocation(mapLocation)
        let value = try loadFile(path, locations: nil)
        guard let d = mapLocation, d != .cpu else { return value }
        return StorageTransfer.mapping(value) { _ in d }
    }

    /// `torch.load(path, map_location=lambda storage, loc: ...)`: `mapLocation` receives the location each
    /// storage was saved with (`"cpu"`, `"cuda:0"`, …) and returns the device to put it on.
    ///
    /// ```swift
    /// // Everything saved on GPU 1 goes to GPU 0, the rest to the CPU.
    /// let sd = try torch.load("ckpt.pt") { $0 == "cuda:1" ? .cuda(0) : .cpu }
    /// ```
    /// - Throws: ``SerializationError`` as `load(_:mapLocation:)`, also when the closure names a GPU that is
    ///   not available.
    public static func load(_ path: String, mapLocation: (String) -> Device) throws -> StateValue {
        let locations = CheckpointStorageLocations()
        let value = try loadFile(path, locations: locations)
        var chosen: [ObjectIdentifier: Device] = [:]
        for (id, location) in locations.byStorage {
            let d = mapLocation(location)
            try checkMapLocation(d)
            chosen[id] = d
        }
        return StorageTransfer.mapping(value) { chosen[ObjectIdentifier($0)] ?? .cpu }
    }

    /// Reads a checkpoint file (tensors on the CPU), recording storage locations when asked.
    private static func loadFile(_ path: String, locations: CheckpointStorageLocations?) throws -> StateValue {
        do {
            let bytes = try ZipArchiveBytes(mappingFileAt: path, copyOnWrite: true)
            return try TorchCheckpoint.load(bytes, locations: locations)
        } catch let e as SerializationError {
            if case .io = e { throw e }
            throw e.inContext("loading '\(path)'")
        }
    }

    /// `torch.load(path, map_location="cuda")`: "cpu", "cuda" or "cuda:1".
    public static func load(_ path: String, mapLocation: String) throws -> StateValue {
        guard mapLocation == "cpu" || mapLocation == "cuda" || mapLocation.hasPrefix("cuda:") && Int(mapLocation.dropFirst(5)) != nil else {
            throw SerializationError.invalidArgument("torch.load: unknown mapLocation '\(mapLocation)' (expected cpu, cuda or cuda:<index>)")
        }
        return try load(path, mapLocation: Device(mapLocation))
    }

    static func checkMapLocation(_ d: Device?) throws {
        guard case .cuda(let i)? = d else { return }
        if !torch.cuda.isAvailable() {
            throw SerializationError.invalidArgument("torch.load: Attempting to deserialize object on a CUDA device but torch.cuda.isAvailable() is false "
                + "(\(torch.cuda.unavailableReason ?? "no CUDA")). Use mapLocation: .cpu to map your storages to the CPU.")
        }
        if i >= torch.cuda.deviceCount() {
            throw SerializationError.invalidArgument("torch.load: Attempting to deserialize object on CUDA device \(i) but torch.cuda.deviceCount() is \(torch.cuda.deviceCount())")
        }
    }
}

/// Format detection and the zip-format reader behind `torch.load`.
enum TorchCheckpoint {
    /// The oldest and newest zip-format `version` record values PyTorch's reader accepts.
    static let supportedVersions = 1...10

    /// Loads a checkpoint held in `bytes` (a private writable mapping or a heap copy).
    static func load(_ bytes: ZipArchiveBytes, locations: CheckpointStorageLocations? = nil) throws -> StateValue {
        let b = bytes.buffer
        guard b.count > 0 else { throw SerializationError.invalidCheckpoint(reason: "the file is empty") }
        if b.count >= 4 && b[0] == 0x50 && b[1] == 0x4B && b[2] == 0x03 && b[3] == 0x04 {
            return try loadZip(bytes, locations: locations)
        }
        if b.count >= 262 && Array(b[257..<262]) == Array("ustar".utf8) {
            throw SerializationError.invalidCheckpoint(
                reason: "this is a tar checkpoint from PyTorch 0.x; load it with an old PyTorch and save it again")
        }
        if b[0] == 0x80 {
            return try LegacyCheckpoint.load(bytes, locations: locations)
        }
        throw SerializationError.invalidCheckpoint(
            reason: "not a PyTorch checkpoint (the file starts with neither a zip header nor a pickle)")
    }

    /// Limits for a checkpoint's pickle of `size` bytes: the tree may not be much larger than the
    /// stream (legitimate files never share sub-values heavily), and nesting stays shallow.
    static func unpicklerLimits(forStreamOf size: Int) -> Unpickler.Limits {
        var l = Unpickler.Limits()
        l.maxValueNodes = min(l.maxValueNodes, max(1 << 16, size.multipliedReportingOverflow(by: 2).partialValue))
        l.maxDepth = 200
        return l
    }

    static func loadZip(_ bytes: ZipArchiveBytes, locations: CheckpointStorageLocations? = nil) throws -> StateValue {
        let zip = try ZipReader(source: bytes)
        guard let first = zip.entries.first, let slash = first.name.firstIndex(of: "/") else {
            throw SerializationError.invalidCheckpoint(
                reason: "the zip archive has no top-level folder (file not written by torch.save)")
        }
        let prefix = String(first.name[...slash])
        if zip.contains(prefix + "constants.pkl") {
            throw SerializationError.invalidCheckpoint(
                reason: "this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
        }
        // version
        let versionName = zip.contains(prefix + ".data/version") ? prefix + ".data/version" : prefix + "version"
        guard zip.contains(versionName) else {
            throw SerializationError.invalidCheckpoint(reason: "the archive has no '\(prefix)version' record")
        }
        let versionBytes = try zip.buffer(named: versionName)
        guard versionBytes.count <= 64,
              let version = Int(String(decoding: versionBytes.array, as: UTF8.self).trimmingWhitespace(newlines: true)),
              supportedVersions.contains(version) else {
            throw SerializationError.invalidCheckpoint(
                reason: "unsupported checkpoint format version '\(String(decoding: versionBytes.array.prefix(64), as: UTF8.self))' (supported: \(supportedVersions.lowerBound)...\(supportedVersions.upperBound))")
        }
        // byteorder
        var bigEndian = false
        if zip.contains(prefix + "byteorder") {
            let bo = String(decoding: try zip.buffer(named: prefix + "byteorder").array.prefix(16), as: UTF8.self)
            switch bo.trimmingWhitespace(newlines: true) {
            case "little": bigEndian = false
            case "big": bigEndian = true
            default: throw SerializationError.invalidCheckpoint(reason: "unknown byteorder '\(bo)'")
            }
        }
        guard zip.contains(prefix + "data.pkl") else {
            throw SerializationError.invalidCheckpoint(reason: "the archive has no '\(prefix)data.pkl' record")
        }
        let pkl = try zip.buffer(named: prefix + "data.pkl")
        let tree: PickleValue
        do {
            tree = try pkl.withUnsafeBytes { try Unpickler(limits: unpicklerLimits(forStreamOf: $0.count)).load($0) }
        } catch let e as SerializationError {
            throw e.inContext("reading record '\(prefix)data.pkl'")
        }
        var decoder = CheckpointDecoder(bigEndian: bigEndian, locations: locations) { key in
            let name = prefix + "data/" + key
            guard let entry = zip.entry(named: name) else { throw SerializationError.zipEntryNotFound(name: name) }
            let buf = try zip.buffer(for: entry)
            return CheckpointStorageBytes(bytes: buf.bytes, owner: buf.owner)
        }
        return try decoder.decode(tree)
    }
}
