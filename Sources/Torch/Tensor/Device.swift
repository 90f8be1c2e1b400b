/// Where a tensor's memory lives: the CPU or a CUDA device (docs/architecture.md §7).
public enum Device: Equatable, Hashable, Sendable, CustomStringConvertible {
    case cpu
    case cuda(Int)

    /// Parses "cpu", "cuda", "cuda:1"; "cuda" is the current CUDA device (`torch.cuda.currentDevice()`, 0
    /// unless `torch.cuda.setDevice` or a `torch.cuda.device(i) { … }` scope says otherwise), as in PyTorch.
    public init(_ name: String) {
        if name == "cpu" { self = .cpu; return }
        if name == "cuda" { self = .cuda(CUDACurrentDevice.index); return }
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

/// Why a device name given from outside (a `--device` option, a configuration file) cannot be used.
public enum DeviceChoiceError: Error, CustomStringConvertible, Equatable {
    /// Not one of auto, cpu, cuda, cuda:N.
    case unknownName(String)
    /// A GPU was asked for and this machine has no usable one, or not that many (the reason says which).
    case unavailable(String)

    public var description: String {
        switch self {
        case .unknownName(let name): return "unknown device '\(name)' (expected auto, cpu, cuda or cuda:N)"
        case .unavailable(let why): return why
        }
    }
}

extension Device {
    /// The device `name` asks for, checked against this machine: "auto" is CUDA where a GPU is usable and the
    /// CPU otherwise (the tutorials' `torch.device("cuda:0" if torch.cuda.is_available() else "cpu")`);
    /// "cpu", "cuda" and "cuda:N" are that device, which must exist.
    ///
    /// ```swift
    /// let device = try Device(choosing: "auto")
    /// ```
    /// - Throws: ``DeviceChoiceError``.
    public init(choosing name: String) throws {
        switch name {
        case "auto":
            self = torch.cuda.isAvailable() ? .cuda(0) : .cpu
        case "cpu":
            self = .cpu
        case _ where name == "cuda" || name.hasPrefix("cuda:") && Int(name.dropFirst(5)).map { $0 >= 0 } == true:
            guard torch.cuda.isAvailable() else {
                throw DeviceChoiceError.unavailable("device \(name): CUDA is not available (\(torch.cuda.unavailableReason ?? "no GPU"))")
            }
            let d = Device(name)
            if case .cuda(let i) = d, i >= torch.cuda.deviceCount() {
                throw DeviceChoiceError.unavailable("device \(name): this machine has \(torch.cuda.deviceCount()) CUDA device(s)")
            }
            self = d
        default:
            throw DeviceChoiceError.unknownName(name)
        }
    }

    /// A program's `--device NAME` (or `--device=NAME`) option, "auto" when absent, as ``init(choosing:)``
    /// reads it, and the arguments without it: how the examples take a device.
    ///
    /// ```swift
    /// let (device, args) = try Device.fromArguments()   // swift run mlp --device cuda data/
    /// ```
    /// - Throws: ``DeviceChoiceError``, also `.unknownName("")` when `--device` has no value.
    public static func fromArguments(_ arguments: [String] = CommandLine.arguments) throws -> (device: Device, remaining: [String]) {
        var name = "auto", rest: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--device" {
                guard i + 1 < arguments.count else { throw DeviceChoiceError.unknownName("") }
                name = arguments[i + 1]
                i += 2
                continue
            }
            if a.hasPrefix("--device=") { name = String(a.dropFirst(9)) } else { rest.append(a) }
            i += 1
        }
        return (try Device(choosing: name), rest)
    }
}
