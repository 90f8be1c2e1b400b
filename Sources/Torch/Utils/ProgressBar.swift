// A tqdm-like progress bar for loops over data loaders and ranges.

/// A progress bar around a sequence, like Python's `tqdm`: iterating it iterates the wrapped
/// sequence and shows the count, the rate, the elapsed time, the ETA and postfix metrics.
///
/// On a terminal the bar redraws itself on one line (`\r`); when the output is not a terminal
/// (a log file, a pipe, CI) it prints a plain line every `plainEvery` steps and at the end, so logs
/// stay readable.
///
/// ```swift
/// let bar = ProgressBar(loader, description: "epoch 1/5")
/// for (x, y) in bar {
///     let loss = step(x, y)
///     bar.setPostfix(["loss": loss])
/// }
/// // epoch 1/5: 100%|██████████| 23/23 [00:01<00:00, 19.52it/s, loss=0.3120]
/// for i in tqdm(0..<100) { ... }                 // tqdm's spelling
/// ```
public final class ProgressBar<Base: Sequence>: Sequence {
    /// Where the bar is drawn.
    public enum Output {
        /// Standard error (tqdm's default).
        case standardError
        /// Standard output.
        case standardOutput
        /// A custom sink: receives each redraw (terminal) or line (plain), and says which mode to use.
        case custom(isTerminal: Bool, write: (String) -> Void)
    }

    private let base: Base
    /// Steps expected (the sequence's count when known, or `total:`); nil shows no percentage or ETA.
    public let total: Int?
    /// The text before the bar.
    public var description: String
    /// Steps done so far.
    public private(set) var n = 0
    private var postfix: [(String, String)] = []
    private let write: (String) -> Void
    /// True when redrawing in place; false when printing plain lines.
    public let isTerminal: Bool
    private let plainEvery: Int
    private let width: Int
    private let start: Double
    private var lastDraw = -Double.infinity
    private var closed = false
    private let clock: () -> Double

    /// Wraps `base`.
    ///
    /// - Parameters:
    ///   - base: the sequence to iterate, one step per element.
    ///   - total: steps expected; default `base.underestimatedCount` when positive.
    ///   - description: shown before the bar (tqdm's `desc`).
    ///   - output: where to draw; by default standard error, as tqdm.
    ///   - plainEvery: when the output is not a terminal, print a line every this many steps
    ///     (default: every tenth of `total`, or every 100 steps when it is unknown).
    ///   - width: the bar's width in characters on a terminal.
    ///   - clock: seconds since some origin; replaceable for tests.
    public init(_ base: Base, total: Int? = nil, description: String = "", output: Output = .standardError,
                plainEvery: Int? = nil, width: Int = 20,
                clock: @escaping () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        precondition(total.map { $0 >= 0 } ?? true, "ProgressBar: total must be non-negative (got \(total!))")
        precondition(plainEvery.map { $0 > 0 } ?? true, "ProgressBar: plainEvery must be positive (got \(plainEvery!))")
        self.base = base
        let count = base.underestimatedCount
        self.total = total ?? (count > 0 ? count : nil)
        self.description = description
        switch output {
        case .standardError:
            isTerminal = isatty(STDERR_FILENO) != 0
            write = { writeStandardError($0) }
        case .standardOutput:
            isTerminal = isatty(STDOUT_FILENO) != 0
            write = { s in
                writeUnbuffered(s, to: STDOUT_FILENO)
            }
        case let .custom(terminal, sink):
            isTerminal = terminal
            write = sink
        }
        self.plainEvery = plainEvery ?? Swift.max(1, (self.total ?? 1000) / 10)
        self.width = width
        self.clock = clock
        start = clock()
    }

    /// Sets the metrics shown after the rate, in the given order (`loss=0.3120`); numbers are
    /// printed with 4 significant decimals, as tqdm's `set_postfix`.
    public func setPostfix(_ metrics: KeyValuePairs<String, Double>) {
        postfix = metrics.map { ($0.key, ProgressBar.formatNumber($0.value)) }
    }

    /// Sets the metrics from a dictionary (sorted by name, as tqdm does).
    public func setPostfix(_ metrics: [String: Double]) {
        postfix = metrics.sorted { $0.key < $1.key }.map { ($0.key, ProgressBar.formatNumber($0.value)) }
    }

    /// Sets free-form postfix text.
    public func setPostfix(_ text: String) { postfix = text.isEmpty ? [] : [("", text)] }

    /// Advances by `count` steps (for manual use without iterating).
    public func update(_ count: Int = 1) {
        precondition(count >= 0, "ProgressBar.update: count must be non-negative (got \(count))")
        n += count
        draw(force: false)
    }

