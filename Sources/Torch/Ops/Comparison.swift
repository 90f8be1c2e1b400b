/// Elementwise comparisons (`.== .!= .< .<= .> .>=` → Bool tensors), logical ops, `where`,
/// `isnan`/`isinf`/`isfinite`, `equal` and `allclose`.
enum CompareOp: Int, CaseIterable {
    case eq, ne, lt, le, gt, ge

    var name: String {
        switch self {
        case .eq: return "eq"
        case .ne: return "ne"
        case .lt: return "lt"
        case .le: return "le"
        case .gt: return "gt"
        case .ge: return "ge"
        }
    }
}

/// `op(a, b)` as a Bool tensor, comparing in the promoted type.
func compare(_ op: CompareOp, _ a: Tensor, _ b: Tensor) -> Tensor {
    if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.compare(op), [a, b], { compare(op, a, b) }) { return r }
    let dt = resultType(a, b).computeType
    let shape = a.shape == b.shape ? a.shape : broadcastShapes(a.shape, b.shape, op: op.name)
    let device = commonDevice(a, b)
    let out = Tensor(uninitializedShape: shape, dtype: .bool, device: device)
    let x = a.to(dt), y = b.to(dt)
    switch device {
    case .cpu: CPUElementwise.compare(op, x, y, into: out)
    case .cuda: CUDAElementwise.launch(.compare(op, dt), out: out, x, y)
    }
    return out
}

/// Logical combination of two tensors (nonzero = true) → Bool tensor (`f`: a capture-free literal).
@inline(__always)
func logical(_ a: Tensor, _ b: Tensor, op: String, _ f: (Bool, Bool) -> Bool) -> Tensor {
    let x = a.to(.bool), y = b.to(.bool)
    let shape = broadcastShapes(x.shape, y.shape, op: op)
    let device = commonDevice(x, y)
    let out = Tensor(uninitializedShape: shape, dtype: .bool, device: device)
    switch device {
    case .cpu: CPUElementwise.logical(x, y, into: out, f)
    case .cuda:
        // Both are bool here, so `and`/`or`/`xor` of nonzero values are the integer ops on bools.
        let which: TernaryOp = f(true, false) ? (f(true, true) ? .logicalOr : .logicalXor) : .logicalAnd
        CUDAElementwise.launch(.ternary(which, .bool), out: out, x, y)
    }
    return out
}

infix operator .== : ComparisonPrecedence
infix operator .!= : ComparisonPrecedence
infix operator .< : ComparisonPrecedence
infix operator .<= : ComparisonPrecedence
infix operator .> : ComparisonPrecedence
infix operator .>= : ComparisonPrecedence

extension Tensor {
    public static func .== (a: Tensor, b: Tensor) -> Tensor { compare(.eq, a, b) }
    public static func .!= (a: Tensor, b: Tensor) -> Tensor { compare(.ne, a, b) }
    public static func .< (a: Tensor, b: Tensor) -> Tensor { compare(.lt, a, b) }
    public static func .<= (a: Tensor, b: Tensor) -> Tensor { compare(.le, a, b) }
    public static func .> (a: Tensor, b: Tensor) -> Tensor { compare(.gt, a, b) }
    public static func .>= (a: Tensor, b: Tensor) -> Tensor { compare(.ge, a, b) }
    public static func .== (a: Tensor, b: Double) -> Tensor { compare(.eq, a, scalarOperand(b)) }
    public static func .!= (a: Tensor, b: Double) -> Tensor { compare(.ne, a, scalarOperand(b)) }
    public static func .< (a: Tensor, b: Double) -> Tensor { compare(.lt, a, scalarOperand(b)) }
    public static func .<= (a: Tensor, b: Double) -> Tensor { compare(.le, a, scalarOperand(b)) }
    public static func .> (a: Tensor, b: Double) -> Tensor { compare(.gt, a, scalarOperand(b)) }
    public static func .>= (a: Tensor, b: Double) -> Tensor { compare(.ge, a, scalarOperand(b)) }

