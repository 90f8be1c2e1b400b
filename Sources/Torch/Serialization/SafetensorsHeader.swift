// The safetensors header: `u64 N` (little-endian) + N bytes of JSON + the data buffer.
// Parsing applies the rules of the reference Rust implementation (huggingface/safetensors,
// `SafeTensors::read_metadata` and `Metadata::validate`); building follows its writer
// (`prepare`): tensors ordered by descending dtype then name, compact JSON with `__metadata__`
// first, padded with spaces to a multiple of 8 bytes.

/// A parsed, validated safetensors header, or one being built for writing.
///
/// Dtypes are the format's names: `"BOOL"`, `"U8"`, `"I8"`, `"I16"`, `"U16"`, `"F16"`, `"BF16"`,
/// `"I32"`, `"U32"`, `"F32"`, `"F64"`, `"I64"`, `"U64"`, `"C64"`, and the sub-byte and 8-bit float
/// types `"F8_E5M2"`, `"F8_E4M3"`, `"F8_E8M0"`, `"F8_E4M3FNUZ"`, `"F8_E5M2FNUZ"`, `"F4"`,
/// `"F6_E2M3"`, `"F6_E3M2"`.
///
/// Reading:
/// ```swift
/// let header = try SafetensorsHeader.parse(fileBytes)          // whole file, or a prefix + fileSize:
/// for t in header.tensors {                                     // in data-offset order
///     let start = header.dataStart + t.dataOffsets.lowerBound   // absolute file offset
/// }
/// ```
/// Writing:
/// ```swift
/// let header = try SafetensorsHeader(layout: [("w", "F32", [2, 2]), ("step", "I64", [])],
///                                    metadata: ["format": "pt"])
/// var file = try header.encoded()            // then append each tensor's bytes in header.tensors order
/// ```
public struct SafetensorsHeader: Equatable, Sendable {
    /// One tensor entry of the header.
    public struct TensorInfo: Equatable, Sendable {
        /// The tensor's name (the JSON key).
        public var name: String
        /// The dtype name, for example `"F32"`.
        public var dtype: String
        /// The shape; `[]` is a scalar.
        public var shape: [Int]
        /// The byte range within the data buffer (which starts at ``SafetensorsHeader/dataStart``).
        public var dataOffsets: Range<Int>

        /// Creates an entry.
        public init(name: String, dtype: String, shape: [Int], dataOffsets: Range<Int>) {
            self.name = name
            self.dtype = dtype
            self.shape = shape
            self.dataOffsets = dataOffsets
        }

        /// The number of bytes of data.
        public var byteCount: Int { dataOffsets.count }

        /// The number of elements (the product of ``shape``; 1 for a scalar).
        public var elementCount: Int {
            var n = 1
            for d in shape {
                let (m, o) = n.multipliedReportingOverflow(by: d)
                if o { return Int.max }
                n = m
            }
            return n
        }
    }

    /// The largest header (JSON) size the reference implementation accepts: 100,000,000 bytes.
    public static let maxHeaderSize = 100_000_000

