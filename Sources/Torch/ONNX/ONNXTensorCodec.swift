/// TensorProto ⇄ Tensor, with the checks a hostile file needs: dims that are negative, overflow or exceed
/// `onnx.maxTensorElements`, data shorter or longer than the dims say, external data outside the model's folder.
/// Shared by the importer, the conformance runner (its .pb files are TensorProtos) and the exporter.
enum ONNXTensorCodec {
    typealias DataType = Onnx_TensorProto.DataType

    /// The SwiftTorch dtype of an ONNX element type, or nil where SwiftTorch tensors have none.
    static func dtype(of t: Int32) -> DType? {
        switch DataType(rawValue: Int(t)) {
        case .float: return .float32
        case .double: return .float64
        case .float16: return .float16
        case .bfloat16: return .bfloat16
        case .int32: return .int32
        case .int64: return .int64
        case .uint8: return .uint8
        case .bool: return .bool
        default: return nil
        }
    }

    /// The ONNX element type of a SwiftTorch dtype.
    static func dataType(of d: DType) -> Int32 {
        let t: DataType
        switch d {
        case .float32: t = .float
        case .float64: t = .double
        case .float16: t = .float16
        case .bfloat16: t = .bfloat16
        case .int32: t = .int32
        case .int64: t = .int64
        case .uint8: t = .uint8
        case .bool: t = .bool
        }
        return Int32(t.rawValue)
    }

    /// The element count of `dims`, checked: no negative dim, no overflow, at most `onnx.maxTensorElements`.
    static func checkedNumel(_ dims: [Int64], field: String) throws -> Int {
        var n = 1
        for (i, d) in dims.enumerated() {
            guard d >= 0 else { throw ONNXError.invalidTensor(field: "\(field).dims[\(i)]", reason: "negative dim \(d)") }
            guard d <= Int64(Int.max) else { throw ONNXError.invalidTensor(field: "\(field).dims[\(i)]", reason: "dim \(d) too large") }
            let (p, o) = n.multipliedReportingOverflow(by: Int(d))
            if o { throw ONNXError.invalidTensor(field: "\(field).dims", reason: "the product of dims \(dims) overflows") }
            n = p
        }
        if dims.contains(0) { return 0 }
        guard n <= onnx.maxTensorElements else {
            throw ONNXError.invalidTensor(field: "\(field).dims",
                                          reason: "dims \(dims) hold \(n) elements, more than the bound \(onnx.maxTensorElements)")
        }
        return n
    }

    /// Decodes `p` into a CPU tensor. `baseDirectory` is the model's folder, where external data lives (nil when
    /// the model came from bytes: external data is then an error).
    static func decode(_ p: Onnx_TensorProto, field: String, baseDirectory: String?) throws -> Tensor {
        guard let dtype = dtype(of: p.dataType) else {
            throw ONNXError.unsupportedDataType(field: "\(field).data_type", dataType: p.dataType)
        }
        if p.hasSegment { throw ONNXError.invalidTensor(field: "\(field).segment", reason: "segmented tensors are not supported") }
        let n = try checkedNumel(p.dims, field: field)
        let shape = p.dims.map { Int($0) }
        let itemSize = dtype.itemSize
        let byteCount = n * itemSize
        let t = Tensor(uninitializedShape: shape, dtype: dtype)
        let dst = t.storage.data

        if p.dataLocation == .external {
            try readExternal(p, field: field, baseDirectory: baseDirectory, byteCount: byteCount, into: dst)
            return t
        }
        if p.hasRawData {
            guard p.rawData.count == byteCount else {
                throw ONNXError.invalidTensor(field: "\(field).raw_data",
                                              reason: "\(p.rawData.count) bytes where dims \(p.dims) of \(onnx.dataTypeName(p.dataType)) need \(byteCount)")
            }
            if byteCount > 0 { p.rawData.withUnsafeBytes { dst.copyMemory(from: $0.baseAddress!, byteCount: byteCount) } }
            return t
        }
        func count(_ c: Int, _ name: String) throws {
            guard c == n else {
                throw ONNXError.invalidTensor(field: "\(field).\(name)", reason: "\(c) values where dims \(p.dims) need \(n)")
            }
        }
        switch dtype {
        case .float32:
            try count(p.floatData.count, "float_data")
            p.floatData.withUnsafeBytes { if n > 0 { dst.copyMemory(from: $0.baseAddress!, byteCount: byteCount) } }
        case .float64:
            try count(p.doubleData.count, "double_data")
            p.doubleData.withUnsafeBytes { if n > 0 { dst.copyMemory(from: $0.baseAddress!, byteCount: byteCount) } }
        case .int64:
            try count(p.int64Data.count, "int64_data")
            p.int64Data.withUnsafeBytes { if n > 0 { dst.copyMemory(from: $0.baseAddress!, byteCount: byteCount) } }
        case .int32:
            try count(p.int32Data.count, "int32_data")
            p.int32Data.withUnsafeBytes { if n > 0 { dst.copyMemory(from: $0.baseAddress!, byteCount: byteCount) } }
        case .uint8, .bool:
            try count(p.int32Data.count, "int32_data")
            let d = dst.assumingMemoryBound(to: UInt8.self)
            for (i, v) in p.int32Data.enumerated() { d[i] = dtype == .bool ? (v != 0 ? 1 : 0) : UInt8(truncatingIfNeeded: v) }
        case .float16, .bfloat16:
            // The 16-bit patterns, one per int32.
            try count(p.int32Data.count, "int32_data")
            let d = dst.assumingMemoryBound(to: UInt16.self)
            for (i, v) in p.int32Data.enumerated() { d[i] = UInt16(truncatingIfNeeded: v) }
        }
        return t
    }

