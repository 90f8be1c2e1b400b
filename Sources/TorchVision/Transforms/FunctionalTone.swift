#if canImport(Glibc)
import Glibc
#endif
import Torch

extension transforms.functional {
    /// Checks an image tensor has at least 3 dimensions and 1 or 3 channels.
    private static func checkColourImage(_ img: Tensor, _ op: String) {
        precondition(img.dim >= 3, "\(op): input image tensor should have at least 3 dimensions, but found \(img.dim)")
        let c = img.shape[img.dim - 3]
        precondition(c == 1 || c == 3, "\(op): input image tensor permitted channel values are [1, 3], but found \(c)")
    }

    /// Maps every value through `f` (computed in Double), back in the image's dtype with truncation
    /// toward zero for integers, as torchvision's `.to(uint8)`.
    private static func mapValues(_ img: Tensor, _ f: (Double) -> Double) -> Tensor {
        var planes = PixelPlanes(img, op: "map")
        for i in planes.data.indices { planes.data[i] = f(planes.data[i]) }
        if !img.dtype.isFloatingPoint { for i in planes.data.indices { planes.data[i].round(.towardZero) } }
        return planes.tensor(img.dtype)
    }

    /// `max - x` for every value (torchvision's `invert`).
    public static func invert(_ img: Tensor) -> Tensor {
        checkColourImage(img, "invert")
        let bound = imageMaxValue(img.dtype)
        if DeviceImage.isOnDevice(img) { return DeviceTone.mapped(img) { bound - $0 } }
        return mapValues(img) { bound - $0 }
    }

    /// Keeps the top `bits` bits of each uint8 value (torchvision's `posterize`).
    public static func posterize(_ img: Tensor, _ bits: Int) -> Tensor {
        checkColourImage(img, "posterize")
        precondition(img.dtype == .uint8, "Only torch.uint8 image tensors are supported, but found \(img.dtype)")
        precondition((0...8).contains(bits), "posterize: bits should be in [0, 8], got \(bits)")
        if DeviceImage.isOnDevice(img) { return DeviceTone.posterize(img, bits) }
        let mask = UInt8(truncatingIfNeeded: -(1 << (8 - bits)))
        return mapValues(img) { Double(UInt8($0) & mask) }
    }

    /// Inverts the values at or above `threshold` (torchvision's `solarize`).
    public static func solarize(_ img: Tensor, _ threshold: Double) -> Tensor {
        checkColourImage(img, "solarize")
        let bound = imageMaxValue(img.dtype)
        precondition(threshold <= bound, "Threshold should be less than bound of img.")
        if DeviceImage.isOnDevice(img) { return DeviceTone.mapped(img) { torch.where($0 .>= threshold, bound - $0, $0) } }
        return mapValues(img) { $0 >= threshold ? bound - $0 : $0 }
    }

    /// Blends with a smoothed copy (3×3 kernel, centre weight 5, border pixels kept): 0 blurs, 1 is the
    /// original, 2 sharpens (torchvision's `adjust_sharpness`).
    public static func adjustSharpness(_ img: Tensor, _ sharpnessFactor: Double) -> Tensor {
        precondition(sharpnessFactor >= 0, "sharpness_factor (\(sharpnessFactor)) is not non-negative.")
        checkColourImage(img, "adjust_sharpness")
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        if h <= 2 || w <= 2 { return img }
        if DeviceImage.isOnDevice(img) { return DeviceTone.adjustSharpness(img, sharpnessFactor) }
        let planes = PixelPlanes(img, op: "adjust_sharpness")
        let f32 = img.dtype != .float64
        func r(_ v: Double) -> Double { f32 ? Double(Float(v)) : v }
        let edge = r(1.0 / 13), centre = r(5.0 / 13)
        var blurred = planes
        for p in 0..<planes.count {
            let base = p * h * w
            for y in 1..<(h - 1) {
                for x in 1..<(w - 1) {
                    var acc = 0.0
                    for dy in -1...1 { for dx in -1...1 {
                        acc += (dx == 0 && dy == 0 ? centre : edge) * planes.data[base + (y + dy) * w + x + dx]
                    } }
                    blurred.data[base + y * w + x] = img.dtype.isFloatingPoint ? acc : acc.rounded(.toNearestOrEven)
                }
            }
        }
        let ratio = r(sharpnessFactor), rest = r(1 - sharpnessFactor), bound = imageMaxValue(img.dtype)
        var out = planes
        for i in out.data.indices {
            let v = min(max(r(r(ratio * planes.data[i]) + r(rest * blurred.data[i])), 0), bound)
            out.data[i] = img.dtype.isFloatingPoint ? v : v.rounded(.towardZero)
        }
        return out.tensor(img.dtype)
    }