    /// Bits per element of every dtype the format defines.
    public static let dtypeBitSizes: [String: Int] = [
        "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
        "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
        "I32": 32, "U32": 32, "F32": 32,
        "F64": 64, "I64": 64, "U64": 64, "C64": 64,
        "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    ]

    /// The reference implementation's dtype order (its `Dtype` enum, "increasing alignment");
    /// the writer sorts tensors by descending position in this list, then by name.
    static let dtypeOrder: [String] = [
        "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
        "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64",
    ]

    /// Bits per element of `dtype`, or `nil` for an unknown name.
    public static func bitSize(of dtype: String) -> Int? { dtypeBitSizes[dtype] }

    /// The tensors, ordered by data offset (the order of their bytes in the file).
    public var tensors: [TensorInfo]
    /// The `__metadata__` string map, if the header has one.
    public var metadata: [String: String]?
    /// N: the length of the JSON header in bytes, padding included: the file's value for a parsed
    /// header, the length ``encoded()`` writes for a built one.
    public private(set) var headerSize: Int

    /// The file offset of the data buffer: `8 + headerSize`.
    public var dataStart: Int { 8 + headerSize }

    /// The size of the data buffer: the end of the last tensor.
    public var dataSize: Int { tensors.last?.dataOffsets.upperBound ?? 0 }

    /// The tensor called `name`, or `nil`.
    public func tensor(named name: String) -> TensorInfo? { tensors.first { $0.name == name } }

    // MARK: Building

    /// Lays out tensors the way the reference writer does: sorted by descending dtype (so every
    /// tensor is aligned to its element size), then by name (byte order), packed back to back.
    /// ``tensors`` then lists them in file order; write their bytes in that order after
    /// ``encoded()``.
    /// - Throws: ``SerializationError/invalidSafetensors(reason:tensor:)`` for an unknown dtype,
    ///   a negative dimension, a duplicate or reserved name, or a size that overflows.
    public init(layout entries: [(name: String, dtype: String, shape: [Int])], metadata: [String: String]? = nil) throws {
        let rank = Dictionary(uniqueKeysWithValues: SafetensorsHeader.dtypeOrder.enumerated().map { ($1, $0) })
        var seen = Set<String>()
        for e in entries {
            guard rank[e.dtype] != nil else { throw SerializationError.invalidSafetensors(reason: "unknown dtype '\(e.dtype)'", tensor: e.name) }
            guard e.name != "__metadata__" else { throw SerializationError.invalidSafetensors(reason: "the name __metadata__ is reserved", tensor: e.name) }
            guard seen.insert(e.name).inserted else { throw SerializationError.invalidSafetensors(reason: "duplicate tensor name", tensor: e.name) }
        }
        let sorted = entries.sorted { a, b in
            let ra = rank[a.dtype]!, rb = rank[b.dtype]!
            if ra != rb { return ra > rb }
            return Array(a.name.utf8).lexicographicallyPrecedes(Array(b.name.utf8))
        }
        var offset = 0
        var infos: [TensorInfo] = []
        infos.reserveCapacity(sorted.count)
        for e in sorted {
            let n = try SafetensorsHeader.byteCount(dtype: e.dtype, shape: e.shape, tensor: e.name)
            let (end, o) = offset.addingReportingOverflow(n)
            guard !o else { throw SerializationError.invalidSafetensors(reason: "total size overflows", tensor: e.name) }
            infos.append(TensorInfo(name: e.name, dtype: e.dtype, shape: e.shape, dataOffsets: offset..<end))
            offset = end
        }
        try self.init(tensors: infos, metadata: metadata)
    }

    /// A header with explicitly placed tensors. They are validated like a parsed header (known
    /// dtypes, sizes matching shapes, contiguous data starting at 0 once sorted by offset) and kept
    /// sorted by offset.
    public init(tensors: [TensorInfo], metadata: [String: String]? = nil) throws {
        self.tensors = try SafetensorsHeader.validate(tensors)
        self.metadata = metadata
        headerSize = 0
        headerSize = try jsonBytes().count
    }

    /// Bytes of `shape` elements of `dtype`, with the reference implementation's overflow and
    /// sub-byte checks.
    static func byteCount(dtype: String, shape: [Int], tensor: String) throws -> Int {
        guard let bits = dtypeBitSizes[dtype] else {
            throw SerializationError.invalidSafetensors(reason: "unknown dtype '\(dtype)'", tensor: tensor)
        }
        var n = 1
        for d in shape {
            guard d >= 0 else { throw SerializationError.invalidSafetensors(reason: "negative dimension \(d) in shape \(shape)", tensor: tensor) }
            let (m, o) = n.multipliedReportingOverflow(by: d)
            guard !o else { throw SerializationError.invalidSafetensors(reason: "element count of shape \(shape) overflows", tensor: tensor) }
            n = m
        }
        let (b, o) = n.multipliedReportingOverflow(by: bits)
        guard !o else { throw SerializationError.invalidSafetensors(reason: "byte size of shape \(shape) overflows", tensor: tensor) }
        guard b % 8 == 0 else {
            throw SerializationError.invalidSafetensors(reason: "\(n) elements of \(dtype) do not fill a whole number of bytes", tensor: tensor)
        }
        return b / 8
    }

    /// Sorts by `(begin, end)` and checks the tiling rules of `Metadata::validate`.
    static func validate(_ input: [TensorInfo]) throws -> [TensorInfo] {
        var seen = Set<String>()
        for t in input {
            guard t.name != "__metadata__" else { throw SerializationError.invalidSafetensors(reason: "the name __metadata__ is reserved", tensor: t.name) }
            guard seen.insert(t.name).inserted else { throw SerializationError.invalidSafetensors(reason: "duplicate tensor name", tensor: t.name) }
        }
        let sorted = input.enumerated().sorted { a, b in
            let x = a.element.dataOffsets, y = b.element.dataOffsets
            if x.lowerBound != y.lowerBound { return x.lowerBound < y.lowerBound }
            if x.upperBound != y.upperBound { return x.upperBound < y.upperBound }
            return a.offset < b.offset
        }.map { $0.element }
        var start = 0
        for t in sorted {
            guard t.dataOffsets.lowerBound == start else {
                let what = t.dataOffsets.lowerBound < start ? "overlaps the previous tensor" : "leaves a gap after the previous tensor"
                throw SerializationError.invalidSafetensors(
                    reason: "data_offsets [\(t.dataOffsets.lowerBound), \(t.dataOffsets.upperBound)] \(what) (expected begin \(start))",
                    tensor: t.name)
            }
            let n = try byteCount(dtype: t.dtype, shape: t.shape, tensor: t.name)
            guard t.dataOffsets.count == n else {
                throw SerializationError.invalidSafetensors(
                    reason: "data_offsets span \(t.dataOffsets.count) bytes but \(t.dtype) \(t.shape) needs \(n)", tensor: t.name)
            }
            start = t.dataOffsets.upperBound
        }
        return sorted
    }

    // MARK: Encoding

    private func jsonBytes() throws -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        if let md = metadata {
            out += Array("\"__metadata__\":{".utf8)
            var firstKey = true
            for k in md.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
                if !firstKey { out.append(UInt8(ascii: ",")) }
                firstKey = false
                SafetensorsHeader.appendJSONString(k, to: &out)
                out.append(UInt8(ascii: ":"))
                SafetensorsHeader.appendJSONString(md[k]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
            first = false
        }
        for t in tensors {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            SafetensorsHeader.appendJSONString(t.name, to: &out)
            out += Array(":{\"dtype\":".utf8)
            SafetensorsHeader.appendJSONString(t.dtype, to: &out)
            out += Array(",\"shape\":[".utf8)
            out += Array(t.shape.map(String.init).joined(separator: ",").utf8)
            out += Array("],\"data_offsets\":[\(t.dataOffsets.lowerBound),\(t.dataOffsets.upperBound)]}".utf8)
        }
        out.append(UInt8(ascii: "}"))
        let padded = (out.count + 7) / 8 * 8
        out += [UInt8](repeating: 0x20, count: padded - out.count)
        guard out.count <= SafetensorsHeader.maxHeaderSize else {
            throw SerializationError.invalidSafetensors(reason: "header of \(out.count) bytes exceeds the \(SafetensorsHeader.maxHeaderSize)-byte limit", tensor: nil)
        }
        return out
    }

    /// The header as written to a file: `u64 N` (little-endian), then N bytes of compact JSON
    /// (`__metadata__` first with sorted keys, then the tensors in ``tensors`` order) padded with
    /// spaces to a multiple of 8. The tensor data follows, in ``tensors`` order.
    public func encoded() throws -> [UInt8] {
        let json = try jsonBytes()
        var out: [UInt8] = []
        out.reserveCapacity(8 + json.count)
        var n = UInt64(json.count)
        for _ in 0..<8 { out.append(UInt8(n & 0xFF)); n >>= 8 }
        return out + json
    }

    /// JSON string escaping as `serde_json` does it.
    static func appendJSONString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x08: out += [0x5C, UInt8(ascii: "b")]
            case 0x0C: out += [0x5C, UInt8(ascii: "f")]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0x00..<0x20: out += Array("\\u00".utf8) + Array(serHex8(b).lowercased().utf8)
            default: out.append(b)
            }
        }
        out.append(0x22)
    }

    // MARK: Parsing

    /// Reads N from the first 8 bytes of a safetensors file and checks it against the limit, so a
    /// streaming reader knows how many header bytes to read next.
    /// - Throws: ``SerializationError/invalidSafetensors(reason:tensor:)`` if fewer than 8 bytes
    ///   are given or N exceeds ``maxHeaderSize``.
    public static func headerSize(fromPrefix prefix: UnsafeRawBufferPointer) throws -> Int {
        guard prefix.count >= 8, let base = prefix.baseAddress else {
            throw SerializationError.invalidSafetensors(reason: "file is \(prefix.count) bytes, too small for the 8-byte header length", tensor: nil)
        }
        let n = UInt64(littleEndian: base.loadUnaligned(as: UInt64.self))
        guard n <= UInt64(maxHeaderSize) else {
            throw SerializationError.invalidSafetensors(reason: "header length \(n) exceeds the \(maxHeaderSize)-byte limit", tensor: nil)
        }
        return Int(n)
    }

    /// Parses and validates a safetensors header.
    ///
    /// - Parameters:
    ///   - buffer: the start of the file: at least `8 + N` bytes (or the whole file).
    ///   - fileSize: the total file size, if `buffer` is only a prefix; defaults to `buffer.count`.
    /// - Throws: ``SerializationError/invalidSafetensors(reason:tensor:)`` when any rule of the
    ///   reference reader fails: N > 100,000,000 or past the end of the input; JSON not valid UTF-8
    ///   or not valid JSON (duplicate keys included); `__metadata__` not a string→string map; an
    ///   entry without `dtype`/`shape`/`data_offsets` or with an unknown dtype; tensors that, sorted
    ///   by offset, do not tile the data buffer from 0 without gaps or overlaps; a byte range that
    ///   does not match shape × dtype; `8 + N + end of data` different from the file size.
    public static func parse(_ buffer: UnsafeRawBufferPointer, fileSize: Int? = nil) throws -> SafetensorsHeader {
        let n = try headerSize(fromPrefix: buffer)
        guard buffer.count - 8 >= n else {
            throw SerializationError.invalidSafetensors(reason: "header length \(n) runs past the end of the \(buffer.count) available bytes", tensor: nil)
        }
        let json = UnsafeBufferPointer(start: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + 8, count: n)
        var parser = SafetensorsJSONParser(bytes: json)
        let root = try parser.parseDocument()
        guard case let .object(members) = root else {
            throw SerializationError.invalidSafetensors(reason: "header JSON is not an object", tensor: nil)
        }
        var metadata: [String: String]?
        var infos: [TensorInfo] = []
        infos.reserveCapacity(members.count)
        for (key, value) in members {
            if key == "__metadata__" {
                switch value {
                case .null: metadata = nil
                case let .object(m):
                    var md: [String: String] = [:]
                    for (k, v) in m {
                        guard case let .string(s) = v else {
                            throw SerializationError.invalidSafetensors(reason: "__metadata__ value for '\(k)' is not a string", tensor: nil)
                        }
                        md[k] = s
                    }
                    metadata = md
                default:
                    throw SerializationError.invalidSafetensors(reason: "__metadata__ is not an object of strings", tensor: nil)
                }
                continue
            }
            infos.append(try tensorInfo(name: key, value))
        }
        let validated = try validate(infos)
        let end = validated.last?.dataOffsets.upperBound ?? 0
        let total = fileSize ?? buffer.count
        guard total >= 8 + n, end == total - 8 - n else {
            throw SerializationError.invalidSafetensors(
                reason: "tensor data ends at \(end) but the file has \(total - 8 - n) bytes after the \(8 + n)-byte header (8 + N + data end must equal the file size)",
                tensor: nil)
        }
        var h = try SafetensorsHeader(tensors: validated, metadata: metadata)
        h.headerSize = n
        return h
    }

    /// Parses and validates a safetensors header held in an array (see `parse(_:fileSize:)`).
    public static func parse(_ bytes: [UInt8], fileSize: Int? = nil) throws -> SafetensorsHeader {
        try bytes.withUnsafeBytes { try parse($0, fileSize: fileSize) }
    }

    /// Parses and validates a safetensors header held in `Data` (see `parse(_:fileSize:)`).
    public static func parse(_ data: Data, fileSize: Int? = nil) throws -> SafetensorsHeader {
        try data.withUnsafeBytes { try parse($0, fileSize: fileSize) }
    }

    private static func tensorInfo(name: String, _ value: SafetensorsJSON) throws -> TensorInfo {
        func bad(_ reason: String) -> SerializationError { .invalidSafetensors(reason: reason, tensor: name) }
        guard case let .object(fields) = value else { throw bad("entry is not an object") }
        var dtype: String?
        var shape: [Int]?
        var offsets: [Int]?
        func uints(_ v: SafetensorsJSON, _ field: String) throws -> [Int] {
            guard case let .array(items) = v else { throw bad("\(field) is not an array") }
            return try items.map { item in
                guard case let .integer(i) = item else { throw bad("\(field) contains a value that is not a non-negative integer") }
                return i
            }
        }
        var seenFields = Set<String>()
        for (k, v) in fields {
            guard seenFields.insert(k).inserted else { throw bad("duplicate field '\(k)'") }
            switch k {
            case "dtype":
                guard case let .string(s) = v else { throw bad("dtype is not a string") }
                guard dtypeBitSizes[s] != nil else { throw bad("unknown dtype '\(s)'") }
                dtype = s
            case "shape":
                shape = try uints(v, "shape")
            case "data_offsets":
                let o = try uints(v, "data_offsets")
                guard o.count == 2 else { throw bad("data_offsets has \(o.count) values, expected 2") }
                offsets = o
            default:
                continue  // unknown fields are ignored, as by the reference reader
            }
        }
        guard let d = dtype else { throw bad("missing field 'dtype'") }
        guard let s = shape else { throw bad("missing field 'shape'") }
        guard let o = offsets else { throw bad("missing field 'data_offsets'") }
        guard o[0] <= o[1] else { throw bad("data_offsets [\(o[0]), \(o[1])] ends before it begins") }
        return TensorInfo(name: name, dtype: d, shape: s, dataOffsets: o[0]..<o[1])
    }
}

