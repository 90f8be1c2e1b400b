// Zip archives: a validating reader (memory-mapped, zero-copy for STORED entries, DEFLATE via
// `Inflate`, zip64) and a streaming writer that produces exactly PyTorch's `torch.save` layout
// (docs/FORMATS.md §1.2): STORED entries, 64-byte-aligned data via an "FB" padding extra field,
// data descriptors, real CRC-32, and the zip64 end records always present.

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

/// Appends little-endian integers to a byte array.
private struct LEBytes {
    var bytes: [UInt8] = []
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
    mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
    mutating func append<S: Sequence>(_ s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
}

private let sigLocal: UInt32 = 0x0403_4B50
private let sigCentral: UInt32 = 0x0201_4B50
private let sigEOCD: UInt32 = 0x0605_4B50
private let sigZip64EOCD: UInt32 = 0x0606_4B50
private let sigZip64Locator: UInt32 = 0x0706_4B50
private let sigDataDescriptor: UInt32 = 0x0807_4B50

// MARK: - Byte owners

/// Owns the bytes of an open archive: a read-only memory mapping of a file, or a 64-byte-aligned
/// copy of an in-memory buffer. Entry buffers handed out by `ZipReader` keep it alive.
final class ZipArchiveBytes: @unchecked Sendable {
    let base: UnsafeRawPointer?
    let count: Int
    private let isMapped: Bool

    /// Maps the file at `path`. With `copyOnWrite` the mapping is private and writable: pages
    /// written to get private copies (the file never changes), so tensors that borrow the bytes
    /// can be modified in place.
    init(mappingFileAt path: String, copyOnWrite: Bool = false) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw serIOError(path: path, operation: "open") }
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) != 0 { throw serIOError(path: path, operation: "fstat") }
        if (st.st_mode & S_IFMT) != S_IFREG {
            throw SerializationError.io(path: path, operation: "open", code: EINVAL, message: "not a regular file")
        }
        let size = Int(st.st_size)
        count = size
        isMapped = size > 0
        if size == 0 {
            base = nil
            return
        }
        let p = mmap(nil, size, copyOnWrite ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, fd, 0)
        if p == nil || p == UnsafeMutableRawPointer(bitPattern: -1) {
            throw serIOError(path: path, operation: "mmap")
        }
        base = UnsafeRawPointer(p!)
    }

    init(copying buffer: UnsafeRawBufferPointer) {
        count = buffer.count
        isMapped = false
        if buffer.count == 0 {
            base = nil
            return
        }
        let p = UnsafeMutableRawPointer.allocate(byteCount: buffer.count, alignment: 64)
        p.copyMemory(from: buffer.baseAddress!, byteCount: buffer.count)
        base = UnsafeRawPointer(p)
    }

    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    deinit {
        guard let base = base else { return }
        if isMapped {
            munmap(UnsafeMutableRawPointer(mutating: base), count)
        } else {
            base.deallocate()
        }
    }
}

/// Owns a heap buffer (inflated entry bytes), 64-byte aligned.
final class ZipHeapBytes: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let count: Int
    init(count: Int) {
        self.count = count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 64)
    }
    deinit { base.deallocate() }
}

/// The bytes of one zip entry together with the object that keeps them alive.
///
/// For a STORED entry of an archive opened with ``ZipReader/init(path:)`` the bytes point straight
/// into the read-only memory mapping of the file (no copy); for a DEFLATE entry they are a freshly
/// inflated, 64-byte-aligned heap buffer. Either way ``bytes`` stays valid for as long as this value
/// or ``owner`` is alive: keep one of them while you use the pointer, or use ``withUnsafeBytes(_:)``.
public struct ZipEntryBuffer {
    /// The entry's bytes. Valid while ``owner`` is alive.
    public let bytes: UnsafeRawBufferPointer
    /// The object that owns the memory behind ``bytes`` (a memory mapping or a heap buffer).
    public let owner: AnyObject

    /// The number of bytes.
    public var count: Int { bytes.count }

