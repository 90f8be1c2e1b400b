#if canImport(Glibc)
import Glibc
#endif
import Torch

extension transforms.functional {
    /// Checks an image has 1 or 3 channels in dimension -3 (the colour ops' requirement).
    private static func channels(_ img: Tensor, _ op: String, allowed: [Int] = [1, 3]) -> Int {
        precondition(img.dim >= 3, "\(op): input image tensor should have at least 3 dimensions, but found \(img.dim)")
        let c = img.shape[img.dim - 3]
        precondition(allowed.contains(c), "\(op): input image tensor permitted channel values are \(allowed), but found \(c)")
        return c
    }

    /// Pixel-wise work in float32 like torchvision (float64 images in Double).
    private static func rounding(_ dtype: DType) -> (Double) -> Double {
        dtype == .float64 ? { $0 } : { Double(Float($0)) }
    }

    /// `ratio * a + (1 - ratio) * b` clamped to the image range, back in `dtype` (integers truncate,
    /// as torchvision's `_blend`). `b` broadcasts over planes by `bIndex`.
    private static func blend(_ a: PixelPlanes, _ b: (Int, Int) -> Double, ratio: Double, dtype: DType) -> Tensor {
        let r = rounding(dtype)
        let ra = r(ratio), rb = r(1 - ratio), bound = imageMaxValue(dtype)
        var out = a
        let n = a.height * a.width
        for p in 0..<a.count {
            for i in 0..<n {
                var v = r(r(ra * a.data[p * n + i]) + r(rb * b(p, i)))
                v = min(max(v, 0), bound)
                out.data[p * n + i] = dtype.isFloatingPoint ? v : v.rounded(.towardZero)
            }
        }
        return out.tensor(dtype)
    }

    /// Luma of an RGB image, `0.2989 R + 0.587 G + 0.114 B` in the image's dtype (integers truncate), as
    /// 1 channel or repeated to 3 (torchvision's `rgb_to_grayscale`); a 1-channel image is copied.
    public static func rgbToGrayscale(_ img: Tensor, numOutputChannels: Int = 1) -> Tensor {
        precondition(numOutputChannels == 1 || numOutputChannels == 3, "num_output_channels should be either 1 or 3")
        let c = channels(img, "rgb_to_grayscale")
        var shape = img.shape
        let grey: Tensor
        if c == 3 && DeviceImage.isOnDevice(img) {
            grey = DeviceColor.grayscale(img)
        } else if c == 3 {
            let planes = PixelPlanes(img, op: "rgb_to_grayscale")
            let r = rounding(img.dtype)
            let n = planes.height * planes.width
            var out = PixelPlanes(lead: Array(planes.lead.dropLast()) + [1], height: planes.height, width: planes.width)
            for p in 0..<(planes.count / 3) {
                let base = 3 * p * n
                for i in 0..<n {
                    let wr = r(0.2989) * planes.data[base + i], wg = r(0.587) * planes.data[base + n + i]
                    let v = r(r(r(wr) + r(wg)) + r(r(0.114) * planes.data[base + 2 * n + i]))
                    out.data[p * n + i] = img.dtype.isFloatingPoint ? v : v.rounded(.towardZero)
                }
            }
            grey = out.tensor(img.dtype)
        } else {
            grey = img.clone()
        }
        if numOutputChannels == 1 { return grey }
        shape[img.dim - 3] = 3
        return grey.expand(shape).contiguous()
    }

    /// Scales brightness: 0 gives black, 1 the original (torchvision's `adjust_brightness`).
    public static func adjustBrightness(_ img: Tensor, _ brightnessFactor: Double) -> Tensor {
        precondition(brightnessFactor >= 0, "brightness_factor (\(brightnessFactor)) is not non-negative.")
        _ = channels(img, "adjust_brightness")
        if DeviceImage.isOnDevice(img) { return DeviceColor.adjustBrightness(img, brightnessFactor) }
        return blend(PixelPlanes(img, op: "adjust_brightness"), { _, _ in 0 }, ratio: brightnessFactor, dtype: img.dtype)
    }

