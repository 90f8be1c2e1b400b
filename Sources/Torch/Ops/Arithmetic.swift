/// Binary arithmetic with broadcasting, type promotion and autograd: + - * / pow maximum minimum
/// atan2 remainder fmod floorDivide, their operators, scalar operands on either side, and the
/// in-place forms.

/// The pointwise binary operations that share one kernel dispatch.
enum BinaryOp: Int, CaseIterable {
    case add, sub, mul, div, maximum, minimum, pow, atan2, remainder, fmod, floorDivide

    var name: String {
        switch self {
        case .add: return "add"
        case .sub: return "sub"
        case .mul: return "mul"
        case .div: return "div"
        case .maximum: return "maximum"
        case .minimum: return "minimum"
        case .pow: return "pow"
        case .atan2: return "atan2"
        case .remainder: return "remainder"
        case .fmod: return "fmod"
        case .floorDivide: return "floor_divide"
        }
    }

    /// Ops whose integer inputs give a floating result.
    var promotesIntegersToFloat: Bool {
        switch self {
        case .div, .atan2: return true
        default: return false
        }
    }
}

/// Runs `op` elementwise into `out` (already shaped to the broadcast shape, dtype = compute type).
/// `a` and `b` must already have `out.dtype`; either may be a CPU 0-dim scalar joining a CUDA op.
func binaryKernel(_ op: BinaryOp, _ a: Tensor, _ b: Tensor, into out: Tensor) {
    if out.dtype == .bool && op == .sub {
        preconditionFailure("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
    }
    let device = commonDevice(a, b)
    if _slowPath(device != out.device) { preconditionFailure(sameDeviceMessage(out.device, device)) }
    switch device {
    case .cpu: CPUElementwise.binary(op, a, b, into: out)
    case .cuda: CUDAElementwise.launch(.binary(op, out.dtype), out: out, a, b)
    }
}

/// Computes `op(a, b)` with broadcasting and promotion, without autograd.
func binaryForward(_ op: BinaryOp, _ a: Tensor, _ b: Tensor) -> Tensor {
    var dt = resultType(a, b)
    if op.promotesIntegersToFloat && !dt.isFloatingPoint { dt = torch.defaultDType }
    let compute = dt.computeType
    let shape = a.shape == b.shape ? a.shape : broadcastShapes(a.shape, b.shape, op: op.name)
    let out = Tensor(uninitializedShape: shape, dtype: compute, device: commonDevice(a, b))
    binaryKernel(op, a.to(compute), b.to(compute), into: out)
    return compute == dt ? out : out.to(dt)
}

extension Tensor {
    /// Reduces a broadcast gradient back to `shape` by summing over the broadcast dims.
    func sumToSize(_ target: [Int]) -> Tensor {
        if shape == target { return self }
        let lead = dim - target.count
        var dims: [Int] = Array(0..<Swift.max(lead, 0))
        for (i, s) in target.enumerated() where s == 1 && shape[i + lead] != 1 { dims.append(i + lead) }
        var r = dims.isEmpty ? self : sum(dim: dims, keepdim: true)
        if lead > 0 { r = r.reshape(target) }
        return r
    }
}

// MARK: - Differentiable binary ops

/// Gradient formulas of the binary ops, in terms of tensor ops (so they support create_graph).
private func binaryBackward(_ op: BinaryOp, _ node: FunctionNode, _ g: Tensor,
                            _ sa: SavedTensor?, _ sb: SavedTensor?, _ so: SavedTensor?,
                            _ aShape: [Int], _ bShape: [Int], _ aType: DType, _ bType: DType,
                            _ needA: Bool, _ needB: Bool) -> [Tensor?] {
    var ga: Tensor? = nil, gb: Tensor? = nil
    switch op {
    case .add:
        ga = needA ? g : nil; gb = needB ? g : nil
    case .sub:
        ga = needA ? g : nil; gb = needB ? -g : nil
    case .mul:
        if needA { ga = g * sb!.unpack(node) }
        if needB { gb = g * sa!.unpack(node) }
    case .div:
        let b = sb!.unpack(node)
        if needA { ga = g / b }
        if needB { gb = -g * sa!.unpack(node) / (b * b) }
    case .pow:
        let a = sa!.unpack(node), b = sb!.unpack(node)
        if needA { ga = torch.where(b .== 0, torch.zerosLike(g), g * b * a.pow(b - 1)) }
        if needB {
            let out = so!.unpack(node)
            gb = torch.where((a .== 0) & (b .>= 0), torch.zerosLike(g), g * out * a.log())
        }
    case .maximum, .minimum:
        let a = sa!.unpack(node), b = sb!.unpack(node)
        let pick = op == .maximum ? (a .> b) : (a .< b)
        let tie = (a .== b).to(g.dtype) * 0.5
        let wa = pick.to(g.dtype) + tie
        if needA { ga = g * wa }
        if needB { gb = g * (1 - wa) }
    case .atan2:
        let a = sa!.unpack(node), b = sb!.unpack(node)
        let denom = a * a + b * b
        if needA { ga = g * b / denom }
        if needB { gb = -g * a / denom }
    case .remainder, .fmod:
        ga = needA ? g : nil
        if needB {
            let a = sa!.unpack(node), b = sb!.unpack(node)
            let q = op == .fmod ? (a / b).trunc() : (a / b).floor()
            gb = -g * q
        }
    case .floorDivide:
        ga = needA ? torch.zerosLike(g) : nil; gb = needB ? torch.zerosLike(g) : nil
    }
    return [ga.map { $0.sumToSize(aShape).to(aType) }, gb.map { $0.sumToSize(bShape).to(bType) }]
}

private func nodeName(_ op: BinaryOp) -> String {
    switch op {
    case .add: return "AddBackward0"
    case .sub: return "SubBackward0"
    case .mul: return "MulBackward0"
    case .div: return "DivBackward0"
    case .maximum: return "MaximumBackward0"
    case .minimum: return "MinimumBackward0"
    case .pow: return "PowBackward1"
    case .atan2: return "Atan2Backward0"
    case .remainder: return "RemainderBackward0"
    case .fmod: return "FmodBackward0"
    case .floorDivide: return "FloorDivideBackward0"
    }
}

/// The `_saved_` attributes PyTorch's node for `op` has (see `SavedAttribute`).
private func binarySavedAttributes(_ op: BinaryOp, _ scalarBase: Bool, _ sa: SavedTensor?, _ sb: SavedTensor?,
                                   _ so: SavedTensor?) -> (() -> [SavedAttribute])? {
    switch op {
    case .add, .sub: return { [.int("alpha", 1)] }
    case .floorDivide: return nil
    case .pow where scalarBase:
        return { [.tensor("exponent", sb), .tensor("result", so), .scalar("self", sa.map { $0.tensor.item() } ?? 0)] }
    case .pow: return { [.tensor("exponent", sb), .tensor("result", so), .tensor("self", sa)] }
    case .mul, .div, .maximum, .minimum, .atan2, .remainder, .fmod:
        return { [.tensor("other", sb), .tensor("self", sa)] }
    }
}

/// `op(a, b)` with autograd.
func binary(_ op: BinaryOp, _ a: Tensor, _ b: Tensor) -> Tensor {
    if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.binary(op), [a, b], { binary(op, a, b) }) { return r }
    let out = binaryForward(op, a, b)
    if anyNeedsGrad(a, b) && out.dtype.isFloatingPoint {
        let needA = a._requiresGrad, needB = b._requiresGrad
        let savesInputs: Bool
        switch op {
        case .add, .sub, .floorDivide: savesInputs = false
        default: savesInputs = true
        }
        // Like PyTorch, mul and div keep `self` only for `other`'s gradient, and mul keeps `other`
        // only for `self`'s.
        let sa = savesInputs && (needB || (op != .mul && op != .div)) ? SavedTensor(a) : nil
        let sb = savesInputs && (needA || op != .mul) ? SavedTensor(b) : nil
        let so = op == .pow ? SavedTensor(output: out) : nil
        let aShape = a.shape, bShape = b.shape, aType = a.dtype, bType = b.dtype
        // A Swift number on the left is PyTorch's `number - tensor` (rsub) / `number ** tensor` (pow.Scalar).
        let name = a.isWrappedNumber && op == .sub ? "RsubBackward1" : (a.isWrappedNumber && op == .pow ? "PowBackward2" : nodeName(op))
        record(name, out, inputs: [a, b], saved: binarySavedAttributes(op, a.isWrappedNumber, sa, sb, so)) { node, g in
            binaryBackward(op, node, g, sa, sb, so, aShape, bShape, aType, bType, needA, needB)
        }
    }
    return out
}

