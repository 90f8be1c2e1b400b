// Python pickle streams: a value tree (`PickleValue`), a restricted pickle VM (`Unpickler`) that
// never executes anything and only admits allow-listed globals, and a protocol-2 writer
// (`Pickler`) that emits the opcodes PyTorch's `torch.save` uses (docs/FORMATS.md §1.3–1.5).

import Foundation

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
        var s = text.trimmingCharacters(in: .whitespaces)[...]
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

// MARK: - Unpickler

/// A restricted pickle virtual machine for untrusted input, modelled on PyTorch's
/// `torch._weights_only_unpickler`.
///
/// - Nothing is executed: calls, object creation and `__setstate__` become
///   ``PickleValue/reduce(callable:args:)``, ``PickleValue/newObject(cls:args:)`` and
///   ``PickleValue/build(object:state:)`` nodes for the caller to interpret.
/// - Every `GLOBAL` / `STACK_GLOBAL` / `INST` must name an allow-listed `module.name`
///   (``allowedGlobals``, by default ``defaultAllowedGlobals``, the set `torch.load(weights_only=True)`
///   accepts); modules `os`, `sys`, `posix`, `nt` are refused even when listed. Anything else
///   throws ``SerializationError/disallowedGlobal(module:name:offset:)``.
/// - Opcodes: protocols 0–5 as listed in docs/FORMATS.md and the binary and text opcodes of
///   protocols 0–2 (GLOBAL, INST, OBJ, INT, LONG, FLOAT, STRING, UNICODE, PUT, GET, PERSID, DICT,
///   LIST, POP, POP_MARK, DUP), protocol 3 BINBYTES, protocol 4 framing/short strings/sets/
///   STACK_GLOBAL/MEMOIZE, protocol 5 BYTEARRAY8. Extension registry and out-of-band buffer
///   opcodes are refused.
/// - Hard limits (``Limits``): memo entries, objects created, size of the resulting tree,
///   nesting depth. Every operand length is checked against the remaining input. Self-referencing
///   structures are refused. No byte sequence can crash the process.
public struct Unpickler {
    /// Hard limits that bound memory and time on hostile input.
    public struct Limits: Sendable {
        /// Maximum number of memo entries.
        public var maxMemoEntries: Int
        /// Maximum number of objects the VM may create while executing the stream.
        public var maxObjects: Int
        /// Maximum number of values in the resulting tree, counting a shared sub-value once per
        /// reference (this bounds the work of walking the result).
        public var maxValueNodes: Int
        /// Maximum nesting depth of the resulting value.
        public var maxDepth: Int
        /// Maximum number of entries on the VM's value stack, and separately on its MARK stack.
        public var maxStackDepth: Int

        /// Creates limits. The defaults admit state dicts with hundreds of thousands of tensors.
        public init(maxMemoEntries: Int = 1 << 22, maxObjects: Int = 8_000_000,
                    maxValueNodes: Int = 32_000_000, maxDepth: Int = 512, maxStackDepth: Int = 1 << 22) {
            self.maxMemoEntries = maxMemoEntries
            self.maxObjects = maxObjects
            self.maxValueNodes = maxValueNodes
            self.maxDepth = maxDepth
            self.maxStackDepth = maxStackDepth
        }
    }

    /// How protocol-0/1/2 byte strings (`STRING`, `BINSTRING`, `SHORT_BINSTRING`, Python 2 `str`)
    /// are decoded.
    public enum LegacyStringDecoding: Sendable {
        /// Decode as UTF-8 into ``PickleValue/string(_:)`` (what `torch.load` does); invalid UTF-8 throws.
        case utf8
        /// Decode as Latin-1 into ``PickleValue/string(_:)`` (never fails).
        case latin1
        /// Keep the bytes as ``PickleValue/bytes(_:)``.
        case bytes
    }

    /// Modules that are refused even when one of their names is in ``allowedGlobals``
    /// (PyTorch's block list).
    public static let blockedModules: Set<String> = ["os", "sys", "posix", "nt"]

