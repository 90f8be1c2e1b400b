/// Small read-only tables that kernels look up (pooling windows, resampling taps and weights, plane offsets),
/// uploaded once per device and content and then kept. A repeated shape uploads nothing after its first call,
/// and a CUDA graph capture (which cannot copy from the host: the graph would read the host buffer again at
/// every replay) finds the table its warm-up iteration made.
///
/// Kept tables are never freed: a graph may read one for as long as it lives. Past `capacity` entries or
/// `byteCapacity` bytes, new tables are uploaded per call and not kept (so a program with ever-changing
/// shapes does not grow without bound; such a program cannot be captured anyway).
enum CUDAConstantTables {
    static let capacity = 4096
    static let byteCapacity = 64 << 20

    private struct Key: Hashable {
        let device: Device
        let dtype: DType
        let bits: [UInt64]
    }

    nonisolated(unsafe) private static var tables: [Key: Tensor] = [:]
    nonisolated(unsafe) private static var bytes = 0
    private static let lock = PosixLock()

    /// `values` as an int64 tensor on `device`.
    static func tensor(_ values: [Int64], on device: Device) -> Tensor {
        table(Key(device: device, dtype: .int64, bits: values.map { UInt64(bitPattern: $0) })) {
            torch.tensor(values).to(device)
        }
    }

    /// `values` as a 1-D tensor of the floating `dtype` on `device`.
    static func tensor(_ values: [Double], dtype: DType, on device: Device) -> Tensor {
        table(Key(device: device, dtype: dtype, bits: values.map(\.bitPattern))) {
            Tensor(values, shape: [values.count], dtype: dtype).to(device)
        }
    }

    private static func table(_ key: Key, _ upload: () -> Tensor) -> Tensor {
        lock.lock()
        if let t = tables[key] { lock.unlock(); return t }
        lock.unlock()
        let t = upload()
        let size = t.numel * t.dtype.itemSize
        lock.lock(); defer { lock.unlock() }
        if let kept = tables[key] { return kept }
        if tables.count < capacity && bytes + size <= byteCapacity {
            tables[key] = t
            bytes += size
        }
        return t
    }
}
