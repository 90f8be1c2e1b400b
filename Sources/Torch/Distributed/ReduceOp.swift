import CMPIShim

extension dist {
    /// How `allReduce`, `reduce` and `reduceScatter` combine the ranks' values (PyTorch's `ReduceOp`).
    public enum ReduceOp: String, Sendable, CaseIterable {
        /// Sum (`ReduceOp.SUM`); logical or on Bool tensors.
        case sum
        /// Product (`ReduceOp.PRODUCT`); logical and on Bool tensors.
        case product
        /// Elementwise minimum (`ReduceOp.MIN`).
        case min
        /// Elementwise maximum (`ReduceOp.MAX`).
        case max
        /// Mean over the ranks (`ReduceOp.AVG`); floating-point tensors only.
        case avg

        /// The MPI operator for `dtype` (avg is a sum divided afterwards).
        func mpiOp(for dtype: DType) -> stmpi_op_t {
            if dtype == .bool {
                switch self {
                case .sum, .max: return STMPI_LOR
                case .product, .min: return STMPI_LAND
                case .avg: preconditionFailure("ReduceOp.AVG is not supported for Bool tensors")
                }
            }
            switch self {
            case .sum, .avg: return STMPI_SUM
            case .product: return STMPI_PROD
            case .min: return STMPI_MIN
            case .max: return STMPI_MAX
            }
        }
    }
}
