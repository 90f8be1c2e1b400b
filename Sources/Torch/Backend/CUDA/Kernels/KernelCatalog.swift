/// Every kernel the CUDA backend can launch, by family and dtype, and the source of each module.
///
/// A module holds one family's kernels for one dtype, compiled at first use (docs/architecture.md §7); a
/// kernel is found on the hot path by `KernelID.slot`, an index into the device's function table, so
/// a launch does no dictionary look-up or string work once its module is loaded.
enum KernelFamily: Int, CaseIterable {
    /// `UnaryOp` kernels, input and output of the module's dtype.
    case unary
    /// `BinaryOp` kernels.
    case binary
    /// `CompareOp` kernels: inputs of the module's dtype, a bool output.
    case compare
    /// Conversions from the module's dtype to each dtype (function = target dtype); also copies and fills.
    case cast
    /// `TernaryOp` kernels.
    case ternary
    /// `CUDAReduceOp` kernels.
    case reduce
    /// `IndexKernelOp` kernels: gathers and scatters through int64 offsets (values of the module's dtype).
    case index
    /// `RandomKernelOp` kernels: Philox samples written in the module's (floating) dtype.
    case random
    /// `SortKernelOp` kernels: stable row sorts of values of the module's dtype with their int64 positions.
    case sort
    /// `OptimizerKernelOp` kernels: whole optimizer updates of parameters of the module's dtype.
    case optimizer
    /// `ConvolutionKernelOp` kernels: im2col and its adjoint for convolutions of the module's dtype.
    case convolution
    /// `PoolingKernelOp` kernels: max and average pooling of the module's dtype.
    case pooling
    /// `ResampleKernelOp` kernels: `F.interpolate`'s separable resampling and its adjoint.
    case resample
    /// `ActivationKernelOp` kernels: the `nn` activations and their backward, for float32 and float64.
    case activation
    /// `FusedKernelOp` kernels: row-wise softmax, cross-entropy, layer/batch norm and sorted-row picks.
    case fused

    var name: String {
        switch self {
        case .unary: return "unary"
        case .binary: return "binary"
        case .compare: return "compare"
        case .cast: return "cast"
        case .ternary: return "ternary"
        case .reduce: return "reduce"
        case .index: return "index"
        case .random: return "random"
        case .sort: return "sort"
        case .optimizer: return "optimizer"
        case .convolution: return "convolution"
        case .pooling: return "pooling"
        case .resample: return "resample"
        case .activation: return "activation"
        case .fused: return "fused"
        }
    }

    /// Whether kernels of this family call `__syncthreads` (the emulator then runs threads as fibers).
    var usesBarrier: Bool { self == .reduce || self == .sort || self == .fused }

    /// The C type of the one argument struct its kernels take.
    var argumentsType: String {
        switch self {
        case .reduce, .sort: return "stcu_red_args"
        case .optimizer: return "stcu_opt_args"
        case .convolution: return "stcu_conv_args"
        case .pooling: return "stcu_pool_args"
        case .resample: return "stcu_resample_args"
        case .fused: return "stcu_fused_args"
        default: return "stcu_ew_args"
        }
    }
}

/// One kernel: family, dtype of its module, and its index within the module.
struct KernelID: Equatable {
    let family: KernelFamily
    let dtype: DType
    let function: Int

    static let functionsPerModule = 64
    static let slotCount = KernelFamily.allCases.count * DType.allCases.count * functionsPerModule

    @inline(__always) var slot: Int {
        (family.rawValue &* DType.allCases.count &+ dtype.rawValue) &* KernelID.functionsPerModule &+ function
    }