/// `op(self, other)` written into self.
func binaryInPlace(_ op: BinaryOp, _ a: Tensor, _ b: Tensor) {
    if _slowPath(ONNXTrace.isOn), ONNXTrace.inPlace(.binary(op), [a, b], { binaryInPlace(op, a, b) }) { return }
    let shape = broadcastShapes(a.shape, b.shape, op: op.name + "_")
    precondition(shape == a.shape, "\(op.name)_: output with shape \(shapeString(a.shape)) doesn't match the broadcast shape \(shapeString(shape))")
    var dt = resultType(a, b)
    if op.promotesIntegersToFloat && !dt.isFloatingPoint { dt = torch.defaultDType }
    precondition(dt == a.dtype || (dt.isFloatingPoint == a.dtype.isFloatingPoint || a.dtype.isFloatingPoint),
                 "\(op.name)_: result type \(dt.name.capitalized) can't be cast to the desired output type \(a.dtype.name.capitalized)")
    a.checkInPlace(op.name + "_")
    let needs = anyNeedsGrad(a, b)
    let saved: SavedTensor? = needs && op != .add && op != .sub ? SavedTensor(a.contiguousCopy()) : nil
    let sb: SavedTensor? = needs && op != .add && op != .sub ? SavedTensor(b) : nil
    if dt == a.dtype && a.dtype.computeType == a.dtype {
        binaryKernel(op, a, b.to(dt), into: a)
    } else {
        copyKernel(from: binaryForward(op, a, b), into: a)
    }
    a.storage.bumpVersion()
    if needs && a.dtype.isFloatingPoint {
        let needA = a._requiresGrad, needB = b._requiresGrad
        let aShape = a.shape, bShape = b.shape, aType = a.dtype, bType = b.dtype
        let so: SavedTensor? = op == .pow ? SavedTensor(a.contiguousCopy()) : nil
        a.rebaseHistory(nodeName(op), inputs: [b]) { node, g in
            binaryBackward(op, node, g, saved, sb, so, aShape, bShape, aType, bType, needA, needB)
        }
    }
}

