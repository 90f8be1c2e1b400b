/// The fields of TensorBoard's `HistogramProto`, computed as PyTorch's `add_histogram` does:
/// `numpy.histogram(values, bins)` (numpy's `auto` rule by default), then the empty bins at both
/// ends dropped, keeping the left edge of the first non-empty bin as an extra limit with count 0.
struct HistogramSummary: Equatable {
    var min = 0.0, max = 0.0, sum = 0.0, sumSquares = 0.0
    var num = 0
    var bucketLimit: [Double] = []
    var bucket: [Double] = []

    /// - Parameter bins: "auto", "fd", "sturges" or "sqrt" (numpy's estimators), or nil with `binCount`.
    init(_ values: [Double], bins: String? = "auto", binCount: Int? = nil) {
        precondition(!values.isEmpty, "add_histogram: the histogram is empty (got no values)")
        precondition(values.allSatisfy { $0.isFinite }, "add_histogram: autodetected range of [nan, inf] is not finite")
        let lo = values.min()!, hi = values.max()!
        var first = lo, last = hi
        if first == last { first -= 0.5; last += 0.5 }
        var n: Int
        if let c = binCount {
            precondition(c > 0, "add_histogram: `bins` must be positive, when an integer (got \(c))")
            n = c
        } else {
            let width = HistogramSummary.binWidth(values, rule: bins ?? "auto")
            n = width > 0 ? Int(((last - first) / width).rounded(.up)) : 1
        }
        n = Swift.max(n, 1)
        // Edges as numpy.linspace: i * step + first, the last exactly `last`.
        let step = (last - first) / Double(n)
        var edges = (0...n).map { Double($0) * step + first }
        edges[n] = last
        var counts = [Int](repeating: 0, count: n)
        for v in values {
            var i = Int((v - first) / (last - first) * Double(n))
            if i == n { i -= 1 }
            if v < edges[i] { i -= 1 }
            if i != n - 1 && v >= edges[i + 1] { i += 1 }
            counts[i] += 1
        }
        let nonEmpty = counts.indices.filter { counts[$0] > 0 }
        let start = nonEmpty.first!, end = nonEmpty.last! + 1
        bucket = [0] + counts[start..<end].map(Double.init)
        bucketLimit = Array(edges[start...end])
        min = lo; max = hi; num = values.count
        sum = values.reduce(0, +)
        sumSquares = values.reduce(0) { $0 + $1 * $1 }
    }

    /// numpy's (2.x) bin-width estimators (`numpy.lib._histograms_impl._hist_bin_*`).
    static func binWidth(_ x: [Double], rule: String) -> Double {
        let sorted = x.sorted()
        let n = Double(x.count)
        let sturges = (sorted.last! - sorted.first!) / (log2(n) + 1.0)
        let iqr = percentile(sorted, 75) - percentile(sorted, 25)
        let fd = 2.0 * iqr * pow(n, -1.0 / 3.0)
        let sqrtWidth = (sorted.last! - sorted.first!) / n.squareRoot()
        switch rule {
        // numpy 2's "auto": Freedman-Diaconis relaxed to at least half the sqrt width, capped by Sturges.
        case "auto": return Swift.min(Swift.max(fd, sqrtWidth / 2), sturges)
        case "sqrt": return sqrtWidth
        case "fd": return fd
        case "sturges": return sturges
        default: preconditionFailure("add_histogram: bins must be \"auto\", \"fd\", \"sturges\", \"sqrt\" or an integer (got \"\(rule)\")")
        }
    }

    /// numpy.percentile's default (linear) method on sorted data, with numpy's lerp.
    static func percentile(_ sorted: [Double], _ q: Double) -> Double {
        let pos = q / 100 * Double(sorted.count - 1)
        let i = Int(pos.rounded(.down))
        let t = pos - Double(i)
        let a = sorted[i], b = sorted[Swift.min(i + 1, sorted.count - 1)]
        let d = b - a
        return t >= 0.5 ? b - d * (1 - t) : a + d * t
    }
}
