import Torch

/// `transforms.functional` on PIL-style pictures, as torchvision's functional ops take PIL images:
/// resizing always antialiases and NEAREST samples under pixel centres (Pillow's behaviour); rotations,
/// affine and perspective warps sample the way Pillow does, and so do the colour adjustments; the rest
/// work on the picture's pixels with the tensor kernels, as torchvision does for PIL images.
extension transforms.functional {
    private static func onPixels(_ img: Image, _ f: (Tensor) -> Tensor) -> Image { Image(tensor: f(img.tensor())) }

    /// Resizes a picture (`[h, w]`, or `[s]` for the smaller edge) as Pillow does: NEAREST under pixel
    /// centres, BILINEAR and BICUBIC antialiased in Pillow's fixed point.
    public static func resize(_ img: Image, _ size: [Int], interpolation: transforms.InterpolationMode = .bilinear,
                              maxSize: Int? = nil) -> Image {
        let (oh, ow) = resizedOutputSize(height: img.height, width: img.width, size, maxSize: maxSize)
        if oh == img.height && ow == img.width { return img }
        switch interpolation {
        case .nearest, .nearestExact: return onPixels(img) { resize($0, [oh, ow], interpolation: .nearestExact) }
        case .bilinear, .bicubic:
            return onPixels(img) { PillowGeometry.resize($0, height: oh, width: ow, cubic: interpolation == .bicubic) }
        }
    }

    /// The `height`×`width` region at (`top`, `left`), zero outside the picture.
    public static func crop(_ img: Image, _ top: Int, _ left: Int, _ height: Int, _ width: Int) -> Image {
        onPixels(img) { crop($0, top, left, height, width) }
    }

    /// The centre `outputSize` region.
    public static func centerCrop(_ img: Image, _ outputSize: [Int]) -> Image { onPixels(img) { centerCrop($0, outputSize) } }

    /// `crop` then `resize`.
    public static func resizedCrop(_ img: Image, _ top: Int, _ left: Int, _ height: Int, _ width: Int, _ size: [Int],
                                   interpolation: transforms.InterpolationMode = .bilinear) -> Image {
        resize(crop(img, top, left, height, width), size, interpolation: interpolation)
    }

    /// Mirrors left to right.
    public static func hflip(_ img: Image) -> Image { onPixels(img) { hflip($0) } }

    /// Mirrors top to bottom.
    public static func vflip(_ img: Image) -> Image { onPixels(img) { vflip($0) } }

    /// Pads the picture's borders (see the tensor `pad`).
    public static func pad(_ img: Image, _ padding: [Int], fill: Double = 0, paddingMode: transforms.PaddingMode = .constant) -> Image {
        onPixels(img) { pad($0, padding, fill: fill, paddingMode: paddingMode) }
    }

    /// Rotates counter-clockwise as Pillow's `Image.rotate` does (`center` in pixels, default the centre).
    public static func rotate(_ img: Image, _ angle: Double, interpolation: transforms.InterpolationMode = .nearest,
                              expand: Bool = false, center: [Int]? = nil, fill: [Double] = [0]) -> Image {
        precondition(interpolation == .nearest || interpolation == .bilinear, "rotate: use nearest or bilinear interpolation for images")
        return onPixels(img) { PillowGeometry.rotate($0, angle, bilinear: interpolation == .bilinear, expand: expand, center: center, fill: fill) }
    }

    /// The affine warp of `affine(_:angle:translate:scale:shear:)` sampled as Pillow's `Image.transform` does.
    public static func affine(_ img: Image, angle: Double, translate: [Int], scale: Double, shear: [Double],
                              interpolation: transforms.InterpolationMode = .nearest, fill: [Double] = [0], center: [Int]? = nil) -> Image {
        precondition(interpolation == .nearest || interpolation == .bilinear, "affine: use nearest or bilinear interpolation for images")
        precondition(translate.count == 2 && (shear.count == 1 || shear.count == 2), "affine: translate needs 2 values and shear 1 or 2")
        let c = center.map { (Double($0[0]), Double($0[1])) } ?? (Double(img.width) * 0.5, Double(img.height) * 0.5)
        let m = inverseAffineMatrix(center: c, angle: angle, translate: (Double(translate[0]), Double(translate[1])), scale: scale,
                                    shear: (shear[0], shear.count == 2 ? shear[1] : 0))
        return onPixels(img) {
            PillowGeometry.transform($0, outWidth: img.width, outHeight: img.height, coefficients: m,
                                     bilinear: interpolation == .bilinear, fill: fill)
        }
    }

