import Torch

extension datasets {
    /// The numeric matrices of a MATLAB level-5 `.mat` file (what `scipy.io.loadmat` reads for SVHN):
    /// little-endian files, plain or zlib-compressed elements, real numeric arrays of any class.
    /// Other variables (cells, structs, sparse, complex) are skipped. Every length is checked against
    /// the file; a damaged file throws ``DatasetError/invalidFile(path:reason:)``.
    enum MATFile {
        /// A variable: its dimensions (MATLAB order) and its values in column-major order.
        struct Matrix {
            var dims: [Int]
            var values: Tensor   // 1-D: uint8 for uint8 classes, float64 otherwise
        }

        static let maxSize = 1 << 32

        static func read(_ path: String) throws -> [String: Matrix] {
            let file = try FileBytes.read(path, limit: maxSize)
            return try file.withRawBytes { try parse($0, path: path) }
        }

        static func parse(_ b: UnsafeRawBufferPointer, path: String) throws -> [String: Matrix] {
            func invalid(_ reason: String) -> DatasetError { .invalidFile(path: path, reason: reason) }
            guard b.count >= 128 else { throw invalid("\(b.count) bytes is too short for a MATLAB 5 header (128 bytes)") }
            guard b[126] == UInt8(ascii: "I") && b[127] == UInt8(ascii: "M") else {
                throw invalid("not a little-endian MATLAB 5 file (v7.3/HDF5 and big-endian files are not supported)")
            }
            var out: [String: Matrix] = [:]
            var pos = 128
            while pos + 8 <= b.count {
                let (type, size, dataStart, next) = try tag(b, at: pos, invalid)
                if type == 15 {   // miCOMPRESSED: a zlib stream holding one element
                    guard size >= 2, b[dataStart] & 0x0F == 8 else { throw invalid("a compressed element at byte \(pos) is not a zlib stream") }
                    let raw = UnsafeRawBufferPointer(rebasing: b[(dataStart + 2)..<(dataStart + size)])
                    let inner: [UInt8]
                    do {
                        inner = try Inflate.decompress(raw, maxOutputSize: maxSize)
                    } catch let e as SerializationError {
                        throw invalid("compressed element at byte \(pos): \(e)")
                    }
                    try inner.withUnsafeBytes { ib in
                        let (t, s, d, _) = try tag(ib, at: 0, invalid)
                        if t == 14, let (name, m) = try matrix(UnsafeRawBufferPointer(rebasing: ib[d..<(d + s)]), invalid) { out[name] = m }
                    }
                    pos = dataStart + size   // compressed elements are not padded
                } else {
                    if type == 14, let (name, m) = try matrix(UnsafeRawBufferPointer(rebasing: b[dataStart..<(dataStart + size)]), invalid) {
                        out[name] = m
                    }
                    pos = next
                }
            }
            return out
        }

        /// A data element's tag: type, byte count, where its data starts, where the next element starts.
        static func tag(_ b: UnsafeRawBufferPointer, at pos: Int, _ invalid: (String) -> DatasetError) throws -> (Int, Int, Int, Int) {
            guard pos + 8 <= b.count else { throw invalid("truncated element tag at byte \(pos)") }
            let first = b.loadUnaligned(fromByteOffset: pos, as: UInt32.self).littleEndian
            if first >> 16 != 0 {   // small element: type and size share the first word, data in the second
                let size = Int(first >> 16)
                guard size <= 4 else { throw invalid("small element at byte \(pos) claims \(size) bytes") }
                return (Int(first & 0xFFFF), size, pos + 4, pos + 8)
            }
            let size = Int(b.loadUnaligned(fromByteOffset: pos + 4, as: UInt32.self).littleEndian)
            guard size <= b.count - pos - 8 else {
                throw invalid("element at byte \(pos) declares \(size) bytes but only \(b.count - pos - 8) remain")
            }
            return (Int(first), size, pos + 8, pos + 8 + (size + 7) / 8 * 8)
        }

        /// A miMATRIX element's name and values, or nil when it is not a real numeric array.
        static func matrix(_ b: UnsafeRawBufferPointer, _ invalid: (String) -> DatasetError) throws -> (String, Matrix)? {
            var parts: [(type: Int, data: UnsafeRawBufferPointer)] = []
            var pos = 0
            while pos + 8 <= b.count && parts.count < 4 {
                let (t, s, d, n) = try tag(b, at: pos, invalid)
                parts.append((t, UnsafeRawBufferPointer(rebasing: b[d..<(d + s)])))
                pos = min(n, b.count)
            }
            guard parts.count >= 4, parts[0].data.count >= 4 else { return nil }
            let flags = parts[0].data.loadUnaligned(as: UInt32.self).littleEndian
            let cls = Int(flags & 0xFF), complex = flags & 0x800 != 0
            guard (6...15).contains(cls), !complex, parts[1].type == 5 else { return nil }   // numeric classes only
            let dims = (0..<(parts[1].data.count / 4)).map { Int(parts[1].data.loadUnaligned(fromByteOffset: 4 * $0, as: Int32.self).littleEndian) }
            guard dims.allSatisfy({ $0 >= 0 }) else { throw invalid("negative matrix dimensions \(dims)") }
            let name = String(decoding: parts[2].data, as: UTF8.self)
            let count = dims.reduce(1) { $0.multipliedReportingOverflow(by: $1).overflow ? Int.max : $0 * $1 }
            let (type, data) = parts[3]
            let sizes = [1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 9: 8, 12: 8, 13: 8]
            guard let size = sizes[type] else { throw invalid("variable '\(name)': unsupported data type \(type)") }
            guard count != Int.max, data.count == count * size else {
                throw invalid("variable '\(name)' of dimensions \(dims) needs \(count) values but holds \(data.count / size)")
            }
            let values: Tensor
            if cls == 9 && type == 2 {   // uint8 stored as bytes: keep uint8
                values = Tensor(Array(data.bindMemory(to: UInt8.self)), shape: [count])
            } else {
                values = Tensor((0..<count).map { i -> Double in
                    switch type {
                    case 1: return Double(Int8(bitPattern: data[i]))
                    case 2: return Double(data[i])
                    case 3: return Double(Int16(littleEndian: data.loadUnaligned(fromByteOffset: 2 * i, as: Int16.self)))
                    case 4: return Double(UInt16(littleEndian: data.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)))
                    case 5: return Double(Int32(littleEndian: data.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self)))
                    case 6: return Double(UInt32(littleEndian: data.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
                    case 7: return Double(Float(bitPattern: UInt32(littleEndian: data.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))))
                    case 9: return Double(bitPattern: UInt64(littleEndian: data.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self)))
                    case 12: return Double(Int64(littleEndian: data.loadUnaligned(fromByteOffset: 8 * i, as: Int64.self)))
                    default: return Double(UInt64(littleEndian: data.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self)))
                    }
                }, shape: [count], dtype: .float64)
            }
            return (name, Matrix(dims: dims, values: values))
        }
    }
}
