// Line charts without Python: the chart model, its axes, and SVG output. Raster output (for PNG
// files and TensorBoard) is in ChartRaster.swift.

extension utils {
    /// Plots without Python: ``LineChart`` (loss curves, several series, legend, log scale) and
    /// ``ImageGrid`` (sample images), written as SVG or rendered to a uint8 image tensor (which
    /// TorchVision's `savePNG` and `SummaryWriter.addFigure` turn into PNG).
    public enum plot {}
}

extension utils.plot {
    /// How an axis maps values to positions.
    public enum Scale: String, Sendable {
        case linear, log
    }

    /// One curve of a ``LineChart``.
    public struct Series: Sendable {
        /// The legend entry.
        public var label: String
        public var x: [Double]
        public var y: [Double]
        /// A CSS colour (`#1f77b4`); nil takes the next of matplotlib's `tab10` colours.
        public var color: String?

        public init(label: String, x: [Double], y: [Double], color: String? = nil) {
            precondition(x.count == y.count, "plot.Series '\(label)': \(x.count) x values for \(y.count) y values")
            self.label = label
            self.x = x
            self.y = y
            self.color = color
        }
    }

    /// matplotlib's default colour cycle (`tab10`).
    public static let tab10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

    /// A line chart with a title, axis labels, a legend and linear or log axes — enough for
    /// tutorial 000's optimizer comparison and training curves.
    ///
    /// ```swift
    /// var chart = utils.plot.LineChart(title: "Loss", xLabel: "step", yLabel: "loss", yScale: .log)
    /// chart.plot(sgdLosses, label: "SGD")            // x = 0, 1, 2, ...
    /// chart.plot(adamLosses, label: "Adam")
    /// try chart.saveSVG("losses.svg")
    /// let image = chart.render()                     // uint8 [3, 400, 640]
    /// ```
    public struct LineChart: Sendable {
        public var title: String
        public var xLabel: String
        public var yLabel: String
        public var xScale: Scale
        public var yScale: Scale
        /// The size in pixels.
        public var width: Int
        public var height: Int
        public private(set) var series: [Series] = []

        public init(title: String = "", xLabel: String = "", yLabel: String = "", xScale: Scale = .linear,
                    yScale: Scale = .linear, width: Int = 640, height: Int = 400) {
            precondition(width >= 160 && height >= 120, "plot.LineChart: size \(width)×\(height) is too small (at least 160×120)")
            self.title = title
            self.xLabel = xLabel
            self.yLabel = yLabel
            self.xScale = xScale
            self.yScale = yScale
            self.width = width
            self.height = height
        }

        /// Adds a curve of `y` against `x` (default 0, 1, 2, ...), like `plt.plot(x, y, label=)`.
        public mutating func plot(_ y: [Double], x: [Double]? = nil, label: String = "", color: String? = nil) {
            let xs = x ?? y.indices.map(Double.init)
            series.append(Series(label: label.isEmpty ? "series \(series.count + 1)" : label, x: xs, y: y,
                                 color: color ?? utils.plot.tab10[series.count % utils.plot.tab10.count]))
        }

        /// Adds a prepared series.
        public mutating func add(_ s: Series) {
            var s = s
            if s.color == nil { s.color = utils.plot.tab10[series.count % utils.plot.tab10.count] }
            series.append(s)
        }

        /// The SVG document.
        public func svg() -> String {
            let g = ChartGeometry(self)
            var out = """
                <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" font-family="sans-serif" font-size="12">
                <rect width="100%" height="100%" fill="white"/>

                """
            for t in g.xTicks {
                let px = g.px(t.value)
                out += "<line x1=\"\(f(px))\" y1=\"\(g.top)\" x2=\"\(f(px))\" y2=\"\(g.bottom)\" stroke=\"#e0e0e0\"/>\n"
                out += "<text x=\"\(f(px))\" y=\"\(g.bottom + 16)\" text-anchor=\"middle\">\(xml(t.label))</text>\n"
            }
            for t in g.yTicks {
                let py = g.py(t.value)
                out += "<line x1=\"\(g.left)\" y1=\"\(f(py))\" x2=\"\(g.right)\" y2=\"\(f(py))\" stroke=\"#e0e0e0\"/>\n"
                out += "<text x=\"\(g.left - 6)\" y=\"\(f(py + 4))\" text-anchor=\"end\">\(xml(t.label))</text>\n"
            }
            out += "<rect x=\"\(g.left)\" y=\"\(g.top)\" width=\"\(g.right - g.left)\" height=\"\(g.bottom - g.top)\" fill=\"none\" stroke=\"black\"/>\n"
            for s in series {
                for run in g.points(s) where !run.isEmpty {
                    let pts = run.map { "\(f($0.0)),\(f($0.1))" }.joined(separator: " ")
                    out += "<polyline fill=\"none\" stroke=\"\(s.color ?? "black")\" stroke-width=\"2\" points=\"\(pts)\"/>\n"
                }
            }
            if !title.isEmpty {
                out += "<text x=\"\(width / 2)\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">\(xml(title))</text>\n"
            }
            if !xLabel.isEmpty {
                out += "<text x=\"\((g.left + g.right) / 2)\" y=\"\(height - 10)\" text-anchor=\"middle\">\(xml(xLabel))</text>\n"
            }
            if !yLabel.isEmpty {
                out += "<text transform=\"translate(16 \((g.top + g.bottom) / 2)) rotate(-90)\" text-anchor=\"middle\">\(xml(yLabel))</text>\n"
            }
            for (i, s) in series.enumerated() {
                let y = g.top + 16 + i * 18
                out += "<line x1=\"\(g.right - 150)\" y1=\"\(y - 4)\" x2=\"\(g.right - 126)\" y2=\"\(y - 4)\" stroke=\"\(s.color ?? "black")\" stroke-width=\"2\"/>\n"
                out += "<text x=\"\(g.right - 120)\" y=\"\(y)\">\(xml(s.label))</text>\n"
            }
            return out + "</svg>\n"
        }

