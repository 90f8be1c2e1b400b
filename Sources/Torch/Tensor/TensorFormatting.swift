// Tensor printing: reproduces PyTorch's `repr(tensor)` (torch/_tensor_str.py) exactly.
//
// The Tensor's `description` calls `TensorFormatter.repr(...)` with a closure that reads
// elements in row-major logical order, so this file does not depend on the Tensor type.

/// The equivalent of `torch.set_printoptions`: how tensors are turned into text.
///
/// ```swift
/// PrintOptions.current = PrintOptions(precision: 2)
/// print(torch.tensor([1.12345]))     // tensor([1.12])
/// PrintOptions.current = .default
/// ```
public struct PrintOptions: Sendable, Equatable {
    /// Digits after the decimal point (default 4).
    public var precision: Int
    /// Tensors with more elements than this are summarized with `...` (default 1000).
    /// Use `Int.max` for PyTorch's `threshold=inf`.
    public var threshold: Int
    /// Items shown at the beginning and end of each summarized dimension (default 3).
    public var edgeItems: Int
    /// Characters per line used to wrap long rows (default 80).
    public var lineWidth: Int
    /// `true` / `false` force scientific / fixed notation; `nil` lets the formatter choose.
    public var sciMode: Bool?

    public init(precision: Int = 4, threshold: Int = 1000, edgeItems: Int = 3,
                lineWidth: Int = 80, sciMode: Bool? = nil) {
        self.precision = precision
        self.threshold = threshold
        self.edgeItems = edgeItems
        self.lineWidth = lineWidth
        self.sciMode = sciMode
    }

    /// PyTorch's `profile="default"`.
    public static let `default` = PrintOptions()
    /// PyTorch's `profile="short"`.
    public static let short = PrintOptions(precision: 2, edgeItems: 2)
    /// PyTorch's `profile="full"` (never summarize).
    public static let full = PrintOptions(threshold: Int.max)

    private static let storage = PrintOptionsStorage()

    /// The options used by `Tensor.description` (process-wide, like `torch.set_printoptions`).
    public static var current: PrintOptions {
        get { storage.get() }
        set { storage.set(newValue) }
    }
}

/// Lock-protected storage for `PrintOptions.current`.
private final class PrintOptionsStorage: @unchecked Sendable {
    private var value = PrintOptions.default
    private let lock = PosixLock()
    func get() -> PrintOptions {
        lock.lock(); defer { lock.unlock() }
        return value
    }
    func set(_ v: PrintOptions) {
        lock.lock(); defer { lock.unlock() }
        value = v
    }
}

enum TensorFormatter {
    /// PyTorch's repr: `tensor([...], dtype=torch.float64, requires_grad=True)` etc.
    ///
    /// - Parameters:
    ///   - element: the i-th element in row-major logical order (0..<numel) as Double.
    ///     Only the elements that are shown are read (summarized tensors read a few).
    ///   - intElement: exact integer reader for integer dtypes (int64 beyond 2^53); optional.
    ///   - extras: trailing items such as `requires_grad=True` or `grad_fn=<MulBackward0>`,
    ///     placed after `size=` / `dtype=` as PyTorch does.
    static func repr(shape: [Int], dtype: DType, options: PrintOptions = .current,
                     element: (Int) -> Double, intElement: ((Int) -> Int64)? = nil,
                     extras: [String] = [], device: Device = .cpu) -> String {
        let prefix = "tensor("
        let indent = prefix.count
        let numel = shape.reduce(1, *)
        let defaultDType = torch.defaultDType
        // PyTorch names a non-CPU device first: `tensor([1., 2.], device='cuda:0', requires_grad=True)`.
        var suffixes: [String] = device == .cpu ? [] : ["device='\(device)'"]
        let body: String

        if numel == 0 {
            // Explicit size unless 1-D (NumPy style); dtype always unless the default float type.
            if shape.count != 1 { suffixes.append("size=" + tupleString(shape)) }
            if dtype != defaultDType { suffixes.append("dtype=" + dtype.description) }
            body = "[]"
        } else {
            if options.edgeItems == 0 { suffixes.append("size=" + tupleString(shape)) }
            let hasDefaultDType = dtype == defaultDType || dtype == .int64 || dtype == .bool
            if !hasDefaultDType { suffixes.append("dtype=" + dtype.description) }
            body = withoutActuallyEscaping(element) { element in
                TensorPrinter(shape: shape, dtype: dtype, options: options,
                        element: element, intElement: intElement).tensorString(indent: indent)
            }
        }
        suffixes.append(contentsOf: extras)
        return addSuffixes(prefix + body, suffixes, indent: indent, lineWidth: options.lineWidth)
    }

    /// Python's `str(tuple(shape))`: `()`, `(5,)`, `(0, 3)`.
    static func tupleString(_ shape: [Int]) -> String {
        if shape.count == 1 { return "(\(shape[0]),)" }
        return "(" + shape.map(String.init).joined(separator: ", ") + ")"
    }

