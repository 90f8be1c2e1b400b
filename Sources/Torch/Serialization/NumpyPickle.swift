// numpy arrays inside pickles (how CIFAR's Python batches store their images): an allow-list of
// exactly the globals a pickled ndarray names, and a decoder of the resulting unevaluated tree.
// Nothing is executed: `_reconstruct`, `ndarray` and `dtype` stay names the decoder recognises.

/// Why a pickled numpy array could not be turned into a tensor.
public struct NumpyPickleError: Error, CustomStringConvertible {
    /// What is wrong.
    public let reason: String
    public var description: String { "invalid pickled numpy array: \(reason)" }
}

/// Reads numpy arrays from Python pickles without running anything.
///
/// A pickled `ndarray` is `numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b"b")` followed
/// by `__setstate__((version, shape, dtype, is_fortran, raw_bytes))`, where `dtype` is
/// `numpy.dtype(typestr, align, copy)` with its own state `(3, byteorder, None, None, None, -1, -1, flags)`.
/// ``unpickler`` admits exactly those globals (and `_codecs.encode` / `builtins.bytes`, protocol 2's
/// spellings of `bytes`); ``tensor(_:)`` checks that shape and recognises the array.
///
/// ```swift
/// let value = try NumpyPickle.unpickler.load(bytes)              // e.g. a CIFAR batch dict
/// let images = try NumpyPickle.tensor(NumpyPickle.entry(value, "data")!)
/// ```
public enum NumpyPickle {
    /// The globals a pickled numpy array names (numpy 1's `numpy.core` and numpy 2's `numpy._core`
    /// spellings of `_reconstruct`), plus `_codecs.encode` and `builtins.bytes` (protocol 2's spellings of
    /// `bytes`, the latter for `b""`), which the unpickler evaluates as data. Nothing else.
    public static let allowedGlobals: Set<String> = [
        "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
        "numpy.ndarray", "numpy.dtype", "_codecs.encode", "builtins.bytes",
    ]

    /// An unpickler for files of plain data and numpy arrays. Python 2 byte strings stay bytes
    /// (Python's `encoding="bytes"`), so array payloads are never re-encoded.
    public static var unpickler: Unpickler {
        Unpickler(allowedGlobals: allowedGlobals, legacyStringDecoding: .bytes)
    }

    /// Text from a `str` or a Python 2 byte string (Latin-1).
    public static func text(_ v: PickleValue) -> String? {
        switch v {
        case let .string(s): return s
        case let .bytes(b): return String(b.map { Character(Unicode.Scalar($0)) })
        default: return nil
        }
    }

    /// The value under `key` in a dict whose keys are `str` or byte strings (Python 2 pickles).
    public static func entry(_ dict: PickleValue, _ key: String) -> PickleValue? {
        guard let entries = dict.dictEntries else { return nil }
        return entries.first { text($0.key) == key }?.value
    }

    /// Whether `v` has the shape of a pickled ndarray.
    public static func isArray(_ v: PickleValue) -> Bool {
        if case let .build(object, _) = v, case let .reduce(callable, _) = object,
           let name = callable.globalName, name.hasSuffix("multiarray._reconstruct") { return true }
        return false
    }

    /// The tensor a pickled ndarray holds. Supported element types: bool, uint8, int8/int16/uint16
    /// (widened to int32), int32, uint32 (widened to int64), int64, float16, float32, float64, in
    /// either byte order and either memory order.
    public static func tensor(_ v: PickleValue) throws -> Tensor {
        func fail(_ reason: String) -> NumpyPickleError { NumpyPickleError(reason: reason) }
        guard case let .build(object, state) = v, case let .reduce(callable, args) = object,
              let name = callable.globalName, name.hasSuffix("multiarray._reconstruct") else {
            throw fail("expected numpy.core.multiarray._reconstruct(...) with a state, found \(summary(v))")
        }
        guard let a = args.elements, a.count == 3, a[0].isGlobal("numpy", "ndarray") else {
            throw fail("_reconstruct's arguments are not (numpy.ndarray, shape, typecode): \(summary(args))")
        }
        guard let s = state.elements, s.count == 5, s[0].intValue == 1 else {
            throw fail("the ndarray state is not (1, shape, dtype, is_fortran, data): \(summary(state))")
        }
        guard let dims = s[1].elements?.map({ $0.intValue }), dims.allSatisfy({ $0 != nil && $0! >= 0 }) else {
            throw fail("the shape is not a tuple of non-negative integers: \(summary(s[1]))")
        }
        let shape = dims.map { Int($0!) }
        let (kind, size, bigEndian) = try dtype(s[2])
        let fortran: Bool
        switch s[3] {
        case let .bool(b): fortran = b
        case let .int(i): fortran = i != 0
        default: throw fail("is_fortran is not a bool: \(summary(s[3]))")
        }
        guard case let .bytes(raw) = s[4] else {
            throw fail("the array data is not a byte string (object arrays are not supported): \(summary(s[4]))")
        }
        var count = 1
        for d in shape {
            let (m, overflow) = count.multipliedReportingOverflow(by: d)
            guard !overflow else { throw fail("the shape \(shape) is too large") }
            count = m
        }
        guard count.multipliedReportingOverflow(by: size).partialValue == raw.count, count <= raw.count else {
            throw fail("shape \(shape) of \(size)-byte \(kind)\(size) elements needs \(count * size) bytes, the data has \(raw.count)")
        }
        let values = try convert(raw, kind: kind, size: size, bigEndian: bigEndian, count: count)
        if fortran && shape.count > 1 {
            return values.reshape(Array(shape.reversed())).permute(Array((0..<shape.count).reversed())).contiguous()
        }
        return values.reshape(shape)
    }

