// The legacy checkpoint stream of PyTorch < 1.6 (and `torch.save(..., _use_new_zipfile_serialization=False)`),
// docs/formats.md §1.6 (a): pickles written back to back — the magic number, the protocol version
// 1001, a sys-info dict, the object (storages as persistent ids
// `('storage', cls, key, location, numel, view)`), the sorted list of storage keys — followed by
// each storage as an i64 element count and its raw little-endian bytes, in key-list order.

enum LegacyCheckpoint {
    /// The magic number 0x1950a86a20f9469cfc6c as minimal little-endian two's-complement bytes.
    static let magic: [UInt8] = [0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19]
    /// The only legacy protocol version PyTorch wrote.
    static let protocolVersion: Int64 = 1001

    static func load(_ bytes: ZipArchiveBytes, locations: CheckpointStorageLocations? = nil) throws -> StateValue {
        let buf = bytes.buffer
        let unpickler = Unpickler(limits: TorchCheckpoint.unpicklerLimits(forStreamOf: buf.count))

        func next(_ offset: Int, _ what: String) throws -> (PickleValue, Int) {
            do {
                let r = try unpickler.load(buf, startingAt: offset)
                return (r.value, r.endOffset)
            } catch let e as SerializationError {
                throw e.inContext("reading the \(what) of a legacy checkpoint (byte offset \(offset))")
            }
        }

        var (v, offset) = try next(0, "magic number")
        guard case let .bigInt(m) = v, m == magic else {
            throw SerializationError.invalidCheckpoint(reason: "not a PyTorch checkpoint: the legacy magic number is missing")
        }
        (v, offset) = try next(offset, "protocol version")
        guard case .int(protocolVersion) = v else {
            throw SerializationError.invalidCheckpoint(reason: "unsupported legacy checkpoint protocol version \(v.description.prefix(40))")
        }
        (v, offset) = try next(offset, "sys info")
        guard v.dictEntries != nil else {
            throw SerializationError.invalidCheckpoint(reason: "the legacy sys info record is not a dict")
        }
        // `little_endian` in the sys info needs no handling: storage bytes are always written
        // little-endian (THPStorage_writeFileRaw), whatever the machine, and pickles are portable.
        let object: PickleValue
        (object, offset) = try next(offset, "object")
        let keyList: PickleValue
        (keyList, offset) = try next(offset, "storage key list")
        guard let keyItems = keyList.elements else {
            throw SerializationError.invalidCheckpoint(reason: "the legacy storage key list is not a list")
        }
        let declared = try CheckpointDecoder.storageDeclarations(in: object)

        // Locate each storage's bytes: i64 element count (little-endian) + count × element size bytes.
        var located: [String: Range<Int>] = [:]
        for item in keyItems {
            guard case let .string(key) = item else {
                throw SerializationError.invalidCheckpoint(reason: "legacy storage key \(item.description.prefix(40)) is not a string")
            }
            guard let decl = declared[key] else {
                throw SerializationError.invalidCheckpoint(reason: "legacy storage '\(key)' is listed but no tensor uses it")
            }
            guard buf.count - offset >= 8 else {
                throw SerializationError.truncated(what: "element count of legacy storage '\(key)'", offset: offset,
                                                   needed: 8, available: buf.count - offset)
            }
            let count = Int64(littleEndian: buf.baseAddress!.loadUnaligned(fromByteOffset: offset, as: Int64.self))
            guard count == Int64(decl.numel) else {
                throw SerializationError.invalidCheckpoint(
                    reason: "legacy storage '\(key)' holds \(count) elements but its tensors declare \(decl.numel)")
            }
            offset += 8
            let (nbytes, o) = decl.numel.multipliedReportingOverflow(by: decl.dtype.itemSize)
            guard !o, nbytes <= buf.count - offset else {
                throw SerializationError.truncated(what: "legacy storage '\(key)'", offset: offset,
                                                   needed: o ? Int.max : nbytes, available: buf.count - offset)
            }
            guard located[key] == nil else {
                throw SerializationError.invalidCheckpoint(reason: "legacy storage '\(key)' is listed twice")
            }
            located[key] = offset..<(offset + nbytes)
            offset += nbytes
        }

        var decoder = CheckpointDecoder(legacy: true, locations: locations) { key in
            guard let r = located[key] else {
                throw SerializationError.invalidCheckpoint(reason: "legacy storage '\(key)' is missing from the storage key list")
            }
            return CheckpointStorageBytes(bytes: UnsafeRawBufferPointer(rebasing: buf[r]), owner: bytes)
        }
        return try decoder.decode(object)
    }
}