    /// `_add_suffixes`: each suffix goes on the current line unless it would pass the line width.
    static func addSuffixes(_ tensorString: String, _ suffixes: [String], indent: Int, lineWidth: Int) -> String {
        var out = tensorString
        let utf8 = tensorString.utf8
        // PyTorch: len(s) - s.rfind("\n") + 1, i.e. the last line's length plus 2.
        var lastLineLength: Int
        if let nl = utf8.lastIndex(of: UInt8(ascii: "\n")) {
            lastLineLength = utf8.distance(from: nl, to: utf8.endIndex) + 1
        } else {
            lastLineLength = utf8.count + 2
        }
        for suffix in suffixes {
            let n = suffix.count
            if lastLineLength + n + 2 > lineWidth {
                out += ",\n" + String(repeating: " ", count: indent) + suffix
                lastLineLength = indent + n
            } else {
                out += ", " + suffix
                lastLineLength += n + 2
            }
        }
        return out + ")"
    }
}

// MARK: - Number formatting (Python's format() semantics)

extension TensorFormatter {
    /// printf-style formatting of one double; `conversion` is "f" or "e".
    /// Non-finite values print as Python does: `nan` (never `-nan`), `inf`, `-inf`.
    static func formatDouble(_ v: Double, precision: Int, conversion: String) -> String {
        if v.isNaN { return "nan" }
        if v.isInfinite { return v < 0 ? "-inf" : "inf" }
        let format = "%." + String(precision) + conversion
        var buffer = [CChar](repeating: 0, count: 64)
        var needed = withVaList([v]) { args in
            buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, args) }
        }
        if Int(needed) >= buffer.count {
            buffer = [CChar](repeating: 0, count: Int(needed) + 1)
            needed = withVaList([v]) { args in
                buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, args) }
            }
        }
        return buffer.withUnsafeBufferPointer { ptr in
            String(decoding: UnsafeRawBufferPointer(ptr).prefix(Int(max(needed, 0))), as: UTF8.self)
        }
    }

    @inline(__always)
    static func leftPad(_ s: String, to width: Int) -> String {
        let n = s.utf8.count
        return n >= width ? s : String(repeating: " ", count: width - n) + s
    }
}

// MARK: - _Formatter

extension TensorFormatter {
    /// PyTorch's `_Formatter`: decides int / fixed / scientific mode and the shared width
    /// from the elements that will be shown.
    struct ElementFormatter {
        let floating: Bool
        let precision: Int
        private(set) var intMode = true
        private(set) var sciMode = false
        private(set) var maxWidth = 1

        /// Floating types: `values` are the shown elements.
        init(floatValues values: [Double], options: PrintOptions) {
            floating = true
            precision = options.precision
            var minAbs = Double.infinity, maxAbs = 0.0
            var any = false
            for v in values where v.isFinite && v != 0 {
                any = true
                let a = abs(v)
                if a < minAbs { minAbs = a }
                if a > maxAbs { maxAbs = a }
                if intMode && v != v.rounded(.up) { intMode = false }
            }
            // No finite nonzero value: keep int mode, width 1.
            guard any else { return }
            sciMode = options.sciMode ?? (maxAbs / minAbs > 1000.0 || maxAbs > 1.0e8 || minAbs < 1.0e-4)
            for v in values where v.isFinite && v != 0 {
                let width: Int
                if sciMode {
                    width = TensorFormatter.formatDouble(v, precision: precision, conversion: "e").utf8.count
                } else if intMode {
                    width = TensorFormatter.formatDouble(v, precision: 0, conversion: "f").utf8.count + 1
                } else {
                    width = TensorFormatter.formatDouble(v, precision: precision, conversion: "f").utf8.count
                }
                if width > maxWidth { maxWidth = width }
            }
        }

        /// Integer and bool types: `texts` are Python's `str()` of the shown elements.
        init(texts: [String], options: PrintOptions) {
            floating = false
            precision = options.precision
            for t in texts { maxWidth = max(maxWidth, t.utf8.count) }
        }

        var width: Int { maxWidth }

        func format(_ v: Double) -> String {
            let s: String
            if sciMode {
                s = TensorFormatter.formatDouble(v, precision: precision, conversion: "e")
            } else if intMode {
                let t = TensorFormatter.formatDouble(v, precision: 0, conversion: "f")
                s = v.isFinite ? t + "." : t
            } else {
                s = TensorFormatter.formatDouble(v, precision: precision, conversion: "f")
            }
            return TensorFormatter.leftPad(s, to: maxWidth)
        }

        func format(text: String) -> String { TensorFormatter.leftPad(text, to: maxWidth) }
    }
}

// MARK: - _tensor_str

/// Walks the shape the way `_tensor_str_with_formatter` / `get_summarized_data` do.
private struct TensorPrinter {
    let shape: [Int]
    let strides: [Int]
    let dtype: DType
    let options: PrintOptions
    let element: (Int) -> Double
    let intElement: ((Int) -> Int64)?
    let summarize: Bool
    var formatter: TensorFormatter.ElementFormatter

