import Torch

extension datasets {
    /// The IDX format of the MNIST family (torchvision's `read_sn3_pascalvincent_tensor`): a
    /// 4-byte magic number (two zero bytes, a type code, the number of dimensions), one
    /// big-endian 32-bit size per dimension, then the big-endian data. Files may be gzipped.
    ///
    /// Everything is validated against the file: the magic number, the type code, the header
    /// length, the sizes (no overflow) and that the data is exactly as long as the sizes say.
    /// Malformed files throw ``DatasetError/invalidFile(path:reason:)``.
    ///
    /// ```swift
    /// let images = try datasets.IDX.read("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
    /// // uint8 tensor of shape [10000, 28, 28]
    /// ```
    public enum IDX {
        /// The largest file, compressed or not, that is read (4 GiB).
        public static let maxFileSize = 1 << 32

        /// Reads an IDX file (gzipped when it starts with the gzip magic number).
        ///
        /// Element types map to tensors as: unsigned byte → uint8, signed byte and 16-bit → int32
        /// (widened), 32-bit integer → int32, float → float32, double → float64.
        public static func read(_ path: String) throws -> Tensor {
            let raw = try FileBytes.read(path, limit: maxFileSize)
            if Gzip.hasMagic(raw) {
                let bytes: [UInt8]
                do {
                    bytes = try Gzip.decompress(raw, maxOutputSize: maxFileSize)
                } catch let e as SerializationError {
                    throw DatasetError.decompression(path: path, underlying: e)
                }
                return try decode(bytes, source: path)
            }
            return try decode(raw, source: path)
        }

        /// Decodes IDX bytes; `source` names them in error messages.
        public static func decode(_ bytes: [UInt8], source: String) throws -> Tensor {
            let header = try parseHeader(bytes, source: source)
            let n = header.shape.reduce(1, *)
            let t = torch.empty(header.shape, dtype: header.dtype)
            let dst = t.storage.data + t.storageOffset * header.dtype.itemSize
            bytes.withUnsafeBytes { buf in
                let src = buf.baseAddress! + header.dataOffset
                switch header.typeCode {
                case 0x08:
                    if n > 0 { dst.copyMemory(from: src, byteCount: n) }
                case 0x09:
                    let d = dst.assumingMemoryBound(to: Int32.self)
                    for i in 0..<n { d[i] = Int32(Int8(bitPattern: src.load(fromByteOffset: i, as: UInt8.self))) }
                case 0x0B:
                    let d = dst.assumingMemoryBound(to: Int32.self)
                    for i in 0..<n { d[i] = Int32(Int16(bitPattern: UInt16(bigEndian: src.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)))) }
                case 0x0C:
                    let d = dst.assumingMemoryBound(to: Int32.self)
                    for i in 0..<n { d[i] = Int32(bitPattern: UInt32(bigEndian: src.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))) }
                case 0x0D:
                    let d = dst.assumingMemoryBound(to: Float.self)
                    for i in 0..<n { d[i] = Float(bitPattern: UInt32(bigEndian: src.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))) }
                default:   // 0x0E, checked by parseHeader
                    let d = dst.assumingMemoryBound(to: Double.self)
                    for i in 0..<n { d[i] = Double(bitPattern: UInt64(bigEndian: src.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))) }
                }
            }
            return t
        }

        /// A validated header.
        struct Header {
            let typeCode: UInt8
            let dtype: DType
            let shape: [Int]
            let dataOffset: Int
        }

        /// Validates the header and that the data length matches it exactly.
        static func parseHeader(_ b: [UInt8], source: String) throws -> Header {
            func invalid(_ reason: String) -> DatasetError { .invalidFile(path: source, reason: reason) }
            guard b.count >= 4 else {
                throw invalid("\(b.count) bytes is too short for an IDX magic number (4 bytes)")
            }
            guard b[0] == 0 && b[1] == 0 else {
                throw invalid("not an IDX file: magic number starts with 0x\(hex(b[0]))\(hex(b[1])) instead of 0x0000")
            }
            let typeCode = b[2]
            let elementSize: Int, dtype: DType
            switch typeCode {
            case 0x08: (elementSize, dtype) = (1, .uint8)
            case 0x09: (elementSize, dtype) = (1, .int32)
            case 0x0B: (elementSize, dtype) = (2, .int32)
            case 0x0C: (elementSize, dtype) = (4, .int32)
            case 0x0D: (elementSize, dtype) = (4, .float32)
            case 0x0E: (elementSize, dtype) = (8, .float64)
            default: throw invalid("unknown IDX element type code 0x\(hex(typeCode)) at byte offset 2")
            }
            let rank = Int(b[3])
            guard rank >= 1 else { throw invalid("IDX header declares 0 dimensions at byte offset 3") }
            let dataOffset = 4 + 4 * rank
            guard b.count >= dataOffset else {
                throw invalid("header declares \(rank) dimensions, which need \(dataOffset) header bytes, but the file has \(b.count)")
            }
            var shape: [Int] = []
            var total = elementSize
            for d in 0..<rank {
                let p = 4 + 4 * d
                let size = Int(b[p]) << 24 | Int(b[p + 1]) << 16 | Int(b[p + 2]) << 8 | Int(b[p + 3])
                shape.append(size)
                let (m, overflow) = total.multipliedReportingOverflow(by: size)
                guard !overflow && m <= maxFileSize else {
                    throw invalid("dimensions \(shape)… declare more data than the \(maxFileSize)-byte limit")
                }
                total = m
            }
            let available = b.count - dataOffset
            guard total == available else {
                throw invalid("dimensions \(shape) of \(elementSize)-byte elements need \(total) data bytes after the \(dataOffset)-byte header, but the file has \(available)")
            }
            return Header(typeCode: typeCode, dtype: dtype, shape: shape, dataOffset: dataOffset)
        }

        private static func hex(_ v: UInt8) -> String {
            let s = String(v, radix: 16)
            return s.count == 1 ? "0" + s : s
        }
    }
}
