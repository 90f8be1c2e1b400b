extension utils {
    /// PyTorch's `torch.utils.tensorboard`.
    public enum tensorboard {}
}

/// `from torch.utils.tensorboard import SummaryWriter`.
public typealias SummaryWriter = utils.tensorboard.SummaryWriter

extension utils.tensorboard {
    /// Writes TensorBoard event files (`torch.utils.tensorboard.SummaryWriter`): scalars,
    /// histograms, images and text that `tensorboard --logdir runs` shows.
    ///
    /// ```swift
    /// let writer = try SummaryWriter()                  // runs/Nov25_05-40-12_<host>
    /// for epoch in 0..<10 {
    ///     writer.addScalar("Loss/train", loss, epoch)   // a Double or a 0-d tensor
    ///     writer.addHistogram("fc1.weight", model.fc1.weight, epoch)
    /// }
    /// writer.addImage("sample", img, 0, dataformats: "CHW")
    /// try writer.close()
    /// ```
    ///
    /// Every record is handed to the kernel when it is added (a killed process leaves all of them
    /// readable); the file is also synced to disk every `flushSecs` and on `flush()`/`close()`.
    /// The `add…` methods do not throw, so they read like PyTorch's: a failed write is reported
    /// on standard error once and thrown by the next `flush()` or `close()`.
    public final class SummaryWriter {
        /// The run folder the events go to.
        public let logDir: String
        private let flushSecs: Double
        private let filenameSuffix: String
        private(set) var writer: EventFileWriter
        /// addScalars' writers, one per sub-folder.
        private var scalarWriters: [String: EventFileWriter] = [:]
        var pendingError: Error?

        /// - Parameters:
        ///   - logDir: the run folder; default `runs/<MonDD_HH-MM-SS>_<host><comment>` as PyTorch.
        ///   - comment: appended to the default folder name (ignored when `logDir` is given).
        ///   - flushSecs: how often records are synced to disk (PyTorch's default 120).
        ///   - filenameSuffix: appended to the event file's name.
        /// - Throws: ``SerializationError`` when the folder or the file cannot be created.
        public init(logDir: String? = nil, comment: String = "", flushSecs: Double = 120, filenameSuffix: String = "") throws {
            if let logDir {
                self.logDir = logDir
            } else {
                // PyTorch's "%b%d_%H-%M-%S" in local time, by strftime in the C locale (Foundation's
                // DateFormatter would link its ICU data into a static binary).
                var now = time(nil), parts = tm()
                localtime_r(&now, &parts)
                var buffer = [CChar](repeating: 0, count: 64)
                let n = strftime(&buffer, buffer.count, "%b%d_%H-%M-%S", &parts)
                let stamp = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                self.logDir = "runs/" + stamp + "_" + hostName() + comment
            }
            self.flushSecs = flushSecs
            self.filenameSuffix = filenameSuffix
            writer = try EventFileWriter(logDir: self.logDir, flushSecs: flushSecs, filenameSuffix: filenameSuffix)
        }

        deinit { try? close() }

        /// The path of the main event file.
        public var eventFilePath: String { writer.path }

        /// PyTorch's `get_logdir()`.
        public func getLogdir() -> String { logDir }

        /// Remembers the first failure for the next `flush()`/`close()` and reports it once.
        func record(_ error: Error) {
            if pendingError == nil {
                writeStandardError("SummaryWriter: \(error)\n")
                pendingError = error
            }
        }

        /// The main event file; after `close()` a new one is started, as PyTorch does.
        func mainWriter() -> EventFileWriter? {
            if writer.isClosed {
                do { writer = try EventFileWriter(logDir: logDir, flushSecs: flushSecs, filenameSuffix: filenameSuffix) } catch {
                    record(error)
                    return nil
                }
            }
            return writer
        }

        func emit(_ w: EventFileWriter?, _ value: ProtoWriter, _ step: Int?, _ walltime: Double?) {
            guard let w else { return }
            let event = TBProto.event(wallTime: walltime ?? Date().timeIntervalSince1970, step: step ?? 0, value: value)
            do { try w.writeRecord(event) } catch { record(error) }
        }

        /// Logs one number (`add_scalar`), stored as float32 like PyTorch.
        public func addScalar(_ tag: String, _ value: Double, _ globalStep: Int? = nil, walltime: Double? = nil) {
            emit(mainWriter(), TBProto.scalar(tag, value), globalStep, walltime)
        }

        /// Logs a `Float` or other floating-point number.
        public func addScalar<V: BinaryFloatingPoint>(_ tag: String, _ value: V, _ globalStep: Int? = nil, walltime: Double? = nil) {
            addScalar(tag, Double(value), globalStep, walltime: walltime)
        }