// MARK: - Public API

extension Tensor {
    public func add(_ other: Tensor, alpha: Double = 1) -> Tensor { binary(.add, self, alpha == 1 ? other : other * alpha) }
    public func sub(_ other: Tensor, alpha: Double = 1) -> Tensor { binary(.sub, self, alpha == 1 ? other : other * alpha) }
    public func mul(_ other: Tensor) -> Tensor { binary(.mul, self, other) }
    public func div(_ other: Tensor) -> Tensor { binary(.div, self, other) }
    public func add(_ other: Double) -> Tensor { self + other }
    public func sub(_ other: Double) -> Tensor { self - other }
    public func mul(_ other: Double) -> Tensor { self * other }
    public func div(_ other: Double) -> Tensor { self / other }
    /// Elementwise power.
    public func pow(_ exponent: Tensor) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.pow, [self, exponent], { $0[0]!.pow($0[1]!) }) { return r }
        return binary(.pow, self, exponent)
    }
    public func maximum(_ other: Tensor) -> Tensor { binary(.maximum, self, other) }
    public func minimum(_ other: Tensor) -> Tensor { binary(.minimum, self, other) }
    public func atan2(_ other: Tensor) -> Tensor { binary(.atan2, self, other) }
    /// Python-style modulus (sign of the divisor).
    public func remainder(_ other: Tensor) -> Tensor { binary(.remainder, self, other) }
    public func remainder(_ other: Double) -> Tensor { binary(.remainder, self, Tensor.scalarOperand(other)) }
    /// C-style modulus (sign of the dividend).
    public func fmod(_ other: Tensor) -> Tensor { binary(.fmod, self, other) }
    public func fmod(_ other: Double) -> Tensor { binary(.fmod, self, Tensor.scalarOperand(other)) }
    public func floorDivide(_ other: Tensor) -> Tensor { binary(.floorDivide, self, other) }
    public func floorDivide(_ other: Double) -> Tensor { binary(.floorDivide, self, Tensor.scalarOperand(other)) }

    /// A Swift number as an operand: integral values act like Python ints, others like floats.
    static func scalarOperand(_ v: Double) -> Tensor {
        wrappedNumber(v, isFloating: v.rounded() != v || !v.isFinite)
    }

    // In place
    @discardableResult public func add_(_ other: Tensor, alpha: Double = 1) -> Tensor {
        binaryInPlace(.add, self, alpha == 1 ? other : other * alpha); return self
    }
    @discardableResult public func sub_(_ other: Tensor, alpha: Double = 1) -> Tensor {
        binaryInPlace(.sub, self, alpha == 1 ? other : other * alpha); return self
    }
    @discardableResult public func mul_(_ other: Tensor) -> Tensor { binaryInPlace(.mul, self, other); return self }
    @discardableResult public func div_(_ other: Tensor) -> Tensor { binaryInPlace(.div, self, other); return self }
    @discardableResult public func pow_(_ other: Tensor) -> Tensor { binaryInPlace(.pow, self, other); return self }
    @discardableResult public func add_(_ other: Double) -> Tensor { add_(Tensor.wrappedNumber(other, isFloating: true)) }
    @discardableResult public func sub_(_ other: Double) -> Tensor { sub_(Tensor.wrappedNumber(other, isFloating: true)) }
    @discardableResult public func mul_(_ other: Double) -> Tensor { mul_(Tensor.wrappedNumber(other, isFloating: true)) }
    @discardableResult public func div_(_ other: Double) -> Tensor { div_(Tensor.wrappedNumber(other, isFloating: true)) }
    @discardableResult public func pow_(_ other: Double) -> Tensor { pow_(Tensor.wrappedNumber(other, isFloating: true)) }
}