    /// Calls `body` with the bytes, keeping their owner alive for the duration of the call.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(bytes) }
    }

    /// A copy of the bytes.
    public var array: [UInt8] {
        withUnsafeBytes { [UInt8]($0) }
    }

    /// The bytes as `Data` without copying; the `Data` keeps ``owner`` alive.
    public var data: Data {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return Data() }
        let keep = owner
        return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count,
                    deallocator: .custom { _, _ in withExtendedLifetime(keep) {} })
    }
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

// MARK: - Writer output

#if canImport(Glibc)
private let sysWrite = Glibc.write
private let sysClose = Glibc.close
#elseif canImport(Musl)
private let sysWrite = Musl.write
private let sysClose = Musl.close
#elseif canImport(Darwin)
private let sysWrite = Darwin.write
private let sysClose = Darwin.close
#endif

/// Writes all of `count` bytes to `fd`, retrying partial writes and EINTR.
func serializationWriteAll(fd: Int32, _ base: UnsafeRawPointer, _ count: Int, path: String) throws {
    var p = base
    var left = count
    while left > 0 {
        let r = sysWrite(fd, p, min(left, 1 << 30))
        if r < 0 {
            if errno == EINTR { continue }
            throw serIOError(path: path, operation: "write")
        }
        if r == 0 {
            throw SerializationError.io(path: path, operation: "write", code: EIO, message: "write returned 0 bytes")
        }
        p += r
        left -= r
    }
}

/// Where a `ZipWriter` sends its bytes: a file descriptor (with a small buffer for headers; large
/// payloads are written straight through) or an in-memory array.
final class ZipOutputSink {
    let fd: Int32  // -1 = memory
    let ownsFD: Bool
    let path: String
    var pending: [UInt8] = []
    var closed = false
    let keepAlive: AnyObject?
    static let bufferLimit = 1 << 16

