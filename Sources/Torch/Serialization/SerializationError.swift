// Errors thrown by the byte-level serialization layer (zip, DEFLATE, pickle, safetensors, files).
//
// Everything that comes from outside the program (a checkpoint file, a buffer received over the
// network) is validated, and any problem is reported by throwing one of these cases. The message
// says what is wrong and where: the record (zip entry) name when known, and a byte offset.

/// An error raised while reading or writing serialized data: zip archives, DEFLATE streams,
/// pickle streams, safetensors headers, or the files that hold them.
///
/// Every case carries enough context (record name, byte offset, expected and actual values)
/// for ``description`` to say what is wrong and where.
public enum SerializationError: Error, CustomStringConvertible {
    /// An operating-system call on a file failed.
    /// - Parameters:
    ///   - path: the file involved.
    ///   - operation: the call that failed (`"open"`, `"write"`, `"rename"`, …).
    ///   - code: the `errno` value.
    ///   - message: the system's text for `code`.
    case io(path: String, operation: String, code: Int32, message: String)

    /// The input ended before a structure it declared.
    /// - Parameters:
    ///   - what: the structure being read (for example `"zip local header of archive/data.pkl"`).
    ///   - offset: the byte offset where the structure starts.
    ///   - needed: the number of bytes the structure needs.
    ///   - available: the number of bytes actually left at `offset`.
    case truncated(what: String, offset: Int, needed: Int, available: Int)

    /// A zip archive is malformed (bad signature, inconsistent sizes, out-of-bounds offsets, …).
    /// - Parameters:
    ///   - reason: what is wrong.
    ///   - record: the entry name, when the problem belongs to one entry.
    ///   - offset: the byte offset in the archive where the problem was found, when known.
    case corruptZip(reason: String, record: String?, offset: Int?)

    /// No entry with this name exists in the zip archive.
    case zipEntryNotFound(name: String)

    /// The zip archive uses a feature this reader does not implement
    /// (encryption, a compression method other than STORED or DEFLATE, multiple disks).
    case unsupportedZipFeature(feature: String, record: String?)

    /// The CRC-32 computed over an entry's bytes differs from the one declared in the archive.
    case checksumMismatch(record: String, expected: UInt32, actual: UInt32)

    /// A raw DEFLATE stream is invalid.
    /// - Parameters:
    ///   - reason: what is wrong (invalid block type, invalid code, distance too far back, …).
    ///   - offset: the byte offset in the compressed input where decoding stopped.
    case corruptDeflate(reason: String, offset: Int)

    /// Decoding would produce more than a caller-given bound allows.
    /// - Parameters:
    ///   - what: the quantity that is limited (for example `"inflated size"`).
    ///   - limit: the bound.
    ///   - record: the zip entry involved, when known.
    case limitExceeded(what: String, limit: Int, record: String?)

    /// A pickle stream is malformed (stack underflow, missing MARK, bad operand, invalid UTF-8, …).
    /// - Parameters:
    ///   - reason: what is wrong.
    ///   - offset: the byte offset of the opcode being executed.
    case corruptPickle(reason: String, offset: Int)

    /// The pickle stream uses an opcode this unpickler does not implement.
    case unsupportedPickleOpcode(opcode: UInt8, offset: Int)

    /// The pickle stream refers to a global (`module.name`) that is not in the allow-list,
    /// or whose module is always blocked (`os`, `sys`, `posix`, `nt`).
    case disallowedGlobal(module: String, name: String, offset: Int)

    /// A pickle stream exceeds one of the unpickler's hard limits
    /// (memo size, nesting depth, value count, …).
    case pickleLimitExceeded(what: String, limit: Int, offset: Int)

    /// A safetensors header is invalid.
    /// - Parameters:
    ///   - reason: what is wrong.
    ///   - tensor: the tensor entry involved, when the problem belongs to one.
    case invalidSafetensors(reason: String, tensor: String?)

    /// A gzip container (RFC 1952) is malformed: bad magic or flags, truncated header or trailer,
    /// or a trailer whose CRC-32 or length does not match the decompressed data.
    case corruptGzip(reason: String, offset: Int)