    /// The globals `torch.load(weights_only=True)` admits by default (PyTorch 2.x
    /// `_get_allowed_globals`): `collections.OrderedDict`/`Counter`, `torch._utils._rebuild_*`,
    /// `torch._tensor._rebuild_from_type_v2`, `torch.nn.parameter.Parameter`, the storage classes
    /// (`torch.FloatStorage`, …, `torch.UntypedStorage`), the legacy tensor classes, the dtypes
    /// (`torch.float32`, …), `torch.Size`, `torch.Tensor`, `torch.device`, the quantization schemes,
    /// `torch.serialization._get_layout`, `_codecs.encode`, `builtins.set`, `builtins.bytearray`,
    /// `builtins.complex`. (`builtins.frozenset` is not in PyTorch's list; add it if you need it.)
    public static let defaultAllowedGlobals: Set<String> = {
        var s: Set<String> = [
            "collections.OrderedDict", "collections.Counter",
            "torch.nn.parameter.Parameter", "torch.serialization._get_layout",
            "torch.Size", "torch.Tensor", "torch.device",
            "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
            "torch._tensor._rebuild_from_type_v2",
            "torch.UntypedStorage", "torch.storage.UntypedStorage", "torch.storage.TypedStorage",
        ]
        for f in ["_rebuild_parameter", "_rebuild_parameter_with_state", "_rebuild_qtensor", "_rebuild_tensor",
                  "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_sparse_tensor",
                  "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass",
                  "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor"] {
            s.insert("torch._utils.\(f)")
        }
        let legacy = ["Double", "Float", "Long", "Int", "Short", "Char", "Byte", "Half", "Bool", "BFloat16",
                      "ComplexDouble", "ComplexFloat"]
        for t in legacy + ["QUInt8", "QInt8", "QInt32", "QUInt4x2", "QUInt2x4"] { s.insert("torch.\(t)Storage") }
        for t in legacy {
            s.insert("torch.\(t)Tensor")
            s.insert("torch.cuda.\(t)Tensor")
        }
        var dtypes = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
                      "bool", "complex128", "complex64", "complex32", "qint8", "quint8", "qint32", "quint4x2",
                      "quint2x4", "uint16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn",
                      "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                      "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"]
        for i in 1...7 { dtypes.append("uint\(i)"); dtypes.append("int\(i)") }
        for d in dtypes { s.insert("torch.\(d)") }
        for q in ["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
                  "per_channel_affine_float_qparams"] {
            s.insert("torch.\(q)")
        }
        return s
    }()

    /// Python 2 module names mapped to their Python 3 names before the allow-list check
    /// (as `pickle` and PyTorch do for protocol ≤ 2 streams).
    static let importMapping: [String: String] = ["__builtin__": "builtins", "copy_reg": "copyreg"]

    /// The `module.name` strings that may appear in GLOBAL-like opcodes.
    public var allowedGlobals: Set<String>
    /// The hard limits.
    public var limits: Limits
    /// How legacy byte strings are decoded.
    public var legacyStringDecoding: LegacyStringDecoding

    /// Creates an unpickler.
    /// - Parameters:
    ///   - allowedGlobals: `"module.name"` strings admitted by GLOBAL-like opcodes.
    ///   - limits: hard limits for hostile input.
    ///   - legacyStringDecoding: how protocol-0/1/2 byte strings are decoded.
    public init(allowedGlobals: Set<String> = Unpickler.defaultAllowedGlobals, limits: Limits = Limits(),
                legacyStringDecoding: LegacyStringDecoding = .utf8) {
        self.allowedGlobals = allowedGlobals
        self.limits = limits
        self.legacyStringDecoding = legacyStringDecoding
    }

    /// Decodes the pickle at the start of `buffer` (bytes after its STOP opcode are ignored).
    public func load(_ buffer: UnsafeRawBufferPointer) throws -> PickleValue {
        try load(buffer, startingAt: 0).value
    }

    /// Decodes the pickle at the start of `bytes`.
    public func load(_ bytes: [UInt8]) throws -> PickleValue {
        try bytes.withUnsafeBytes { try load($0) }
    }

    /// Decodes the pickle at the start of `data`.
    public func load(_ data: Data) throws -> PickleValue {
        try data.withUnsafeBytes { try load($0) }
    }

    /// Decodes the pickle that starts at byte `offset` of `buffer`, and returns where it ends (the
    /// offset just after its STOP opcode) — for formats that store several pickles back to back,
    /// like PyTorch's legacy (pre-1.6) checkpoints.
    public func load(_ buffer: UnsafeRawBufferPointer, startingAt offset: Int) throws -> (value: PickleValue, endOffset: Int) {
        guard offset >= 0, offset <= buffer.count else {
            throw SerializationError.invalidArgument("Unpickler: start offset \(offset) is outside the \(buffer.count)-byte input")
        }
        guard let base = buffer.baseAddress, offset < buffer.count else {
            throw SerializationError.truncated(what: "pickle opcode", offset: offset, needed: 1, available: 0)
        }
        var vm = PickleMachine(p: base.assumingMemoryBound(to: UInt8.self), end: buffer.count, pos: offset, config: self)
        vm.nodes.reserveCapacity(min(buffer.count - offset, limits.maxObjects, 1 << 16))
        let root = try vm.run()
        var m = PickleMaterializer(vm: vm, limits: limits)
        let value = try m.materialize(root, depth: 0)
        return (value, vm.pos)
    }
}

/// The pickle VM. Objects live in a flat node array (no recursive teardown, cheap sharing); the
/// stack and memo hold node indices, so mutations (APPEND, SETITEM, BUILD) are seen through every
/// reference, as in Python.
private struct PickleMachine {
    enum Kind: UInt8 {
        case leaf, tuple, list, dict, orderedDict, set, frozenSet, reduce, newObject, build, persistentID
    }

    struct Node {
        var kind: Kind
        var leaf: PickleValue
        var items: [Int]
    }

    let p: UnsafePointer<UInt8>
    let end: Int
    var pos: Int
    let config: Unpickler
    var nodes: [Node] = []
    var stack: [Int] = []
    var marks: [Int] = []
    var memo: [Int: Int] = [:]
    var opStart = 0
    var opName = ""

    init(p: UnsafePointer<UInt8>, end: Int, pos: Int, config: Unpickler) {
        self.p = p
        self.end = end
        self.pos = pos
        self.config = config
    }

