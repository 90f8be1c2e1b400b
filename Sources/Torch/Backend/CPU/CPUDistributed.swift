/// Host loops of the distributed package (`GradientReducer`'s bucket copies); the collectives themselves run in
/// MPI or in `SharedMemoryAllReduce`.
enum CPUDistributed {
    /// `dst[offset ..< offset + grad.numel] = grad · scale` over contiguous float32 or float64 memory of one dtype
    /// (`grad` may be that very slot). Returns false, doing nothing, for any other layout, which the caller then
    /// copies with tensor ops.
    static func copyScaled(_ grad: Tensor, into dst: Tensor, at offset: Int, scale: Double) -> Bool {
        guard grad.isContiguous && grad.dtype == dst.dtype else { return false }
        let n = grad.numel
        switch grad.dtype {
        case .float32:
            let s = Float(scale)
            let from = grad.pointer(Float.self), to = dst.pointer(Float.self) + offset
            for j in 0..<n { to[j] = from[j] * s }
        case .float64:
            let from = grad.pointer(Double.self), to = dst.pointer(Double.self) + offset
            for j in 0..<n { to[j] = from[j] * scale }
        default:
            return false
        }
        return true
    }
}
