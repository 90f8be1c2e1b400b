// safetensors files (huggingface/safetensors, docs/formats.md §2): `u64 N` + N bytes of JSON +
// the tensors' little-endian, C-contiguous bytes. Writing follows the reference writer (see
// `SafetensorsHeader`); reading validates the header as the reference reader does and returns
// tensors that point into a private copy-on-write memory mapping of the file.

/// The `safetensors` Python package's API: `safetensors.torch.save_file` / `load_file` and
/// `safetensors.safe_open`.
///
/// ```swift
/// try safetensors.saveFile(model.stateDict(), "model.safetensors", metadata: ["format": "pt"])
/// let tensors = try safetensors.loadFile("model.safetensors")     // [(name, tensor)], sorted by name
/// let f = try safetensors.safeOpen("model.safetensors")           // lazy: only the header is read
/// for name in f.keys() { print(name, try f.getTensor(name).shape) }
/// ```
public enum safetensors {
    /// The format's dtype name of a SwiftTorch dtype.
    static func formatName(of dtype: DType) -> String {
        switch dtype {
        case .bool: return "BOOL"
        case .uint8: return "U8"
        case .int32: return "I32"
        case .int64: return "I64"
        case .float16: return "F16"
        case .bfloat16: return "BF16"
        case .float32: return "F32"
        case .float64: return "F64"
        }
    }

    /// The SwiftTorch dtype of a format dtype name, if there is one.
    static func dtype(formatName: String) -> DType? {
        switch formatName {
        case "BOOL": return .bool
        case "U8": return .uint8
        case "I32": return .int32
        case "I64": return .int64
        case "F16": return .float16
        case "BF16": return .bfloat16
        case "F32": return .float32
        case "F64": return .float64
        default: return nil
        }
    }

    /// The header for `tensors`, laid out as the reference writer does.
    private static func header(for tensors: [(String, Tensor)], metadata: [String: String]?) throws -> SafetensorsHeader {
        try SafetensorsHeader(layout: tensors.map { (name: $0.0, dtype: formatName(of: $0.1.dtype), shape: $0.1.shape) },
                              metadata: metadata)
    }

    /// Calls `body` with each tensor's contiguous bytes, in the header's (file) order.
    private static func forEachPayload(_ header: SafetensorsHeader, _ tensors: [(String, Tensor)],
                                       _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var byName: [String: Tensor] = [:]
        for (n, t) in tensors { byName[n] = t }
        for info in header.tensors {
            let t = byName[info.name]!.contiguous()
            try withExtendedLifetime(t) {
                try body(UnsafeRawBufferPointer(start: t.rawPointer, count: t.numel * t.dtype.itemSize))
            }
        }
    }

    /// Writes `tensors` to a safetensors file at `path` (`safetensors.torch.save_file`).
    ///
    /// Tensors are written C-contiguous (non-contiguous views are copied); tensors that share
    /// memory are each written in full. The layout matches the reference writer: sorted by
    /// descending dtype size then name, header padded to a multiple of 8 bytes. The write is atomic
    /// (temporary file, fsync, rename).
    /// - Parameters:
    ///   - tensors: (name, tensor) pairs.
    ///   - path: the file to write.
    ///   - metadata: the `__metadata__` string map (transformers expects `["format": "pt"]`).
    /// - Throws: ``SerializationError`` for a duplicate name, the reserved name `__metadata__`,
    ///   or an I/O error.
    public static func saveFile(_ tensors: [(String, Tensor)], _ path: String, metadata: [String: String]? = nil) throws {
        let h = try header(for: tensors, metadata: metadata)
        let head = try h.encoded()
        try AtomicFile.write(to: path) { fd in
            try head.withUnsafeBytes { try serializationWriteAll(fd: fd, $0.baseAddress!, $0.count, path: path) }
            try forEachPayload(h, tensors) { bytes in
                if bytes.count > 0 { try serializationWriteAll(fd: fd, bytes.baseAddress!, bytes.count, path: path) }
            }
        }
    }

    /// The safetensors bytes of `tensors` (`safetensors.torch.save`).
    public static func save(_ tensors: [(String, Tensor)], metadata: [String: String]? = nil) throws -> [UInt8] {
        let h = try header(for: tensors, metadata: metadata)
        var out = try h.encoded()
        out.reserveCapacity(out.count + h.dataSize)
        try forEachPayload(h, tensors) { out.append(contentsOf: $0) }
        return out
    }

