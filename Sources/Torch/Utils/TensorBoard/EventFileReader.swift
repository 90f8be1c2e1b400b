extension utils.tensorboard {
    /// One logged scalar, as read back from an event file.
    public struct ScalarEvent: Sendable, Equatable {
        public let step: Int
        public let wallTime: Double
        public let value: Double
    }

    /// Reads TensorBoard event files (the TFRecord framing with both CRC-32Cs checked, and the
    /// `Event`/`Summary` messages): what `swifttorch plot` and the tests use instead of Python's
    /// `EventAccumulator`.
    ///
    /// ```swift
    /// let scalars = try utils.tensorboard.EventFileReader.scalars(logDir: "runs/exp1")
    /// for e in scalars["Loss/train"] ?? [] { print(e.step, e.value) }
    /// ```
    ///
    /// A record cut short at the end of a file (a writer killed mid-write) ends the file quietly,
    /// as TensorBoard does; a checksum mismatch anywhere is an error.
    public enum EventFileReader {
        /// The serialized `Event` messages of one file, in order.
        /// - Throws: ``SerializationError`` when the file cannot be read or a record is corrupt.
        public static func records(_ path: String) throws -> [[UInt8]] {
            let d: [UInt8]
            do {
                d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw SerializationError.io(path: path, operation: "read", code: ENOENT, message: errorDescription(error))
            }
            func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(d[at + $1]) << (8 * UInt32($1)) } }
            var i = 0, out: [[UInt8]] = []
            while i + 12 <= d.count {
                let lenBytes = Array(d[i..<(i + 8)])
                guard u32(i + 8) == CRC32C.masked(lenBytes) else {
                    throw SerializationError.invalidCheckpoint(reason: "event file '\(path)': the record length at byte \(i) fails its CRC-32C")
                }
                let n = lenBytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
                guard n <= UInt64(d.count - i - 12) && Int(n) + 16 <= d.count - i else { break }   // cut short: stop
                let data = Array(d[(i + 12)..<(i + 12 + Int(n))])
                guard u32(i + 12 + Int(n)) == CRC32C.masked(data) else {
                    throw SerializationError.invalidCheckpoint(reason: "event file '\(path)': the record at byte \(i) fails its CRC-32C")
                }
                out.append(data)
                i += 16 + Int(n)
            }
            return out
        }

        /// The scalars of one event file by tag (`add_scalar`'s `simple_value`s), in file order.
        public static func scalars(inFile path: String) throws -> [String: [ScalarEvent]] {
            var out: [String: [ScalarEvent]] = [:]
            for record in try records(path) {
                guard let event = try? ProtoReader.fields(record) else { continue }
                let wall = event.first { $0.field == 1 }.flatMap { $0.value.fixed64 }.map { Double(bitPattern: $0) } ?? 0
                let step = event.first { $0.field == 2 }.flatMap { $0.value.varint }.map { Int(Int64(bitPattern: $0)) } ?? 0
                guard let summary = event.first(where: { $0.field == 5 })?.value.bytes,
                      let values = try? ProtoReader.fields(summary) else { continue }
                for v in values where v.field == 1 {
                    guard let bytes = v.value.bytes, let fields = try? ProtoReader.fields(bytes),
                          let tagBytes = fields.first(where: { $0.field == 1 })?.value.bytes,
                          let raw = fields.first(where: { $0.field == 2 })?.value.fixed32 else { continue }
                    let tag = String(decoding: tagBytes, as: UTF8.self)
                    out[tag, default: []].append(ScalarEvent(step: step, wallTime: wall, value: Double(Float(bitPattern: raw))))
                }
            }
            return out
        }

        /// The event files under `logDir` (recursively), sorted by path.
        public static func eventFiles(logDir: String) -> [String] {
            guard let paths = try? FileManager.default.subpathsOfDirectory(atPath: logDir) else { return [] }
            return paths
                .filter { PathString.lastComponent($0).hasPrefix("events.out.tfevents.") }
                .sorted()
                .map { PathString.join(logDir, $0) }
        }

        /// The scalars of every event file under `logDir`, keyed by tag; a file in a sub-folder
        /// (`add_scalars`' writers, or one run of several) prefixes its tags with the folder,
        /// `"<subfolder>/<tag>"`. Events of one tag are sorted by step.
        /// - Throws: ``SerializationError`` when a file cannot be read or is corrupt.
        public static func scalars(logDir: String) throws -> [String: [ScalarEvent]] {
            var out: [String: [ScalarEvent]] = [:]
            for path in eventFiles(logDir: logDir) {
                let rel = String(path.dropFirst(logDir.count)).trimming(charactersIn: ["/"])
                let folder = PathString.deletingLastComponent(rel)
                for (tag, events) in try scalars(inFile: path) {
                    out[folder.isEmpty ? tag : folder + "/" + tag, default: []] += events
                }
            }
            for k in out.keys { out[k]!.sort { ($0.step, $0.wallTime) < ($1.step, $1.wallTime) } }
            return out
        }
    }
}

/// A protobuf wire-format field reader (enough for event files).
enum ProtoReader {
    enum Value {
        case varint(UInt64), fixed64(UInt64), fixed32(UInt32), bytes([UInt8])
        var varint: UInt64? { if case .varint(let v) = self { return v }; return nil }
        var fixed64: UInt64? { if case .fixed64(let v) = self { return v }; return nil }
        var fixed32: UInt32? { if case .fixed32(let v) = self { return v }; return nil }
        var bytes: [UInt8]? { if case .bytes(let v) = self { return v }; return nil }
    }

    struct Malformed: Error {}

    static func fields(_ b: [UInt8]) throws -> [(field: Int, value: Value)] {
        var i = 0, out: [(field: Int, value: Value)] = []
        func varint() throws -> UInt64 {
            var v: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard i < b.count, shift < 64 else { throw Malformed() }
                let c = b[i]
                i += 1
                v |= UInt64(c & 0x7F) << shift
                if c < 0x80 { return v }
                shift += 7
            }
        }
        func le(_ n: Int) throws -> UInt64 {
            guard i + n <= b.count else { throw Malformed() }
            defer { i += n }
            return (0..<n).reduce(UInt64(0)) { $0 | UInt64(b[i + $1]) << (8 * UInt64($1)) }
        }
        while i < b.count {
            let key = try varint()
            let field = Int(key >> 3)
            switch key & 7 {
            case 0: out.append((field, .varint(try varint())))
            case 1: out.append((field, .fixed64(try le(8))))
            case 5: out.append((field, .fixed32(UInt32(try le(4)))))
            case 2:
                let n = try varint()
                guard n <= UInt64(b.count - i) else { throw Malformed() }
                out.append((field, .bytes(Array(b[i..<(i + Int(n))]))))
                i += Int(n)
            default: throw Malformed()
            }
        }
        return out
    }
}
