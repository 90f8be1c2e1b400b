// The protocol-2 pickle writer (`Pickler`): emits only the opcodes PyTorch's weights-only
// unpickler implements, in the encodings Python's pickler chooses, so `torch.load` reads what
// `torch.save` here writes (docs/formats.md §1.3).

/// Writes ``PickleValue`` trees as protocol-2 pickle streams, using only the opcodes PyTorch's
/// weights-only unpickler implements and the encodings Python's pickler chooses (docs/formats.md §1.3):
///
/// - `PROTO 2` … `STOP`;
/// - ints as `BININT1` (< 256), `BININT2` (< 65536), `BININT` (32-bit), else `LONG1`/`LONG4`;
/// - floats as `BINFLOAT`, strings as `BINUNICODE`, `None`/`True`/`False` as `NONE`/`NEWTRUE`/`NEWFALSE`;
/// - tuples as `EMPTY_TUPLE`, `TUPLE1`–`TUPLE3` or `MARK … TUPLE`;
/// - lists as `EMPTY_LIST` + `APPEND`/`MARK … APPENDS`, dicts as `EMPTY_DICT` + `SETITEM`/`MARK … SETITEMS`
///   (batches of 1000, as Python does);
/// - ordered dicts as `collections.OrderedDict()` (`GLOBAL`, `EMPTY_TUPLE`, `REDUCE`) + `SETITEMS`;
/// - bytes as `_codecs.encode(latin1_text, "latin1")`, sets as `__builtin__.set([...])`;
/// - globals as `GLOBAL`, memoized: the first occurrence is followed by `BINPUT`, later ones are a
///   `BINGET` (`LONG_BINPUT`/`LONG_BINGET` past 256 globals);
/// - ``PickleValue/reduce(callable:args:)`` as `REDUCE`, ``PickleValue/newObject(cls:args:)`` as
///   `NEWOBJ`, ``PickleValue/build(object:state:)`` as `BUILD`, ``PickleValue/persistentID(_:)`` as
///   `BINPERSID`.
public struct Pickler {
    /// Creates a pickler.
    public init() {}

    /// Encodes `value` as a complete protocol-2 pickle stream.
    /// - Throws: ``SerializationError/invalidArgument(_:)`` for a string longer than 4 GiB or a
    ///   global whose module or name contains a newline.
    public func pickle(_ value: PickleValue) throws -> [UInt8] {
        var e = PickleEncoder()
        e.out.append(0x80)
        e.out.append(2)
        try e.write(value)
        e.out.append(0x2E)
        return e.out
    }

    /// Encodes `value` as a complete protocol-2 pickle stream (`pickle.dumps(value, protocol=2)`).
    public static func dumps(_ value: PickleValue) throws -> [UInt8] {
        try Pickler().pickle(value)
    }
}

private struct PickleEncoder {
    var out: [UInt8] = []
    var globalMemo: [String: Int] = [:]
    var nextMemo = 0