    /// A value handed to a writer cannot be encoded (duplicate zip entry name, a name that is too
    /// long, a size that does not match the bytes written, a string too long for the format, …).
    case invalidArgument(String)

    /// A checkpoint's contents do not describe valid tensors and values: a storage record smaller
    /// than its declared size, a tensor view outside its storage, a dtype SwiftTorch does not
    /// support, an object that is not plain data, a file in a format that is not a checkpoint.
    case invalidCheckpoint(reason: String)

    /// Another serialization error, with the context in which it happened
    /// (for example the zip record whose pickle stream is corrupt).
    indirect case context(String, underlying: SerializationError)

    /// A human-readable message saying what is wrong and where.
    public var description: String {
        switch self {
        case let .io(path, operation, code, message):
            return "\(operation) failed for '\(path)': \(message) (errno \(code))"
        case let .truncated(what, offset, needed, available):
            return "truncated data: \(what) at byte offset \(offset) needs \(needed) bytes but only \(max(0, available)) remain"
        case let .corruptZip(reason, record, offset):
            var s = "corrupt zip archive: \(reason)"
            if let record = record { s += " (record '\(record)')" }
            if let offset = offset { s += " at byte offset \(offset)" }
            return s
        case let .zipEntryNotFound(name):
            return "zip archive has no record named '\(name)'"
        case let .unsupportedZipFeature(feature, record):
            var s = "unsupported zip feature: \(feature)"
            if let record = record { s += " (record '\(record)')" }
            return s
        case let .checksumMismatch(record, expected, actual):
            return "CRC-32 mismatch in zip record '\(record)': archive declares 0x\(serHex32(expected)), data has 0x\(serHex32(actual))"
        case let .corruptDeflate(reason, offset):
            return "corrupt DEFLATE stream: \(reason) at compressed byte offset \(offset)"
        case let .limitExceeded(what, limit, record):
            var s = "\(what) exceeds the limit of \(limit) bytes"
            if let record = record { s += " (record '\(record)')" }
            return s
        case let .corruptPickle(reason, offset):
            return "corrupt pickle stream: \(reason) at byte offset \(offset)"
        case let .unsupportedPickleOpcode(opcode, offset):
            let printable = (0x21...0x7E).contains(opcode) ? " '\(Character(Unicode.Scalar(opcode)))'" : ""
            return "unsupported pickle opcode 0x\(serHex8(opcode))\(printable) at byte offset \(offset)"
        case let .disallowedGlobal(module, name, offset):
            return "pickle stream refers to the global '\(module).\(name)' (byte offset \(offset)), which is not in the allow-list of safe globals; refusing to load it"
        case let .pickleLimitExceeded(what, limit, offset):
            return "pickle stream exceeds the limit on \(what) (\(limit)) at byte offset \(offset)"
        case let .invalidSafetensors(reason, tensor):
            if let tensor = tensor { return "invalid safetensors header: tensor '\(tensor)': \(reason)" }
            return "invalid safetensors header: \(reason)"
        case let .corruptGzip(reason, offset):
            return "corrupt gzip data: \(reason) at byte offset \(offset)"
        case let .invalidArgument(message):
            return "invalid argument: \(message)"
        case let .invalidCheckpoint(reason):
            return "invalid checkpoint: \(reason)"
        case let .context(context, underlying):
            return "\(context): \(underlying.description)"
        }
    }

    /// Wraps `self` with a context string (for example `"reading record 'archive/data.pkl'"`).
    public func inContext(_ context: String) -> SerializationError {
        .context(context, underlying: self)
    }

    /// The innermost error, with every ``context(_:underlying:)`` wrapper removed.
    public var underlyingError: SerializationError {
        var e = self
        while case let .context(_, inner) = e { e = inner }
        return e
    }
}

@inline(__always)
func serHex32(_ v: UInt32) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 8 - s.count)) + s
}

@inline(__always)
func serHex8(_ v: UInt8) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count < 2 ? "0" + s : s
}

/// Builds an `.io` error from the current `errno`.
func serIOError(path: String, operation: String, code: Int32 = errno) -> SerializationError {
    let message: String
    if let cstr = strerror(code) { message = String(cString: cstr) } else { message = "unknown error" }
    return .io(path: path, operation: operation, code: code, message: message)
}