    // MARK: errors

    func corrupt(_ reason: String) -> SerializationError {
        .corruptPickle(reason: reason, offset: opStart)
    }

    // MARK: input

    @inline(__always)
    func need(_ n: Int, _ what: @autoclosure () -> String) throws {
        guard n >= 0, end - pos >= n else {
            throw SerializationError.truncated(what: "pickle \(what())", offset: pos, needed: max(n, 0), available: end - pos)
        }
    }

    mutating func byte() throws -> UInt8 {
        try need(1, "\(opName) operand")
        defer { pos += 1 }
        return p[pos]
    }

    mutating func u16() throws -> Int {
        try need(2, "\(opName) operand")
        defer { pos += 2 }
        return Int(p[pos]) | Int(p[pos + 1]) << 8
    }

    mutating func u32() throws -> UInt32 {
        try need(4, "\(opName) operand")
        defer { pos += 4 }
        return UInt32(littleEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt32.self))
    }

    mutating func u64() throws -> UInt64 {
        try need(8, "\(opName) operand")
        defer { pos += 8 }
        return UInt64(littleEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt64.self))
    }

    /// A length operand, checked against the remaining input.
    mutating func length(_ n: UInt64) throws -> Int {
        guard n <= UInt64(end - pos) else {
            throw SerializationError.truncated(what: "pickle \(opName) payload", offset: pos,
                                               needed: n > UInt64(Int.max) ? Int.max : Int(n), available: end - pos)
        }
        return Int(n)
    }

    mutating func take(_ n: Int) -> UnsafeBufferPointer<UInt8> {
        defer { pos += n }
        return UnsafeBufferPointer(start: p + pos, count: n)
    }

    /// A text operand: the bytes up to (not including) the next newline, which is consumed.
    mutating func line() throws -> UnsafeBufferPointer<UInt8> {
        var i = pos
        while i < end && p[i] != 0x0A { i += 1 }
        guard i < end else {
            throw SerializationError.truncated(what: "pickle \(opName) line (no newline)", offset: pos,
                                               needed: i - pos + 1, available: end - pos)
        }
        let r = UnsafeBufferPointer(start: p + pos, count: i - pos)
        pos = i + 1
        return r
    }

    func utf8(_ b: UnsafeBufferPointer<UInt8>) throws -> String {
        let s = String(decoding: b, as: UTF8.self)
        guard s.utf8.count == b.count, s.utf8.elementsEqual(b) else {
            throw corrupt("\(opName) operand is not valid UTF-8")
        }
        return s
    }

    func latin1(_ b: UnsafeBufferPointer<UInt8>) -> String {
        var s = String.UnicodeScalarView()
        for c in b { s.append(Unicode.Scalar(c)) }
        return String(s)
    }

    func text(_ b: UnsafeBufferPointer<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

    // MARK: nodes and stack

    mutating func newNode(_ kind: Kind, _ leaf: PickleValue = .none, _ items: [Int] = []) throws -> Int {
        guard nodes.count < config.limits.maxObjects else {
            throw SerializationError.pickleLimitExceeded(what: "objects created", limit: config.limits.maxObjects, offset: opStart)
        }
        nodes.append(Node(kind: kind, leaf: leaf, items: items))
        return nodes.count - 1
    }

    mutating func push(_ node: Int) throws {
        guard stack.count < config.limits.maxStackDepth else {
            throw SerializationError.pickleLimitExceeded(what: "stack depth", limit: config.limits.maxStackDepth, offset: opStart)
        }
        stack.append(node)
    }

    mutating func pushLeaf(_ v: PickleValue) throws { try push(try newNode(.leaf, v)) }

    var markBase: Int { marks.last ?? 0 }

    mutating func pop() throws -> Int {
        guard stack.count > markBase else { throw corrupt("\(opName) on an empty stack (stack underflow)") }
        return stack.removeLast()
    }

    func top() throws -> Int {
        guard stack.count > markBase else { throw corrupt("\(opName) on an empty stack (stack underflow)") }
        return stack[stack.count - 1]
    }

    mutating func popMark() throws -> [Int] {
        guard let m = marks.popLast() else { throw corrupt("\(opName) without a preceding MARK") }
        let items = Array(stack[m...])
        stack.removeSubrange(m...)
        return items
    }

    /// Follows BUILD wrappers to the object being built (so APPEND/SETITEM after BUILD still work).
    func target(_ i: Int) -> Int {
        var j = i
        while nodes[j].kind == .build { j = nodes[j].items[0] }
        return j
    }

    func kindName(_ i: Int) -> String {
        let n = nodes[i]
        switch n.kind {
        case .leaf:
            switch n.leaf {
            case .none: return "None"
            case .bool: return "bool"
            case .int, .bigInt: return "int"
            case .float: return "float"
            case .string: return "str"
            case .bytes: return "bytes"
            case let .global(m, nm): return "\(m).\(nm)"
            default: return "value"
            }
        case .tuple: return "tuple"
        case .list: return "list"
        case .dict: return "dict"
        case .orderedDict: return "OrderedDict"
        case .set: return "set"
        case .frozenSet: return "frozenset"
        case .reduce: return "call result"
        case .newObject: return "object"
        case .build: return "built object"
        case .persistentID: return "persistent object"
        }
    }

    mutating func memoPut(_ index: Int, _ node: Int) throws {
        if memo[index] == nil && memo.count >= config.limits.maxMemoEntries {
            throw SerializationError.pickleLimitExceeded(what: "memo entries", limit: config.limits.maxMemoEntries, offset: opStart)
        }
        memo[index] = node
    }

    mutating func memoGet(_ index: Int) throws -> Int {
        guard let n = memo[index] else { throw corrupt("memo key \(index) was never stored (\(opName))") }
        return n
    }

    mutating func global(_ module: String, _ name: String) throws -> PickleValue {
        let m = Unpickler.importMapping[module] ?? module
        let root = m.split(separator: ".", maxSplits: 1).first.map(String.init) ?? m
        if Unpickler.blockedModules.contains(m) || Unpickler.blockedModules.contains(root)
            || !config.allowedGlobals.contains("\(m).\(name)") {
            throw SerializationError.disallowedGlobal(module: m, name: name, offset: opStart)
        }
        return .global(module: m, name: name)
    }

    func requireGlobal(_ i: Int, _ role: String) throws {
        guard nodes[i].kind == .leaf, case .global = nodes[i].leaf else {
            throw corrupt("\(opName) \(role) must be an allow-listed global, got \(kindName(i))")
        }
    }

    func requireTuple(_ i: Int, _ role: String) throws {
        guard nodes[i].kind == .tuple else { throw corrupt("\(opName) \(role) must be a tuple, got \(kindName(i))") }
    }

    /// REDUCE / INST / OBJ: `collections.OrderedDict()` and `OrderedDict(pairs)` become an ordered
    /// dict right away (later SETITEMs fill it); every other call stays an unevaluated node.
    mutating func call(_ callable: Int, _ args: Int) throws -> Int {
        if case let .global(m, n) = nodes[callable].leaf, m == "collections", n == "OrderedDict" {
            let a = nodes[args].items
            if a.isEmpty { return try newNode(.orderedDict) }
            if a.count == 1, nodes[a[0]].kind == .list || nodes[a[0]].kind == .tuple {
                var flat: [Int] = []
                var ok = true
                for pair in nodes[a[0]].items {
                    let pn = nodes[pair]
                    guard pn.kind == .tuple || pn.kind == .list, pn.items.count == 2 else { ok = false; break }
                    flat.append(contentsOf: pn.items)
                }
                if ok { return try newNode(.orderedDict, .none, flat) }
            }
        }
        return try newNode(.reduce, .none, [callable, args])
    }

    mutating func decodeLegacyString(_ b: UnsafeBufferPointer<UInt8>) throws -> PickleValue {
        switch config.legacyStringDecoding {
        case .utf8: return .string(try utf8(b))
        case .latin1: return .string(latin1(b))
        case .bytes: return .bytes(Array(b))
        }
    }

    // MARK: text-operand parsers

    /// Python's `codecs.escape_decode` on the inside of a quoted STRING operand.
    func escapeDecode(_ b: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        func hexVal(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        while i < b.count {
            let c = b[i]
            if c != 0x5C { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { throw corrupt("STRING operand ends with a lone backslash") }
            let e = b[i]
            i += 1
            switch e {
            case 0x5C: out.append(0x5C)
            case 0x27: out.append(0x27)
            case 0x22: out.append(0x22)
            case 0x61: out.append(0x07)  // \a
            case 0x62: out.append(0x08)  // \b
            case 0x66: out.append(0x0C)  // \f
            case 0x6E: out.append(0x0A)  // \n
            case 0x72: out.append(0x0D)  // \r
            case 0x74: out.append(0x09)  // \t
            case 0x76: out.append(0x0B)  // \v
            case 0x30...0x37:
                var v = Int(e - 0x30)
                var k = 0
                while k < 2, i < b.count, (0x30...0x37).contains(b[i]) { v = v * 8 + Int(b[i] - 0x30); i += 1; k += 1 }
                out.append(UInt8(truncatingIfNeeded: v))
            case 0x78:
                guard i + 1 < b.count, let h = hexVal(b[i]), let l = hexVal(b[i + 1]) else {
                    throw corrupt("invalid \\x escape in STRING operand")
                }
                out.append(h << 4 | l)
                i += 2
            default:
                out.append(0x5C)
                out.append(e)
            }
        }
        return out
    }

    /// Python's `raw-unicode-escape` codec (the UNICODE operand).
    func rawUnicodeEscape(_ b: UnsafeBufferPointer<UInt8>) throws -> String {
        var out = String.UnicodeScalarView()
        var i = 0
        while i < b.count {
            let c = b[i]
            if c != 0x5C { out.append(Unicode.Scalar(c)); i += 1; continue }
            // A run of backslashes; \u / \U is an escape only after an odd number of them.
            var j = i
            while j < b.count && b[j] == 0x5C { j += 1 }
            let run = j - i
            let isEscape = run % 2 == 1 && j < b.count && (b[j] == 0x75 || b[j] == 0x55)
            let literal = isEscape ? run - 1 : run
            for _ in 0..<literal { out.append("\\") }
            i = j
            guard isEscape else { continue }
            let digits = b[i] == 0x75 ? 4 : 8
            i += 1
            guard b.count - i >= digits else { throw corrupt("truncated \\u escape in UNICODE operand") }
            var v: UInt32 = 0
            for k in 0..<digits {
                let h = b[i + k]
                let d: UInt32
                switch h {
                case 0x30...0x39: d = UInt32(h - 0x30)
                case 0x61...0x66: d = UInt32(h - 0x61 + 10)
                case 0x41...0x46: d = UInt32(h - 0x41 + 10)
                default: throw corrupt("invalid hex digit in \\u escape of UNICODE operand")
                }
                v = v << 4 | d
            }
            i += digits
            guard let scalar = Unicode.Scalar(v) else {
                throw corrupt("\\u escape U+\(String(v, radix: 16, uppercase: true)) is not a valid Unicode scalar (surrogates are not supported)")
            }
            out.append(scalar)
        }
        return String(out)
    }

    func parseIndex(_ b: UnsafeBufferPointer<UInt8>) throws -> Int {
        if !b.isEmpty, b.count <= 18, b.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return b.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard let v = Int(text(b).trimmingCharacters(in: .whitespaces)), v >= 0 else {
            throw corrupt("\(opName) operand '\(text(b).prefix(40))' is not a non-negative integer")
        }
        return v
    }

    // MARK: main loop

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    mutating func run() throws -> Int {
        while true {
            opStart = pos
            guard pos < end else {
                throw SerializationError.truncated(what: "pickle opcode (stream ends without STOP)", offset: pos, needed: 1, available: 0)
            }
            let op = p[pos]
            pos += 1
            switch op {
            case 0x28:  // ( MARK
                opName = "MARK"
                guard marks.count < config.limits.maxStackDepth else {
                    throw SerializationError.pickleLimitExceeded(what: "MARK stack depth", limit: config.limits.maxStackDepth, offset: opStart)
                }
                marks.append(stack.count)
            case 0x2E:  // . STOP
                opName = "STOP"
                return try pop()
            case 0x30:  // 0 POP
                opName = "POP"
                if stack.count > markBase { stack.removeLast() } else { _ = try popMark() }
            case 0x31:  // 1 POP_MARK
                opName = "POP_MARK"
                _ = try popMark()
            case 0x32:  // 2 DUP
                opName = "DUP"
                try push(try top())
            case 0x46:  // F FLOAT
                opName = "FLOAT"
                let t = text(try line()).trimmingCharacters(in: .whitespaces)
                guard let d = Double(t) else { throw corrupt("FLOAT operand '\(t.prefix(40))' is not a number") }
                try pushLeaf(.float(d))
            case 0x49:  // I INT
                opName = "INT"
                let b = try line()
                let t = text(b)
                if t == "00" { try pushLeaf(.bool(false)) } else if t == "01" { try pushLeaf(.bool(true)) } else {
                    guard let v = PickleBigInt.parseDecimal(t[...]) else { throw corrupt("INT operand '\(t.prefix(40))' is not an integer") }
                    try pushLeaf(v)
                }
            case 0x4A:  // J BININT
                opName = "BININT"
                try pushLeaf(.int(Int64(Int32(bitPattern: try u32()))))
            case 0x4B:  // K BININT1
                opName = "BININT1"
                try pushLeaf(.int(Int64(try byte())))
            case 0x4C:  // L LONG
                opName = "LONG"
                var t = text(try line())
                if t.hasSuffix("L") { t.removeLast() }
                guard let v = PickleBigInt.parseDecimal(t[...]) else { throw corrupt("LONG operand '\(t.prefix(40))' is not an integer") }
                try pushLeaf(v)
            case 0x4D:  // M BININT2
                opName = "BININT2"
                try pushLeaf(.int(Int64(try u16())))
            case 0x4E:  // N NONE
                opName = "NONE"
                try pushLeaf(.none)
            case 0x50:  // P PERSID
                opName = "PERSID"
                let b = try line()
                guard b.allSatisfy({ $0 < 0x80 }) else { throw corrupt("PERSID operand is not ASCII") }
                let pid = try newNode(.leaf, .string(text(b)))
                try push(try newNode(.persistentID, .none, [pid]))
            case 0x51:  // Q BINPERSID
                opName = "BINPERSID"
                let pid = try pop()
                try push(try newNode(.persistentID, .none, [pid]))
            case 0x52:  // R REDUCE
                opName = "REDUCE"
                let args = try pop()
                let callable = try top()
                try requireGlobal(callable, "callable")
                try requireTuple(args, "arguments")
                stack[stack.count - 1] = try call(callable, args)
            case 0x53:  // S STRING
                opName = "STRING"
                let b = try line()
                guard b.count >= 2, b[0] == b[b.count - 1], b[0] == 0x22 || b[0] == 0x27 else {
                    throw corrupt("the STRING opcode argument must be quoted")
                }
                let inner = UnsafeBufferPointer(rebasing: b[1..<(b.count - 1)])
                let raw = try escapeDecode(inner)
                try raw.withUnsafeBufferPointer { try pushLeaf(try decodeLegacyString($0)) }
            case 0x54:  // T BINSTRING
                opName = "BINSTRING"
                let n = Int32(bitPattern: try u32())
                guard n >= 0 else { throw corrupt("BINSTRING has negative length \(n)") }
                let len = try length(UInt64(n))
                try pushLeaf(try decodeLegacyString(take(len)))
            case 0x55:  // U SHORT_BINSTRING
                opName = "SHORT_BINSTRING"
                let len = try length(UInt64(try byte()))
                try pushLeaf(try decodeLegacyString(take(len)))
            case 0x56:  // V UNICODE
                opName = "UNICODE"
                try pushLeaf(.string(try rawUnicodeEscape(try line())))
            case 0x58:  // X BINUNICODE
                opName = "BINUNICODE"
                let len = try length(UInt64(try u32()))
                try pushLeaf(.string(try utf8(take(len))))
            case 0x61:  // a APPEND
                opName = "APPEND"
                let v = try pop()
                let t = target(try top())
                guard nodes[t].kind == .list else { throw corrupt("APPEND target must be a list, got \(kindName(t))") }
                nodes[t].items.append(v)
            case 0x62:  // b BUILD
                opName = "BUILD"
                let state = try pop()
                let inst = try top()
                // Build in place so every reference (memo, containers) sees the built object.
                let moved = nodes[inst]
                let inner = try newNode(moved.kind, moved.leaf, moved.items)
                nodes[inst] = Node(kind: .build, leaf: .none, items: [inner, state])
            case 0x63:  // c GLOBAL
                opName = "GLOBAL"
                let module = try utf8(try line())
                let name = try utf8(try line())
                try pushLeaf(try global(module, name))
            case 0x64:  // d DICT
                opName = "DICT"
                let items = try popMark()
                guard items.count % 2 == 0 else { throw corrupt("DICT has an odd number of items (\(items.count))") }
                try push(try newNode(.dict, .none, items))
            case 0x7D:  // } EMPTY_DICT
                opName = "EMPTY_DICT"
                try push(try newNode(.dict))
            case 0x65:  // e APPENDS
                opName = "APPENDS"
                let items = try popMark()
                let t = target(try top())
                guard nodes[t].kind == .list else { throw corrupt("APPENDS target must be a list, got \(kindName(t))") }
                nodes[t].items.append(contentsOf: items)
            case 0x67:  // g GET
                opName = "GET"
                try push(try memoGet(try parseIndex(try line())))
            case 0x68:  // h BINGET
                opName = "BINGET"
                try push(try memoGet(Int(try byte())))
            case 0x69:  // i INST
                opName = "INST"
                let module = try utf8(try line())
                let name = try utf8(try line())
                let cls = try newNode(.leaf, try global(module, name))
                let args = try newNode(.tuple, .none, try popMark())
                try push(try call(cls, args))
            case 0x6A:  // j LONG_BINGET
                opName = "LONG_BINGET"
                try push(try memoGet(Int(try u32())))
            case 0x6C:  // l LIST
                opName = "LIST"
                try push(try newNode(.list, .none, try popMark()))
            case 0x5D:  // ] EMPTY_LIST
                opName = "EMPTY_LIST"
                try push(try newNode(.list))
            case 0x6F:  // o OBJ
                opName = "OBJ"
                let items = try popMark()
                guard let cls = items.first else { throw corrupt("OBJ without a class") }
                try requireGlobal(cls, "class")
                let args = try newNode(.tuple, .none, Array(items.dropFirst()))
                try push(try call(cls, args))
            case 0x70:  // p PUT
                opName = "PUT"
                let idx = try parseIndex(try line())
                try memoPut(idx, try top())
            case 0x71:  // q BINPUT
                opName = "BINPUT"
                let idx = Int(try byte())
                try memoPut(idx, try top())
            case 0x72:  // r LONG_BINPUT
                opName = "LONG_BINPUT"
                let idx = Int(try u32())
                try memoPut(idx, try top())
            case 0x73:  // s SETITEM
                opName = "SETITEM"
                let v = try pop()
                let k = try pop()
                let t = target(try top())
                guard nodes[t].kind == .dict || nodes[t].kind == .orderedDict else {
                    throw corrupt("SETITEM target must be a dict or OrderedDict, got \(kindName(t))")
                }
                nodes[t].items.append(k)
                nodes[t].items.append(v)
            case 0x74:  // t TUPLE
                opName = "TUPLE"
                try push(try newNode(.tuple, .none, try popMark()))
            case 0x29:  // ) EMPTY_TUPLE
                opName = "EMPTY_TUPLE"
                try push(try newNode(.tuple))
            case 0x75:  // u SETITEMS
                opName = "SETITEMS"
                let items = try popMark()
                guard items.count % 2 == 0 else { throw corrupt("SETITEMS has an odd number of items (\(items.count))") }
                let t = target(try top())
                guard nodes[t].kind == .dict || nodes[t].kind == .orderedDict else {
                    throw corrupt("SETITEMS target must be a dict or OrderedDict, got \(kindName(t))")
                }
                nodes[t].items.append(contentsOf: items)
            case 0x47:  // G BINFLOAT
                opName = "BINFLOAT"
                try need(8, "BINFLOAT operand")
                let bits = UInt64(bigEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt64.self))
                pos += 8
                try pushLeaf(.float(Double(bitPattern: bits)))
            case 0x42:  // B BINBYTES
                opName = "BINBYTES"
                let len = try length(UInt64(try u32()))
                try pushLeaf(.bytes(Array(take(len))))
            case 0x43:  // C SHORT_BINBYTES
                opName = "SHORT_BINBYTES"
                let len = try length(UInt64(try byte()))
                try pushLeaf(.bytes(Array(take(len))))
            case 0x80:  // PROTO
                opName = "PROTO"
                let v = try byte()
                guard v <= 5 else { throw corrupt("unsupported pickle protocol \(v)") }
            case 0x81:  // NEWOBJ
                opName = "NEWOBJ"
                let args = try pop()
                let cls = try pop()
                try requireGlobal(cls, "class")
                try requireTuple(args, "arguments")
                try push(try newNode(.newObject, .none, [cls, args]))
            case 0x85:  // TUPLE1
                opName = "TUPLE1"
                let a = try pop()
                try push(try newNode(.tuple, .none, [a]))
            case 0x86:  // TUPLE2
                opName = "TUPLE2"
                let b = try pop()
                let a = try pop()
                try push(try newNode(.tuple, .none, [a, b]))
            case 0x87:  // TUPLE3
                opName = "TUPLE3"
                let c = try pop()
                let b = try pop()
                let a = try pop()
                try push(try newNode(.tuple, .none, [a, b, c]))
            case 0x88:  // NEWTRUE
                opName = "NEWTRUE"
                try pushLeaf(.bool(true))
            case 0x89:  // NEWFALSE
                opName = "NEWFALSE"
                try pushLeaf(.bool(false))
            case 0x8A:  // LONG1
                opName = "LONG1"
                let len = try length(UInt64(try byte()))
                try pushLeaf(PickleBigInt.value(fromTwosComplement: Array(take(len))))
            case 0x8B:  // LONG4
                opName = "LONG4"
                let n = Int32(bitPattern: try u32())
                guard n >= 0 else { throw corrupt("LONG4 has negative byte count \(n)") }
                let len = try length(UInt64(n))
                try pushLeaf(PickleBigInt.value(fromTwosComplement: Array(take(len))))
            case 0x8C:  // SHORT_BINUNICODE
                opName = "SHORT_BINUNICODE"
                let len = try length(UInt64(try byte()))
                try pushLeaf(.string(try utf8(take(len))))
            case 0x8D:  // BINUNICODE8
                opName = "BINUNICODE8"
                let len = try length(try u64())
                try pushLeaf(.string(try utf8(take(len))))
            case 0x8E:  // BINBYTES8
                opName = "BINBYTES8"
                let len = try length(try u64())
                try pushLeaf(.bytes(Array(take(len))))
            case 0x96:  // BYTEARRAY8
                opName = "BYTEARRAY8"
                let len = try length(try u64())
                try pushLeaf(.bytes(Array(take(len))))
            case 0x8F:  // EMPTY_SET
                opName = "EMPTY_SET"
                try push(try newNode(.set))
            case 0x90:  // ADDITEMS
                opName = "ADDITEMS"
                let items = try popMark()
                let t = target(try top())
                guard nodes[t].kind == .set else { throw corrupt("ADDITEMS target must be a set, got \(kindName(t))") }
                nodes[t].items.append(contentsOf: items)
            case 0x91:  // FROZENSET
                opName = "FROZENSET"
                try push(try newNode(.frozenSet, .none, try popMark()))
            case 0x92:  // NEWOBJ_EX
                opName = "NEWOBJ_EX"
                let kwargs = try pop()
                let args = try pop()
                let cls = try pop()
                try requireGlobal(cls, "class")
                try requireTuple(args, "arguments")
                guard nodes[kwargs].kind == .dict, nodes[kwargs].items.isEmpty else {
                    throw corrupt("NEWOBJ_EX with keyword arguments is not supported")
                }
                try push(try newNode(.newObject, .none, [cls, args]))
            case 0x93:  // STACK_GLOBAL
                opName = "STACK_GLOBAL"
                let nameNode = try pop()
                let moduleNode = try pop()
                guard nodes[moduleNode].kind == .leaf, case let .string(module) = nodes[moduleNode].leaf,
                      nodes[nameNode].kind == .leaf, case let .string(name) = nodes[nameNode].leaf else {
                    throw corrupt("STACK_GLOBAL needs two strings on the stack")
                }
                try pushLeaf(try global(module, name))
            case 0x94:  // MEMOIZE
                opName = "MEMOIZE"
                try memoPut(memo.count, try top())
            case 0x95:  // FRAME
                opName = "FRAME"
                _ = try length(try u64())  // frames only group opcodes; the length must fit the input
            default:
                // 0x82-0x84 EXT1/2/4 (extension registry), 0x97/0x98 out-of-band buffers, unknown bytes.
                throw SerializationError.unsupportedPickleOpcode(opcode: op, offset: opStart)
            }
        }
    }
}

/// Turns the VM's node graph into a `PickleValue` tree: checks depth, cycles and total size, and
/// evaluates the pure-data builtins (`set`, `frozenset`, `_codecs.encode`, `bytearray`).
/// A shared node is materialized once; its value is reused (copy-on-write storage).
private struct PickleMaterializer {
    let nodes: [PickleMachine.Node]
    let endOffset: Int
    let limits: Unpickler.Limits
    /// Materialized containers, with the size of their tree (leaves need neither).
    var cache: [Int: (value: PickleValue, size: Int)] = [:]
    var onPath: Set<Int> = []

    init(vm: PickleMachine, limits: Unpickler.Limits) {
        nodes = vm.nodes
        endOffset = vm.pos
        self.limits = limits
    }

    func fail(_ reason: String) -> SerializationError {
        .corruptPickle(reason: reason, offset: endOffset)
    }

    mutating func materialize(_ i: Int, depth: Int) throws -> PickleValue {
        let kind = nodes[i].kind
        if kind == .leaf { return nodes[i].leaf }
        if let v = cache[i] { return v.value }
        guard depth <= limits.maxDepth else {
            throw SerializationError.pickleLimitExceeded(what: "nesting depth", limit: limits.maxDepth, offset: endOffset)
        }
        guard onPath.insert(i).inserted else {
            throw fail("the value contains itself (recursive structures are not supported)")
        }
        defer { onPath.remove(i) }
        let count = nodes[i].items.count
        var total = 1
        var children: [PickleValue] = []
        children.reserveCapacity(count)
        for k in 0..<count {
            let c = nodes[i].items[k]
            children.append(try materialize(c, depth: depth + 1))
            total = total &+ (cache[c]?.size ?? 1)
            if total > limits.maxValueNodes || total < 0 {
                throw SerializationError.pickleLimitExceeded(what: "values in the result", limit: limits.maxValueNodes, offset: endOffset)
            }
        }
        let value: PickleValue
        switch kind {
        case .leaf: value = nodes[i].leaf
        case .tuple: value = .tuple(children)
        case .list: value = .list(children)
        case .set: value = .set(children)
        case .frozenSet: value = .frozenSet(children)
        case .dict, .orderedDict:
            var entries: [(key: PickleValue, value: PickleValue)] = []
            entries.reserveCapacity(children.count / 2)
            var k = 0
            while k + 1 < children.count {
                entries.append((key: children[k], value: children[k + 1]))
                k += 2
            }
            value = kind == .dict ? .dict(entries) : .orderedDict(entries)
        case .reduce: value = try evaluate(callable: children[0], args: children[1])
        case .newObject: value = .newObject(cls: children[0], args: children[1])
        case .build: value = .build(object: children[0], state: children[1])
        case .persistentID: value = .persistentID(children[0])
        }
        cache[i] = (value, total)
        return value
    }

    func latin1Bytes(_ s: String) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(s.unicodeScalars.count)
        for u in s.unicodeScalars {
            guard u.value <= 0xFF else { throw fail("_codecs.encode: the string is not Latin-1 encodable") }
            out.append(UInt8(u.value))
        }
        return out
    }

    func encode(_ s: String, _ encoding: String) throws -> [UInt8]? {
        switch encoding.lowercased().replacingOccurrences(of: "_", with: "-") {
        case "latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1": return try latin1Bytes(s)
        case "utf-8", "utf8": return Array(s.utf8)
        case "ascii":
            guard s.utf8.allSatisfy({ $0 < 0x80 }) else { throw fail("_codecs.encode: the string is not ASCII") }
            return Array(s.utf8)
        default: return nil
        }
    }

    func evaluate(callable: PickleValue, args: PickleValue) throws -> PickleValue {
        guard case let .global(m, n) = callable, case let .tuple(a) = args else {
            return .reduce(callable: callable, args: args)
        }
        switch (m, n) {
        case ("builtins", "set"), ("builtins", "frozenset"):
            let items: [PickleValue]?
            if a.isEmpty { items = [] } else if a.count == 1, let e = a[0].elements { items = e } else { items = nil }
            if let items = items { return n == "set" ? .set(items) : .frozenSet(items) }
        case ("_codecs", "encode"):
            if a.count == 2, case let .string(s) = a[0], case let .string(enc) = a[1],
               let bytes = try encode(s, enc) {
                return .bytes(bytes)
            }
        case ("builtins", "bytearray"), ("builtins", "bytes"):
            if a.isEmpty { return .bytes([]) }
            if a.count == 1, case let .bytes(b) = a[0] { return .bytes(b) }
            if a.count == 2, case let .string(s) = a[0], case let .string(enc) = a[1], let bytes = try encode(s, enc) {
                return .bytes(bytes)
            }
        default: break
        }
        return .reduce(callable: callable, args: args)
    }
}

// MARK: - Pickler

/// Writes ``PickleValue`` trees as protocol-2 pickle streams, using only the opcodes PyTorch's
/// weights-only unpickler implements and the encodings Python's pickler chooses (FORMATS.md §1.3):
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
        guard !module.contains("\n"), !name.contains("\n"), !module.isEmpty, !name.isEmpty else {
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
