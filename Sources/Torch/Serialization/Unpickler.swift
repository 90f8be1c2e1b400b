// The restricted pickle reader (`Unpickler`): never executes anything, admits only allow-listed
// globals, and bounds memory and time on hostile input. It runs the VM in PickleMachine.swift and
// turns the VM's node graph into a `PickleValue` tree (docs/formats.md §1.3–1.5).

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
/// - Opcodes: protocols 0–5 as listed in docs/formats.md and the binary and text opcodes of
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
        switch encoding.lowercased().replacing("_", with: "-") {
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