    /// Blends with the mean grey level: 0 gives a uniform grey image, 1 the original.
    public static func adjustContrast(_ img: Tensor, _ contrastFactor: Double) -> Tensor {
        precondition(contrastFactor >= 0, "contrast_factor (\(contrastFactor)) is not non-negative.")
        let c = channels(img, "adjust_contrast")
        if DeviceImage.isOnDevice(img) { return DeviceColor.adjustContrast(img, contrastFactor, channels: c) }
        let grey = PixelPlanes(c == 3 ? rgbToGrayscale(img) : img, op: "adjust_contrast")
        let n = grey.height * grey.width
        let r = rounding(img.dtype)
        let means = (0..<grey.count).map { p in r(grey.data[(p * n)..<((p + 1) * n)].reduce(0, +) / Double(n)) }
        return blend(PixelPlanes(img, op: "adjust_contrast"), { p, _ in means[p / c] }, ratio: contrastFactor, dtype: img.dtype)
    }

    /// Blends with the greyscale image: 0 gives grey, 1 the original, 2 doubles the saturation.
    public static func adjustSaturation(_ img: Tensor, _ saturationFactor: Double) -> Tensor {
        precondition(saturationFactor >= 0, "saturation_factor (\(saturationFactor)) is not non-negative.")
        if channels(img, "adjust_saturation") == 1 { return img }
        if DeviceImage.isOnDevice(img) { return DeviceColor.adjustSaturation(img, saturationFactor) }
        let grey = PixelPlanes(rgbToGrayscale(img), op: "adjust_saturation")
        let n = grey.height * grey.width
        return blend(PixelPlanes(img, op: "adjust_saturation"), { p, i in grey.data[(p / 3) * n + i] },
                     ratio: saturationFactor, dtype: img.dtype)
    }

    /// Shifts the hue by `hueFactor` turns (in [-0.5, 0.5]) through HSV (torchvision's `adjust_hue`).
    public static func adjustHue(_ img: Tensor, _ hueFactor: Double) -> Tensor {
        precondition(hueFactor >= -0.5 && hueFactor <= 0.5, "hue_factor (\(hueFactor)) is not in [-0.5, 0.5].")
        if channels(img, "adjust_hue") == 1 { return img }
        if DeviceImage.isOnDevice(img) { return DeviceColor.adjustHue(img, hueFactor) }
        let planes = PixelPlanes(convertImageDtype(img, img.dtype == .float64 ? .float64 : .float32), op: "adjust_hue")
        let r = rounding(img.dtype)
        let n = planes.height * planes.width
        var out = planes
        for p in 0..<(planes.count / 3) {
            let base = 3 * p * n
            for i in 0..<n {
                let (red, green, blue) = (planes.data[base + i], planes.data[base + n + i], planes.data[base + 2 * n + i])
                let maxc = max(red, green, blue), minc = min(red, green, blue)
                let cr = maxc - minc, eq = maxc == minc
                let s = r(cr / (eq ? 1 : maxc))
                let div = eq ? 1 : cr
                let rc = r((maxc - red) / div), gc = r((maxc - green) / div), bc = r((maxc - blue) / div)
                var h: Double
                if maxc == red { h = r(bc - gc) } else if maxc == green { h = r(r(2 + rc) - bc) } else { h = r(r(4 + gc) - rc) }
                h = r(r(h / 6) + 1).truncatingRemainder(dividingBy: 1)
                h = r(h + r(hueFactor))
                h = h - (h / 1).rounded(.down)
                if h >= 1 { h -= 1 }
                let i6 = r(h * 6).rounded(.down)
                let f = r(r(h * 6) - i6)
                let v = maxc
                let pp = min(max(r(v * r(1 - s)), 0), 1)
                let q = min(max(r(v * r(1 - r(s * f))), 0), 1)
                let t = min(max(r(v * r(1 - r(s * r(1 - f)))), 0), 1)
                let rgb: (Double, Double, Double)
                switch ((Int(i6) % 6) + 6) % 6 {
                case 0: rgb = (v, t, pp)
                case 1: rgb = (q, v, pp)
                case 2: rgb = (pp, v, t)
                case 3: rgb = (pp, q, v)
                case 4: rgb = (t, pp, v)
                default: rgb = (v, pp, q)
                }
                out.data[base + i] = rgb.0
                out.data[base + n + i] = rgb.1
                out.data[base + 2 * n + i] = rgb.2
            }
        }
        let adjusted = out.tensor(img.dtype == .float64 ? .float64 : .float32)
        return convertImageDtype(adjusted, img.dtype)
    }

