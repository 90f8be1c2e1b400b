/// Why an ONNX file could not be loaded or run. Every case that concerns one part of the file names it by its
/// field path in the ModelProto, e.g. `graph.node[3].attribute[0]` or `graph.initializer[2].raw_data`.
public enum ONNXError: Error, CustomStringConvertible, Equatable {
    /// The bytes are not a ModelProto (random bytes, a file cut short, a wrong wire type).
    case malformed(field: String, reason: String)
    /// The file is a git-LFS pointer ("version https://git-lfs.github.com/spec/v1"), not the model: run `git lfs pull`.
    case gitLFSPointer(path: String)
    /// A tensor whose dims, data type and data disagree: raw_data shorter than its dims say, negative dims, a
    /// product of dims that overflows or exceeds `onnx.maxTensorElements`.
    case invalidTensor(field: String, reason: String)
    /// A tensor's external data: missing file, a location outside the model's folder, offset/length past its end.
    case externalData(field: String, reason: String)
    /// An element type SwiftTorch tensors do not have (int8, uint16, string, complex, float8 …).
    case unsupportedDataType(field: String, dataType: Int32)
    /// A node input (or graph output) that no graph input, initializer or node output produces.
    case undefinedValue(field: String, name: String)
    /// Nodes that depend on each other's outputs in a cycle; `field` names the first node of the cycle.
    case graphCycle(field: String, node: String)
    /// The model's IR version is newer than this reader knows.
    case unsupportedIRVersion(Int64, maximum: Int64)
    /// An operator set newer than supported, or of a domain SwiftTorch has no operators for.
    case unsupportedOpset(domain: String, version: Int64, maximum: Int64)
    /// An operator the op table has no implementation for (at load time, before anything runs).
    case unsupportedOperator(op: String, domain: String, opset: Int64, node: String)
    /// An attribute that is missing, of the wrong type, or out of range.
    case invalidAttribute(field: String, reason: String)
    /// A node whose inputs do not fit its operator (shapes, ranks, types), found when it runs.
    case invalidNode(field: String, reason: String)
    /// An input to `run` that is missing, unexpected, or of the wrong type or shape.
    case invalidInput(name: String, reason: String)
    /// A file that could not be read.
    case io(path: String, reason: String)

    /// The field path the error concerns, when it concerns one.
    public var field: String? {
        switch self {
        case .malformed(let f, _), .invalidTensor(let f, _), .externalData(let f, _), .unsupportedDataType(let f, _),
             .undefinedValue(let f, _), .graphCycle(let f, _), .invalidAttribute(let f, _), .invalidNode(let f, _):
            return f
        case .unsupportedIRVersion: return "ir_version"
        case .unsupportedOpset: return "opset_import"
        case .unsupportedOperator(_, _, _, let node): return node
        case .gitLFSPointer, .invalidInput, .io: return nil
        }
    }

    public var description: String {
        switch self {
        case let .malformed(f, r): return "onnx: malformed model at \(f): \(r)"
        case let .gitLFSPointer(p):
            return "onnx: \(p) is a git-LFS pointer file, not a model (fetch the real file with `git lfs pull`)"
        case let .invalidTensor(f, r): return "onnx: invalid tensor at \(f): \(r)"
        case let .externalData(f, r): return "onnx: external data of \(f): \(r)"
        case let .unsupportedDataType(f, t):
            return "onnx: \(f): data type \(onnx.dataTypeName(t)) (\(t)) is not supported by SwiftTorch tensors"
        case let .undefinedValue(f, n): return "onnx: \(f) uses '\(n)', which no input, initializer or node produces"
        case let .graphCycle(f, n): return "onnx: the graph has a cycle through \(f) ('\(n)')"
        case let .unsupportedIRVersion(v, m): return "onnx: IR version \(v) is newer than supported (\(m))"
        case let .unsupportedOpset(d, v, m):
            return m == 0 ? "onnx: operator set domain '\(d)' (version \(v)) is not supported"
                          : "onnx: opset \(v) of domain '\(d.isEmpty ? "ai.onnx" : d)' is newer than supported (\(m))"
        case let .unsupportedOperator(op, d, v, n):
            return "onnx: unsupported operator \(d.isEmpty ? "" : d + ".")\(op) (opset \(v)) at \(n)"
        case let .invalidAttribute(f, r): return "onnx: invalid attribute \(f): \(r)"
        case let .invalidNode(f, r): return "onnx: \(f): \(r)"
        case let .invalidInput(n, r): return "onnx: input '\(n)': \(r)"
        case let .io(p, r): return "onnx: cannot read \(p): \(r)"
        }
    }
}
