import CTorchKernels

/// The CPU kernels of the elementwise families (binary and unary math, comparisons, logical ops, `where`, fused
/// backward formulas, copies with conversion, fills); their CUDA twin is `CUDAElementwise`.
enum CPUElementwise {
    static func binary(_ op: BinaryOp, _ a: Tensor, _ b: Tensor, into out: Tensor) {
        let plan = StridedPlan(shape: out.shape, out.strides, a.dim == 0 ? nil : a.broadcastStrides(to: out.shape),
                               b.dim == 0 ? nil : b.broadcastStrides(to: out.shape))
        func floating<T: FloatElement>(_: T.Type) {
            let o = out.pointer(T.self), x = UnsafePointer(a.pointer(T.self)), y = UnsafePointer(b.pointer(T.self))
            switch op {
            case .add: binaryLoop(plan, o, x, y) { $0 + $1 }
            case .sub: binaryLoop(plan, o, x, y) { $0 - $1 }
            case .mul: binaryLoop(plan, o, x, y) { $0 * $1 }
            case .div: binaryLoop(plan, o, x, y) { $0 / $1 }
            case .maximum: binaryLoop(plan, o, x, y) { ($0.isNaN || $0 > $1) ? $0 : ($1.isNaN ? $1 : ($0 == $1 ? $0 : $1)) }
            case .minimum: binaryLoop(plan, o, x, y) { ($0.isNaN || $0 < $1) ? $0 : ($1.isNaN ? $1 : ($0 == $1 ? $0 : $1)) }
            case .pow: binaryLoop(plan, o, x, y) { T.pow($0, $1) }
            case .atan2: binaryLoop(plan, o, x, y) { T.atan2($0, $1) }
            case .fmod: binaryLoop(plan, o, x, y) { T.fmod($0, $1) }
            case .remainder:
                binaryLoop(plan, o, x, y) { a, b in
                    let r = T.fmod(a, b)
                    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r
                }
            case .floorDivide:
                // PyTorch's div_floor_floating: exact for a/b near integers, NaN for ±inf // finite.
                binaryLoop(plan, o, x, y) { a, b in
                    if b == 0 { return a / b }
                    let mod = T.fmod(a, b)
                    var div = (a - mod) / b
                    if mod != 0 && (b < 0) != (mod < 0) { div -= 1 }
                    if div == 0 { return (a / b).sign == .minus ? -0.0 : 0 }
                    var q = div.rounded(.down)
                    if div - q > 0.5 { q += 1 }
                    return q
                }
            }
        }
        func integer<T: NumericElement & FixedWidthInteger>(_: T.Type) {
            let o = out.pointer(T.self), x = UnsafePointer(a.pointer(T.self)), y = UnsafePointer(b.pointer(T.self))
            switch op {
            case .add: binaryLoop(plan, o, x, y) { $0 &+ $1 }
            case .sub: binaryLoop(plan, o, x, y) { $0 &- $1 }
            case .mul: binaryLoop(plan, o, x, y) { $0 &* $1 }
            case .maximum: binaryLoop(plan, o, x, y) { Swift.max($0, $1) }
            case .minimum: binaryLoop(plan, o, x, y) { Swift.min($0, $1) }
            case .pow:
                binaryLoop(plan, o, x, y) { base, e in
                    if e < 0 { return base == 1 ? 1 : 0 }
                    var r: T = 1, b = base, k = e
                    while k > 0 { if k & 1 == 1 { r = r &* b }; b = b &* b; k >>= 1 }
                    return r
                }
            case .remainder, .fmod, .floorDivide:
                precondition(!hasZero(b, T.self), "\(op.name): ZeroDivisionError (integer division by zero)")
                switch op {
                case .fmod: binaryLoop(plan, o, x, y) { $0 % $1 }
                case .remainder:
                    binaryLoop(plan, o, x, y) { a, b in
                        let r = a % b
                        return (r != 0 && (r < 0) != (b < 0)) ? r &+ b : r
                    }
                default:
                    binaryLoop(plan, o, x, y) { a, b in
                        let q = a / b
                        return (a % b != 0 && ((a < 0) != (b < 0))) ? q &- 1 : q
                    }
                }
            case .div, .atan2: preconditionFailure("\(op.name): integer inputs must be promoted to floating first")
            }
        }
        switch out.dtype {
        case .float32: floating(Float.self)
        case .float64: floating(Double.self)
        case .int64: integer(Int64.self)
        case .int32: integer(Int32.self)
        case .uint8: integer(UInt8.self)
        case .bool:
            let o = out.pointer(Bool.self), x = UnsafePointer(a.pointer(Bool.self)), y = UnsafePointer(b.pointer(Bool.self))
            switch op {
            case .add, .maximum: binaryLoop(plan, o, x, y) { $0 || $1 }
            case .mul, .minimum: binaryLoop(plan, o, x, y) { $0 && $1 }
            case .sub: preconditionFailure("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
            default: preconditionFailure("\(op.name): not implemented for 'Bool'")
            }
        case .float16, .bfloat16: preconditionFailure("\(op.name): half types compute in float32")
        }
    }

    private static func hasZero<T: NumericElement>(_ t: Tensor, _: T.Type) -> Bool {
        let c = t.contiguous()
        let p = c.pointer(T.self)
        for i in 0..<c.numel where p[i] == T.zeroValue { return true }
        return false
    }

    static func unary(_ op: UnaryOp, _ x: Tensor, into out: Tensor) {
        if out.dtype == .float32 && x.isContiguous && out.isContiguous {
            let n = Int64(x.numel)
            let src = UnsafePointer(x.pointer(Float.self)), dst = out.pointer(Float.self)
            let vector: ((UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int64) -> Void)?
            switch op {
            case .exp: vector = { ct_vexp_f32($0, $1, $2) }
            case .log: vector = { ct_vlog_f32($0, $1, $2) }
            case .tanh: vector = { ct_vtanh_f32($0, $1, $2) }
            case .sigmoid: vector = { ct_vsigmoid_f32($0, $1, $2) }
            default: vector = nil
            }
            if let vector {
                parallelFor(Int(n), grain: elementwiseGrain) { lo, hi in
                    vector(src + lo, dst + lo, Int64(hi - lo))
                }
                return
            }
        }
        let plan = StridedPlan(shape: out.shape, out.strides, x.strides, nil)
        func floating<T: FloatElement>(_: T.Type) {
            let o = out.pointer(T.self), a = UnsafePointer(x.pointer(T.self))
            switch op {
            case .abs: unaryLoop(plan, o, a) { Swift.abs($0) }
            case .neg: unaryLoop(plan, o, a) { -$0 }
            case .sign: unaryLoop(plan, o, a) { $0 > 0 ? 1 : ($0 < 0 ? -1 : 0) }
            case .relu: unaryLoop(plan, o, a) { $0 < 0 ? 0 : $0 }
            case .round: unaryLoop(plan, o, a) { T.rint($0) }
            case .floor: unaryLoop(plan, o, a) { $0.rounded(.down) }
            case .ceil: unaryLoop(plan, o, a) { $0.rounded(.up) }
            case .trunc: unaryLoop(plan, o, a) { $0.rounded(.towardZero) }
            case .frac: unaryLoop(plan, o, a) { $0 - $0.rounded(.towardZero) }
            case .square: unaryLoop(plan, o, a) { $0 * $0 }
            case .sqrt: unaryLoop(plan, o, a) { $0.squareRoot() }
            case .rsqrt: unaryLoop(plan, o, a) { 1 / $0.squareRoot() }
            case .exp: unaryLoop(plan, o, a) { T.exp($0) }
            case .log: unaryLoop(plan, o, a) { T.log($0) }
            case .log1p: unaryLoop(plan, o, a) { T.log1p($0) }
            case .expm1: unaryLoop(plan, o, a) { T.expm1($0) }
            case .log2: unaryLoop(plan, o, a) { T.log($0) * (1 / T.log(2)) }
            case .log10: unaryLoop(plan, o, a) { T.log($0) * (1 / T.log(10)) }
            case .sin: unaryLoop(plan, o, a) { T.sin($0) }
            case .cos: unaryLoop(plan, o, a) { T.cos($0) }
            case .tan: unaryLoop(plan, o, a) { T.tan($0) }
            case .asin: unaryLoop(plan, o, a) { T.asin($0) }
            case .acos: unaryLoop(plan, o, a) { T.acos($0) }
            case .atan: unaryLoop(plan, o, a) { T.atan($0) }
            case .sinh: unaryLoop(plan, o, a) { T.sinh($0) }
            case .cosh: unaryLoop(plan, o, a) { T.cosh($0) }
            case .tanh: unaryLoop(plan, o, a) { T.tanh($0) }
            case .sigmoid: unaryLoop(plan, o, a) { 1 / (1 + T.exp(-$0)) }
            case .reciprocal: unaryLoop(plan, o, a) { 1 / $0 }
            case .erf: unaryLoop(plan, o, a) { T.erf($0) }
            }
        }
        func integer<T: NumericElement & FixedWidthInteger>(_: T.Type) {
            let o = out.pointer(T.self), a = UnsafePointer(x.pointer(T.self))
            switch op {
            case .abs: unaryLoop(plan, o, a) { $0 < T.zeroValue ? T.zeroValue &- $0 : $0 }
            case .neg: unaryLoop(plan, o, a) { T.zeroValue &- $0 }
            case .sign: unaryLoop(plan, o, a) { $0 > T.zeroValue ? 1 : ($0 < T.zeroValue ? T.zeroValue &- 1 : 0) }
            case .relu: unaryLoop(plan, o, a) { $0 > T.zeroValue ? $0 : 0 }
            case .square: unaryLoop(plan, o, a) { $0 &* $0 }
            case .round, .floor, .ceil, .trunc: unaryLoop(plan, o, a) { $0 }
            default: preconditionFailure("unary op \(op) is computed in floating point for integer inputs")
            }
        }
        switch out.dtype {
        case .float32: floating(Float.self)
        case .float64: floating(Double.self)
        case .int64: integer(Int64.self)
        case .int32: integer(Int32.self)
        case .uint8: integer(UInt8.self)
        case .bool: preconditionFailure("unary ops on bool are copies")
        case .float16, .bfloat16: preconditionFailure("unary ops compute half types in float32")
        }
    }

    @inline(__always)
    static func fusedBinary<Formula: FusedBinaryFormula>(_ a: Tensor, _ bb: Tensor, with param: Double, into out: Tensor,
                                                         _: Formula.Type) {
        let plan = StridedPlan(shape: out.shape, out.strides, a.broadcastStrides(to: out.shape), bb.broadcastStrides(to: out.shape))
        if out.dtype == .float32 {
            binaryLoop(plan, out.pointer(Float.self), UnsafePointer(a.pointer(Float.self)), UnsafePointer(bb.pointer(Float.self)),
                       with: Float(param)) { Formula.apply($0, $1, $2) }
        } else {
            binaryLoop(plan, out.pointer(Double.self), UnsafePointer(a.pointer(Double.self)), UnsafePointer(bb.pointer(Double.self)),
                       with: param) { Formula.apply($0, $1, $2) }
        }
    }

    static func compare(_ op: CompareOp, _ x: Tensor, _ y: Tensor, into out: Tensor) {
        // a > b is b < a and a >= b is b <= a (NaN included: all four are false), so only four ops get loops.
        if op == .gt || op == .ge { return compare(op == .gt ? .lt : .le, y, x, into: out) }
        let plan = StridedPlan(shape: out.shape, out.strides, x.broadcastStrides(to: out.shape), y.broadcastStrides(to: out.shape))
        func run<T: Comparable>(_: T.Type) {
            let o = out.pointer(Bool.self), p = UnsafePointer(x.pointer(T.self)), q = UnsafePointer(y.pointer(T.self))
            switch op {
            case .eq: binaryLoop(plan, o, p, q) { $0 == $1 }
            case .ne: binaryLoop(plan, o, p, q) { $0 != $1 }
            case .lt: binaryLoop(plan, o, p, q) { $0 < $1 }
            case .le: binaryLoop(plan, o, p, q) { $0 <= $1 }
            case .gt, .ge: preconditionFailure("compare: \(op) runs as its swapped twin")
            }
        }
        switch x.dtype {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        case .int64: run(Int64.self)
        case .int32: run(Int32.self)
        case .uint8: run(UInt8.self)
        case .bool: compare(op, x.to(.uint8), y.to(.uint8), into: out)   // false < true
        case .float16, .bfloat16: preconditionFailure("compare: unreachable")
        }
    }

    @inline(__always)
    static func logical(_ x: Tensor, _ y: Tensor, into out: Tensor, _ f: (Bool, Bool) -> Bool) {
        let plan = StridedPlan(shape: out.shape, out.strides, x.broadcastStrides(to: out.shape), y.broadcastStrides(to: out.shape))
        binaryLoop(plan, out.pointer(Bool.self), UnsafePointer(x.pointer(Bool.self)), UnsafePointer(y.pointer(Bool.self)), f)
    }

    static func `where`(_ cond: Tensor, _ x: Tensor, _ y: Tensor, into out: Tensor) {
        func run<T>(_: T.Type) {
            ternaryLoop(out.shape, (out.pointer(T.self), out.strides),
                        (UnsafePointer(cond.pointer(Bool.self)), cond.broadcastStrides(to: out.shape)),
                        (UnsafePointer(x.pointer(T.self)), x.broadcastStrides(to: out.shape)),
                        (UnsafePointer(y.pointer(T.self)), y.broadcastStrides(to: out.shape))) { c, p, q in c ? p : q }
        }
        switch out.dtype.itemSize {
        case 1: run(UInt8.self)
        case 4: run(UInt32.self)
        default: run(UInt64.self)
        }
    }

    /// Copies `src` (broadcastable to `dst`) into `dst`, converting element types.
    static func copy(from src: Tensor, into dst: Tensor) {
        let plan = StridedPlan(shape: dst.shape, dst.strides, src.broadcastStrides(to: dst.shape), nil)
        if src.dtype == dst.dtype {
            // Bit copy by element size.
            func move<T>(_: T.Type) {
                binaryLoop(plan, dst.pointer(T.self), UnsafePointer(src.pointer(T.self)), UnsafePointer(src.pointer(T.self))) { a, _ in a }
            }
            switch dst.dtype.itemSize {
            case 1: move(UInt8.self)
            case 2: move(UInt16.self)
            case 4: move(UInt32.self)
            default: move(UInt64.self)
            }
            return
        }
        func from<S: StorableElement>(_: S.Type) {
            func to<D: StorableElement>(_: D.Type) {
                unaryLoop(plan, dst.pointer(D.self), UnsafePointer(src.pointer(S.self))) { convertElement($0, to: D.self) }
            }
            switch dst.dtype {
            case .float32: to(Float.self)
            case .float64: to(Double.self)
            case .float16: to(Float16.self)
            case .bfloat16: to(BFloat16.self)
            case .int64: to(Int64.self)
            case .int32: to(Int32.self)
            case .uint8: to(UInt8.self)
            case .bool: to(Bool.self)
            }
        }
        switch src.dtype {
        case .float32: from(Float.self)
        case .float64: from(Double.self)
        case .float16: from(Float16.self)
        case .bfloat16: from(BFloat16.self)
        case .int64: from(Int64.self)
        case .int32: from(Int32.self)
        case .uint8: from(UInt8.self)
        case .bool: from(Bool.self)
        }
    }

    /// Writes `value` (converted to the tensor's dtype) into every element of `dst`.
    static func fill(_ dst: Tensor, _ value: Double) {
        let plan = StridedPlan(shape: dst.shape, dst.strides, nil, nil)
        func fillAll<T: StorableElement>(_: T.Type) {
            let v = T.from(double: value)
            let p = dst.pointer(T.self)
            let (s0, _, _) = plan.innerStrides
            plan.parallelRows { n, o0, _, _ in
                let q = p + o0
                if s0 == 1 { for i in 0..<n { q[i] = v } } else { for i in 0..<n { q[i &* s0] = v } }
            }
        }
        switch dst.dtype {
        case .float32: fillAll(Float.self)
        case .float64: fillAll(Double.self)
        case .float16: fillAll(Float16.self)
        case .bfloat16: fillAll(BFloat16.self)
        case .int64:
            // Integers beyond 2^53 keep their exact value.
            let v = Int64(exactly: value) ?? saturatingInt64(value)
            fillInteger(dst, plan, v)
        case .int32: fillAll(Int32.self)
        case .uint8: fillAll(UInt8.self)
        case .bool: fillAll(Bool.self)
        }
    }

    /// A 0-dim CPU tensor holding `v` (a Swift number operand).
    @inline(__always) static func scalar<T: TensorScalar>(_ v: T) -> Tensor {
        let t = Tensor(uninitializedShape: [], dtype: T.dtype)
        t.pointer(T.self).pointee = v
        return t
    }

    /// The int64 element at storage offset `offset` of a CPU tensor (`item(as: Int.self)`).
    @inline(__always) static func int64(atOffset offset: Int, of t: Tensor) -> Int64 {
        t.storage.data.assumingMemoryBound(to: Int64.self)[offset]
    }

    /// Zeroes every byte of a fresh contiguous tensor (`zeros`).
    static func zeroContiguous(_ t: Tensor) {
        t.storage.data.initializeMemory(as: UInt8.self, repeating: 0, count: t.numel * t.dtype.itemSize)
    }

    private static func fillInteger(_ dst: Tensor, _ plan: StridedPlan, _ v: Int64) {
        let p = dst.pointer(Int64.self)
        let (s0, _, _) = plan.innerStrides
        plan.parallelRows { n, o0, _, _ in
            for i in 0..<n { p[o0 + i &* s0] = v }
        }
    }

    /// Zeroes the part of `out` (contiguous) outside the triangle that `tril`/`triu` keep.
    static func zeroTriangle(_ out: Tensor, diagonal k: Int, lower: Bool) {
        let rows = out.shape[out.dim - 2], cols = out.shape[out.dim - 1]
        let planes = rows * cols == 0 ? 0 : out.numel / (rows * cols)
        func zero<T: FixedWidthInteger>(_: T.Type) {
            let p = out.pointer(T.self)
            parallelFor(planes * rows, grain: Swift.max(1, elementwiseGrain / Swift.max(cols, 1))) { lo, hi in
                for r in lo..<hi {
                    let i = r % rows
                    let row = p + r * cols
                    // Zeroed columns: lower keeps j <= i + k, upper keeps j >= i + k.
                    let (a, b) = lower ? (Swift.min(Swift.max(i + k + 1, 0), cols), cols) : (0, Swift.min(Swift.max(i + k, 0), cols))
                    if a < b { for j in a..<b { row[j] = 0 } }
                }
            }
        }
        switch out.dtype.itemSize {
        case 1: zero(UInt8.self)
        case 2: zero(UInt16.self)
        case 4: zero(UInt32.self)
        default: zero(UInt64.self)
        }
    }
}
