extension utils.tensorboard.SummaryWriter {
    /// Writes an embedding for TensorBoard's Projector tab (`add_embedding`), in PyTorch's layout:
    /// `<logDir>/<step, 5 digits>/<tag>/tensors.tsv` (one row of `mat` a line), `metadata.tsv`
    /// (one label a line, or a header line and tab-separated columns), `sprite.png` (the
    /// `labelImg` thumbnails in a square grid) and an `embeddings { ... }` entry appended to
    /// `<logDir>/projector_config.pbtxt`.
    ///
    /// ```swift
    /// writer.addEmbedding(features, metadata: labels.map(String.init), labelImg: images.unsqueeze(1))
    /// ```
    /// - Parameters:
    ///   - mat: N×D, one embedding a row.
    ///   - metadata: N labels, or N rows of columns named by `metadataHeader`.
    ///   - labelImg: N×C×H×W thumbnails (floats in [0, 1] or uint8).
    ///   - globalStep: the step, which names the folder (default 0).
    ///   - tag: the embedding's name (default "default").
    ///   - metadataHeader: column names when `metadata` rows are tab-separated columns.
    public func addEmbedding(_ mat: Tensor, metadata: [String]? = nil, labelImg: Tensor? = nil, globalStep: Int? = nil,
                             tag: String = "default", metadataHeader: [String]? = nil) {
        precondition(mat.dim == 2, "add_embedding: mat must be N×D, got shape \(mat.shape)")
        let n = mat.size(0)
        precondition(metadata.map { $0.count == n } ?? true, "add_embedding: \(metadata?.count ?? 0) metadata rows for \(n) embeddings")
        precondition(labelImg.map { $0.dim == 4 && $0.size(0) == n } ?? true,
                     "add_embedding: label_img must be N×C×H×W with N = \(n), got shape \(labelImg?.shape ?? [])")
        _ = mainWriter()   // the run's event file exists, as PyTorch's add_embedding makes sure
        let sub = String(cFormat: "%05d", globalStep ?? 0) + "/" + tag.percentEncodingNonAlphanumerics()
        let folder = PathString.join(logDir, sub)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let values = mat.detach().float().contiguous().toArray(as: Float.self), d = mat.size(1)
            let rows = (0..<n).map { i in (0..<d).map { "\(values[i * d + $0])" }.joined(separator: "\t") }
            try AtomicFile.write(Array((rows.joined(separator: "\n") + "\n").utf8), to: folder + "/tensors.tsv")
            var config = "embeddings {\ntensor_name: \"\(tag):\(String(cFormat: "%05d", globalStep ?? 0))\"\ntensor_path: \"\(sub)/tensors.tsv\"\n"
            if let metadata {
                let lines = (metadataHeader.map { [$0.joined(separator: "\t")] } ?? []) + metadata
                try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: folder + "/metadata.tsv")
                config += "metadata_path: \"\(sub)/metadata.tsv\"\n"
            }
            if let labelImg {
                let side = Int(Double(n).squareRoot().rounded(.up))
                let (h, w) = (labelImg.size(2), labelImg.size(3))
                let img = labelImg.detach()
                let padded = side * side > n
                    ? torch.cat([img, torch.zeros([side * side - n] + Array(img.shape.dropFirst()), dtype: img.dtype)], dim: 0) : img
                // A side×side grid of thumbnails, no padding, as PyTorch's make_sprite.
                let c = padded.size(1)
                let grid = padded.reshape(side, side, c, h, w).permute(2, 0, 3, 1, 4).reshape(c, side * h, side * w)
                let (png, _, _, _) = tensorBoardPNG(grid, dataformats: "CHW")
                try AtomicFile.write(png, to: folder + "/sprite.png")
                config += "sprite {\nimage_path: \"\(sub)/sprite.png\"\nsingle_image_dim: \(h)\nsingle_image_dim: \(w)\n}\n"
            }
            config += "}\n"
            let configPath = PathString.join(logDir, "projector_config.pbtxt")
            let old = (try? Data(contentsOf: URL(fileURLWithPath: configPath))).map { [UInt8]($0) } ?? []
            try AtomicFile.write(old + Array(config.utf8), to: configPath)
        } catch {
            record(error)
        }
    }
}
