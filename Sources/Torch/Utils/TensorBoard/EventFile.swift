#if canImport(Glibc)
import Glibc
#endif

// TensorBoard's event files: TFRecord framing (u64 length, masked CRC-32C of the length, data,
// masked CRC-32C of the data) around serialized `Event` protos. docs/formats.md §3.1.

/// CRC-32C (Castagnoli, reflected 0x82F63B78), as TFRecord uses. `crc32c("123456789") == 0xE3069283`.
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = (c & 1) != 0 ? (0x82F6_3B78 ^ (c >> 1)) : (c >> 1) }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }

    /// TFRecord's masked form: rotate right by 15 and add a constant.
    static func masked(_ bytes: [UInt8]) -> UInt32 {
        let c = checksum(bytes)
        return ((c >> 15) | (c << 17)) &+ 0xA282_EAD8
    }
}

/// One TFRecord: the framing around `data`.
func tfRecord(_ data: [UInt8]) -> [UInt8] {
    let length = withUnsafeBytes(of: UInt64(data.count).littleEndian, Array.init)
    var out = length
    out += withUnsafeBytes(of: CRC32C.masked(length).littleEndian, Array.init)
    out += data
    out += withUnsafeBytes(of: CRC32C.masked(data).littleEndian, Array.init)
    return out
}

/// This machine's host name, as Python's `socket.gethostname()`.
func hostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    guard gethostname(&buf, buf.count - 1) == 0 else { return "localhost" }
    return String(cString: buf)
}

/// One `events.out.tfevents.<time>.<host>.<pid>.<n>` file. Every record goes to the kernel with
/// write(2) as it is added, so a killed process leaves every added record readable; `flush()`
/// (and, every `flushSecs`, the next add) also fsyncs it to disk.
final class EventFileWriter {
    nonisolated(unsafe) private static var nextUID = 0
    private static let lock = PosixLock()

    let path: String
    private var fd: Int32
    private let flushSecs: Double
    private var lastSync: Double

    init(logDir: String, flushSecs: Double, filenameSuffix: String = "") throws {
        do {
            try FileManager.default.createDirectory(atPath: logDir, withIntermediateDirectories: true)
        } catch {
            throw SerializationError.io(path: logDir, operation: "create directory", code: EIO, message: "\(errorDescription(error))")
        }
        let now = Date().timeIntervalSince1970
        let uid: Int = EventFileWriter.lock.withLock { defer { EventFileWriter.nextUID += 1 }; return EventFileWriter.nextUID }
        let name = "events.out.tfevents." + String(cFormat: "%010d", Int(now)) + ".\(hostName()).\(getpid()).\(uid)\(filenameSuffix)"
        path = PathString.join(logDir, name)
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw serIOError(path: path, operation: "open") }
        self.flushSecs = flushSecs
        lastSync = now
        var first = ProtoWriter()
        first.double(1, now)
        first.string(3, "brain.Event:2")
        try writeRecord(first.bytes)
    }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }

    /// True after `close()`.
    var isClosed: Bool { fd < 0 }

    /// Frames `event` (a serialized Event) and writes it.
    func writeRecord(_ event: [UInt8]) throws {
        precondition(fd >= 0, "SummaryWriter: internal error: writing to a closed event file")
        let record = tfRecord(event)
        try record.withUnsafeBytes { try serializationWriteAll(fd: fd, $0.baseAddress!, $0.count, path: path) }
        if Date().timeIntervalSince1970 - lastSync >= flushSecs { try flush() }
    }

    /// Forces the written records to disk.
    func flush() throws {
        guard fd >= 0 else { return }
        if fsync(fd) != 0 && errno != EINVAL { throw serIOError(path: path, operation: "fsync") }
        lastSync = Date().timeIntervalSince1970
    }

    func close() throws {
        guard fd >= 0 else { return }
        try flush()
        _ = Glibc.close(fd)
        fd = -1
    }
}
