extension utils.tensorboard.SummaryWriter {
    /// Logs a chart as an image (PyTorch's `add_figure` for a matplotlib figure).
    ///
    /// ```swift
    /// var chart = utils.plot.LineChart(title: "loss")
    /// chart.plot(losses, label: "train")
    /// writer.addFigure("curves", chart, epoch)
    /// ```
    public func addFigure(_ tag: String, _ figure: utils.plot.LineChart, _ globalStep: Int? = nil, walltime: Double? = nil) {
        addImage(tag, figure.render(), globalStep, walltime: walltime)
    }

    /// Logs an image grid as an image.
    public func addFigure(_ tag: String, _ figure: utils.plot.ImageGrid, _ globalStep: Int? = nil, walltime: Double? = nil) {
        addImage(tag, figure.render(), globalStep, walltime: walltime)
    }
}