    init(fd: Int32, ownsFD: Bool, path: String, keepAlive: AnyObject? = nil) {
        self.fd = fd
        self.ownsFD = ownsFD
        self.path = path
        self.keepAlive = keepAlive
        pending.reserveCapacity(fd >= 0 ? ZipOutputSink.bufferLimit : 4096)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        if closed { throw SerializationError.invalidArgument("ZipWriter: write after the archive was closed") }
        if fd < 0 || pending.count + bytes.count <= ZipOutputSink.bufferLimit {
            pending.append(contentsOf: bytes)
            return
        }
        try flush()
        if bytes.count >= ZipOutputSink.bufferLimit {
            try serializationWriteAll(fd: fd, bytes.baseAddress!, bytes.count, path: path)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    func flush() throws {
        guard fd >= 0, !pending.isEmpty else { return }
        try pending.withUnsafeBytes { try serializationWriteAll(fd: fd, $0.baseAddress!, $0.count, path: path) }
        pending.removeAll(keepingCapacity: true)
    }

    func close() throws {
        guard !closed else { return }
        try flush()
        closed = true
        if fd >= 0 && ownsFD && sysClose(fd) != 0 {
            throw serIOError(path: path, operation: "close")
        }
    }

    deinit {
        if fd >= 0 && ownsFD && !closed { _ = sysClose(fd) }
    }
}

// MARK: - Writer

/// Writes zip archives with exactly the byte layout of PyTorch's `torch.save`
/// (`PyTorchStreamWriter` driving miniz; docs/FORMATS.md §1.2):
///
/// - every entry STORED (method 0), local header with zero CRC/sizes and flags `0x0808`
///   (`0x0800` for an empty entry), followed by a data descriptor with the real CRC-32 and sizes;
/// - every entry's data aligned to 64 bytes by an `"FB"` extra field padded with `'Z'` bytes;
/// - zip64 extra fields only when a size or offset reaches `0xFFFFFFFF`, zip64 end record and
///   locator always written before the classic end record.
///
/// The writer streams: headers go through a small buffer, payloads are written straight to the
/// file descriptor, so a large tensor is never copied twice. Offsets are counted from where the
/// writer started, so give it a descriptor positioned at the start of the file. For crash-safe
/// saving use ``atomicWrite(to:options:_:)``.
///
/// ```swift
/// try ZipWriter.atomicWrite(to: "model.pt") { zip in
///     try zip.addEntry(name: "model/data.pkl", bytes: pickleBytes)
///     try zip.addEntry(name: "model/data/0", bytes: rawStorage)
///     try zip.addEntry(name: "model/version", bytes: Array("3\n".utf8))
/// }
/// ```
///
/// A `ZipWriter` refers to its output by reference: do not copy one and use both copies.
public struct ZipWriter {
    /// Layout options. The defaults reproduce PyTorch's files.
    public struct Options: Sendable {
        /// Data alignment in bytes (a power of two, at most 4096). PyTorch uses 64.
        public var alignment: Int
        /// Sizes and offsets at or above this value are written as zip64 fields (and the 32-bit
        /// fields set to `0xFFFFFFFF`). The zip format needs `0xFFFFFFFF`; lowering it is only
        /// useful to exercise the zip64 code paths on small archives (readers such as Python's
        /// `zipfile` still accept the result).
        public var zip64Threshold: UInt64

        /// Creates options; the defaults are PyTorch's layout.
        public init(alignment: Int = 64, zip64Threshold: UInt64 = 0xFFFF_FFFF) {
            self.alignment = alignment
            self.zip64Threshold = zip64Threshold
        }
    }

    private struct CentralRecord {
        var name: [UInt8]
        var crc: UInt32
        var size: UInt64
        var headerOffset: UInt64
        var flags: UInt16
    }

    private struct OpenEntry {
        var name: String
        var nameBytes: [UInt8]
        var size: UInt64
        var headerOffset: UInt64
        var written: UInt64 = 0
        var crc = CRC32()
        var zip64: Bool
        var flags: UInt16
    }

    /// The options this writer uses.
    public let options: Options
    /// The number of bytes written so far (the offset of the next byte in the archive).
    public private(set) var bytesWritten: UInt64 = 0
    /// Whether ``finish()`` has completed.
    public private(set) var isFinished = false

    private let sink: ZipOutputSink
    private var records: [CentralRecord] = []
    private var namesSeen: Set<String> = []
    private var current: OpenEntry?

    private init(sink: ZipOutputSink, options: Options) {
        precondition(options.alignment > 0 && options.alignment <= 4096 && options.alignment & (options.alignment - 1) == 0,
                     "ZipWriter: alignment must be a power of two between 1 and 4096, got \(options.alignment)")
        self.sink = sink
        self.options = options
    }

    /// A writer that builds the archive in memory; read it with ``archiveBytes`` after ``finish()``.
    public init(options: Options = Options()) {
        self.init(sink: ZipOutputSink(fd: -1, ownsFD: false, path: "<memory>"), options: options)
    }

    /// A writer that writes to an open file descriptor, which it does not close.
    /// - Parameters:
    ///   - fileDescriptor: an open, writable file descriptor.
    ///   - path: used only in error messages.
    ///   - options: data alignment and zip64 settings.
    public init(fileDescriptor: Int32, path: String = "<file descriptor>", options: Options = Options()) {
        self.init(sink: ZipOutputSink(fd: fileDescriptor, ownsFD: false, path: path), options: options)
    }

    /// A writer that writes to `fileHandle` (which it keeps alive but does not close).
    public init(fileHandle: FileHandle, options: Options = Options()) {
        self.init(sink: ZipOutputSink(fd: fileHandle.fileDescriptor, ownsFD: false, path: "<file handle>",
                                      keepAlive: fileHandle), options: options)
    }

    /// A writer that creates (or truncates) the file at `path` and closes it in ``finish()``.
    /// This is not atomic; see ``atomicWrite(to:options:_:)``.
    public init(path: String, options: Options = Options()) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        if fd < 0 { throw serIOError(path: path, operation: "open") }
        self.init(sink: ZipOutputSink(fd: fd, ownsFD: true, path: path), options: options)
    }

    /// The archive built so far by an in-memory writer (``init(options:)``); empty for writers
    /// that write to a file.
    public var archiveBytes: [UInt8] { sink.fd < 0 ? sink.pending : [] }

    private func fail(_ message: String) -> SerializationError {
        .invalidArgument("ZipWriter: \(message)")
    }

    /// Starts an entry of exactly `size` bytes, to be supplied by `write(_:)`
    /// calls and closed by ``endEntry()``. Knowing the size up front lets the writer emit the
    /// local header (with its zip64 field and alignment padding) before the data.
    /// - Throws: ``SerializationError/invalidArgument(_:)`` for an empty, too long or duplicate name,
    ///   a negative size, an entry still open, or a finished archive; an I/O error from the output.
    public mutating func beginEntry(name: String, size: Int) throws {
        guard !isFinished else { throw fail("cannot add '\(name)': the archive is finished") }
        if let open = current { throw fail("cannot begin '\(name)': entry '\(open.name)' is not ended") }
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty else { throw fail("entry name is empty") }
        guard nameBytes.count <= 0xFFFF else { throw fail("entry name is \(nameBytes.count) bytes long (max 65535)") }
        guard size >= 0 else { throw fail("entry '\(name)' has negative size \(size)") }
        guard !namesSeen.contains(name) else { throw fail("duplicate entry name '\(name)'") }

        let h = bytesWritten
        let usize = UInt64(size)
        let t = min(options.zip64Threshold, 0xFFFF_FFFF)
        let sizeBig = usize >= t
        let offsetBig = h >= t
        let zip64 = sizeBig || offsetBig
        let zip64DataLen = (sizeBig ? 16 : 0) + (offsetBig ? 8 : 0)
        let flags: UInt16 = size > 0 ? 0x0808 : 0x0800

        var start = h + 30 + UInt64(nameBytes.count) + 4
        if zip64 { start += 4 + UInt64(zip64DataLen) }
        let a = UInt64(options.alignment)
        let pad = Int((a - start % a) % a)
        let extraLen = (zip64 ? 4 + zip64DataLen : 0) + 4 + pad

        var b = LEBytes()
        b.bytes.reserveCapacity(30 + nameBytes.count + extraLen)
        b.u32(sigLocal)
        b.u16(0)       // version needed
        b.u16(flags)
        b.u16(0)       // method: STORED
        b.u16(0)       // DOS time
        b.u16(0)       // DOS date
        b.u32(0)       // crc (in the data descriptor)
        b.u32(0)       // compressed size
        b.u32(0)       // uncompressed size
        b.u16(UInt16(nameBytes.count))
        b.u16(UInt16(extraLen))
        b.append(nameBytes)
        if zip64 {
            b.u16(0x0001)
            b.u16(UInt16(zip64DataLen))
            if sizeBig { b.u64(usize); b.u64(usize) }
            if offsetBig { b.u64(h) }
        }
        b.u16(0x4246)  // "FB"
        b.u16(UInt16(pad))
        b.append(repeatElement(UInt8(ascii: "Z"), count: pad))
        try sink.write(b.bytes)
        bytesWritten += UInt64(b.bytes.count)
        namesSeen.insert(name)
        current = OpenEntry(name: name, nameBytes: nameBytes, size: usize, headerOffset: h, zip64: zip64, flags: flags)
    }

    /// Appends bytes to the open entry. Large chunks go straight to the file.
    /// - Throws: ``SerializationError/invalidArgument(_:)`` if no entry is open or the chunk
    ///   would exceed the size given to ``beginEntry(name:size:)``; an I/O error from the output.
    public mutating func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard var e = current else { throw fail("write(_:) called with no open entry") }
        guard UInt64(chunk.count) <= e.size - e.written else {
            throw fail("entry '\(e.name)' was declared as \(e.size) bytes; writing \(chunk.count) more after \(e.written) exceeds it")
        }
        guard chunk.count > 0 else { return }
        e.crc.update(chunk)
        try sink.write(chunk)
        e.written += UInt64(chunk.count)
        bytesWritten += UInt64(chunk.count)
        current = e
    }

