import Foundation
import XCTest
@testable import Torch

final class PlotTests: XCTestCase {
    func testLineChartSVGHasSeriesLegendAndLabels() {
        var chart = utils.plot.LineChart(title: "Loss & accuracy", xLabel: "epoch", yLabel: "loss")
        chart.plot([1, 0.5, 0.25], label: "SGD")
        chart.plot([0.8, 0.3, 0.1], x: [0, 1, 2], label: "Adam")
        let svg = chart.svg()
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\""))
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 2)
        XCTAssertTrue(svg.contains(">Loss &amp; accuracy</text>"))
        XCTAssertTrue(svg.contains(">SGD</text>") && svg.contains(">Adam</text>"))
        XCTAssertTrue(svg.contains("stroke=\"#1f77b4\"") && svg.contains("stroke=\"#ff7f0e\""))
        XCTAssertTrue(svg.contains(">epoch</text>") && svg.contains("rotate(-90)"))
    }

    func testTicksAreNiceAndLogAxesUsePowersOfTen() {
        let (range, ticks) = ChartGeometry.axis(0, 9, .linear, pad: false)
        XCTAssertEqual(range.0, 0)
        XCTAssertEqual(ticks.map(\.label), ["0", "2", "4", "6", "8"])
        let (logRange, logTicks) = ChartGeometry.axis(0.003, 2, .log, pad: true)
        XCTAssertEqual(logRange.0, 0.001, accuracy: 1e-12)
        XCTAssertEqual(logRange.1, 10, accuracy: 1e-9)
        XCTAssertEqual(logTicks.map(\.label), ["0.001", "0.01", "0.1", "1", "10"])
        XCTAssertEqual(ChartGeometry.tickLabel(2e-5), "2e-5")
        XCTAssertEqual(ChartGeometry.tickLabel(250000), "2.5e5")
    }

    func testLogScaleSkipsNonPositiveValues() {
        var chart = utils.plot.LineChart(yScale: .log)
        chart.plot([1, 0, 0.1, 0.01], label: "loss")
        let runs = ChartGeometry(chart).points(chart.series[0])
        XCTAssertEqual(runs.map(\.count), [1, 2])
    }

    func testRenderDrawsTheSeriesColours() {
        var chart = utils.plot.LineChart(title: "t", width: 320, height: 200)
        chart.plot([0, 1, 2, 3], label: "up", color: "#ff0000")
        let img = chart.render()
        XCTAssertEqual(img.shape, [3, 200, 320])
        XCTAssertEqual(img.dtype, .uint8)
        let r = img[0].toArray(as: UInt8.self), g = img[1].toArray(as: UInt8.self)
        let red = zip(r, g).filter { $0.0 == 255 && $0.1 == 0 }.count
        XCTAssertGreaterThan(red, 300, "the red line is drawn")
        XCTAssertEqual(r[0], 255, "white background")
    }

    func testImageGrid() throws {
        let imgs = torch.rand(5, 1, 6, 4)
        let grid = utils.plot.ImageGrid(imgs, captions: ["0", "1", "2", "3", "4"], nrow: 3, scale: 2)
        XCTAssertEqual(grid.size.width, 3 * (8 + 4) + 4)
        let t = grid.render()
        XCTAssertEqual(t.shape, [3, grid.size.height, grid.size.width])
        let svg = grid.svg()
        XCTAssertEqual(svg.components(separatedBy: "data:image/png;base64,").count - 1, 5)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("plot-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try grid.saveSVG(dir + "/g.svg")
        XCTAssertEqual(try String(contentsOfFile: dir + "/g.svg", encoding: .utf8), svg)
    }

    func testAddFigureLogsAnImage() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fig-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try SummaryWriter(logDir: dir)
        var chart = utils.plot.LineChart()
        chart.plot([3, 2, 1], label: "loss")
        writer.addFigure("curves", chart, 1)
        try writer.close()
        let records = try utils.tensorboard.EventFileReader.records(writer.eventFilePath)
        XCTAssertEqual(records.count, 2)
        XCTAssertTrue(records[1].count > 1000, "the PNG is in the event")
    }

    /// Non-white pixels of a canvas as (x, y, darkest channel).
    private func ink(_ c: Canvas) -> [(x: Int, y: Int, v: UInt8)] {
        var out: [(x: Int, y: Int, v: UInt8)] = []
        for y in 0..<c.height {
            for x in 0..<c.width {
                let i = 3 * (y * c.width + x)
                let v = Swift.min(c.pixels[i], c.pixels[i + 1], c.pixels[i + 2])
                if v < 255 { out.append((x, y, v)) }
            }
        }
        return out
    }

    func testFreeTypeTextLandsInItsMeasuredBox() throws {
        guard let font = FreeTypeFont.shared else {
            throw XCTSkip("fontconfig found no usable font (install fonts-dejavu-core): the pixel font is used")
        }
        XCTAssertFalse(ChartText.forcePixelFont)
        let label = "Loss (SGD), gy"
        let width = font.width(label, size: 16)
        XCTAssertGreaterThan(width, 60, "about 7 px a character at 16 px")
        XCTAssertLessThan(width, 16 * label.count)
        XCTAssertNotEqual(font.mask("abc", size: 16).coverage, font.mask("ABC", size: 16).coverage, "lower case is its own")

        // Centred on (150, 40), capitals centred vertically on y = 40.
        var c = Canvas(width: 300, height: 80)
        c.text(label, x: 150, y: 40, size: 16, anchor: 0.5, align: .middle, (0, 0, 128))
        let m = font.mask(label, size: 16)
        let baseline = 40 + (m.capHeight + 1) / 2
        let (x0, x1) = (150 - width / 2, 150 - width / 2 + width)
        let (y0, y1) = (baseline - 16, baseline + 5)  // ascender and descender of a 16 px font, about
        let pixels = ink(c)
        XCTAssertGreaterThan(pixels.count, 200)
        let outside = pixels.filter { $0.x < x0 - 2 || $0.x > x1 + 2 || $0.y < y0 || $0.y > y1 }
        XCTAssertTrue(outside.isEmpty, "ink outside the measured box [\(x0), \(x1)]×[\(y0), \(y1)]: \(outside.prefix(5))")
        XCTAssertTrue(pixels.contains { $0.x < x0 + 4 } && pixels.contains { $0.x > x1 - 4 }, "the text spans its measured width")
        XCTAssertTrue(pixels.contains { $0.y > baseline }, "descenders (g, y, comma) go below the baseline")
        XCTAssertTrue(pixels.contains { $0.v > 0 && $0.v < 200 }, "edges are anti-aliased")
        // Capitals sit symmetrically about y = 40: "L" has ink from the cap height to the baseline.
        let l = pixels.filter { $0.x < x0 + 3 && $0.v < 128 }.map(\.y)
        XCTAssertEqual(Double(l.min()! + l.max()!) / 2, 40, accuracy: 1.5)

        // Right-anchored text ends at x; rotated text reads upwards in a column left of x.
        var r = Canvas(width: 200, height: 200)
        r.text("end", x: 100, y: 30, size: 12, anchor: 1)
        r.text("rotated", x: 50, y: 150, size: 12, rotated: true)
        let rp = ink(r)
        XCTAssertTrue(rp.filter { $0.y < 60 }.allSatisfy { $0.x <= 101 && $0.x >= 100 - font.width("end", size: 12) - 1 })
        let column = rp.filter { $0.y >= 60 }
        XCTAssertTrue(column.allSatisfy { $0.x > 35 && $0.x <= 54 && $0.y <= 151 && $0.y > 150 - font.width("rotated", size: 12) - 2 })
        XCTAssertGreaterThan(column.count, 50)
    }

    func testPixelFontFallbackStillDraws() {
        XCTAssertNil(FreeTypeFont(path: "/nonexistent/font.ttf"), "a missing file is no font")
        ChartText.forcePixelFont = true
        defer { ChartText.forcePixelFont = false }
        XCTAssertNil(ChartText.font)
        XCTAssertEqual(ChartText.width("AB", size: 12), 14, "two 6 px glyphs, 2 px apart")
        var c = Canvas(width: 100, height: 40)
        c.text("Hi 7", x: 10, y: 20, size: 12)
        let pixels = ink(c)
        XCTAssertGreaterThan(pixels.count, 60)
        XCTAssertTrue(pixels.allSatisfy { $0.v == 0 }, "the pixel font has no anti-aliasing")
        XCTAssertTrue(pixels.allSatisfy { $0.x >= 10 && $0.x < 10 + 30 && $0.y >= 10 && $0.y < 20 }, "capitals 10 px tall standing on the baseline")
        var chart = utils.plot.LineChart(title: "Loss", xLabel: "epoch", yLabel: "loss", width: 320, height: 200)
        chart.plot([3, 2, 1], label: "train")
        let img = chart.render()
        let r = img[0].toArray(as: UInt8.self)
        let titleInk = (0..<30).flatMap { y in (0..<320).map { y * 320 + $0 } }.filter { r[$0] == 0 }.count
        XCTAssertGreaterThan(titleInk, 50, "the title is drawn")
    }

    func testRasterTextScalesWithTheChart() {
        var small = utils.plot.LineChart(title: "Loss", yLabel: "loss")
        small.plot([1, 2], label: "a")
        var big = small
        big.width = 1280
        big.height = 800
        XCTAssertEqual(small.rasterScale, 1)
        XCTAssertEqual(big.rasterScale, 2)
        XCTAssertEqual(ChartGeometry(big, scale: big.rasterScale).left, 140)
        XCTAssertEqual(ChartGeometry(big).left, 70, "SVG layout does not scale")
        func darkRows(_ t: Tensor, _ rows: Range<Int>, _ w: Int) -> Int {
            let r = t[0].toArray(as: UInt8.self)
            return rows.filter { y in (0..<w).contains { r[y * w + $0] < 128 } }.count
        }
        // The title's dark rows: about the cap height, twice as many at twice the size.
        let a = darkRows(small.render(), 0..<30, 640), b = darkRows(big.render(), 0..<60, 1280)
        XCTAssertGreaterThan(a, 6)
        XCTAssertEqual(Double(b), 2 * Double(a), accuracy: 3)
    }

    /// Writes sample charts as PNG files into $PLOT_SAMPLE_DIR (skipped when unset), for a person
    /// to look at after changing the rasteriser.
    func testWriteSamplePNGs() throws {
        guard let dir = ProcessInfo.processInfo.environment["PLOT_SAMPLE_DIR"] else {
            throw XCTSkip("set PLOT_SAMPLE_DIR to write sample charts")
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        func save(_ t: Tensor, _ name: String) throws {
            let (h, w) = (t.size(1), t.size(2))
            let hwc = t.permute(1, 2, 0).contiguous().toArray(as: UInt8.self)
            try Data(encodePNG(pixels: hwc, width: w, height: h, channels: 3)).write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        var chart = utils.plot.LineChart(title: "Loss (SGD vs Adam)", xLabel: "epoch", yLabel: "training loss", yScale: .log)
        chart.plot((0..<50).map { 2.5 * exp(-Double($0) / 12) + 0.01 }, label: "SGD, lr=0.1")
        chart.plot((0..<50).map { 2.3 * exp(-Double($0) / 6) + 0.004 }, label: "Adam")
        try save(chart.render(), "chart-log.png")
        try chart.saveSVG(dir + "/chart-log.svg")
        var acc = utils.plot.LineChart(title: "Accuracy", xLabel: "step", yLabel: "accuracy", width: 320, height: 200)
        acc.plot((0..<20).map { 1 - 0.9 * exp(-Double($0) / 4) }, label: "train")
        acc.plot((0..<20).map { 0.95 - 0.9 * exp(-Double($0) / 5) }, label: "test")
        try save(acc.render(), "chart-small.png")
        let grid = utils.plot.ImageGrid(torch.rand(6, 3, 16, 16), captions: ["cat", "dog 0.93", "7", "ship", "Frog", "car/truck"], nrow: 3, scale: 3)
        try save(grid.render(), "grid.png")
    }
}
