import Torch

/// The colour functionals' device paths (`rgb_to_grayscale`, `adjust_brightness/contrast/saturation/hue`,
/// `gaussian_blur`): torchvision's tensor formulas as tensor ops on the image's device, in its working dtype
/// (`DeviceImage`). Inputs are already checked by the public functions, which call these for GPU images.
enum DeviceColor {
    /// `ratio * a + (1 - ratio) * b` (b = 0 when nil) clamped to the image range and stored as `dtype`
    /// (integers truncate), torchvision's `_blend`; `a` and `b` are working values.
    static func blend(_ a: Tensor, _ b: Tensor?, ratio: Double, dtype: DType) -> Tensor {
        var v = a * ratio
        if let b { v = v + b * (1 - ratio) }
        return DeviceImage.stored(v.clamp(min: 0, max: imageMaxValue(dtype)), as: dtype, truncating: true)
    }

    /// The red, green and blue planes of a (…, 3, H, W) tensor, each (…, 1, H, W).
    private static func rgb(_ x: Tensor) -> (Tensor, Tensor, Tensor) {
        let c = x.dim - 3
        return (x.narrow(c, 0, 1), x.narrow(c, 1, 1), x.narrow(c, 2, 1))
    }

    /// The luma `0.2989 R + 0.587 G + 0.114 B` of a 3-channel image as (…, 1, H, W) in its dtype.
    static func grayscale(_ img: Tensor) -> Tensor {
        let (r, g, b) = rgb(DeviceImage.working(img))
        return DeviceImage.stored(r * 0.2989 + g * 0.587 + b * 0.114, as: img.dtype, truncating: true)
    }

    static func adjustBrightness(_ img: Tensor, _ factor: Double) -> Tensor {
        blend(DeviceImage.working(img), nil, ratio: factor, dtype: img.dtype)
    }

    /// Blends with the mean of the (greyscale) image, one mean per image.
    static func adjustContrast(_ img: Tensor, _ factor: Double, channels: Int) -> Tensor {
        let grey = DeviceImage.working(channels == 3 ? grayscale(img) : img)
        let n = grey.dim
        let mean = grey.mean(dim: [n - 3, n - 2, n - 1], keepdim: true)
        return blend(DeviceImage.working(img), mean, ratio: factor, dtype: img.dtype)
    }

    static func adjustSaturation(_ img: Tensor, _ factor: Double) -> Tensor {
        blend(DeviceImage.working(img), DeviceImage.working(grayscale(img)), ratio: factor, dtype: img.dtype)
    }

    /// Shifts the hue through HSV with torchvision's `_rgb2hsv`/`_hsv2rgb` formulas, on [0, 1] values.
    static func adjustHue(_ img: Tensor, _ factor: Double) -> Tensor {
        let x = transforms.functional.convertImageDtype(img, DeviceImage.workingDType(img.dtype))
        let c = x.dim - 3
        let (r, g, b) = rgb(x)
        let maxc = x.amax(dim: [c], keepdim: true), minc = x.amin(dim: [c], keepdim: true)
        let equal = maxc .== minc
        let range = maxc - minc
        let ones = torch.onesLike(maxc)
        let s = range / torch.where(equal, ones, maxc)
        let divisor = torch.where(equal, ones, range)
        let rc = (maxc - r) / divisor, gc = (maxc - g) / divisor, bc = (maxc - b) / divisor
        var h = torch.where(maxc .== r, bc - gc, torch.where(maxc .== g, (rc + 2) - bc, (gc + 4) - rc))
        h = (h / 6 + 1).fmod(1) + factor
        h = h - h.floor()
        h = torch.where(h .>= 1, h - 1, h)
        let h6 = h * 6
        let sector = h6.floor()
        let f = h6 - sector
        let v = maxc
        let p = (v * (1 - s)).clamp(min: 0, max: 1)
        let q = (v * (1 - s * f)).clamp(min: 0, max: 1)
        let t = (v * (1 - s * (1 - f))).clamp(min: 0, max: 1)
        let wrapped = sector.remainder(6)
        /// The value of each pixel's hue sector, from the six per-sector choices.
        func pick(_ choices: [Tensor]) -> Tensor {
            (0..<5).reversed().reduce(choices[5]) { torch.where(wrapped .== Double($1), choices[$1], $0) }
        }
        let out = torch.cat([pick([v, q, p, p, t, v]), pick([t, v, v, q, p, p]), pick([p, p, t, v, v, q])], dim: c)
        return transforms.functional.convertImageDtype(out, img.dtype)
    }

    /// Separable blur by the 1-D kernels `fx` and `fy` (reflected edges built into the filters).
    static func blurred(_ img: Tensor, rows fy: AxisFilter, cols fx: AxisFilter) -> Tensor {
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        return DeviceImage.stored(DeviceImage.resampled(img, rows: fy, cols: fx, outHeight: h, outWidth: w), as: img.dtype)
    }
}
