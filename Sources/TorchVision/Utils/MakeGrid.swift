import Torch

// torchvision's `utils` shares its name with PyTorch's `torch.utils` (which holds `utils.data`), so
// TorchVision adds its functions to Torch's `utils` namespace instead of declaring a second one.
extension utils {
    /// Tiles a batch of images (B×C×H×W, or one C×H×W / H×W image) into one C×H'×W' grid with `nrow`
    /// images per row and `padding` pixels of `padValue` around each, like torchvision's `make_grid`.
    /// One-channel images become three-channel. `normalize` maps `valueRange` (default: the batch's, or with
    /// `scaleEach` each image's, min and max) to [0, 1]. A batch of one image comes back unpadded.
    ///
    /// ```swift
    /// let grid = utils.makeGrid(images, nrow: 4, normalize: true)   // 3×H'×W'
    /// ```
    public static func makeGrid(_ tensor: Tensor, nrow: Int = 8, padding: Int = 2, normalize: Bool = false,
                                valueRange: (Double, Double)? = nil, scaleEach: Bool = false, padValue: Double = 0) -> Tensor {
        precondition(nrow > 0, "make_grid: nrow must be positive, got \(nrow)")
        precondition(padding >= 0, "make_grid: padding must be non-negative, got \(padding)")
        var t = tensor
        if t.dim == 2 { t = t.unsqueeze(0) }
        if t.dim == 3 {
            if t.shape[0] == 1 { t = torch.cat([t, t, t], dim: 0) }
            t = t.unsqueeze(0)
        }
        precondition(t.dim == 4, "make_grid: expected a 4D mini-batch tensor (B x C x H x W) or one image, got shape \(tensor.shape)")
        if t.shape[1] == 1 { t = torch.cat([t, t, t], dim: 1) }
        if normalize {
            func scaled(_ img: Tensor) -> Tensor {
                let (lo, hi) = valueRange ?? (img.min().item(), img.max().item())
                return img.clamp(min: lo, max: hi).sub(lo).div(max(hi - lo, 1e-5))
            }
            t = scaleEach ? torch.stack((0..<t.shape[0]).map { scaled(t[$0]) }) : scaled(t)
        }
        if t.shape[0] == 1 { return t.squeeze(0) }
        let count = t.shape[0], columns = min(nrow, count)
        let rows = (count + columns - 1) / columns
        let (height, width) = (t.shape[2] + padding, t.shape[3] + padding)
        let grid = torch.full([t.shape[1], height * rows + padding, width * columns + padding], padValue, dtype: t.dtype)
        for k in 0..<count {
            let (y, x) = (k / columns, k % columns)
            _ = grid.narrow(1, y * height + padding, height - padding).narrow(2, x * width + padding, width - padding).copy_(t[k])
        }
        return grid
    }

    /// `makeGrid` of images given as a list of equally sized tensors.
    public static func makeGrid(_ tensors: [Tensor], nrow: Int = 8, padding: Int = 2, normalize: Bool = false,
                                valueRange: (Double, Double)? = nil, scaleEach: Bool = false, padValue: Double = 0) -> Tensor {
        makeGrid(torch.stack(tensors), nrow: nrow, padding: padding, normalize: normalize, valueRange: valueRange,
                 scaleEach: scaleEach, padValue: padValue)
    }
}