    /// Reads `byteCount` bytes of external data (keys location, offset, length) into `dst`.
    static func readExternal(_ p: Onnx_TensorProto, field: String, baseDirectory: String?, byteCount: Int,
                             into dst: UnsafeMutableRawPointer) throws {
        var location: String?
        var offset = 0
        var length: Int?
        for (i, e) in p.externalData.enumerated() {
            switch e.key {
            case "location": location = e.value
            case "offset", "length":
                guard let v = Int(e.value), v >= 0 else {
                    throw ONNXError.externalData(field: "\(field).external_data[\(i)]", reason: "\(e.key) '\(e.value)' is not a byte count")
                }
                if e.key == "offset" { offset = v } else { length = v }
            default: break
            }
        }
        guard let location, !location.isEmpty else {
            throw ONNXError.externalData(field: field, reason: "no 'location' key in external_data")
        }
        guard let base = baseDirectory else {
            throw ONNXError.externalData(field: field, reason: "'\(location)' cannot be read: the model was loaded from bytes, not from a file")
        }
        let path = try resolveExternalPath(location, baseDirectory: base, field: field)
        if let length, length != byteCount {
            throw ONNXError.externalData(field: field, reason: "length \(length) where dims \(p.dims) need \(byteCount) bytes")
        }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw ONNXError.externalData(field: field, reason: "cannot open '\(location)' in \(base)")
        }
        defer { close(fd) }
        let end64 = lseek(fd, 0, SEEK_END)
        let size = end64 < 0 ? 0 : Int(end64)
        let (end, o) = offset.addingReportingOverflow(byteCount)
        guard !o, end <= size else {
            throw ONNXError.externalData(field: field, reason: "'\(location)' has \(size) bytes; offset \(offset) + \(byteCount) bytes runs past its end")
        }
        var done = 0
        while done < byteCount {
            let r = pread(fd, dst + done, byteCount - done, off_t(offset + done))
            guard r > 0 else {
                throw ONNXError.externalData(field: field, reason: "'\(location)': read \(done) of \(byteCount) bytes")
            }
            done += r
        }
    }

    /// The absolute path of an external data file, which must be a relative path inside `baseDirectory` (no `..`,
    /// no absolute path, no symbolic link leading out).
    static func resolveExternalPath(_ location: String, baseDirectory: String, field: String) throws -> String {
        let parts = location.split(separator: "/", omittingEmptySubsequences: true)
        guard !location.hasPrefix("/"), !location.contains("\\"), !location.contains("\0"), !parts.contains("..") else {
            throw ONNXError.externalData(field: field, reason: "location '\(location)' points outside the model's folder")
        }
        let base = URL(fileURLWithPath: baseDirectory).standardizedFileURL.resolvingSymlinksInPath().path
        let full = URL(fileURLWithPath: base).appendingPathComponent(location).standardizedFileURL
        guard FileManager.default.fileExists(atPath: full.path) else {
            throw ONNXError.externalData(field: field, reason: "the file '\(location)' does not exist in \(baseDirectory)")
        }
        let resolved = full.resolvingSymlinksInPath().path
        guard resolved.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw ONNXError.externalData(field: field, reason: "location '\(location)' resolves outside the model's folder")
        }
        return resolved
    }

    /// A TensorProto of `t` (raw_data, little-endian), named `name`.
    static func encode(_ t: Tensor, name: String = "") -> Onnx_TensorProto {
        var p = Onnx_TensorProto()
        p.name = name
        p.dims = t.shape.map { Int64($0) }
        p.dataType = dataType(of: t.dtype)
        let c = t.contiguous().cpu()
        let n = c.numel * c.dtype.itemSize
        p.rawData = n == 0 ? Data() : Data(bytes: c.rawPointer, count: n)
        return p
    }
}