    public func eq(_ other: Tensor) -> Tensor { self .== other }
    public func ne(_ other: Tensor) -> Tensor { self .!= other }
    public func lt(_ other: Tensor) -> Tensor { self .< other }
    public func le(_ other: Tensor) -> Tensor { self .<= other }
    public func gt(_ other: Tensor) -> Tensor { self .> other }
    public func ge(_ other: Tensor) -> Tensor { self .>= other }
    public func eq(_ other: Double) -> Tensor { self .== other }
    public func ne(_ other: Double) -> Tensor { self .!= other }
    public func lt(_ other: Double) -> Tensor { self .< other }
    public func le(_ other: Double) -> Tensor { self .<= other }
    public func gt(_ other: Double) -> Tensor { self .> other }
    public func ge(_ other: Double) -> Tensor { self .>= other }

    /// Elementwise AND of truth values.
    public func logicalAnd(_ other: Tensor) -> Tensor { logical(self, other, op: "logical_and") { $0 && $1 } }
    /// Elementwise OR of truth values.
    public func logicalOr(_ other: Tensor) -> Tensor { logical(self, other, op: "logical_or") { $0 || $1 } }
    /// Elementwise XOR of truth values.
    public func logicalXor(_ other: Tensor) -> Tensor { logical(self, other, op: "logical_xor") { $0 != $1 } }
    /// Elementwise NOT of truth values.
    public func logicalNot() -> Tensor { logical(self, self, op: "logical_not") { a, _ in !a } }

    /// Bitwise ops on Bool tensors (`mask1 & mask2`, `~mask`), as PyTorch allows.
    public static func & (a: Tensor, b: Tensor) -> Tensor { checkBoolOperands("&", a, b); return a.logicalAnd(b) }
    public static func | (a: Tensor, b: Tensor) -> Tensor { checkBoolOperands("|", a, b); return a.logicalOr(b) }
    public static func ^ (a: Tensor, b: Tensor) -> Tensor { checkBoolOperands("^", a, b); return a.logicalXor(b) }
    public static prefix func ~ (a: Tensor) -> Tensor {
        precondition(a.dtype == .bool, "bitwise_not (~): only implemented for Bool tensors in SwiftTorch (got \(a.dtype))")
        return a.logicalNot()
    }

    private static func checkBoolOperands(_ op: String, _ a: Tensor, _ b: Tensor) {
        precondition(a.dtype == .bool && b.dtype == .bool,
                     "bitwise operator \(op): only implemented for Bool tensors in SwiftTorch (got \(a.dtype) and \(b.dtype))")
    }

    public func isnan() -> Tensor { self .!= self }
    public func isinf() -> Tensor { dtype.isFloatingPoint ? abs() .== Double.infinity : torch.zerosLike(self, dtype: .bool) }
    public func isfinite() -> Tensor { dtype.isFloatingPoint ? (self .== self) & (abs() .!= Double.infinity) : torch.onesLike(self, dtype: .bool) }

    /// True when shapes and all values are equal.
    public func equal(_ other: Tensor) -> Bool {
        shape == other.shape && (self .== other).all().item() != 0
    }

    /// `|a - b| <= atol + rtol * |b|` everywhere (NaNs equal when `equalNan`).
    public func allclose(_ other: Tensor, rtol: Double = 1e-5, atol: Double = 1e-8, equalNan: Bool = false) -> Bool {
        isclose(other, rtol: rtol, atol: atol, equalNan: equalNan).all().item() != 0
    }

    /// Elementwise closeness test.
    public func isclose(_ other: Tensor, rtol: Double = 1e-5, atol: Double = 1e-8, equalNan: Bool = false) -> Tensor {
        torch.noGrad {
            let a = self.double(), b = other.double()
            // As PyTorch: equal, or a finite error within tolerance (so -inf vs inf is not close).
            let err = (a - b).abs()
            var close = (a .== b) | (err.isfinite() & (err .<= (b.abs() * rtol + atol)))
            if equalNan { close = close | (a.isnan() & b.isnan()) }
            return close
        }
    }
}

