// Turns the value tree of a checkpoint's pickle (`data.pkl`, or the object pickle of a legacy
// file) into a `StateValue`: rebuilds tensors from `_rebuild_tensor_v2`/`_v3`/`_rebuild_parameter`
// calls over the file's storages, and maps plain Python data to plain values. Every declared
// size, stride and offset is checked against the storage bytes actually present in the file.

/// What PyTorch's storage classes hold, and what SwiftTorch can load.
enum CheckpointDTypes {
    /// `torch.<X>Storage` → dtype, for the dtypes SwiftTorch has.
    static let storageClasses: [String: DType] = [
        "FloatStorage": .float32, "DoubleStorage": .float64, "HalfStorage": .float16,
        "BFloat16Storage": .bfloat16, "LongStorage": .int64, "IntStorage": .int32,
        "ByteStorage": .uint8, "BoolStorage": .bool,
    ]

    /// Storage classes PyTorch has and SwiftTorch does not, with the dtype's name for messages.
    static let unsupportedStorageClasses: [String: String] = [
        "ShortStorage": "int16", "CharStorage": "int8", "ComplexFloatStorage": "complex64",
        "ComplexDoubleStorage": "complex128", "QUInt8Storage": "quint8", "QInt8Storage": "qint8",
        "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
    ]

    /// The storage class `torch.save` names for a dtype.
    static func storageClass(of dtype: DType) -> String {
        switch dtype {
        case .float32: return "FloatStorage"
        case .float64: return "DoubleStorage"
        case .float16: return "HalfStorage"
        case .bfloat16: return "BFloat16Storage"
        case .int64: return "LongStorage"
        case .int32: return "IntStorage"
        case .uint8: return "ByteStorage"
        case .bool: return "BoolStorage"
        }
    }

    /// The dtype of a `torch.<name>` dtype global (`torch.float32`, `torch.long`, …).
    static func dtype(named name: String) -> DType? {
        switch name {
        case "float", "float32": return .float32
        case "double", "float64": return .float64
        case "half", "float16": return .float16
        case "bfloat16": return .bfloat16
        case "long", "int64": return .int64
        case "int", "int32": return .int32
        case "uint8": return .uint8
        case "bool": return .bool
        default: return nil
        }
    }
}

/// The bytes of one storage in a checkpoint, and what keeps them alive.
struct CheckpointStorageBytes {
    var bytes: UnsafeRawBufferPointer
    var owner: AnyObject
}

/// Decodes a checkpoint's pickled value tree into `StateValue`s (see the file comment).
/// The location string (`"cpu"`, `"cuda:0"`) each loaded storage was saved with, by storage.
final class CheckpointStorageLocations {
    var byStorage: [ObjectIdentifier: String] = [:]
}

struct CheckpointDecoder {
    /// A storage resolved from a persistent id: the memory, its dtype, the element offset of a
    /// legacy storage view within it, and its element count.
    struct ResolvedStorage {
        var storage: Storage
        var dtype: DType
        var baseOffset: Int
        var numel: Int
    }

    /// The largest rank accepted for a loaded tensor.
    static let maxRank = 64

    /// Returns the raw bytes of the storage record `key` (throws if there is none).
    let fetch: (String) throws -> CheckpointStorageBytes
    /// Whether storage bytes are big-endian (the zip `byteorder` record says `big`).
    let bigEndian: Bool
    /// Whether persistent ids are the legacy 6-tuples (with a storage-view field).
    let legacy: Bool

    /// Where each storage was saved, when the caller asked (`torch.load`'s closure `mapLocation`).
    let locations: CheckpointStorageLocations?

    private var storages: [String: ResolvedStorage] = [:]

    init(legacy: Bool = false, bigEndian: Bool = false, locations: CheckpointStorageLocations? = nil,
         fetch: @escaping (String) throws -> CheckpointStorageBytes) {
        self.legacy = legacy
        self.bigEndian = bigEndian
        self.locations = locations
        self.fetch = fetch
    }

    private func fail(_ reason: String) -> SerializationError { .invalidCheckpoint(reason: reason) }

    // MARK: Values

