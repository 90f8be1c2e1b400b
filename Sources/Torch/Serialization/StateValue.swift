/// A value in a state dict or checkpoint: what `torch.save` can store besides bare tensors
/// (numbers, strings, None, lists, tuples, and dictionaries with string or integer keys).
///
/// ```swift
/// let checkpoint: StateValue = [
///     "epoch": 5,
///     "model_state_dict": .dict(model.stateDict().stateValue),
///     "loss": 0.25,
/// ]
/// ```
public indirect enum StateValue: CustomStringConvertible {
    case none
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case tensor(Tensor)
    case list([StateValue])
    case tuple([StateValue])
    /// An ordered dictionary (keys are usually `.string` or `.int`).
    case dict([(key: StateValue, value: StateValue)])

    public var description: String {
        switch self {
        case .none: return "None"
        case .bool(let b): return b ? "True" : "False"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return "'\(s)'"
        case .tensor(let t): return t.description
        case .list(let l): return "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .tuple(let l): return "(" + l.map(\.description).joined(separator: ", ") + (l.count == 1 ? ",)" : ")")
        case .dict(let d): return "{" + d.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        }
    }

    /// The value under a string key of a `.dict`.
    public subscript(key: String) -> StateValue? {
        guard case .dict(let d) = self else { return nil }
        return d.first { if case .string(let k) = $0.key { return k == key } else { return false } }?.value
    }

    /// The value under an integer key of a `.dict`, or at an index of a `.list`/`.tuple`.
    public subscript(index: Int) -> StateValue? {
        switch self {
        case .dict(let d): return d.first { if case .int(let k) = $0.key { return k == index } else { return false } }?.value
        case .list(let l), .tuple(let l): return index >= 0 && index < l.count ? l[index] : nil
        default: return nil
        }
    }

    public var tensorValue: Tensor? { if case .tensor(let t) = self { return t } else { return nil } }
    public var intValue: Int? {
        switch self {
        case .int(let i): return i
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var arrayValue: [StateValue]? {
        switch self {
        case .list(let l), .tuple(let l): return l
        default: return nil
        }
    }
    public var dictValue: [(key: StateValue, value: StateValue)]? { if case .dict(let d) = self { return d } else { return nil } }
}

extension StateValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
                      ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
                      ExpressibleByNilLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: StateValue...) { self = .list(elements) }
    public init(dictionaryLiteral elements: (String, StateValue)...) {
        self = .dict(elements.map { (key: .string($0.0), value: $0.1) })
    }
    public init(nilLiteral: ()) { self = .none }
}