    /// Appends bytes to the open entry.
    public mutating func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Ends the open entry: checks that exactly the declared number of bytes was written and
    /// writes the data descriptor (16 bytes, or 24 for an entry with a zip64 extra).
    public mutating func endEntry() throws {
        guard let e = current else { throw fail("endEntry() called with no open entry") }
        guard e.written == e.size else {
            throw fail("entry '\(e.name)' was declared as \(e.size) bytes but \(e.written) were written")
        }
        if e.size > 0 {
            var b = LEBytes()
            b.u32(sigDataDescriptor)
            b.u32(e.crc.value)
            if e.zip64 {
                b.u64(e.size)
                b.u64(e.size)
            } else {
                b.u32(UInt32(e.size))
                b.u32(UInt32(e.size))
            }
            try sink.write(b.bytes)
            bytesWritten += UInt64(b.bytes.count)
        }
        records.append(CentralRecord(name: e.nameBytes, crc: e.crc.value, size: e.size,
                                     headerOffset: e.headerOffset, flags: e.flags))
        current = nil
    }

    /// Adds a whole entry from raw memory (written straight through, not copied).
    public mutating func addEntry(name: String, bytes: UnsafeRawBufferPointer) throws {
        try beginEntry(name: name, size: bytes.count)
        try write(bytes)
        try endEntry()
    }