// MARK: - A small strict JSON parser (RFC 8259), keeping member order

private enum SafetensorsJSON {
    case object([(String, SafetensorsJSON)])
    case array([SafetensorsJSON])
    case string(String)
    /// A non-negative integer without fraction or exponent that fits in `Int`.
    case integer(Int)
    /// Any other number.
    case number
    case bool(Bool)
    case null
}

private struct SafetensorsJSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    static let maxDepth = 128

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ reason: String) -> SerializationError {
        .invalidSafetensors(reason: "header JSON: \(reason) at byte \(pos) of the header", tensor: nil)
    }

    mutating func parseDocument() throws -> SafetensorsJSON {
        // The whole header must be UTF-8.
        let s = String(decoding: bytes, as: UTF8.self)
        guard s.utf8.count == bytes.count, s.utf8.elementsEqual(bytes) else {
            throw SerializationError.invalidSafetensors(reason: "header is not valid UTF-8", tensor: nil)
        }
        skipWhitespace()
        let v = try value(depth: 0)
        skipWhitespace()
        guard pos == bytes.count else { throw fail("unexpected trailing characters") }
        return v
    }

    mutating func skipWhitespace() {
        while pos < bytes.count, bytes[pos] == 0x20 || bytes[pos] == 0x0A || bytes[pos] == 0x0D || bytes[pos] == 0x09 {
            pos += 1
        }
    }

    mutating func expect(_ literal: String) throws {
        for c in literal.utf8 {
            guard pos < bytes.count, bytes[pos] == c else { throw fail("invalid literal") }
            pos += 1
        }
    }

    mutating func value(depth: Int) throws -> SafetensorsJSON {
        guard depth < SafetensorsJSONParser.maxDepth else { throw fail("nesting deeper than \(SafetensorsJSONParser.maxDepth)") }
        guard pos < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[pos] {
        case UInt8(ascii: "{"):
            pos += 1
            var members: [(String, SafetensorsJSON)] = []
            var keys = Set<String>()
            skipWhitespace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard pos < bytes.count, bytes[pos] == 0x22 else { throw fail("expected a string key") }
                let key = try string()
                guard keys.insert(key).inserted else { throw fail("duplicate key '\(key)'") }
                skipWhitespace()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                pos += 1
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard pos < bytes.count else { throw fail("unterminated object") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            pos += 1
            var items: [SafetensorsJSON] = []
            skipWhitespace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard pos < bytes.count else { throw fail("unterminated array") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        case 0x22:
            return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw fail("unexpected character")
        }
    }

    mutating func number() throws -> SafetensorsJSON {
        let start = pos
        var negative = false
        if bytes[pos] == UInt8(ascii: "-") { negative = true; pos += 1 }
        func isDigit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= 0x30 && bytes[i] <= 0x39 }
        guard isDigit(pos) else { throw fail("invalid number") }
        if bytes[pos] == 0x30 {
            pos += 1
        } else {
            while isDigit(pos) { pos += 1 }
        }
        let intEnd = pos
        var isInteger = true
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard isDigit(pos) else { throw fail("invalid number") }
            while isDigit(pos) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard isDigit(pos) else { throw fail("invalid number") }
            while isDigit(pos) { pos += 1 }
        }
        guard isInteger, !negative else { return .number }
        var v = 0
        for i in start..<intEnd {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int(bytes[i] - 0x30))
            if o1 || o2 { return .number }
            v = a
        }
        return .integer(v)
    }

    mutating func hex4() throws -> UInt32 {
        guard bytes.count - pos >= 4 else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    mutating func string() throws -> String {
        pos += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard pos < bytes.count else { throw fail("unterminated string") }
            let c = bytes[pos]
            if c == 0x22 { pos += 1; break }
            if c < 0x20 { throw fail("control character in string") }
            if c != 0x5C { out.append(c); pos += 1; continue }
            pos += 1
            guard pos < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[pos]
            pos += 1
            switch e {
            case 0x22: out.append(0x22)
            case 0x5C: out.append(0x5C)
            case 0x2F: out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var v = try hex4()
                if (0xD800..<0xDC00).contains(v) {
                    guard bytes.count - pos >= 2, bytes[pos] == 0x5C, bytes[pos + 1] == UInt8(ascii: "u") else {
                        throw fail("lone leading surrogate in \\u escape")
                    }
                    pos += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("invalid surrogate pair in \\u escape") }
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(v) {
                    throw fail("lone trailing surrogate in \\u escape")
                }
                guard let scalar = Unicode.Scalar(v) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                throw fail("invalid escape")
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
