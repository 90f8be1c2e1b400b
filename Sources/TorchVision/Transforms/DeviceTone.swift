import Torch

/// The tone functionals' device paths (`invert`, `posterize`, `solarize`, `adjust_sharpness`, `autocontrast`,
/// `equalize`, `adjust_gamma`): torchvision's tensor formulas as tensor ops on the image's device, in its
/// working dtype (`DeviceImage`). Inputs are already checked by the public functions.
enum DeviceTone {
    /// `f` of the working values, stored back in the image's dtype (integers truncate).
    static func mapped(_ img: Tensor, _ f: (Tensor) -> Tensor) -> Tensor {
        DeviceImage.stored(f(DeviceImage.working(img)), as: img.dtype, truncating: true)
    }

    /// Keeps the top `bits` bits of uint8 values: `floor(x / 2⁸⁻ᵇⁱᵗˢ) · 2⁸⁻ᵇⁱᵗˢ`.
    static func posterize(_ img: Tensor, _ bits: Int) -> Tensor {
        let step = Double(1 << (8 - bits))
        return mapped(img) { ($0 / step).floor() * step }
    }

    /// Blends with the 3×3 smoothed image (weights 1, centre 5, over 13; border pixels kept; integer images
    /// round the smoothed values), torchvision's `adjust_sharpness`.
    static func adjustSharpness(_ img: Tensor, _ factor: Double) -> Tensor {
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        let x = DeviceImage.working(img)
        let planes = x.reshape([-1, 1, h, w])
        let weights = (0..<9).map { $0 == 4 ? 5.0 / 13 : 1.0 / 13 }
        let kernel = Tensor(weights, shape: [1, 1, 3, 3]).to(img.device, dtype: x.dtype)
        var inner = nn.functional.conv2d(planes, kernel)
        if !img.dtype.isFloatingPoint { inner = inner.round() }
        let smoothed = planes.clone()
        _ = smoothed.narrow(2, 1, h - 2).narrow(3, 1, w - 2).copy_(inner)
        return DeviceColor.blend(x, smoothed.reshape(x.shape), ratio: factor, dtype: img.dtype)
    }

    /// Stretches every plane to [0, bound]; a flat plane stays as it is.
    static func autocontrast(_ img: Tensor) -> Tensor {
        let bound = imageMaxValue(img.dtype)
        return mapped(img) { x in
            let dims = [x.dim - 2, x.dim - 1]
            let lo = x.amin(dim: dims, keepdim: true), hi = x.amax(dim: dims, keepdim: true)
            let flat = hi .<= lo
            let low = torch.where(flat, 0, lo)
            let scale = torch.where(flat, 1, torch.onesLike(hi) * bound / (hi - lo))
            return ((x - low) * scale).clamp(min: 0, max: bound)
        }
    }

    /// Equalises each plane's histogram of a uint8 image: per plane a 256-bin histogram (a scatter-add),
    /// its cumulative sum and torchvision's lookup table, all in int64 on the device.
    static func equalize(_ img: Tensor) -> Tensor {
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        if img.numel == 0 { return img.clone() }
        let pixels = img.reshape([-1, h * w]).to(.int64)
        let count = pixels.shape[0]
        func integer(_ v: Int64) -> Tensor { Tensor([v], shape: []).to(img.device) }
        let histogram = torch.zeros([count, 256], dtype: .int64, device: img.device)
            .scatterAdd(1, pixels, torch.onesLike(pixels))
        // The last non-empty bin is the plane's brightest value; torchvision's step leaves it out.
        let last = histogram.gather(1, pixels.amax(dim: [1], keepdim: true))
        let step = (h * w - last).floorDivide(integer(255))
        let safeStep = step + (step .== 0).to(.int64)
        let table = (histogram.cumsum(dim: 1).narrow(1, 0, 255) + safeStep.floorDivide(integer(2)))
            .floorDivide(safeStep).clamp(min: 0, max: 255)
        let lookup = torch.cat([torch.zeros([count, 1], dtype: .int64, device: img.device), table], dim: 1)
        let equalized = torch.where(step .== 0, pixels, lookup.gather(1, pixels))
        return equalized.to(img.dtype).reshape(img.shape)
    }

    /// `gain · x^gamma` clamped to [0, 1] on floating values.
    static func adjustGamma(_ x: Tensor, _ gamma: Double, gain: Double) -> Tensor {
        (x.pow(gamma) * gain).clamp(min: 0, max: 1)
    }
}
