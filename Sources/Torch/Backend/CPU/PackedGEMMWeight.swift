import CTorchKernels

/// A float32 weight packed once for the GEMM kernel's left operand (`ct_sgemm_pack_a`), kept on the weight's
/// storage while its contents and the ISA level stay the same.
///
/// Every GEMM packs its left operand into micro-panels before multiplying. For a convolution's weight that
/// operand is the same in every call of an inference loop, and packing it is a full read and write of the
/// weight: 9 % of ResNet-18's batch-1 forward, whose last stage packs 9.4 MB per convolution. ONNX Runtime
/// packs weights once when it loads a model; this does the same lazily, for weights used where no autograd
/// graph is recorded (training changes the weights every step, so packing stays per call there).
///
/// The Winograd path multiplies transformed filters instead (`Form.winogradFilters`): transforming and packing
/// them once is what lets Winograd win on the deep stages' small planes at batch 1 (`WinogradProblem`).
final class PackedGEMMWeight: @unchecked Sendable {
    /// What is packed.
    enum Form: Equatable {
        /// The weight as one `rows × cols` row-major matrix (a convolution's `[Cout, Cin·kernel]`).
        case matrix(rows: Int, cols: Int)
        /// `[Cout, Cin, 3, 3]` filters as Winograd's sixteen `Cout × Cin` planes U[ξ] = G·g·Gᵀ
        /// (`winogradTransformFilters`), each packed on its own: plane ξ starts at `pointer + ξ·Cout·Cin`.
        case winogradFilters(outChannels: Int, inChannels: Int)

        /// Floats the packed form takes.
        var count: Int {
            switch self {
            case let .matrix(rows, cols): return rows * cols
            case let .winogradFilters(outChannels, inChannels): return 16 * outChannels * inChannels
            }
        }
    }

    let pointer: UnsafeMutablePointer<Float>
    let form: Form
    private let offset: Int, version: Int
    private let isa: Int32

    private init(_ weight: Tensor, _ form: Form) {
        self.form = form
        offset = weight.storageOffset
        version = weight.storage.version
        isa = ct_isa_level()
        pointer = .allocate(capacity: form.count)
        let w = UnsafePointer(weight.pointer(Float.self))
        switch form {
        case let .matrix(rows, cols):
            ct_sgemm_pack_a(Int64(rows), Int64(cols), w, Int64(cols), 1, pointer)
        case let .winogradFilters(cout, cin):
            let planes = ScratchBuffer<Float>(count: form.count)
            winogradTransformFilters(w, filters: cout * cin, into: planes.pointer)
            for xi in 0..<16 {
                ct_sgemm_pack_a(Int64(cout), Int64(cin), planes.pointer + xi * cout * cin, Int64(cin), 1,
                                pointer + xi * cout * cin)
            }
            planes.free()
        }
    }

    deinit { pointer.deallocate() }

    /// Guards every storage's `preparedOperand` (two threads may run one model).
    private static let lock = PosixLock()

    /// `weight` (contiguous float32, laid out as `form` says) packed, from its storage's cache when still valid,
    /// or nil when a graph is being recorded through it (see the type's note). The cache holds one form: a weight
    /// used in two forms is packed again at each switch.
    static func lookup(_ weight: Tensor, _ form: Form) -> PackedGEMMWeight? {
        if GradMode.isEnabled && weight._requiresGrad { return nil }
        let storage = weight.storage
        return lock.withLock {
            if let cached = storage.preparedOperand as? PackedGEMMWeight, cached.form == form,
               cached.offset == weight.storageOffset, cached.version == storage.version, cached.isa == ct_isa_level() {
                return cached
            }
            let packed = PackedGEMMWeight(weight, form)
            storage.preparedOperand = packed
            return packed
        }
    }
}
