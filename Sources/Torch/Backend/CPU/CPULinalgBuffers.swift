/// Host buffers for the CPU `torch.linalg` kernels (`LinalgKernels`, the eigen kernels): each matrix of a
/// (…, rows, cols) batch as one contiguous Double buffer, because the kernels work in float64 on one dense
/// matrix at a time whatever the input dtype. `torch.linalg` has no CUDA twin yet, so its entry points in
/// `Ops/Linalg*.swift` call these directly; a CUDA backend would add its own buffers next to its kernels.

/// A (…, rows, cols) tensor as a contiguous Double buffer, one matrix after another.
struct MatrixBatch {
    let data: Tensor
    let batchShape: [Int]
    let rows: Int
    let cols: Int
    let count: Int

    init(_ a: Tensor) {
        data = torch.noGrad { a.to(.float64).contiguous() }
        batchShape = Array(a.shape.dropLast(2))
        rows = a.shape[a.dim - 2]
        cols = a.shape[a.dim - 1]
        count = shapeNumel(batchShape)
    }

    func matrix(_ i: Int) -> UnsafePointer<Double> {
        UnsafePointer(data.pointer(Double.self) + i * rows * cols)
    }
}

/// A new contiguous float64 tensor and its element pointer.
func doubleBuffer(_ shape: [Int]) -> (Tensor, UnsafeMutablePointer<Double>) {
    let t = Tensor(uninitializedShape: shape, dtype: .float64)
    return (t, t.pointer(Double.self))
}