    /// Draws the final state and ends the line. Called automatically when iteration finishes.
    public func close() {
        guard !closed else { return }
        closed = true
        if isTerminal {
            write("\r" + line() + "\n")
        } else if n % plainEvery != 0 || n == 0 {
            write(line() + "\n")
        }
    }

    /// The current text of the bar, e.g. `epoch 1: 50%|█████     | 5/10 [00:01<00:01, 4.98it/s]`.
    public func line() -> String {
        ProgressBar.formatMeter(n: n, total: total, elapsed: clock() - start, description: description,
                                postfix: postfix.map { $0.0.isEmpty ? $0.1 : "\($0.0)=\($0.1)" }.joined(separator: ", "),
                                barWidth: isTerminal ? width : 0)
    }

    private func draw(force: Bool) {
        if isTerminal {
            let now = clock()
            // Redraw at most 10 times a second (tqdm's mininterval), and always at the end.
            guard force || now - lastDraw >= 0.1 || n == total else { return }
            lastDraw = now
            write("\r" + line())
        } else if n % plainEvery == 0 {
            write(line() + "\n")
        }
    }

    public struct Iterator: IteratorProtocol {
        var inner: Base.Iterator
        let bar: ProgressBar
        var started = false
        var finished = false

        public mutating func next() -> Base.Element? {
            guard !finished else { return nil }
            // The step of the previous element is done when the next one is asked for, as in tqdm.
            if started { bar.update() } else {
                started = true
                if bar.isTerminal { bar.draw(force: true) }
            }
            guard let e = inner.next() else {
                finished = true
                bar.close()
                return nil
            }
            return e
        }
    }

    public func makeIterator() -> Iterator { Iterator(inner: base.makeIterator(), bar: self) }
    public var underestimatedCount: Int { base.underestimatedCount }

    /// tqdm's `format_meter`: `desc: pct%|bar| n/total [elapsed<remaining, rate, postfix]`.
    /// `barWidth` 0 leaves out the bar (the plain-line form).
    public static func formatMeter(n: Int, total: Int?, elapsed: Double, description: String = "",
                                   postfix: String = "", barWidth: Int = 20) -> String {
        let rate = elapsed > 0 ? Double(n) / elapsed : nil
        let rateText: String
        if let r = rate, r > 0 {
            rateText = r >= 1 ? String(cFormat: "%.2fit/s", r) : String(cFormat: "%.2fs/it", 1 / r)
        } else {
            rateText = "?it/s"
        }
        var s = description.isEmpty ? "" : description + ": "
        var timing = formatInterval(elapsed)
        if let total {
            let fraction = total > 0 ? Swift.min(1, Double(n) / Double(total)) : 1
            s += String(cFormat: "%3d%%", Int(fraction * 100))
            if barWidth > 0 { s += "|" + bar(fraction, width: barWidth) + "|" }
            s += " \(n)/\(total)"
            if let r = rate, r > 0 {
                timing += "<" + formatInterval(Double(Swift.max(0, total - n)) / r)
            } else {
                timing += "<?"
            }
        } else {
            s += "\(n)it"
        }
        s += " [\(timing), \(rateText)" + (postfix.isEmpty ? "" : ", " + postfix) + "]"
        return s
    }

    /// `mm:ss`, or `h:mm:ss` from an hour on (tqdm's `format_interval`).
    public static func formatInterval(_ seconds: Double) -> String {
        let t = Int(seconds.isFinite ? Swift.max(0, seconds) : 0)
        let (h, m, s) = (t / 3600, t / 60 % 60, t % 60)
        return h > 0 ? String(cFormat: "%d:%02d:%02d", h, m, s) : String(cFormat: "%02d:%02d", m, s)
    }

    /// A bar of `width` cells with eighth-block resolution (`█████▌    `).
    static func bar(_ fraction: Double, width: Int) -> String {
        let eighths = Int((fraction * Double(width * 8)).rounded(.down))
        let full = eighths / 8, part = eighths % 8
        let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][part]
        let used = full + (partial.isEmpty ? 0 : 1)
        return String(repeating: "█", count: full) + partial + String(repeating: " ", count: Swift.max(0, width - used))
    }

    /// Postfix numbers as tqdm formats floats: 4 decimals, or scientific when small/large.
    static func formatNumber(_ v: Double) -> String {
        let a = abs(v)
        if v == v.rounded(), a < 1e15 { return String(Int(v)) }
        return (a != 0 && (a < 1e-3 || a >= 1e6)) ? String(cFormat: "%.3e", v) : String(cFormat: "%.4f", v)
    }
}

/// tqdm's spelling: `for batch in tqdm(loader, description: "train") { ... }`.
public func tqdm<S: Sequence>(_ sequence: S, total: Int? = nil, description: String = "",
                              output: ProgressBar<S>.Output = .standardError) -> ProgressBar<S> {
    ProgressBar(sequence, total: total, description: description, output: output)
}
