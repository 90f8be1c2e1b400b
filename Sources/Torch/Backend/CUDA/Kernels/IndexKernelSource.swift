/// The index kernel family: every op that reads or writes at positions held in an index tensor
/// (advanced indexing, `indexSelect`, `indexAdd_`, `indexPut_`, `take`, `gather`, `scatter(Add)`,
/// `Embedding` and its backward) is one of three kernels over an iteration shape, plus the kernel that turns
/// index tensors into element offsets.
///
/// All four take `stcu_ew_args` with three operands walked by the strided loop (`rank` ≥ 1):
/// - `gather`: `out[o0] = src[o1 + off[o2]]`
/// - `put`: `dst[o0 + off[o2]] = values[o1]` (with repeated offsets one of the writes lands, as in PyTorch)
/// - `put_add`: the same with an atomic addition, so repeated offsets all land
/// - `offset` (int64 module only): `out[o0] = acc[o1] + wrap(idx[o2]) * i[3]`, where `wrap` adds the dim's
///   size `i[2]` to a negative index. An index outside `[-size, size)` fails a device-side assertion, as
///   PyTorch's CUDA kernels do (`CUDA error: device-side assert triggered` at the next synchronisation).
///   A null `acc` pointer means 0.
enum IndexKernelOp: Int, CaseIterable {
    case gather, put, putAdd, offset

    var name: String {
        switch self {
        case .gather: return "gather"
        case .put: return "put"
        case .putAdd: return "put_add"
        case .offset: return "offset"
        }
    }
}

enum IndexKernelSource {
    /// The kernel of `op` for values of dtype `d`, or nil when the module has none (`offset` lives in int64's).
    static func kernel(_ op: IndexKernelOp, _ d: DType) -> (name: String, text: String)? {
        let t = KernelPrelude.storageType(d)
        let name = "index_\(op.name)_\(KernelPrelude.tag(d))"
        let body: String
        switch op {
        case .gather:
            body = "out[o0] = p1[o1 + p2[o2]];"
        case .put:
            body = "out[o0 + p2[o2]] = p1[o1];"
        case .putAdd:
            body = "\(atomicAdd(d, pointer: "&out[o0 + p2[o2]]", value: "p1[o1]"))"
        case .offset:
            guard d == .int64 else { return nil }
            body = """
            long long v = p2[o2];
                    if (v < -args.i[2] || v >= args.i[2]) __assertfail("index out of bounds", "swifttorch index kernel", 0, "\(name)", 1);
                    out[o0] = (p1 ? p1[o1] : 0) + (v < 0 ? v + args.i[2] : v) * args.i[3];
            """
        }
        var s = "extern \"C\" __global__ void \(name)(const stcu_ew_args args) {\n"
        s += "    \(t) *out = (\(t) *)args.ptr[0];\n"
        s += "    const \(t) *p1 = (const \(t) *)args.ptr[1];\n"
        s += "    const long long *p2 = (const long long *)args.ptr[2];\n"
        s += ElementwiseKernelSource.stridedLoop(offsets: ["o0", "o1", "o2"], body: body)
        s += "}\n"
        return (name, s)
    }

    /// An atomic `*pointer += value` for storage dtype `d`. float, double, int and int64 use the hardware's
    /// atomics; the 16- and 8-bit types compare-and-swap the aligned 32-bit word that holds them; bool ORs.
    private static func atomicAdd(_ d: DType, pointer: String, value: String) -> String {
        switch d {
        case .float32, .float64, .int32: return "atomicAdd(\(pointer), \(value));"
        case .int64: return "atomicAdd((unsigned long long *)(\(pointer)), (unsigned long long)(\(value)));"
        case .bool: return "if (\(value)) *(\(pointer)) = true;"
        case .float16, .bfloat16, .uint8:
            let type = KernelPrelude.storageType(d)
            let sum = d == .uint8 ? "(unsigned char)(c + w)"
                : KernelPrelude.store("\(KernelPrelude.load("c", d, as: "float")) + \(KernelPrelude.load("w", d, as: "float"))", d)
            return "{ const \(type) w = \(value); st_atomic_narrow(\(pointer), [&](\(type) c) { return \(sum); }); }"
        }
    }
}
