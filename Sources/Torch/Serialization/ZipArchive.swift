// Zip archives (PyTorch checkpoints, docs/formats.md §1.2): what the reader (ZipReader.swift) and
// the writer (ZipWriter.swift) share: the record signatures and the owners of archive and entry
// bytes.

/// The signatures of the zip records (APPNOTE.TXT §4.3).
let sigLocal: UInt32 = 0x0403_4B50
let sigCentral: UInt32 = 0x0201_4B50
let sigEOCD: UInt32 = 0x0605_4B50
let sigZip64EOCD: UInt32 = 0x0606_4B50
let sigZip64Locator: UInt32 = 0x0706_4B50
let sigDataDescriptor: UInt32 = 0x0807_4B50

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
