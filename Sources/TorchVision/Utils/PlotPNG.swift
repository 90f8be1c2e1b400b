import Torch

extension utils.plot.LineChart {
    /// Writes the chart as a PNG file through TorchVision's encoder (`io.writePNG`).
    ///
    /// ```swift
    /// try chart.savePNG("losses.png")
    /// ```
    /// - Throws: an I/O or encoding error from `io.writePNG`.
    public func savePNG(_ path: String) throws { try io.writePNG(render(), path) }
}

extension utils.plot.ImageGrid {
    /// Writes the grid as a PNG file through TorchVision's encoder (`io.writePNG`).
    public func savePNG(_ path: String) throws { try io.writePNG(render(), path) }
}
