/// A dictionary from `String` keys that remembers insertion order, like Python's `OrderedDict`.
///
/// `Module.stateDict()` returns one (`OrderedDict<Tensor>`), with PyTorch's keys in PyTorch's order.
///
/// ```swift
/// var d: OrderedDict<Int> = ["b": 1, "a": 2]
/// d["c"] = 3
/// print(d.keys)      // ["b", "a", "c"]
/// for (key, value) in d { print(key, value) }
/// ```
public struct OrderedDict<Value>: Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// Keys in insertion order.
    public private(set) var keys: [String] = []
    /// Values in insertion order.
    public private(set) var values: [Value] = []
    private var index: [String: Int] = [:]

    /// An empty dictionary.
    public init() {}

    /// A dictionary from ordered pairs; a repeated key keeps its first position and its last value.
    public init(_ pairs: [(String, Value)]) {
        for (k, v) in pairs { self[k] = v }
    }

    /// A dictionary from a literal, in the literal's order.
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(elements)
    }

    /// Number of entries.
    public var count: Int { keys.count }
    /// True when there are no entries.
    public var isEmpty: Bool { keys.isEmpty }

    /// The value for `key`; assigning nil removes the entry, assigning to a new key appends it.
    public subscript(key: String) -> Value? {
        get { index[key].map { values[$0] } }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// True when `key` is present.
    public func contains(_ key: String) -> Bool { index[key] != nil }

    /// Sets the value for `key` (keeping its position when present); returns the old value.
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: String) -> Value? {
        if let i = index[key] {
            let old = values[i]
            values[i] = value
            return old
        }
        index[key] = keys.count
        keys.append(key)
        values.append(value)
        return nil
    }

    /// Removes `key`; returns its value.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        keys.remove(at: i)
        let v = values.remove(at: i)
        for j in i..<keys.count { index[keys[j]] = j }
        return v
    }

    /// Inserts `value` for a new `key` at position `i` (existing keys shift back).
    mutating func insert(_ value: Value, forKey key: String, at i: Int) {
        precondition(index[key] == nil, "OrderedDict.insert: key '\(key)' already exists")
        keys.insert(key, at: i)
        values.insert(value, at: i)
        for j in i..<keys.count { index[keys[j]] = j }
    }

    /// Removes every entry.
    public mutating func removeAll() {
        keys = []; values = []; index = [:]
    }

    /// (key, value) pairs in order, like Python's `items()`.
    public var items: [(key: String, value: Value)] { zip(keys, values).map { (key: $0, value: $1) } }

    public func makeIterator() -> IndexingIterator<[(key: String, value: Value)]> { items.makeIterator() }

    /// Python 3.11's repr: `OrderedDict([('a', 1), ('b', 2)])`.
    public var description: String {
        if isEmpty { return "OrderedDict()" }
        let body = zip(keys, values).map { "('\($0)', \($1))" }.joined(separator: ", ")
        return "OrderedDict([\(body)])"
    }
}
