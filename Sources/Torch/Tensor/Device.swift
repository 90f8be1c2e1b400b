/// Where a tensor's memory lives: the CPU or a CUDA device (DESIGN.md §7).
public enum Device: Equatable, Hashable, Sendable, CustomStringConvertible {
    case cpu
    case cuda(Int)

    /// Parses "cpu", "cuda", "cuda:1".
    public init(_ name: String) {
        if name == "cpu" { self = .cpu; return }
        if name == "cuda" { self = .cuda(0); return }
        if name.hasPrefix("cuda:"), let i = Int(name.dropFirst(5)) { self = .cuda(i); return }
        preconditionFailure("Device: expected one of cpu, cuda, cuda:<index> but got '\(name)'")
    }

    public var description: String {
        switch self {
        case .cpu: return "cpu"
        case .cuda(let i): return "cuda:\(i)"
        }
    }

    /// "cpu" or "cuda", as `device.type` in PyTorch.
    public var type: String {
        switch self {
        case .cpu: return "cpu"
        case .cuda: return "cuda"
        }
    }
}