    mutating func u32(_ v: UInt32) { for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(k)))) } }

    mutating func string(_ s: String) throws {
        let n = s.utf8.count
        guard n <= Int(UInt32.max) else { throw SerializationError.invalidArgument("Pickler: string of \(n) bytes is too long for BINUNICODE") }
        out.append(0x58)
        u32(UInt32(n))
        out.append(contentsOf: s.utf8)
    }

    mutating func long(_ bytes: [UInt8]) {
        if bytes.count < 256 {
            out.append(0x8A)
            out.append(UInt8(bytes.count))
        } else {
            out.append(0x8B)
            u32(UInt32(bytes.count))
        }
        out.append(contentsOf: bytes)
    }

    mutating func int(_ v: Int64) {
        if v >= 0 && v < 256 {
            out.append(0x4B)
            out.append(UInt8(v))
        } else if v >= 0 && v < 65536 {
            out.append(0x4D)
            out.append(UInt8(v & 0xFF))
            out.append(UInt8(v >> 8))
        } else if v >= Int64(Int32.min) && v <= Int64(Int32.max) {
            out.append(0x4A)
            u32(UInt32(bitPattern: Int32(v)))
        } else {
            long(PickleBigInt.bytes(of: v))
        }
    }

    mutating func global(_ module: String, _ name: String) throws {
        let key = module + "\n" + name
        if let idx = globalMemo[key] {
            if idx < 256 {
                out.append(0x68)
                out.append(UInt8(idx))
            } else {
                out.append(0x6A)
                u32(UInt32(idx))
            }
            return
        }
        guard !module.contains("\n" as Character), !name.contains("\n" as Character), !module.isEmpty, !name.isEmpty else {
            throw SerializationError.invalidArgument("Pickler: invalid global '\(module).\(name)'")
        }
        // Protocol 2 uses Python 2 module names (as Python's pickler does with fix_imports).
        let written = module == "builtins" ? "__builtin__" : (module == "copyreg" ? "copy_reg" : module)
        out.append(0x63)
        out.append(contentsOf: written.utf8)
        out.append(0x0A)
        out.append(contentsOf: name.utf8)
        out.append(0x0A)
        let idx = nextMemo
        nextMemo += 1
        if idx < 256 {
            out.append(0x71)
            out.append(UInt8(idx))
        } else {
            out.append(0x72)
            u32(UInt32(idx))
        }
        globalMemo[key] = idx
    }

    mutating func appends(_ items: [PickleValue]) throws {
        if items.count == 1 {
            try write(items[0])
            out.append(0x61)
            return
        }
        var i = 0
        while i < items.count {
            let chunk = items[i..<min(i + 1000, items.count)]
            if chunk.count == 1 {
                try write(chunk[chunk.startIndex])
                out.append(0x61)
            } else {
                out.append(0x28)
                for v in chunk { try write(v) }
                out.append(0x65)
            }
            i += 1000
        }
    }

    mutating func setItems(_ entries: [(key: PickleValue, value: PickleValue)]) throws {
        var i = 0
        while i < entries.count {
            let chunk = entries[i..<min(i + 1000, entries.count)]
            if chunk.count == 1 {
                let e = chunk[chunk.startIndex]
                try write(e.key)
                try write(e.value)
                out.append(0x73)
            } else {
                out.append(0x28)
                for e in chunk {
                    try write(e.key)
                    try write(e.value)
                }
                out.append(0x75)
            }
            i += 1000
        }
    }

    mutating func write(_ v: PickleValue) throws {
        switch v {
        case .none: out.append(0x4E)
        case let .bool(b): out.append(b ? 0x88 : 0x89)
        case let .int(i): int(i)
        case let .bigInt(b):
            let normalized = PickleBigInt.value(fromTwosComplement: b)
            if case let .int(i) = normalized { int(i) } else { long(PickleBigInt.minimal(b)) }
        case let .float(d):
            out.append(0x47)
            let bits = d.bitPattern
            for k in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(k))) }
        case let .string(s): try string(s)
        case let .bytes(b):
            try global("_codecs", "encode")
            var s = String.UnicodeScalarView()
            for c in b { s.append(Unicode.Scalar(c)) }
            try string(String(s))
            try string("latin1")
            out.append(0x86)
            out.append(0x52)
        case let .tuple(a):
            switch a.count {
            case 0: out.append(0x29)
            case 1...3:
                for x in a { try write(x) }
                out.append(0x84 + UInt8(a.count))
            default:
                out.append(0x28)
                for x in a { try write(x) }
                out.append(0x74)
            }
        case let .list(a):
            out.append(0x5D)
            if !a.isEmpty { try appends(a) }
        case let .dict(e):
            out.append(0x7D)
            try setItems(e)
        case let .orderedDict(e):
            try global("collections", "OrderedDict")
            out.append(0x29)
            out.append(0x52)
            try setItems(e)
        case let .set(a), let .frozenSet(a):
            if case .set = v { try global("builtins", "set") } else { try global("builtins", "frozenset") }
            out.append(0x5D)
            if !a.isEmpty { try appends(a) }
            out.append(0x85)
            out.append(0x52)
        case let .global(m, n): try global(m, n)
        case let .reduce(c, a):
            try write(c)
            try write(a)
            out.append(0x52)
        case let .newObject(c, a):
            try write(c)
            try write(a)
            out.append(0x81)
        case let .build(o, s):
            try write(o)
            try write(s)
            out.append(0x62)
        case let .persistentID(pid):
            try write(pid)
            out.append(0x51)
        }
    }
}