    /// Converts a value of the pickle tree.
    mutating func decode(_ v: PickleValue) throws -> StateValue {
        switch v {
        case .none: return .none
        case let .bool(b): return .bool(b)
        case let .int(i): return .int(Int(i))
        case let .bigInt(b):
            throw fail("the integer \(PickleBigInt.decimalString(b)) does not fit in 64 bits")
        case let .float(d): return .double(d)
        case let .string(s): return .string(s)
        case .bytes: throw fail("Python bytes values are not supported in checkpoints")
        case let .tuple(a): return .tuple(try a.map { try decode($0) })
        case let .list(a), let .set(a), let .frozenSet(a): return .list(try a.map { try decode($0) })
        case let .dict(e), let .orderedDict(e):
            var out: [(key: StateValue, value: StateValue)] = []
            out.reserveCapacity(e.count)
            for (k, x) in e { out.append((key: try decode(k), value: try decode(x))) }
            return .dict(out)
        case let .global(m, n):
            if m == "torch", let d = CheckpointDTypes.dtype(named: n) { return .string(d.description) }
            throw fail("the object \(m).\(n) is not a plain value")
        case let .reduce(callable, args):
            return try call(callable, args)
        case let .build(object, state):
            // OrderedDict with attributes (a state dict's `_metadata`), or a tensor/parameter with
            // Python attributes: keep the object, drop the attributes.
            let o = try decode(object)
            switch o {
            case .dict, .tensor: return o
            default: throw fail("cannot set attributes \(state.description.prefix(80)) on \(o.description.prefix(80))")
            }
        case .persistentID:
            throw fail("a bare storage object (torch.save of a Storage) is not supported; save tensors instead")
        case let .newObject(cls, _):
            throw fail("objects of class \(cls.description.prefix(80)) are not supported")
        }
    }

    private mutating func call(_ callable: PickleValue, _ args: PickleValue) throws -> StateValue {
        guard case let .global(m, n) = callable else {
            throw fail("unsupported call of \(callable.description.prefix(80))")
        }
        guard case let .tuple(a) = args else {
            throw fail("the arguments of \(m).\(n) are not a tuple")
        }
        switch (m, n) {
        case ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor"),
             ("torch._utils", "_rebuild_tensor_v3"):
            return .tensor(try rebuildTensor(n, a))
        case ("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state"):
            guard a.count >= 2, case let .tensor(t) = try decode(a[0]), case let .bool(rg) = a[1] else {
                throw fail("\(n) expects (tensor, requires_grad, …)")
            }
            if rg && t.dtype.isFloatingPoint { t._requiresGrad = true }
            return .tensor(t)
        case ("torch._tensor", "_rebuild_from_type_v2"):
            // (func, new_type, args, state): a tensor subclass; rebuild the plain tensor.
            guard a.count >= 3 else { throw fail("_rebuild_from_type_v2 expects (func, type, args, state)") }
            let inner = try decode(.reduce(callable: a[0], args: a[2]))
            guard case .tensor = inner else { throw fail("_rebuild_from_type_v2 did not rebuild a tensor") }
            return inner
        case ("torch", "Size"):
            if a.isEmpty { return .tuple([]) }
            guard a.count == 1, let dims = a[0].elements else { throw fail("torch.Size expects one tuple") }
            return .tuple(try dims.map { try decode($0) })
        case ("torch", "device"):
            guard let first = a.first, case let .string(type) = first else { throw fail("torch.device expects a string") }
            if a.count > 1, case let .int(i) = a[1] { return .string("\(type):\(i)") }
            return .string(type)
        default:
            throw fail("unsupported call \(m).\(n)(…)")
        }
    }

    // MARK: Tensors

    private func int(_ v: PickleValue, _ what: String) throws -> Int {
        guard case let .int(i) = v else { throw fail("\(what) must be an integer, got \(v.description.prefix(40))") }
        return Int(i)
    }

    /// A size or stride tuple (`torch.Size(...)` accepted).
    private func intTuple(_ v: PickleValue, _ what: String) throws -> [Int] {
        var v = v
        if case let .reduce(c, .tuple(a)) = v, c.isGlobal("torch", "Size") {
            v = a.first ?? .tuple([])
        }
        guard let items = v.elements else { throw fail("\(what) must be a tuple of integers") }
        guard items.count <= CheckpointDecoder.maxRank else {
            throw fail("\(what) has \(items.count) dimensions (at most \(CheckpointDecoder.maxRank) are supported)")
        }
        return try items.map { try int($0, "\(what) entry") }
    }

