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
}
