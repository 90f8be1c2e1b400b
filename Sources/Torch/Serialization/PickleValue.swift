// The value tree of Python pickle streams (`PickleValue`), shared by the restricted reader
// (`Unpickler`, Unpickler.swift) and the protocol-2 writer (`Pickler`, Pickler.swift), plus the
// two's-complement byte strings pickle's LONG opcodes use for big integers (docs/formats.md §1.3–1.5).

// MARK: - Value tree

/// A value decoded from (or to be encoded into) a Python pickle stream.
///
/// Plain data maps to plain cases (`None`, `bool`, `int`, `float`, `str`, `bytes`, tuples, lists,
/// dicts, sets). Everything that would run code in Python is kept as an *unevaluated* node the
/// caller interprets: ``global(module:name:)`` names a class or function,
/// ``reduce(callable:args:)`` is a call `callable(*args)`, ``newObject(cls:args:)`` is
/// `cls.__new__(cls, *args)`, ``build(object:state:)`` is `object.__setstate__(state)` and
/// ``persistentID(_:)`` is a reference to external data (a PyTorch storage).
///
/// A PyTorch state dict therefore reads as
/// ```
/// .build(object: .orderedDict([
///     ("fc.weight", .reduce(callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"),
///                           args: .tuple([.persistentID(.tuple(["storage",
///                                              .global(module: "torch", name: "FloatStorage"),
///                                              "0", "cpu", 6])),
///                                         0, .tuple([2, 3]), .tuple([3, 1]), false,
///                                         .orderedDict([])]))),
///     …]),
///        state: .dict([("_metadata", …)]))
/// ```
///
/// The ``Unpickler`` evaluates only a few pure-data constructors itself:
/// `collections.OrderedDict()` → ``orderedDict(_:)``, `builtins.set(...)` / `frozenset(...)` →
/// ``set(_:)`` / ``frozenSet(_:)``, and `_codecs.encode(s, "latin1")` / `builtins.bytearray(...)`
/// (how protocol 2 stores `bytes`) → ``bytes(_:)``.
///
/// Equality compares structurally; floats compare with `==` except that NaN equals NaN.
public enum PickleValue {
    /// Python `None`.
    case none
    /// Python `bool`.
    case bool(Bool)
    /// A Python `int` that fits in 64 bits.
    case int(Int64)
    /// A Python `int` outside the 64-bit range: its minimal little-endian two's-complement bytes
    /// (the LONG1/LONG4 payload).
    case bigInt([UInt8])
    /// Python `float`.
    case float(Double)
    /// Python `str`.
    case string(String)
    /// Python `bytes` (or `bytearray`).
    case bytes([UInt8])
    /// Python `tuple`.
    case tuple([PickleValue])
    /// Python `list`.
    case list([PickleValue])
    /// Python `dict`, entries in insertion order.
    case dict([(key: PickleValue, value: PickleValue)])
    /// `collections.OrderedDict`, entries in order.
    case orderedDict([(key: PickleValue, value: PickleValue)])
    /// Python `set`, in stream order.
    case set([PickleValue])
    /// Python `frozenset`, in stream order.
    case frozenSet([PickleValue])
    /// A reference to a module-level class or function, `module.name` (for example
    /// `torch._utils._rebuild_tensor_v2` or `torch.FloatStorage`). Only allow-listed globals are
    /// ever produced by the ``Unpickler``.
    case global(module: String, name: String)
    /// An unevaluated call `callable(*args)` (pickle REDUCE); `args` is normally a ``tuple(_:)``.
    indirect case reduce(callable: PickleValue, args: PickleValue)
    /// An unevaluated `cls.__new__(cls, *args)` (pickle NEWOBJ); `args` is normally a ``tuple(_:)``.
    indirect case newObject(cls: PickleValue, args: PickleValue)
    /// `object` followed by `object.__setstate__(state)` (pickle BUILD), unevaluated.
    indirect case build(object: PickleValue, state: PickleValue)
    /// A persistent reference (pickle BINPERSID / PERSID). In PyTorch files the id is the tuple
    /// `("storage", storage class, key, location, numel)`.
    indirect case persistentID(PickleValue)
}

extension PickleValue {
    /// Whether this is ``none``.
    public var isNone: Bool { if case .none = self { return true } else { return false } }

    /// The value of a ``bool(_:)``.
    public var boolValue: Bool? { if case let .bool(b) = self { return b } else { return nil } }

    /// The value of an ``int(_:)``.
    public var intValue: Int64? { if case let .int(i) = self { return i } else { return nil } }

    /// The value of a ``float(_:)``, or of an ``int(_:)`` converted to `Double`.
    public var doubleValue: Double? {
        switch self {
        case let .float(d): return d
        case let .int(i): return Double(i)
        default: return nil
        }
    }

    /// The value of a ``string(_:)``.
    public var stringValue: String? { if case let .string(s) = self { return s } else { return nil } }

    /// The value of a ``bytes(_:)``.
    public var bytesValue: [UInt8]? { if case let .bytes(b) = self { return b } else { return nil } }