extension torch {
    /// Picks `a` where `condition` is true, else `b` (broadcasting all three).
    public static func `where`(_ condition: Tensor, _ a: Tensor, _ b: Tensor) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.where, [condition, a, b], { torch.where(condition, a, b) }) { return r }
        let cond = condition.to(.bool)
        let dt = resultType(a, b)
        let shape = broadcastShapes(broadcastShapes(cond.shape, a.shape, op: "where"), b.shape, op: "where")
        let x = a.to(dt.computeType), y = b.to(dt.computeType)
        let out = Tensor(uninitializedShape: shape, dtype: dt.computeType, device: commonDevice(commonDevice(cond, x) == x.device ? x : cond, y))
        switch out.device {
        case .cpu: CPUElementwise.where(cond, x, y, into: out)
        case .cuda:
            precondition(cond.device == out.device || (cond.device == .cpu && cond.dim == 0), sameDeviceMessage(out.device, cond.device))
            CUDAElementwise.launch(.ternary(.where, out.dtype), out: out, cond, x, y)
        }
        return recordWhere(cond, a, b, out.to(dt))
    }

    /// Records `WhereBackward0` for `result = where(cond, a, b)` when a or b needs a gradient.
    private static func recordWhere(_ cond: Tensor, _ a: Tensor, _ b: Tensor, _ result: Tensor) -> Tensor {
        if anyNeedsGrad(a, b) {
            let sc = SavedTensor(cond)
            let aShape = a.shape, bShape = b.shape
            record("WhereBackward0", result, inputs: [a, b], saved: { [.tensor("condition", sc)] }) { node, g in
                let c = sc.unpack(node)
                let z = torch.zerosLike(g)
                return [torch.where(c, g, z).sumToSize(aShape), torch.where(c, z, g).sumToSize(bShape)]
            }
        }
        return result
    }

    public static func `where`(_ condition: Tensor, _ a: Tensor, _ b: Double) -> Tensor {
        torch.where(condition, a, Tensor.scalarOperand(b))
    }
    public static func `where`(_ condition: Tensor, _ a: Double, _ b: Tensor) -> Tensor {
        torch.where(condition, Tensor.scalarOperand(a), b)
    }

    public static func eq(_ a: Tensor, _ b: Tensor) -> Tensor { a .== b }
    public static func ne(_ a: Tensor, _ b: Tensor) -> Tensor { a .!= b }
    public static func lt(_ a: Tensor, _ b: Tensor) -> Tensor { a .< b }
    public static func le(_ a: Tensor, _ b: Tensor) -> Tensor { a .<= b }
    public static func gt(_ a: Tensor, _ b: Tensor) -> Tensor { a .> b }
    public static func ge(_ a: Tensor, _ b: Tensor) -> Tensor { a .>= b }
    public static func logicalAnd(_ a: Tensor, _ b: Tensor) -> Tensor { a.logicalAnd(b) }
    public static func logicalOr(_ a: Tensor, _ b: Tensor) -> Tensor { a.logicalOr(b) }
    public static func logicalXor(_ a: Tensor, _ b: Tensor) -> Tensor { a.logicalXor(b) }
    public static func logicalNot(_ a: Tensor) -> Tensor { a.logicalNot() }
    public static func isnan(_ a: Tensor) -> Tensor { a.isnan() }
    public static func isinf(_ a: Tensor) -> Tensor { a.isinf() }
    public static func isfinite(_ a: Tensor) -> Tensor { a.isfinite() }
    public static func equal(_ a: Tensor, _ b: Tensor) -> Bool { a.equal(b) }
    public static func allclose(_ a: Tensor, _ b: Tensor, rtol: Double = 1e-5, atol: Double = 1e-8, equalNan: Bool = false) -> Bool {
        a.allclose(b, rtol: rtol, atol: atol, equalNan: equalNan)
    }
    public static func isclose(_ a: Tensor, _ b: Tensor, rtol: Double = 1e-5, atol: Double = 1e-8, equalNan: Bool = false) -> Tensor {
        a.isclose(b, rtol: rtol, atol: atol, equalNan: equalNan)
    }
}
