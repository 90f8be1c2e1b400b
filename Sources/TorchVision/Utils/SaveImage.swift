import Torch

extension utils {
    /// The bytes `saveImage` writes: `makeGrid` of `tensor`, then `x * 255 + 0.5` clamped to 0…255 and
    /// truncated to uint8 (C×H×W), as torchvision's `save_image` converts before handing the array to Pillow.
    public static func imagePixels(_ tensor: Tensor, nrow: Int = 8, padding: Int = 2, normalize: Bool = false,
                                   valueRange: (Double, Double)? = nil, scaleEach: Bool = false, padValue: Double = 0) -> Tensor {
        let grid = makeGrid(tensor, nrow: nrow, padding: padding, normalize: normalize, valueRange: valueRange,
                            scaleEach: scaleEach, padValue: padValue)
        return grid.mul(255).add(0.5).clamp(min: 0, max: 255).to(.uint8)
    }

    /// Writes a tensor image, or a batch of them tiled by `makeGrid`, as a PNG or JPEG file chosen by the
    /// extension of `path` (torchvision's `save_image`); values are expected in [0, 1] (or use `normalize`).
    ///
    /// ```swift
    /// try utils.saveImage(batch, "samples.png", nrow: 8, normalize: true)
    /// ```
    public static func saveImage(_ tensor: Tensor, _ path: String, nrow: Int = 8, padding: Int = 2, normalize: Bool = false,
                                 valueRange: (Double, Double)? = nil, scaleEach: Bool = false, padValue: Double = 0) throws {
        let pixels = imagePixels(tensor, nrow: nrow, padding: padding, normalize: normalize, valueRange: valueRange,
                                 scaleEach: scaleEach, padValue: padValue)
        try Image(tensor: pixels).save(path)
    }
}