    /// The perspective warp taking `startpoints` to `endpoints`, sampled as Pillow does.
    public static func perspective(_ img: Image, _ startpoints: [[Int]], _ endpoints: [[Int]],
                                   interpolation: transforms.InterpolationMode = .bilinear, fill: [Double] = [0]) -> Image {
        precondition(interpolation == .nearest || interpolation == .bilinear, "perspective: use nearest or bilinear interpolation for images")
        let c = perspectiveCoefficients(startpoints, endpoints)
        return onPixels(img) {
            PillowGeometry.transform($0, outWidth: img.width, outHeight: img.height, coefficients: c,
                                     bilinear: interpolation == .bilinear, fill: fill)
        }
    }

    /// Brightness of a picture, as Pillow's `ImageEnhance.Brightness` (what torchvision uses for PIL images).
    public static func adjustBrightness(_ img: Image, _ factor: Double) -> Image {
        precondition(factor >= 0, "brightness_factor (\(factor)) is not non-negative.")
        return onPixels(img) { PillowColor.brightness($0, factor) }
    }
    /// Contrast of a picture, as Pillow's `ImageEnhance.Contrast` (blend with the rounded mean luma).
    public static func adjustContrast(_ img: Image, _ factor: Double) -> Image {
        precondition(factor >= 0, "contrast_factor (\(factor)) is not non-negative.")
        return onPixels(img) { PillowColor.contrast($0, factor) }
    }
    /// Saturation of a picture, as Pillow's `ImageEnhance.Color` (blend with the luma picture).
    public static func adjustSaturation(_ img: Image, _ factor: Double) -> Image {
        precondition(factor >= 0, "saturation_factor (\(factor)) is not non-negative.")
        return onPixels(img) { PillowColor.saturation($0, factor) }
    }
    /// Hue of a picture, shifted in Pillow's 8-bit HSV as torchvision does for PIL images.
    public static func adjustHue(_ img: Image, _ factor: Double) -> Image {
        precondition(factor >= -0.5 && factor <= 0.5, "hue_factor (\(factor)) is not in [-0.5, 0.5].")
        return onPixels(img) { PillowColor.hue($0, factor) }
    }

    /// Sharpness of a picture, as Pillow's `ImageEnhance.Sharpness`.
    public static func adjustSharpness(_ img: Image, _ factor: Double) -> Image {
        precondition(factor >= 0, "sharpness_factor (\(factor)) is not non-negative.")
        return onPixels(img) { PillowColor.sharpness($0, factor) }
    }
    /// Each band stretched to 0…255, as Pillow's `ImageOps.autocontrast`.
    public static func autocontrast(_ img: Image) -> Image { onPixels(img) { PillowColor.autocontrast($0) } }
    /// `255 - x` per colour byte.
    public static func invert(_ img: Image) -> Image { onPixels(img) { invert($0) } }
    /// Keeps the top `bits` bits of every byte.
    public static func posterize(_ img: Image, _ bits: Int) -> Image { onPixels(img) { posterize($0, bits) } }
    /// Inverts the bytes at or above `threshold`.
    public static func solarize(_ img: Image, _ threshold: Double) -> Image { onPixels(img) { solarize($0, threshold) } }
    /// Equalises each band's histogram (Pillow's and torchvision's rule are the same).
    public static func equalize(_ img: Image) -> Image { onPixels(img) { equalize($0) } }

    /// Gaussian blur of a picture (torchvision blurs PIL images through the tensor kernel too).
    public static func gaussianBlur(_ img: Image, kernelSize: [Int], sigma: [Double]? = nil) -> Image {
        onPixels(img) { gaussianBlur($0, kernelSize: kernelSize, sigma: sigma) }
    }
}
