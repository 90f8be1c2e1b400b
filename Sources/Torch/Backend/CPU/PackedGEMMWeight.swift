import CTorchKernels

/// A float32 weight packed once for the GEMM kernel's left operand (`ct_sgemm_pack_a`), kept on the weight's
/// storage while its contents and the ISA level stay the same.
///
/// Every GEMM packs its left operand into micro-panels before multiplying. For a convolution's weight that
/// operand is the same in every call of an inference loop, and packing it is a full read and write of the
/// weight: 9 % of ResNet-18's batch-1 forward, whose last stage packs 9.4 MB per convolution. ONNX Runtime
/// packs weights once when it loads a model; this does the same lazily, for weights used where no autograd
/// graph is recorded (training changes the weights every step, so packing stays per call there).
final class PackedGEMMWeight: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Float>
    private let rows: Int, cols: Int, offset: Int, version: Int
    private let isa: Int32

    private init(_ weight: Tensor, rows: Int, cols: Int) {
        (self.rows, self.cols) = (rows, cols)
        offset = weight.storageOffset
        version = weight.storage.version
        isa = ct_isa_level()
        pointer = .allocate(capacity: rows * cols)
        ct_sgemm_pack_a(Int64(rows), Int64(cols), weight.pointer(Float.self), Int64(cols), 1, pointer)
    }

    deinit { pointer.deallocate() }

    /// Guards every storage's `preparedOperand` (two threads may run one model).
    private static let lock = PosixLock()

    /// `weight` (contiguous float32, `rows × cols` row-major) packed, from its storage's cache when still valid,
    /// or nil when a graph is being recorded through it (see the type's note).
    static func lookup(_ weight: Tensor, rows: Int, cols: Int) -> PackedGEMMWeight? {
        if GradMode.isEnabled && weight._requiresGrad { return nil }
        let storage = weight.storage
        return lock.withLock {
            if let cached = storage.preparedOperand as? PackedGEMMWeight, cached.rows == rows, cached.cols == cols,
               cached.offset == weight.storageOffset, cached.version == storage.version, cached.isa == ct_isa_level() {
                return cached
            }
            let packed = PackedGEMMWeight(weight, rows: rows, cols: cols)
            storage.preparedOperand = packed
            return packed
        }
    }
}