    init(shape: [Int], dtype: DType, options: PrintOptions,
         element: @escaping (Int) -> Double, intElement: ((Int) -> Int64)?) {
        self.shape = shape
        var strides = [Int](repeating: 1, count: shape.count)
        var s = 1
        for d in stride(from: shape.count - 1, through: 0, by: -1) { strides[d] = s; s *= shape[d] }
        self.strides = strides
        self.dtype = dtype
        self.options = options
        self.element = element
        self.intElement = intElement
        let numel = shape.reduce(1, *)
        self.summarize = numel > options.threshold
        self.formatter = TensorFormatter.ElementFormatter(texts: [], options: options)
        // The formatter sees only the elements that get_summarized_data keeps.
        var offsets: [Int] = []
        offsets.reserveCapacity(summarize ? 64 : numel)
        collect(dim: 0, offset: 0, into: &offsets)
        if dtype.isFloatingPoint {
            formatter = TensorFormatter.ElementFormatter(floatValues: offsets.map(element), options: options)
        } else {
            formatter = TensorFormatter.ElementFormatter(texts: offsets.map(text(at:)), options: options)
        }
    }

    /// Python's str() of an integer / bool element.
    func text(at offset: Int) -> String {
        if dtype == .bool { return element(offset) != 0 ? "True" : "False" }
        if let intElement { return String(intElement(offset)) }
        let v = element(offset)
        if let i = Int64(exactly: v.rounded(.towardZero)) { return String(i) }
        return String(v)
    }

    func formatted(at offset: Int) -> String {
        if dtype.isFloatingPoint { return formatter.format(element(offset)) }
        return formatter.format(text: text(at: offset))
    }

    /// `get_summarized_data`: the offsets of the elements that are shown.
    func collect(dim d: Int, offset: Int, into out: inout [Int]) {
        let rank = shape.count
        if d == rank { out.append(offset); return }
        let n = shape[d], st = strides[d], edge = options.edgeItems
        if d == rank - 1 {
            // 1-D: note PyTorch's self[-0:] is the whole vector when edgeitems == 0.
            if summarize && n > 2 * edge && edge > 0 {
                for i in 0..<edge { out.append(offset + i * st) }
                for i in (n - edge)..<n { out.append(offset + i * st) }
            } else {
                for i in 0..<n { out.append(offset + i * st) }
            }
            return
        }
        if summarize && edge == 0 { return }
        if summarize && n > 2 * edge {
            for i in 0..<edge { collect(dim: d + 1, offset: offset + i * st, into: &out) }
            for i in (n - edge)..<n { collect(dim: d + 1, offset: offset + i * st, into: &out) }
        } else {
            for i in 0..<n { collect(dim: d + 1, offset: offset + i * st, into: &out) }
        }
    }

    func tensorString(indent: Int) -> String {
        render(dim: 0, offset: 0, indent: indent)
    }

    /// `_tensor_str_with_formatter`.
    func render(dim d: Int, offset: Int, indent: Int) -> String {
        let rank = shape.count
        if d == rank { return formatted(at: offset) }  // 0-d tensor
        if d == rank - 1 { return vectorString(offset: offset, indent: indent) }
        let n = shape[d], st = strides[d], edge = options.edgeItems
        var slices: [String] = []
        if summarize && n > 2 * edge {
            for i in 0..<edge { slices.append(render(dim: d + 1, offset: offset + i * st, indent: indent + 1)) }
            slices.append("...")
            for i in (n - edge)..<n { slices.append(render(dim: d + 1, offset: offset + i * st, indent: indent + 1)) }
        } else {
            for i in 0..<n { slices.append(render(dim: d + 1, offset: offset + i * st, indent: indent + 1)) }
        }
        let remaining = rank - d  // the sub-tensor's dim()
        let separator = "," + String(repeating: "\n", count: remaining - 1)
            + String(repeating: " ", count: indent + 1)
        return "[" + slices.joined(separator: separator) + "]"
    }

    /// `_vector_str`.
    func vectorString(offset: Int, indent: Int) -> String {
        let n = shape[shape.count - 1], st = strides[shape.count - 1], edge = options.edgeItems
        let elementLength = formatter.width + 2
        let perLine = max(1, Int((Double(options.lineWidth - indent) / Double(elementLength)).rounded(.down)))
        var data: [String] = []
        if summarize && edge == 0 {
            data = ["..."]
        } else if summarize && n > 2 * edge {
            for i in 0..<edge { data.append(formatted(at: offset + i * st)) }
            data.append(" ...")
            for i in (n - edge)..<n { data.append(formatted(at: offset + i * st)) }
        } else {
            data.reserveCapacity(n)
            for i in 0..<n { data.append(formatted(at: offset + i * st)) }
        }
        var lines: [String] = []
        var start = 0
        while start < data.count {
            let end = min(start + perLine, data.count)
            lines.append(data[start..<end].joined(separator: ", "))
            start = end
        }
        let separator = ",\n" + String(repeating: " ", count: indent + 1)
        return "[" + lines.joined(separator: separator) + "]"
    }
}