    /// (kind letter, item size, big-endian) of a pickled `numpy.dtype`.
    static func dtype(_ v: PickleValue) throws -> (Character, Int, Bool) {
        func fail(_ reason: String) -> NumpyPickleError { NumpyPickleError(reason: reason) }
        var object = v, state: PickleValue? = nil
        if case let .build(o, s) = v { (object, state) = (o, s) }
        guard case let .reduce(callable, args) = object, callable.isGlobal("numpy", "dtype"),
              let a = args.elements, let first = a.first, let typestr = text(first) else {
            throw fail("expected numpy.dtype(typestr, ...), found \(summary(v))")
        }
        var order = "|"
        if let st = state?.elements {
            guard st.count >= 2, let o = text(st[1]) else { throw fail("unreadable dtype state \(summary(state!))") }
            if st.count >= 5, !(st[2].isNone && st[3].isNone && st[4].isNone) {
                throw fail("structured or subarray dtypes are not supported (\(typestr))")
            }
            order = o
        }
        var spec = Substring(typestr)
        if let c = spec.first, "<>|=".contains(c) { order = String(c); spec = spec.dropFirst() }
        guard let kind = spec.first, let size = Int(spec.dropFirst()), "buif?".contains(kind) else {
            throw fail("unsupported dtype '\(typestr)'")
        }
        return (kind == "?" ? "b" : kind, size, order == ">")
    }

    /// The raw bytes as a 1-D tensor of the matching (or widened) dtype.
    static func convert(_ raw: [UInt8], kind: Character, size: Int, bigEndian: Bool, count: Int) throws -> Tensor {
        func load<T: FixedWidthInteger>(_: T.Type, _ i: Int, _ p: UnsafeRawBufferPointer) -> T {
            let v = p.loadUnaligned(fromByteOffset: i * MemoryLayout<T>.size, as: T.self)
            return bigEndian ? T(bigEndian: v) : T(littleEndian: v)
        }
        return try raw.withUnsafeBytes { p -> Tensor in
            switch (kind, size) {
            case ("u", 1): return Tensor(Array(p.bindMemory(to: UInt8.self)), shape: [count])
            case ("b", 1): return Tensor(p.map { $0 != 0 }, shape: [count])
            case ("i", 1): return Tensor((0..<count).map { Int32(Int8(bitPattern: p[$0])) }, shape: [count])
            case ("i", 2): return Tensor((0..<count).map { Int32(load(Int16.self, $0, p)) }, shape: [count])
            case ("u", 2): return Tensor((0..<count).map { Int32(load(UInt16.self, $0, p)) }, shape: [count])
            case ("i", 4): return Tensor((0..<count).map { load(Int32.self, $0, p) }, shape: [count])
            case ("u", 4): return Tensor((0..<count).map { Int64(load(UInt32.self, $0, p)) }, shape: [count])
            case ("i", 8): return Tensor((0..<count).map { load(Int64.self, $0, p) }, shape: [count])
            case ("f", 2):
                let bits = Tensor((0..<count).map { Float(Float16(bitPattern: load(UInt16.self, $0, p))) }, shape: [count])
                return bits.to(.float16)
            case ("f", 4): return Tensor((0..<count).map { Float(bitPattern: load(UInt32.self, $0, p)) }, shape: [count])
            case ("f", 8): return Tensor((0..<count).map { Double(bitPattern: load(UInt64.self, $0, p)) }, shape: [count])
            default: throw NumpyPickleError(reason: "unsupported dtype \(kind)\(size)")
            }
        }
    }

    /// A short description of a value for messages (long byte strings abbreviated).
    static func summary(_ v: PickleValue) -> String {
        let s: String
        if case let .bytes(b) = v, b.count > 16 { s = "<\(b.count) bytes>" } else { s = v.description }
        return s.count > 120 ? String(s.prefix(117)) + "..." : s
    }
}