        /// Logs an integer count (stored as float32, as PyTorch).
        public func addScalar<V: BinaryInteger>(_ tag: String, _ value: V, _ globalStep: Int? = nil, walltime: Double? = nil) {
            addScalar(tag, Double(value), globalStep, walltime: walltime)
        }

        /// Logs a one-element tensor, e.g. a loss: `writer.addScalar("Loss/train", loss, epoch)`.
        public func addScalar(_ tag: String, _ value: Tensor, _ globalStep: Int? = nil, walltime: Double? = nil) {
            precondition(value.numel == 1, "add_scalar: expected a tensor with one element but got shape \(value.shape)")
            addScalar(tag, value.item(), globalStep, walltime: walltime)
        }

        /// Logs several curves on one chart (`add_scalars`): each goes to the sub-folder
        /// `<logDir>/<mainTag with "/" as "_">_<key>`, tagged `mainTag`, as PyTorch does.
        public func addScalars(_ mainTag: String, _ tagScalarDict: [String: Double], _ globalStep: Int? = nil,
                               walltime: Double? = nil) {
            let time = walltime ?? Date().timeIntervalSince1970
            for (key, v) in tagScalarDict.sorted(by: { $0.key < $1.key }) {
                let dir = PathString.join(logDir, mainTag.replacing("/", with: "_") + "_" + key)
                let w: EventFileWriter
                if let existing = scalarWriters[dir] {
                    w = existing
                } else {
                    do {
                        w = try EventFileWriter(logDir: dir, flushSecs: flushSecs, filenameSuffix: filenameSuffix)
                    } catch {
                        record(error)
                        continue
                    }
                    scalarWriters[dir] = w
                }
                emit(w, TBProto.scalar(mainTag, v), globalStep, time)
            }
        }

        /// Logs a histogram of `values` (`add_histogram`), with numpy's bin rule `bins`
        /// ("auto" by default as in PyTorch, "fd", "sturges" or "sqrt").
        public func addHistogram(_ tag: String, _ values: Tensor, _ globalStep: Int? = nil, bins: String = "auto",
                                 walltime: Double? = nil) {
            let h = HistogramSummary(values.detach().toArray(as: Double.self), bins: bins)
            emit(mainWriter(), TBProto.histogram(tag, h), globalStep, walltime)
        }

        /// Logs a histogram with `bins` equal-width bins.
        public func addHistogram(_ tag: String, _ values: Tensor, _ globalStep: Int? = nil, bins: Int,
                                 walltime: Double? = nil) {
            let h = HistogramSummary(values.detach().toArray(as: Double.self), bins: nil, binCount: bins)
            emit(mainWriter(), TBProto.histogram(tag, h), globalStep, walltime)
        }

        /// Logs an image (`add_image`): `dataformats` "CHW" (default), "HWC" or "HW"; float values
        /// in [0, 1] (scaled by 255 and clipped), uint8 values as they are. One-channel images are
        /// written as RGB, as PyTorch.
        public func addImage(_ tag: String, _ img: Tensor, _ globalStep: Int? = nil, walltime: Double? = nil,
                             dataformats: String = "CHW") {
            let (png, h, w, c) = tensorBoardPNG(img, dataformats: dataformats)
            emit(mainWriter(), TBProto.image(tag, png: png, height: h, width: w, channels: c), globalStep, walltime)
        }

        /// Logs a batch of images as one grid, 8 a row (`add_images`); `dataformats` "NCHW" or "NHWC".
        public func addImages(_ tag: String, _ imgs: Tensor, _ globalStep: Int? = nil, walltime: Double? = nil,
                              dataformats: String = "NCHW") {
            let (png, h, w, c) = tensorBoardPNG(imgs, dataformats: dataformats)
            emit(mainWriter(), TBProto.image(tag, png: png, height: h, width: w, channels: c), globalStep, walltime)
        }

        /// Logs text (`add_text`), shown by TensorBoard's text plugin under `<tag>/text_summary`.
        public func addText(_ tag: String, _ text: String, _ globalStep: Int? = nil, walltime: Double? = nil) {
            emit(mainWriter(), TBProto.text(tag, text), globalStep, walltime)
        }

        /// Syncs every event file to disk.
        /// - Throws: the first write error since the last flush, or a sync error.
        public func flush() throws {
            if let e = pendingError { pendingError = nil; throw e }
            try writer.flush()
            for w in scalarWriters.values { try w.flush() }
        }

        /// Syncs and closes the event files. Adding more afterwards starts new files, as in PyTorch.
        public func close() throws {
            let e = pendingError
            pendingError = nil
            let subWriters = scalarWriters.values
            scalarWriters = [:]
            try writer.close()
            for w in subWriters { try w.close() }
            if let e { throw e }
        }
    }
}