    /// Stretches each channel so its darkest value becomes 0 and its brightest the maximum (torchvision's
    /// `autocontrast`).
    public static func autocontrast(_ img: Tensor) -> Tensor {
        checkColourImage(img, "autocontrast")
        if DeviceImage.isOnDevice(img) { return DeviceTone.autocontrast(img) }
        var planes = PixelPlanes(img, op: "autocontrast")
        let n = planes.height * planes.width, bound = imageMaxValue(img.dtype)
        let f32 = img.dtype != .float64
        func r(_ v: Double) -> Double { f32 ? Double(Float(v)) : v }
        for p in 0..<planes.count {
            let slice = planes.data[(p * n)..<((p + 1) * n)]
            let lo = slice.min() ?? 0, hi = slice.max() ?? 0
            let (m, scale) = hi > lo ? (lo, r(bound / (hi - lo))) : (0, 1)
            for i in (p * n)..<((p + 1) * n) {
                let v = min(max(r(r(planes.data[i] - m) * scale), 0), bound)
                planes.data[i] = img.dtype.isFloatingPoint ? v : v.rounded(.towardZero)
            }
        }
        return planes.tensor(img.dtype)
    }

    /// Equalises the histogram of each channel of a uint8 image (torchvision's `equalize`).
    public static func equalize(_ img: Tensor) -> Tensor {
        checkColourImage(img, "equalize")
        precondition(img.dtype == .uint8, "Only torch.uint8 image tensors are supported, but found \(img.dtype)")
        if DeviceImage.isOnDevice(img) { return DeviceTone.equalize(img) }
        var planes = PixelPlanes(img, op: "equalize")
        let n = planes.height * planes.width
        for p in 0..<planes.count {
            var hist = [Int](repeating: 0, count: 256)
            for i in (p * n)..<((p + 1) * n) { hist[Int(planes.data[i])] += 1 }
            let nonzero = hist.filter { $0 != 0 }
            let step = nonzero.dropLast().reduce(0, +) / 255
            if step == 0 { continue }
            var lut = [Double](repeating: 0, count: 256)
            var cum = 0
            for v in 0..<255 {
                cum += hist[v]
                lut[v + 1] = Double(min(max((cum + step / 2) / step, 0), 255))
            }
            for i in (p * n)..<((p + 1) * n) { planes.data[i] = lut[Int(planes.data[i])] }
        }
        return planes.tensor(.uint8)
    }

    /// `gain * x^gamma` on values scaled to [0, 1] (torchvision's `adjust_gamma`).
    public static func adjustGamma(_ img: Tensor, _ gamma: Double, gain: Double = 1) -> Tensor {
        precondition(gamma >= 0, "Gamma should be a non-negative real number")
        checkColourImage(img, "adjust_gamma")
        let x = img.dtype.isFloatingPoint ? img : convertImageDtype(img, .float32)
        let f32 = x.dtype != .float64
        if DeviceImage.isOnDevice(img) { return convertImageDtype(DeviceTone.adjustGamma(x, gamma, gain: gain), img.dtype) }
        func r(_ v: Double) -> Double { f32 ? Double(Float(v)) : v }
        var planes = PixelPlanes(x, op: "adjust_gamma")
        for i in planes.data.indices { planes.data[i] = min(max(r(gain * r(pow(planes.data[i], gamma))), 0), 1) }
        return convertImageDtype(planes.tensor(x.dtype), img.dtype)
    }
}