    private mutating func rebuildTensor(_ fn: String, _ a: [PickleValue]) throws -> Tensor {
        let isV3 = fn == "_rebuild_tensor_v3"
        let needed = isV3 ? 7 : (fn == "_rebuild_tensor" ? 4 : 5)
        guard a.count >= needed else {
            throw fail("\(fn) expects at least \(needed) arguments, got \(a.count)")
        }
        var dtypeOverride: DType?
        if isV3 {
            guard case let .global(dm, dn) = a[6], dm == "torch" else { throw fail("_rebuild_tensor_v3: argument 7 is not a dtype") }
            guard let d = CheckpointDTypes.dtype(named: dn) else {
                throw fail("tensors of dtype torch.\(dn) are not supported by SwiftTorch")
            }
            dtypeOverride = d
        }
        guard case let .persistentID(pid) = a[0] else {
            throw fail("\(fn): the first argument is not a storage reference")
        }
        let s = try storage(pid, dtype: dtypeOverride)
        let offset = try int(a[1], "storage_offset")
        let shape = try intTuple(a[2], "size")
        let strides = try intTuple(a[3], "stride")
        var requiresGrad = false
        if fn != "_rebuild_tensor", case let .bool(rg) = a[4] { requiresGrad = rg }

        guard shape.count == strides.count else {
            throw fail("size \(shape) and stride \(strides) have different lengths")
        }
        guard offset >= 0 else { throw fail("negative storage_offset \(offset)") }
        var numel = 1
        var last = offset
        for (n, st) in zip(shape, strides) {
            guard n >= 0 else { throw fail("negative dimension in size \(shape)") }
            guard st >= 0 else { throw fail("negative stride in \(strides) (not supported)") }
            let (m, o) = numel.multipliedReportingOverflow(by: n)
            guard !o else { throw fail("the number of elements of size \(shape) overflows") }
            numel = m
            if n > 0 {
                let (span, o1) = (n - 1).multipliedReportingOverflow(by: st)
                let (l, o2) = last.addingReportingOverflow(span)
                guard !o1, !o2 else { throw fail("the extent of size \(shape) stride \(strides) overflows") }
                last = l
            }
        }
        if numel > 0 {
            guard last < s.numel else {
                throw fail("a tensor of size \(shape), stride \(strides) at offset \(offset) needs \(last + 1) elements but its storage has \(s.numel)")
            }
        } else {
            guard offset <= s.numel else {
                throw fail("storage_offset \(offset) is past the end of a storage of \(s.numel) elements")
            }
        }
        let t = Tensor(storage: s.storage, shape: shape, strides: strides, offset: s.baseOffset + offset, dtype: s.dtype)
        if requiresGrad && t.dtype.isFloatingPoint { t._requiresGrad = true }
        return t
    }

