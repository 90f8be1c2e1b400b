// The zip writer: streams exactly PyTorch's `torch.save` layout (docs/formats.md §1.2): STORED
// entries, 64-byte-aligned data via an "FB" padding extra field, data descriptors, real CRC-32,
// and the zip64 end records always present.

// MARK: - Little-endian output

/// Appends little-endian integers to a byte array.
private struct LEBytes {
    var bytes: [UInt8] = []
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
    mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
    mutating func append<S: Sequence>(_ s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
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
/// (`PyTorchStreamWriter` driving miniz; docs/formats.md §1.2):
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
