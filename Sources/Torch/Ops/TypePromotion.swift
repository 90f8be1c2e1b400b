/// PyTorch's result-type rules (`torch.result_type`): dimensioned tensors outrank 0-d tensors,
/// which outrank Swift numbers; a lower-priority operand changes the result only when it is of a
/// higher category (bool < integer < floating).
func resultType(_ operands: [Tensor]) -> DType {
    var dimResult: DType?
    var zeroResult: DType?
    var wrappedResult: DType?
    func merge(_ acc: DType?, _ d: DType) -> DType { acc.map { DType.promote($0, d) } ?? d }
    for t in operands {
        if t.isWrappedNumber {
            let d: DType = t.dtype.isFloatingPoint ? torch.defaultDType : (t.dtype == .bool ? .bool : .int64)
            wrappedResult = merge(wrappedResult, d)
        } else if t.dim == 0 {
            zeroResult = merge(zeroResult, t.dtype)
        } else {
            dimResult = merge(dimResult, t.dtype)
        }
    }
    return combineCategories(dimResult, combineCategories(zeroResult, wrappedResult)) ?? torch.defaultDType
}

@inline(__always) func resultType(_ a: Tensor, _ b: Tensor) -> DType {
    if a.dtype == b.dtype { return a.dtype }
    return resultType([a, b])
}

private func combineCategories(_ higher: DType?, _ lower: DType?) -> DType? {
    guard let h = higher else { return lower }
    guard let l = lower else { return h }
    if h.isFloatingPoint { return h }
    if h == .bool || l.isFloatingPoint { return DType.promote(h, l) }
    return h
}

extension Tensor {
    /// A 0-d tensor holding a Swift number operand.
    static func wrappedNumber(_ v: Double, isFloating: Bool) -> Tensor {
        let t = isFloating ? CPUElementwise.scalar(v) : CPUElementwise.scalar(Int64(v))
        t.isWrappedNumber = true
        return t
    }

    static func wrappedNumber(_ v: Int) -> Tensor {
        let t = CPUElementwise.scalar(Int64(v))
        t.isWrappedNumber = true
        return t
    }

    static func wrappedNumber(_ v: Bool) -> Tensor {
        let t = CPUElementwise.scalar(v)
        t.isWrappedNumber = true
        return t
    }
}