// MARK: Operators

extension Tensor {
    public static func + (a: Tensor, b: Tensor) -> Tensor { binary(.add, a, b) }
    public static func - (a: Tensor, b: Tensor) -> Tensor { binary(.sub, a, b) }
    public static func * (a: Tensor, b: Tensor) -> Tensor { binary(.mul, a, b) }
    public static func / (a: Tensor, b: Tensor) -> Tensor { binary(.div, a, b) }

    public static func + (a: Tensor, b: Double) -> Tensor { binary(.add, a, wrappedNumber(b, isFloating: true)) }
    public static func - (a: Tensor, b: Double) -> Tensor { binary(.sub, a, wrappedNumber(b, isFloating: true)) }
    public static func * (a: Tensor, b: Double) -> Tensor { binary(.mul, a, wrappedNumber(b, isFloating: true)) }
    public static func / (a: Tensor, b: Double) -> Tensor { binary(.div, a, wrappedNumber(b, isFloating: true)) }
    public static func + (a: Double, b: Tensor) -> Tensor { binary(.add, wrappedNumber(a, isFloating: true), b) }
    public static func - (a: Double, b: Tensor) -> Tensor { binary(.sub, wrappedNumber(a, isFloating: true), b) }
    public static func * (a: Double, b: Tensor) -> Tensor { binary(.mul, wrappedNumber(a, isFloating: true), b) }
    /// `number / tensor` is `tensor.reciprocal() * number`, as PyTorch computes it (same rounding, MulBackward0).
    public static func / (a: Double, b: Tensor) -> Tensor { b.reciprocal() * a }