    /// The normalised 1-D Gaussian of `size` taps (torchvision's kernel for `gaussian_blur`).
    static func gaussianKernel(_ size: Int, _ sigma: Double, _ dtype: DType) -> [Double] {
        let r = rounding(dtype)
        let half = Double(size - 1) * 0.5
        let pdf = (0..<size).map { i -> Double in
            let x = -half + Double(i)
            let z = r(r(x) / sigma)
            return r(exp(-0.5 * z * z))
        }
        let total = pdf.reduce(0, +)
        return pdf.map { r($0 / total) }
    }

    /// Blurs with a Gaussian of `kernelSize` (`[kx, ky]` or `[k]`, odd and positive) and `sigma`
    /// (`[sx, sy]` or `[s]`; nil derives it from the size as `0.15 * k + 0.35`), the image
    /// edges reflected (torchvision's `gaussian_blur`).
    public static func gaussianBlur(_ img: Tensor, kernelSize: [Int], sigma: [Double]? = nil) -> Tensor {
        precondition(kernelSize.count == 1 || kernelSize.count == 2, "If kernel_size is a sequence its length should be 2. Got \(kernelSize.count)")
        let ks = kernelSize.count == 1 ? [kernelSize[0], kernelSize[0]] : kernelSize
        precondition(ks.allSatisfy { $0 > 0 && $0 % 2 == 1 }, "kernel_size should have odd and positive integers. Got \(kernelSize)")
        var s: [Double] = sigma ?? ks.map { (k: Int) -> Double in Double(k) * 0.15 + 0.35 }
        if s.count == 1 { s = [s[0], s[0]] }
        precondition(s.count == 2 && s.allSatisfy { $0 > 0 }, "sigma should have positive values. Got \(s)")
        let dims = getDimensions(img)
        precondition(ks[0] / 2 < dims[2] && ks[1] / 2 < dims[1],
                     "gaussian_blur: padding size should be less than the corresponding input dimension, got kernel \(ks) for input \(img.shape)")
        let work: DType = img.dtype == .float64 ? .float64 : .float32
        let kx = gaussianKernel(ks[0], s[0], work), ky = gaussianKernel(ks[1], s[1], work)
        let (h, w) = (dims[1], dims[2])
        func reflect(_ i: Int, _ n: Int) -> Int { i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i) }
        let fx = AxisFilter(taps: ks[0], index: (0..<w).flatMap { x in (0..<ks[0]).map { reflect(x + $0 - ks[0] / 2, w) } },
                            weight: (0..<w).flatMap { _ in kx })
        let fy = AxisFilter(taps: ks[1], index: (0..<h).flatMap { y in (0..<ks[1]).map { reflect(y + $0 - ks[1] / 2, h) } },
                            weight: (0..<h).flatMap { _ in ky })
        if DeviceImage.isOnDevice(img) { return DeviceColor.blurred(img, rows: fy, cols: fx) }
        return PixelPlanes(img, op: "gaussian_blur").resampled(rows: fy, cols: fx, outHeight: h, outWidth: w).tensor(img.dtype)
    }
}