    static func unary(_ op: UnaryOp, _ d: DType) -> KernelID { KernelID(family: .unary, dtype: d, function: op.rawValue) }
    static func binary(_ op: BinaryOp, _ d: DType) -> KernelID { KernelID(family: .binary, dtype: d, function: op.rawValue) }
    static func compare(_ op: CompareOp, _ d: DType) -> KernelID { KernelID(family: .compare, dtype: d, function: op.rawValue) }
    static func cast(_ from: DType, _ to: DType) -> KernelID { KernelID(family: .cast, dtype: from, function: to.rawValue) }
    static func ternary(_ op: TernaryOp, _ d: DType) -> KernelID { KernelID(family: .ternary, dtype: d, function: op.rawValue) }
    static func reduce(_ op: CUDAReduceOp, _ d: DType) -> KernelID { KernelID(family: .reduce, dtype: d, function: op.rawValue) }
    static func index(_ op: IndexKernelOp, _ d: DType) -> KernelID { KernelID(family: .index, dtype: d, function: op.rawValue) }
    static func random(_ op: RandomKernelOp, _ d: DType) -> KernelID { KernelID(family: .random, dtype: d, function: op.rawValue) }
    static func sort(_ op: SortKernelOp, _ d: DType) -> KernelID { KernelID(family: .sort, dtype: d, function: op.rawValue) }
    static func optimizer(_ op: OptimizerKernelOp, _ d: DType) -> KernelID { KernelID(family: .optimizer, dtype: d, function: op.rawValue) }
    static func convolution(_ op: ConvolutionKernelOp, _ d: DType) -> KernelID {
        KernelID(family: .convolution, dtype: d, function: op.rawValue)
    }
    static func pooling(_ op: PoolingKernelOp, _ d: DType) -> KernelID { KernelID(family: .pooling, dtype: d, function: op.rawValue) }
    static func resample(_ op: ResampleKernelOp, _ d: DType) -> KernelID { KernelID(family: .resample, dtype: d, function: op.rawValue) }
    static func activation(_ op: ActivationKernelOp, _ d: DType) -> KernelID {
        KernelID(family: .activation, dtype: d, function: op.rawValue)
    }
    static func fused(_ op: FusedKernelOp, _ d: DType) -> KernelID { KernelID(family: .fused, dtype: d, function: op.rawValue) }
}

/// A module's source and the names of its kernels by function index.
struct KernelModuleSource {
    var name: String
    var body = ""
    var functions: [Int: String] = [:]
}