    /// Resolves a persistent id `('storage', cls, key, location, numel[, view])` to its storage,
    /// reading the bytes on first use and sharing them with later references to the same key.
    private mutating func storage(_ pid: PickleValue, dtype override: DType?) throws -> ResolvedStorage {
        guard case let .tuple(p) = pid, p.count == (legacy ? 6 : 5), case .string("storage") = p[0] else {
            throw fail("unsupported persistent id \(pid.description.prefix(80)) (expected ('storage', type, key, location, size\(legacy ? ", view" : "")))")
        }
        guard case let .global(cm, cn) = p[1] else { throw fail("storage type \(p[1].description.prefix(40)) is not a class") }
        let dtype: DType
        var sizeInBytes = false
        if let d = override {
            dtype = d
            sizeInBytes = cn == "UntypedStorage"
        } else if cm == "torch", let d = CheckpointDTypes.storageClasses[cn] {
            dtype = d
        } else if cm == "torch", let name = CheckpointDTypes.unsupportedStorageClasses[cn] {
            throw fail("tensors of dtype torch.\(name) (\(cm).\(cn)) are not supported by SwiftTorch")
        } else {
            throw fail("unsupported storage type \(cm).\(cn)")
        }
        guard case let .string(key) = p[2] else { throw fail("storage key \(p[2].description.prefix(40)) is not a string") }
        guard case let .string(location) = p[3] else { throw fail("storage location \(p[3].description.prefix(40)) is not a string") }
        let declared = try int(p[4], "storage size")
        guard declared >= 0 else { throw fail("storage '\(key)' has negative size \(declared)") }
        let item = dtype.itemSize
        if sizeInBytes { guard declared % item == 0 else { throw fail("storage '\(key)' has \(declared) bytes, not a whole number of \(dtype) elements") } }
        let numel = sizeInBytes ? declared / item : declared

        let root: ResolvedStorage
        if let existing = storages[key] {
            guard existing.dtype == dtype, existing.baseOffset == 0 else {
                throw fail("storage '\(key)' is used both as \(existing.dtype) and as \(dtype)")
            }
            guard existing.numel == numel else {
                throw fail("storage '\(key)' is declared with \(existing.numel) and with \(numel) elements")
            }
            root = existing
        } else {
            let (byteCount, o) = numel.multipliedReportingOverflow(by: item)
            guard !o else { throw fail("storage '\(key)' of \(numel) elements is too large") }
            let raw: CheckpointStorageBytes
            do {
                raw = try fetch(key)
            } catch let e as SerializationError {
                throw e.inContext("reading storage '\(key)'")
            }
            guard raw.bytes.count >= byteCount else {
                throw fail("storage '\(key)' declares \(numel) elements of \(dtype) (\(byteCount) bytes) but its record holds \(raw.bytes.count) bytes")
            }
            let base = raw.bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 64)!
            let st = Storage.fromFileBytes(base, byteCount: byteCount, owner: raw.owner, alignment: item,
                                           swapElementsOfSize: bigEndian ? item : nil, booleans: dtype == .bool)
            root = ResolvedStorage(storage: st, dtype: dtype, baseOffset: 0, numel: numel)
            storages[key] = root
            locations?.byStorage[ObjectIdentifier(st)] = location
        }
        // Legacy storage views: (view_key, offset, size) in elements of the root storage.
        if legacy, case let .tuple(view) = p[5] {
            guard view.count == 3, case let .string(viewKey) = view[0] else { throw fail("malformed storage view \(p[5].description.prefix(80))") }
            let off = try int(view[1], "storage view offset"), size = try int(view[2], "storage view size")
            guard off >= 0, size >= 0, off <= root.numel, size <= root.numel - off else {
                throw fail("storage view '\(viewKey)' [\(off), +\(size)) lies outside storage '\(key)' of \(root.numel) elements")
            }
            let v = ResolvedStorage(storage: root.storage, dtype: dtype, baseOffset: off, numel: size)
            return v
        } else if legacy, !p[5].isNone {
            throw fail("malformed storage view \(p[5].description.prefix(80))")
        }
        return root
    }

    // MARK: Walking

    /// The keys of every storage a value tree refers to, with their declared dtype and element
    /// count (used to locate the raw storages of a legacy file).
    static func storageDeclarations(in v: PickleValue) throws -> [String: (dtype: DType, numel: Int)] {
        var out: [String: (dtype: DType, numel: Int)] = [:]
        var stack: [PickleValue] = [v]
        var visited = 0
        while let x = stack.popLast() {
            visited += 1
            if visited > 50_000_000 { throw SerializationError.invalidCheckpoint(reason: "the object is too large") }
            switch x {
            case let .persistentID(pid):
                guard case let .tuple(p) = pid, p.count >= 5, case let .string(key) = p[2],
                      case let .global(_, cn) = p[1], case let .int(n) = p[4] else { continue }
                if let d = CheckpointDTypes.storageClasses[cn], n >= 0, out[key] == nil {
                    out[key] = (d, Int(n))
                } else if out[key] == nil, let name = CheckpointDTypes.unsupportedStorageClasses[cn] {
                    throw SerializationError.invalidCheckpoint(reason: "tensors of dtype torch.\(name) are not supported by SwiftTorch")
                }
            case let .tuple(a), let .list(a), let .set(a), let .frozenSet(a): stack.append(contentsOf: a)
            case let .dict(e), let .orderedDict(e):
                for (k, val) in e { stack.append(k); stack.append(val) }
            case let .reduce(c, a), let .newObject(c, a): stack.append(c); stack.append(a)
            case let .build(o, s): stack.append(o); stack.append(s)
            default: break
            }
        }
        return out
    }
}