    /// The elements of a ``tuple(_:)``, ``list(_:)``, ``set(_:)`` or ``frozenSet(_:)``.
    public var elements: [PickleValue]? {
        switch self {
        case let .tuple(a), let .list(a), let .set(a), let .frozenSet(a): return a
        default: return nil
        }
    }

    /// The entries of a ``dict(_:)`` or ``orderedDict(_:)``.
    public var dictEntries: [(key: PickleValue, value: PickleValue)]? {
        switch self {
        case let .dict(e), let .orderedDict(e): return e
        default: return nil
        }
    }

    /// `"module.name"` for a ``global(module:name:)``.
    public var globalName: String? {
        if case let .global(m, n) = self { return "\(m).\(n)" } else { return nil }
    }

    /// Whether this is the global `module.name`.
    public func isGlobal(_ module: String, _ name: String) -> Bool {
        if case let .global(m, n) = self { return m == module && n == name }
        return false
    }

    /// The value stored under the string key `key` in a ``dict(_:)`` or ``orderedDict(_:)``
    /// (the first match), or `nil`.
    public subscript(key: String) -> PickleValue? {
        guard let entries = dictEntries else { return nil }
        for e in entries { if case let .string(s) = e.key, s == key { return e.value } }
        return nil
    }
}

extension PickleValue: Equatable {
    /// Structural equality; floats compare with `==` except that NaN equals NaN.
    public static func == (lhs: PickleValue, rhs: PickleValue) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.bigInt(a), .bigInt(b)): return a == b
        case let (.float(a), .float(b)): return a == b || (a.isNaN && b.isNaN)
        case let (.string(a), .string(b)): return a == b
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.tuple(a), .tuple(b)), let (.list(a), .list(b)), let (.set(a), .set(b)),
             let (.frozenSet(a), .frozenSet(b)):
            return a == b
        case let (.dict(a), .dict(b)), let (.orderedDict(a), .orderedDict(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case let (.global(m1, n1), .global(m2, n2)): return m1 == m2 && n1 == n2
        case let (.reduce(c1, a1), .reduce(c2, a2)): return c1 == c2 && a1 == a2
        case let (.newObject(c1, a1), .newObject(c2, a2)): return c1 == c2 && a1 == a2
        case let (.build(o1, s1), .build(o2, s2)): return o1 == o2 && s1 == s2
        case let (.persistentID(a), .persistentID(b)): return a == b
        default: return false
        }
    }
}

extension PickleValue: CustomStringConvertible {
    /// A Python-like rendering (`{'a': (1, 2.5, None)}`, `torch._utils._rebuild_tensor_v2(...)`).
    public var description: String {
        switch self {
        case .none: return "None"
        case let .bool(b): return b ? "True" : "False"
        case let .int(i): return String(i)
        case let .bigInt(b): return PickleBigInt.decimalString(b)
        case let .float(d):
            if d.isNaN { return "nan" }
            if d.isInfinite { return d < 0 ? "-inf" : "inf" }
            return String(d)
        case let .string(s): return PickleValue.quote(s)
        case let .bytes(b):
            var s = "b'"
            for c in b {
                switch c {
                case 0x5C: s += "\\\\"
                case 0x27: s += "\\'"
                case 0x0A: s += "\\n"
                case 0x0D: s += "\\r"
                case 0x09: s += "\\t"
                case 0x20...0x7E: s.unicodeScalars.append(Unicode.Scalar(c))
                default: s += "\\x" + serHex8(c).lowercased()
                }
            }
            return s + "'"
        case let .tuple(a):
            if a.count == 1 { return "(\(a[0]),)" }
            return "(" + a.map { $0.description }.joined(separator: ", ") + ")"
        case let .list(a): return "[" + a.map { $0.description }.joined(separator: ", ") + "]"
        case let .dict(e): return "{" + e.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case let .orderedDict(e):
            return "OrderedDict([" + e.map { "(\($0.key), \($0.value))" }.joined(separator: ", ") + "])"
        case let .set(a): return a.isEmpty ? "set()" : "{" + a.map { $0.description }.joined(separator: ", ") + "}"
        case let .frozenSet(a): return "frozenset(" + PickleValue.set(a).description + ")"
        case let .global(m, n): return "\(m).\(n)"
        case let .reduce(c, args):
            if case let .tuple(a) = args { return "\(c)(" + a.map { $0.description }.joined(separator: ", ") + ")" }
            return "\(c)(*\(args))"
        case let .newObject(c, args): return "\(c).__new__(\(c), *\(args))"
        case let .build(o, s): return "build(\(o), state=\(s))"
        case let .persistentID(p): return "persistent_id(\(p))"
        }
    }