    /// Adds a whole entry from an array.
    public mutating func addEntry(name: String, bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try addEntry(name: name, bytes: $0) }
    }

    /// Adds a whole entry from `Data`.
    public mutating func addEntry(name: String, data: Data) throws {
        try data.withUnsafeBytes { try addEntry(name: name, bytes: $0) }
    }

    /// Writes the central directory, the zip64 end record and locator, and the end record; then
    /// flushes the output (and closes it if the writer opened it from a path).
    /// - Throws: ``SerializationError/invalidArgument(_:)`` if an entry is still open; I/O errors.
    public mutating func finish() throws {
        guard !isFinished else { return }
        if let open = current { throw fail("cannot finish: entry '\(open.name)' is not ended") }
        let t = min(options.zip64Threshold, 0xFFFF_FFFF)
        let cdOffset = bytesWritten
        var b = LEBytes()
        for r in records {
            let sizeBig = r.size >= t
            let offsetBig = r.headerOffset >= t
            let zip64Len = (sizeBig ? 16 : 0) + (offsetBig ? 8 : 0)
            let extraLen = zip64Len > 0 ? 4 + zip64Len : 0
            b.u32(sigCentral)
            b.u16(0)  // version made by
            b.u16(0)  // version needed
            b.u16(r.flags)
            b.u16(0)  // STORED
            b.u16(0)  // time
            b.u16(0)  // date
            b.u32(r.crc)
            b.u32(sizeBig ? 0xFFFF_FFFF : UInt32(r.size))
            b.u32(sizeBig ? 0xFFFF_FFFF : UInt32(r.size))
            b.u16(UInt16(r.name.count))
            b.u16(UInt16(extraLen))
            b.u16(0)  // comment length
            b.u16(0)  // disk number start
            b.u16(0)  // internal attributes
            b.u32(0)  // external attributes
            b.u32(offsetBig ? 0xFFFF_FFFF : UInt32(r.headerOffset))
            b.append(r.name)
            if zip64Len > 0 {
                b.u16(0x0001)
                b.u16(UInt16(zip64Len))
                if sizeBig { b.u64(r.size); b.u64(r.size) }
                if offsetBig { b.u64(r.headerOffset) }
            }
            if b.bytes.count >= ZipOutputSink.bufferLimit {
                try sink.write(b.bytes)
                bytesWritten += UInt64(b.bytes.count)
                b.bytes.removeAll(keepingCapacity: true)
            }
        }
        try sink.write(b.bytes)
        bytesWritten += UInt64(b.bytes.count)
        let cdSize = bytesWritten - cdOffset
        let n = UInt64(records.count)
        let zip64EOCDOffset = bytesWritten

        var e = LEBytes()
        e.u32(sigZip64EOCD)
        e.u64(44)
        e.u16(0x031E)
        e.u16(0x002D)
        e.u32(0)
        e.u32(0)
        e.u64(n)
        e.u64(n)
        e.u64(cdSize)
        e.u64(cdOffset)
        e.u32(sigZip64Locator)
        e.u32(0)
        e.u64(zip64EOCDOffset)
        e.u32(1)
        e.u32(sigEOCD)
        e.u16(0)
        e.u16(0)
        e.u16(UInt16(min(n, 0xFFFF)))
        e.u16(UInt16(min(n, 0xFFFF)))
        e.u32(cdSize >= t ? 0xFFFF_FFFF : UInt32(cdSize))
        e.u32(cdOffset >= t ? 0xFFFF_FFFF : UInt32(cdOffset))
        e.u16(0)
        try sink.write(e.bytes)
        bytesWritten += UInt64(e.bytes.count)
        try sink.close()
        isFinished = true
    }
}