        /// Writes ``svg()`` to `path` atomically.
        /// - Throws: ``SerializationError`` when the file cannot be written.
        public func saveSVG(_ path: String) throws {
            try AtomicFile.write(Array(svg().utf8), to: path)
        }

        private func f(_ v: Double) -> String { String(cFormat: "%.1f", v) }
    }
}

/// Escapes text for SVG.
func xml(_ s: String) -> String {
    s.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
        .replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
}

/// A chart's plot area, data ranges and ticks: shared by the SVG and raster outputs.
struct ChartGeometry {
    struct Tick { let value: Double; let label: String }
    let left: Int, right: Int, top: Int, bottom: Int
    let xRange: (Double, Double), yRange: (Double, Double)
    let xScale: utils.plot.Scale, yScale: utils.plot.Scale
    let xTicks: [Tick], yTicks: [Tick]
    /// The factor on margins and text sizes: 1 for SVG; raster charts grow it with their size.
    let scale: Double

    init(_ c: utils.plot.LineChart, scale: Double = 1) {
        self.scale = scale
        let d = { (v: Int) in Int((Double(v) * scale).rounded()) }
        left = d(70)
        right = c.width - d(20)
        top = d(c.title.isEmpty ? 20 : 36)
        bottom = c.height - d(c.xLabel.isEmpty ? 28 : 44)
        xScale = c.xScale
        yScale = c.yScale
        func usable(_ v: Double, _ s: utils.plot.Scale) -> Bool { v.isFinite && (s == .linear || v > 0) }
        let xs = c.series.flatMap { s in zip(s.x, s.y).filter { usable($0.0, c.xScale) && usable($0.1, c.yScale) }.map(\.0) }
        let ys = c.series.flatMap { s in zip(s.x, s.y).filter { usable($0.0, c.xScale) && usable($0.1, c.yScale) }.map(\.1) }
        (xRange, xTicks) = ChartGeometry.axis(xs.min(), xs.max(), c.xScale, pad: false)
        (yRange, yTicks) = ChartGeometry.axis(ys.min(), ys.max(), c.yScale, pad: true)
    }

    /// The range shown and its ticks: "nice" steps (1, 2, 5 × 10^k) on linear axes, powers of ten on log axes.
    static func axis(_ lo: Double?, _ hi: Double?, _ scale: utils.plot.Scale, pad: Bool) -> ((Double, Double), [Tick]) {
        if scale == .log {
            let a = log10(lo ?? 1), b = log10(hi ?? 10)
            var e0 = a.rounded(.down), e1 = b.rounded(.up)
            if e0 == e1 { e0 -= 1; e1 += 1 }
            let stride = Swift.max(1, Int(((e1 - e0) / 6).rounded(.up)))
            let ticks = Swift.stride(from: Int(e0), through: Int(e1), by: stride).map {
                Tick(value: pow(10, Double($0)), label: tickLabel(pow(10, Double($0))))
            }
            return ((pow(10, e0), pow(10, e1)), ticks)
        }
        var a = lo ?? 0, b = hi ?? 1
        if a == b { a -= 0.5; b += 0.5 }
        if pad { let m = (b - a) * 0.05; a -= m; b += m }
        let raw = (b - a) / 5
        let mag = pow(10, log10(raw).rounded(.down))
        let step = [1.0, 2, 5, 10].map { $0 * mag }.first { $0 >= raw } ?? 10 * mag
        var ticks: [Tick] = []
        var v = (a / step).rounded(.up) * step
        while v <= b + step * 1e-9 {
            ticks.append(Tick(value: v, label: tickLabel(abs(v) < step * 1e-9 ? 0 : v)))
            v += step
        }
        return ((a, b), ticks)
    }

    /// Short tick labels: `0.5`, `10`, `1e-3`.
    static func tickLabel(_ v: Double) -> String {
        if v == 0 { return "0" }
        let a = abs(v)
        if a >= 1e5 || a < 1e-3 {
            let e = Int(log10(a).rounded(.down)), m = v / pow(10, Double(e))
            return (abs(m - m.rounded()) < 1e-9 ? String(Int(m.rounded())) : String(cFormat: "%.1f", m)) + "e\(e)"
        }
        var s = String(cFormat: "%.4f", v)
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
        return s
    }

    /// `v` pixels at 640×400, scaled.
    func d(_ v: Int) -> Int { Int((Double(v) * scale).rounded()) }

    private func unit(_ v: Double, _ r: (Double, Double), _ s: utils.plot.Scale) -> Double {
        s == .log ? (log10(v) - log10(r.0)) / (log10(r.1) - log10(r.0)) : (v - r.0) / (r.1 - r.0)
    }

    func px(_ x: Double) -> Double { Double(left) + unit(x, xRange, xScale) * Double(right - left) }
    func py(_ y: Double) -> Double { Double(bottom) - unit(y, yRange, yScale) * Double(bottom - top) }

    /// A series' points in pixels, split into runs where a value cannot be drawn (NaN, ≤ 0 on a log axis).
    func points(_ s: utils.plot.Series) -> [[(Double, Double)]] {
        var runs: [[(Double, Double)]] = [[]]
        for (x, y) in zip(s.x, s.y) {
            let ok = x.isFinite && y.isFinite && (xScale == .linear || x > 0) && (yScale == .linear || y > 0)
            if ok { runs[runs.count - 1].append((px(x), py(y))) } else if !runs[runs.count - 1].isEmpty { runs.append([]) }
        }
        return runs
    }
}