    private static func quote(_ s: String) -> String {
        var out = "'"
        for u in s.unicodeScalars {
            switch u {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    out += "\\x" + serHex8(UInt8(u.value)).lowercased()
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "'"
    }
}

extension PickleValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// An ``int(_:)``.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A ``float(_:)``.
    public init(floatLiteral value: Double) { self = .float(value) }
    /// A ``string(_:)``.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A ``bool(_:)``.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A ``list(_:)``.
    public init(arrayLiteral elements: PickleValue...) { self = .list(elements) }
    /// A ``dict(_:)`` with the entries in the order written.
    public init(dictionaryLiteral elements: (PickleValue, PickleValue)...) {
        self = .dict(elements.map { (key: $0.0, value: $0.1) })
    }
}

// MARK: - Big integers (two's complement byte strings)

enum PickleBigInt {
    /// Removes redundant sign-extension bytes.
    static func minimal(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        while b.count > 1 {
            let last = b[b.count - 1], prev = b[b.count - 2]
            if (last == 0x00 && prev & 0x80 == 0) || (last == 0xFF && prev & 0x80 != 0) {
                b.removeLast()
            } else {
                break
            }
        }
        return b
    }

    /// `.int` when the value fits in 64 bits, `.bigInt(minimal bytes)` otherwise.
    static func value(fromTwosComplement bytes: [UInt8]) -> PickleValue {
        if bytes.isEmpty { return .int(0) }
        let m = minimal(bytes)
        if m.count <= 8 {
            let negative = m[m.count - 1] & 0x80 != 0
            var u: UInt64 = negative ? UInt64.max : 0
            for (i, byte) in m.enumerated() {
                u &= ~(UInt64(0xFF) << UInt64(8 * i))
                u |= UInt64(byte) << UInt64(8 * i)
            }
            return .int(Int64(bitPattern: u))
        }
        return .bigInt(m)
    }

    /// Minimal two's-complement bytes of `v` (Python's `encode_long`; empty for 0).
    static func bytes(of v: Int64) -> [UInt8] {
        if v == 0 { return [] }
        var b = [UInt8]()
        var u = UInt64(bitPattern: v)
        for _ in 0..<8 { b.append(UInt8(truncatingIfNeeded: u)); u >>= 8 }
        return minimal(b)
    }

    /// Parses an optionally signed decimal integer of at most 4300 digits (CPython's default limit).
    static func parseDecimal(_ text: Substring) -> PickleValue? {
        // Fast path: plain ASCII digits with an optional sign that fit in Int64.
        if let v = Int64(text) { return .int(v) }
        var s = text.trimmingWhitespace()[...]
        var negative = false
        if s.first == "-" { negative = true; s = s.dropFirst() } else if s.first == "+" { s = s.dropFirst() }
        s = Substring(s.filter { $0 != "_" })
        guard !s.isEmpty, s.count <= 4300, s.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if let v = Int64(s) { return .int(negative ? -v : v) }
        // Magnitude in base 2^32 limbs, little-endian.
        var limbs: [UInt32] = [0]
        for ch in s.utf8 {
            var carry = UInt64(ch - 48)
            for i in 0..<limbs.count {
                let t = UInt64(limbs[i]) * 10 + carry
                limbs[i] = UInt32(truncatingIfNeeded: t)
                carry = t >> 32
            }
            if carry != 0 { limbs.append(UInt32(carry)) }
        }
        var bytes = [UInt8]()
        for l in limbs { for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: l >> (8 * UInt32(k)))) } }
        bytes.append(0)  // sign byte
        if negative { bytes = negate(bytes) }
        return value(fromTwosComplement: bytes)
    }

    static func negate(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes.map { ~$0 }
        var carry: UInt16 = 1
        for i in 0..<out.count {
            let t = UInt16(out[i]) + carry
            out[i] = UInt8(truncatingIfNeeded: t)
            carry = t >> 8
        }
        return out
    }

    /// Decimal text of a two's-complement byte string (hexadecimal beyond 1024 bytes, where the
    /// quadratic decimal conversion would get slow; Python itself refuses above 4300 digits).
    static func decimalString(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "0" }
        let negative = bytes[bytes.count - 1] & 0x80 != 0
        var mag = negative ? negate(bytes + [0xFF]) : bytes
        while mag.count > 1 && mag[mag.count - 1] == 0 { mag.removeLast() }
        if mag.count > 1024 {
            var hex = negative ? "-0x" : "0x"
            hex += String(mag[mag.count - 1], radix: 16)
            for b in mag.dropLast().reversed() { hex += serHex8(b).lowercased() }
            return hex
        }
        var limbs: [UInt32] = []
        var i = 0
        while i < mag.count {
            var l: UInt32 = 0
            for k in 0..<4 where i + k < mag.count { l |= UInt32(mag[i + k]) << (8 * UInt32(k)) }
            limbs.append(l)
            i += 4
        }
        var chunks: [UInt32] = []
        while limbs.contains(where: { $0 != 0 }) {
            var rem: UInt64 = 0
            for j in stride(from: limbs.count - 1, through: 0, by: -1) {
                let cur = (rem << 32) | UInt64(limbs[j])
                limbs[j] = UInt32(cur / 1_000_000_000)
                rem = cur % 1_000_000_000
            }
            chunks.append(UInt32(rem))
        }
        if chunks.isEmpty { return "0" }
        var s = negative ? "-" : ""
        s += String(chunks[chunks.count - 1])
        for c in chunks.dropLast().reversed() {
            let t = String(c)
            s += String(repeating: "0", count: 9 - t.count) + t
        }
        return s
    }
}
