// The zip reader: validating (every size and offset checked against the archive), memory-mapped,
// zero-copy for STORED entries, DEFLATE through zlib (`Inflate`), zip64. docs/formats.md §1.2.

// MARK: - Little-endian helpers

@inline(__always)
private func readU16(_ p: UnsafeRawPointer, _ offset: Int) -> UInt16 {
    UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
}

@inline(__always)
private func readU32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
    UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
}

@inline(__always)
private func readU64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
    UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
}

// MARK: - Reader

/// A validating reader of zip archives, including PyTorch checkpoints (`torch.save` files).
///
/// - Opening from a path memory-maps the file; STORED entries are then read without copying
///   (see ``buffer(for:verifyCRC:)``).
/// - DEFLATE entries (method 8) are inflated by ``Inflate``; other methods and encrypted entries
///   are listed but throw when read.
/// - zip64 end-of-central-directory records, locators and extra fields are understood.
/// - Records may appear in any order; sizes are taken from the central directory (PyTorch writes
///   zeros in local headers), and the data offset from the local header's own name and extra lengths.
/// - Every declared size and offset is checked against the archive length before use, so a corrupt
///   or hostile archive throws a ``SerializationError`` instead of crashing or over-allocating.
/// - CRC-32 checking is optional (`verifyCRC:`), like `torch.load`, which never checks it.
public struct ZipReader {
    /// One entry of the central directory, validated against the archive.
    public struct Entry: Equatable, Hashable, Sendable {
        /// The entry's full name (for a PyTorch checkpoint, `"<arch>/data.pkl"`, `"<arch>/data/0"`, …).
        public let name: String
        /// The compression method: 0 = STORED, 8 = DEFLATE (others cannot be read).
        public let method: UInt16
        /// The general-purpose flags from the central directory (bit 0 = encrypted, bit 3 = data
        /// descriptor, bit 11 = UTF-8 name).
        public let flags: UInt16
        /// The CRC-32 the archive declares for the uncompressed bytes.
        public let crc32: UInt32
        /// The size of the stored (possibly compressed) bytes.
        public let compressedSize: Int
        /// The size of the entry once decompressed.
        public let uncompressedSize: Int
        /// The offset of the entry's local header in the archive.
        public let localHeaderOffset: Int
        /// The offset of the entry's first data byte in the archive.
        public let dataOffset: Int
        /// Whether the entry is stored without compression (readable without copying).
        public var isStored: Bool { method == 0 }
        /// Whether the entry is encrypted (such entries cannot be read).
        public var isEncrypted: Bool { flags & 1 != 0 }
        /// Whether the name ends with `/` (a directory entry).
        public var isDirectory: Bool { name.hasSuffix("/") }
    }

    /// All entries, in central-directory order.
    public let entries: [Entry]
    /// The archive length in bytes.
    public var archiveSize: Int { source.count }

    private let source: ZipArchiveBytes
    private let index: [String: Int]

    /// Opens the archive at `path`, memory-mapping it read-only.
    /// - Throws: ``SerializationError/io(path:operation:code:message:)`` when the file cannot be
    ///   opened or mapped; a zip error when it is not a valid archive.
    public init(path: String) throws {
        let src = try ZipArchiveBytes(mappingFileAt: path)
        do {
            try self.init(source: src)
        } catch let e as SerializationError {
            throw e.inContext("reading zip archive '\(path)'")
        }
    }

    /// Reads an archive held in memory. The bytes are copied once into a 64-byte-aligned buffer,
    /// so entry data keeps the archive's alignment in memory.
    public init(bytes: [UInt8]) throws {
        try self.init(source: bytes.withUnsafeBytes { ZipArchiveBytes(copying: $0) })
    }

    /// Reads an archive held in `Data`. The bytes are copied once into a 64-byte-aligned buffer.
    public init(data: Data) throws {
        try self.init(source: data.withUnsafeBytes { ZipArchiveBytes(copying: $0) })
    }

    /// Reads an archive from raw memory. The bytes are copied once into a 64-byte-aligned buffer.
    public init(buffer: UnsafeRawBufferPointer) throws {
        try self.init(source: ZipArchiveBytes(copying: buffer))
    }

    init(source: ZipArchiveBytes) throws {
        self.source = source
        let parsed = try ZipReader.parse(source.buffer)
        entries = parsed
        var idx: [String: Int] = [:]
        idx.reserveCapacity(parsed.count)
        for (i, e) in parsed.enumerated() where idx[e.name] == nil { idx[e.name] = i }
        index = idx
    }