    /// Loads every tensor of a safetensors file (`safetensors.torch.load_file`), sorted by name.
    /// The tensors share a copy-on-write memory mapping of the file (no copy is made unless the
    /// data is misaligned).
    /// - Throws: ``SerializationError`` for an invalid header (the reference reader's rules), a
    ///   dtype SwiftTorch does not have, or an I/O error.
    public static func loadFile(_ path: String) throws -> [(String, Tensor)] {
        let f = try safeOpen(path)
        return try f.keys().map { ($0, try f.getTensor($0)) }
    }

    /// Loads every tensor of safetensors bytes (`safetensors.torch.load`), sorted by name.
    public static func load(_ bytes: [UInt8]) throws -> [(String, Tensor)] {
        let f = try SafeOpen(bytes: bytes.withUnsafeBytes { ZipArchiveBytes(copying: $0) }, path: "<bytes>")
        return try f.keys().map { ($0, try f.getTensor($0)) }
    }

    /// Opens a safetensors file lazily (`safetensors.safe_open(path, framework="pt")`): the file
    /// is memory-mapped and its header validated; tensors are made on demand by ``SafeOpen/getTensor(_:)``.
    public static func safeOpen(_ path: String) throws -> SafeOpen {
        try SafeOpen(bytes: ZipArchiveBytes(mappingFileAt: path, copyOnWrite: true), path: path)
    }

    /// A lazily read safetensors file (see ``safetensors/safeOpen(_:)``).
    public final class SafeOpen {
        /// The validated header.
        public let header: SafetensorsHeader
        private let bytes: ZipArchiveBytes
        private let path: String
        private let index: [String: Int]

        init(bytes: ZipArchiveBytes, path: String) throws {
            self.bytes = bytes
            self.path = path
            do {
                header = try SafetensorsHeader.parse(bytes.buffer)
            } catch let e as SerializationError {
                throw e.inContext("reading safetensors file '\(path)'")
            }
            var idx: [String: Int] = [:]
            for (i, t) in header.tensors.enumerated() { idx[t.name] = i }
            index = idx
        }

        /// The tensor names, sorted.
        public func keys() -> [String] {
            header.tensors.map(\.name).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        }

        /// The `__metadata__` string map, if the file has one.
        public func metadata() -> [String: String]? { header.metadata }

        /// The tensor called `name`, pointing into the file's copy-on-write mapping.
        /// - Throws: ``SerializationError/invalidSafetensors(reason:tensor:)`` if there is no such
        ///   tensor or its dtype is not one SwiftTorch has.
        public func getTensor(_ name: String) throws -> Tensor {
            guard let i = index[name] else {
                throw SerializationError.invalidSafetensors(reason: "no tensor with this name in '\(path)'", tensor: name)
            }
            let info = header.tensors[i]
            guard let dtype = safetensors.dtype(formatName: info.dtype) else {
                throw SerializationError.invalidSafetensors(reason: "dtype \(info.dtype) is not supported by SwiftTorch", tensor: name)
            }
            let start = header.dataStart + info.dataOffsets.lowerBound
            let base = bytes.buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 64)!
            let storage = Storage.fromFileBytes(base + start, byteCount: info.byteCount, owner: bytes,
                                                alignment: dtype.itemSize, booleans: dtype == .bool)
            return Tensor(storage: storage, shape: info.shape, strides: contiguousStrides(info.shape), offset: 0, dtype: dtype)
        }
    }
}

extension safetensors {
    /// Writes a state dict as Python's `save_file(model.state_dict(), path)` does:
    /// `try safetensors.saveFile(model.stateDict(), "model.safetensors")`.
    public static func saveFile(_ tensors: OrderedDict<Tensor>, _ path: String, metadata: [String: String]? = nil) throws {
        try saveFile(tensors.map { ($0.key, $0.value) }, path, metadata: metadata)
    }

    /// Writes a Swift dictionary of tensors (`save_file({"a": t}, path)`); the file's layout does
    /// not depend on the dictionary's order.
    public static func saveFile(_ tensors: [String: Tensor], _ path: String, metadata: [String: String]? = nil) throws {
        try saveFile(tensors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, path, metadata: metadata)
    }

    /// The safetensors bytes of a state dict (`safetensors.torch.save(model.state_dict())`).
    public static func save(_ tensors: OrderedDict<Tensor>, metadata: [String: String]? = nil) throws -> [UInt8] {
        try save(tensors.map { ($0.key, $0.value) }, metadata: metadata)
    }

    /// The safetensors bytes of a Swift dictionary of tensors.
    public static func save(_ tensors: [String: Tensor], metadata: [String: String]? = nil) throws -> [UInt8] {
        try save(tensors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, metadata: metadata)
    }
}