enum KernelCatalog {
    /// The module of `family` for `dtype`: the kernels whose op has an expression for that dtype.
    static func module(_ family: KernelFamily, _ d: DType) -> KernelModuleSource {
        let tag = KernelPrelude.tag(d)
        var m = KernelModuleSource(name: "\(family.name)_\(tag)")
        let math = d == .bool ? "bool" : KernelPrelude.mathType(d)
        func add(_ index: Int, _ name: String, _ text: String) {
            m.functions[index] = name
            m.body += text
        }
        switch family {
        case .unary:
            for op in UnaryOp.allCases {
                let e: String? = d.isFloatingPoint ? op.floatingExpression : (d == .bool ? nil : op.integerExpression)
                guard let e else { continue }
                let name = "unary_\(op)_\(tag)"
                add(op.rawValue, name, ElementwiseKernelSource.kernel(name: name, output: d, inputs: [d], mathType: math, expression: e))
            }
        case .binary:
            for op in BinaryOp.allCases {
                let e = d.isFloatingPoint ? op.floatingExpression : (d == .bool ? op.boolExpression : op.integerExpression)
                guard let e else { continue }
                let name = "binary_\(op.name)_\(tag)"
                add(op.rawValue, name, ElementwiseKernelSource.kernel(name: name, output: d, inputs: [d, d], mathType: math, expression: e))
            }
        case .compare:
            for op in CompareOp.allCases {
                let name = "compare_\(op.name)_\(tag)"
                add(op.rawValue, name, ElementwiseKernelSource.kernel(name: name, output: .bool, inputs: [d, d], mathType: math, expression: op.expression))
            }
        case .cast:
            for target in DType.allCases {
                let name = "cast_\(tag)_\(KernelPrelude.tag(target))"
                // Through the wider of the two math types, so int64 → float64 and float64 → int64 stay exact.
                let via: String
                if d == .float64 || target == .float64 { via = "double" }
                else if d.isFloatingPoint || target.isFloatingPoint { via = "float" }
                else { via = "long long" }
                add(target.rawValue, name, ElementwiseKernelSource.kernel(name: name, output: target, inputs: [d], mathType: via, expression: "x"))
            }
        case .ternary:
            for op in TernaryOp.allCases {
                let name = "ternary_\(op.name)_\(tag)"
                let text: String
                switch op {
                case .where:
                    text = ElementwiseKernelSource.kernel(name: name, output: d, inputs: [.bool, d, d], mathType: math,
                                                         expression: op.expression, condition: true)
                case .logicalAnd, .logicalOr, .logicalXor:
                    text = ElementwiseKernelSource.kernel(name: name, output: .bool, inputs: [d, d], mathType: math, expression: op.expression)
                case .clamp:
                    guard d != .bool else { continue }
                    text = ElementwiseKernelSource.kernel(name: name, output: d, inputs: [d, d, d], mathType: math, expression: op.expression)
                case .addcmul, .addcdiv, .lerp:
                    guard d.isFloatingPoint else { continue }
                    text = ElementwiseKernelSource.kernel(name: name, output: d, inputs: [d, d, d], mathType: math, expression: op.expression)
                case .thresholdBackward, .tanhBackward, .sigmoidBackward:
                    guard d.isFloatingPoint else { continue }
                    text = ElementwiseKernelSource.kernel(name: name, output: d, inputs: [d, d], mathType: math, expression: op.expression)
                }
                add(op.rawValue, name, text)
            }
        case .reduce:
            for op in CUDAReduceOp.allCases {
                if d == .bool && (op == .sum || op == .prod || op.isScan) { continue }
                let name = "reduce_\(op.name)_\(tag)"
                add(op.rawValue, name, ReductionKernelSource.kernel(name: name, op: op, input: d, output: d))
            }
        case .index:
            for op in IndexKernelOp.allCases {
                guard let k = IndexKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .random:
            m.body = RandomKernelSource.philox
            for op in RandomKernelOp.allCases {
                guard let k = RandomKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .sort:
            for op in SortKernelOp.allCases {
                let k = SortKernelSource.kernel(op, d)
                add(op.rawValue, k.name, k.text)
            }
        case .optimizer:
            for op in OptimizerKernelOp.allCases {
                guard let k = OptimizerKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .convolution:
            for op in ConvolutionKernelOp.allCases {
                guard let k = ConvolutionKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .pooling:
            for op in PoolingKernelOp.allCases {
                guard let k = PoolingKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .resample:
            for op in ResampleKernelOp.allCases {
                guard let k = ResampleKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        case .activation:
            // The activations compute in float32/float64; half-precision inputs are widened first (as on the CPU).
            guard d == .float32 || d == .float64 else { break }
            for op in ActivationKernelOp.allCases {
                let k = ActivationKernelOp.kernel(op, d)
                add(op.rawValue, k.name, k.source)
            }
        case .fused:
            m.body = FusedKernelSource.prelude(d)
            for op in FusedKernelOp.allCases {
                guard let k = FusedKernelSource.kernel(op, d) else { continue }
                add(op.rawValue, k.name, k.text)
            }
        }
        return m
    }

    /// The complete text to compile: prelude, kernels, and for the emulator each kernel's entry point.
    static func source(_ m: KernelModuleSource, family: KernelFamily, host: Bool) -> String {
        var s = "// SwiftTorch kernel module \(m.name) (generated)\n" + KernelPrelude.text(host: host) + m.body
        if host {
            for name in m.functions.values.sorted() {
                s += KernelPrelude.emulatorEntry(name, argsType: family.argumentsType)
                if family.usesBarrier { s += "ST_BARRIER_KERNEL(\(name))\n" }
            }
        }
        return s
    }
}