    /// The entry names, in central-directory order.
    public var names: [String] { entries.map { $0.name } }

    /// The entry called `name` (the first one, if the archive has duplicates), or `nil`.
    public func entry(named name: String) -> Entry? {
        index[name].map { entries[$0] }
    }

    /// Whether the archive has an entry called `name`.
    public func contains(_ name: String) -> Bool { index[name] != nil }

    /// Calls `body` with the whole archive's bytes (for example to compute offsets or hashes).
    public func withArchiveBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(source) { try body(source.buffer) }
    }

    /// The entry's raw stored bytes (compressed if the entry is DEFLATE), without copying.
    public func compressedBuffer(for entry: Entry) throws -> ZipEntryBuffer {
        let buf = source.buffer
        guard entry.dataOffset >= 0, entry.compressedSize >= 0, entry.dataOffset <= buf.count,
              entry.compressedSize <= buf.count - entry.dataOffset else {
            throw SerializationError.corruptZip(reason: "entry data lies outside the archive (entry from another archive?)",
                                                record: entry.name, offset: entry.dataOffset)
        }
        let slice = UnsafeRawBufferPointer(rebasing: buf[entry.dataOffset..<(entry.dataOffset + entry.compressedSize)])
        return ZipEntryBuffer(bytes: slice, owner: source)
    }

    /// The entry's uncompressed bytes: zero-copy for STORED entries (pointing into the archive's
    /// mapping or buffer), inflated into a new 64-byte-aligned buffer for DEFLATE entries.
    /// - Parameters:
    ///   - entry: the entry to read, from this archive.
    ///   - verifyCRC: compare the CRC-32 of the bytes with the declared one
    ///     (costs one pass over the data). `torch.load` never checks it.
    /// - Throws: ``SerializationError/unsupportedZipFeature(feature:record:)`` for encrypted entries
    ///   or unknown methods, ``SerializationError/corruptZip(reason:record:offset:)`` or a DEFLATE
    ///   error for damaged data, ``SerializationError/checksumMismatch(record:expected:actual:)``.
    public func buffer(for entry: Entry, verifyCRC: Bool = false) throws -> ZipEntryBuffer {
        if entry.isEncrypted {
            throw SerializationError.unsupportedZipFeature(feature: "encrypted entry", record: entry.name)
        }
        let raw = try compressedBuffer(for: entry)
        let result: ZipEntryBuffer
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw SerializationError.corruptZip(
                    reason: "STORED entry declares compressed size \(entry.compressedSize) but uncompressed size \(entry.uncompressedSize)",
                    record: entry.name, offset: entry.localHeaderOffset)
            }
            result = raw
        case 8:
            let usize = entry.uncompressedSize
            guard usize <= Inflate.maximumInflatedSize(compressedSize: entry.compressedSize) else {
                throw SerializationError.corruptZip(
                    reason: "declared uncompressed size \(usize) is impossible for \(entry.compressedSize) bytes of DEFLATE data",
                    record: entry.name, offset: entry.localHeaderOffset)
            }
            let heap = ZipHeapBytes(count: usize)
            let written: Int
            do {
                written = try Inflate.decompress(
                    raw.bytes, into: UnsafeMutableRawBufferPointer(start: heap.base, count: usize)).written
            } catch let e as SerializationError {
                if case .limitExceeded = e {
                    throw SerializationError.corruptZip(
                        reason: "DEFLATE data inflates to more than the declared \(usize) bytes",
                        record: entry.name, offset: entry.dataOffset)
                }
                throw e.inContext("inflating zip record '\(entry.name)' (data at byte offset \(entry.dataOffset))")
            }
            guard written == usize else {
                throw SerializationError.corruptZip(
                    reason: "DEFLATE data inflates to \(written) bytes but the central directory declares \(usize)",
                    record: entry.name, offset: entry.dataOffset)
            }
            result = ZipEntryBuffer(bytes: UnsafeRawBufferPointer(start: heap.base, count: usize), owner: heap)
        default:
            throw SerializationError.unsupportedZipFeature(feature: "compression method \(entry.method)", record: entry.name)
        }
        if verifyCRC {
            let actual = result.withUnsafeBytes { CRC32.checksum($0) }
            if actual != entry.crc32 {
                throw SerializationError.checksumMismatch(record: entry.name, expected: entry.crc32, actual: actual)
            }
        }
        return result
    }

    /// The entry called `name`'s uncompressed bytes; see ``buffer(for:verifyCRC:)``.
    /// - Throws: ``SerializationError/zipEntryNotFound(name:)`` if there is no such entry.
    public func buffer(named name: String, verifyCRC: Bool = false) throws -> ZipEntryBuffer {
        guard let e = entry(named: name) else { throw SerializationError.zipEntryNotFound(name: name) }
        return try buffer(for: e, verifyCRC: verifyCRC)
    }

    /// A copy of the entry's uncompressed bytes.
    public func read(_ entry: Entry, verifyCRC: Bool = false) throws -> [UInt8] {
        try buffer(for: entry, verifyCRC: verifyCRC).array
    }

    /// A copy of the uncompressed bytes of the entry called `name`.
    /// - Throws: ``SerializationError/zipEntryNotFound(name:)`` if there is no such entry.
    public func read(named name: String, verifyCRC: Bool = false) throws -> [UInt8] {
        try buffer(named: name, verifyCRC: verifyCRC).array
    }

    /// The entry's uncompressed bytes as `Data`, without copying for STORED entries.
    public func data(for entry: Entry, verifyCRC: Bool = false) throws -> Data {
        try buffer(for: entry, verifyCRC: verifyCRC).data
    }

    // MARK: Parsing

    private static func corrupt(_ reason: String, record: String? = nil, offset: Int? = nil) -> SerializationError {
        .corruptZip(reason: reason, record: record, offset: offset)
    }

    private static func decodeName(_ bytes: UnsafeRawBufferPointer) -> String {
        let s = String(decoding: bytes, as: UTF8.self)
        if s.utf8.elementsEqual(bytes) { return s }
        // Not valid UTF-8 (an old CP437 name): map bytes to code points one to one.
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    static func parse(_ buf: UnsafeRawBufferPointer) throws -> [Entry] {
        let n = buf.count
        guard n >= 22, let p = buf.baseAddress else {
            throw corrupt("\(n) bytes is too small for a zip archive (no end of central directory record)")
        }
        // 1. Find the end of central directory record, scanning backwards over a possible comment.
        var eocd = -1
        var i = n - 22
        let lowest = max(0, n - 22 - 0xFFFF)
        while i >= lowest {
            if readU32(p, i) == sigEOCD && i + 22 + Int(readU16(p, i + 20)) <= n {
                eocd = i
                break
            }
            i -= 1
        }
        guard eocd >= 0 else { throw corrupt("no end of central directory record found (not a zip archive)") }

        var diskNumber = UInt64(readU16(p, eocd + 4))
        var cdDisk = UInt64(readU16(p, eocd + 6))
        var entriesOnDisk = UInt64(readU16(p, eocd + 8))
        var entryCount = UInt64(readU16(p, eocd + 10))
        var cdSize = UInt64(readU32(p, eocd + 12))
        var cdOffset = UInt64(readU32(p, eocd + 16))
        var cdLimit = eocd  // the central directory must end before this offset

        // 2. zip64: locator right before the EOCD, pointing at the zip64 EOCD record.
        if eocd >= 20 && readU32(p, eocd - 20) == sigZip64Locator {
            let locator = eocd - 20
            let z64 = readU64(p, locator + 8)
            let totalDisks = readU32(p, locator + 16)
            guard totalDisks <= 1 else {
                throw SerializationError.unsupportedZipFeature(feature: "archive spanning \(totalDisks) disks", record: nil)
            }
            guard locator >= 56, z64 <= UInt64(locator - 56) else {
                throw corrupt("zip64 end of central directory offset \(z64) is out of bounds", offset: locator)
            }
            let z = Int(z64)
            guard readU32(p, z) == sigZip64EOCD else {
                throw corrupt("bad zip64 end of central directory signature", offset: z)
            }
            let recordSize = readU64(p, z + 4)
            guard recordSize >= 44, recordSize <= UInt64(locator - z - 12) else {
                throw corrupt("zip64 end of central directory record size \(recordSize) is invalid", offset: z)
            }
            diskNumber = UInt64(readU32(p, z + 16))
            cdDisk = UInt64(readU32(p, z + 20))
            entriesOnDisk = readU64(p, z + 24)
            entryCount = readU64(p, z + 32)
            cdSize = readU64(p, z + 40)
            cdOffset = readU64(p, z + 48)
            cdLimit = z
        }
        guard diskNumber == 0, cdDisk == 0, entriesOnDisk == entryCount else {
            throw SerializationError.unsupportedZipFeature(feature: "multi-disk archive", record: nil)
        }
        guard cdOffset <= UInt64(cdLimit), cdSize <= UInt64(cdLimit) - cdOffset else {
            throw corrupt("central directory (offset \(cdOffset), size \(cdSize)) lies outside the archive", offset: eocd)
        }
        guard entryCount <= cdSize / 46 else {
            throw corrupt("the archive declares \(entryCount) entries but its \(cdSize)-byte central directory can hold at most \(cdSize / 46)", offset: eocd)
        }
        let cdStart = Int(cdOffset)
        let cdEnd = cdStart + Int(cdSize)

        // 3. Walk the central directory.
        var entries: [Entry] = []
        entries.reserveCapacity(Int(entryCount))
        var q = cdStart
        for k in 0..<Int(entryCount) {
            guard cdEnd - q >= 46 else {
                throw corrupt("central directory ends inside entry \(k)", offset: q)
            }
            guard readU32(p, q) == sigCentral else {
                throw corrupt("bad central directory entry signature (entry \(k))", offset: q)
            }
            let flags = readU16(p, q + 8)
            let method = readU16(p, q + 10)
            let crc = readU32(p, q + 16)
            var csize = UInt64(readU32(p, q + 20))
            var usize = UInt64(readU32(p, q + 24))
            let nameLen = Int(readU16(p, q + 28))
            let extraLen = Int(readU16(p, q + 30))
            let commentLen = Int(readU16(p, q + 32))
            let diskStart = readU16(p, q + 34)
            var localOffset = UInt64(readU32(p, q + 42))
            guard cdEnd - q - 46 >= nameLen + extraLen + commentLen else {
                throw corrupt("central directory entry \(k) runs past the end of the central directory", offset: q)
            }
            let nameBytes = UnsafeRawBufferPointer(start: p + q + 46, count: nameLen)
            let name = decodeName(nameBytes)

            // zip64 extended information: only the fields whose 32-bit value is 0xFFFFFFFF, in order.
            var e = q + 46 + nameLen
            let extraEnd = e + extraLen
            while extraEnd - e >= 4 {
                let id = readU16(p, e)
                let len = Int(readU16(p, e + 2))
                guard extraEnd - e - 4 >= len else {
                    throw corrupt("extra field 0x\(String(id, radix: 16)) (length \(len)) runs past the end of the extra data",
                                  record: name, offset: e)
                }
                if id == 0x0001 {
                    var f = e + 4
                    let fEnd = f + len
                    func next(_ what: String) throws -> UInt64 {
                        guard fEnd - f >= 8 else {
                            throw corrupt("zip64 extra field too short for the \(what)", record: name, offset: e)
                        }
                        defer { f += 8 }
                        return readU64(p, f)
                    }
                    if usize == 0xFFFF_FFFF { usize = try next("uncompressed size") }
                    if csize == 0xFFFF_FFFF { csize = try next("compressed size") }
                    if localOffset == 0xFFFF_FFFF { localOffset = try next("local header offset") }
                    _ = diskStart
                }
                e += 4 + len
            }
            q += 46 + nameLen + extraLen + commentLen

            // 4. Validate against the archive and locate the data through the local header.
            guard localOffset <= UInt64(n), UInt64(n) - localOffset >= 30 else {
                throw corrupt("local header offset \(localOffset) is out of bounds", record: name)
            }
            let h = Int(localOffset)
            guard readU32(p, h) == sigLocal else {
                throw corrupt("bad local header signature", record: name, offset: h)
            }
            let localNameLen = Int(readU16(p, h + 26))
            let localExtraLen = Int(readU16(p, h + 28))
            guard n - h - 30 >= localNameLen + localExtraLen else {
                throw corrupt("local header name/extra run past the end of the archive", record: name, offset: h)
            }
            guard UnsafeRawBufferPointer(start: p + h + 30, count: localNameLen).elementsEqual(nameBytes) else {
                throw corrupt("local header name differs from the central directory name", record: name, offset: h)
            }
            let dataOffset = h + 30 + localNameLen + localExtraLen
            guard csize <= UInt64(n - dataOffset) else {
                throw corrupt("entry data (\(csize) bytes at offset \(dataOffset)) runs past the end of the archive (\(n) bytes)",
                              record: name, offset: h)
            }
            guard usize <= UInt64(Int.max) else {
                throw corrupt("uncompressed size \(usize) is too large", record: name, offset: h)
            }
            entries.append(Entry(name: name, method: method, flags: flags, crc32: crc,
                                 compressedSize: Int(csize), uncompressedSize: Int(usize),
                                 localHeaderOffset: h, dataOffset: dataOffset))
        }
        return entries
    }
}