    public static func + (a: Tensor, b: Int) -> Tensor { binary(.add, a, wrappedNumber(b)) }
    public static func - (a: Tensor, b: Int) -> Tensor { binary(.sub, a, wrappedNumber(b)) }
    public static func * (a: Tensor, b: Int) -> Tensor { binary(.mul, a, wrappedNumber(b)) }
    public static func / (a: Tensor, b: Int) -> Tensor { binary(.div, a, wrappedNumber(b)) }
    public static func + (a: Int, b: Tensor) -> Tensor { binary(.add, wrappedNumber(a), b) }
    public static func - (a: Int, b: Tensor) -> Tensor { binary(.sub, wrappedNumber(a), b) }
    public static func * (a: Int, b: Tensor) -> Tensor { binary(.mul, wrappedNumber(a), b) }
    public static func / (a: Int, b: Tensor) -> Tensor { b.reciprocal() * a }

    public static prefix func - (a: Tensor) -> Tensor { a.neg() }

    public static func += (a: Tensor, b: Tensor) { a.add_(b) }
    public static func -= (a: Tensor, b: Tensor) { a.sub_(b) }
    public static func *= (a: Tensor, b: Tensor) { a.mul_(b) }
    public static func /= (a: Tensor, b: Tensor) { a.div_(b) }
    public static func += (a: Tensor, b: Double) { a.add_(b) }
    public static func -= (a: Tensor, b: Double) { a.sub_(b) }
    public static func *= (a: Tensor, b: Double) { a.mul_(b) }
    public static func /= (a: Tensor, b: Double) { a.div_(b) }
    public static func += (a: Tensor, b: Int) { a.add_(wrappedNumber(b)) }
    public static func -= (a: Tensor, b: Int) { a.sub_(wrappedNumber(b)) }
    public static func *= (a: Tensor, b: Int) { a.mul_(wrappedNumber(b)) }
    public static func /= (a: Tensor, b: Int) { a.div_(wrappedNumber(b)) }
}

extension torch {
    public static func add(_ a: Tensor, _ b: Tensor, alpha: Double = 1) -> Tensor { a.add(b, alpha: alpha) }
    public static func sub(_ a: Tensor, _ b: Tensor, alpha: Double = 1) -> Tensor { a.sub(b, alpha: alpha) }
    public static func mul(_ a: Tensor, _ b: Tensor) -> Tensor { a * b }
    public static func div(_ a: Tensor, _ b: Tensor) -> Tensor { a / b }
    public static func pow(_ a: Tensor, _ b: Tensor) -> Tensor { a.pow(b) }
    public static func pow(_ a: Tensor, _ b: Double) -> Tensor { a.pow(b) }
    public static func pow(_ a: Double, _ b: Tensor) -> Tensor { Tensor.wrappedNumber(a, isFloating: true).pow(b) }
    /// An integer base keeps integer exponents integral (`2 ** intTensor` is int64 in PyTorch).
    public static func pow(_ a: Int, _ b: Tensor) -> Tensor { Tensor.wrappedNumber(a).pow(b) }
    public static func maximum(_ a: Tensor, _ b: Tensor) -> Tensor { a.maximum(b) }
    public static func minimum(_ a: Tensor, _ b: Tensor) -> Tensor { a.minimum(b) }
    public static func atan2(_ a: Tensor, _ b: Tensor) -> Tensor { a.atan2(b) }
    public static func remainder(_ a: Tensor, _ b: Tensor) -> Tensor { a.remainder(b) }
    public static func fmod(_ a: Tensor, _ b: Tensor) -> Tensor { a.fmod(b) }
    public static func floorDivide(_ a: Tensor, _ b: Tensor) -> Tensor { a.floorDivide(b) }
}
