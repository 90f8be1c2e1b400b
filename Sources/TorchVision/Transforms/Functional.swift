import Torch

extension transforms {
    /// How resampling transforms pick output values (torchvision's `InterpolationMode`).
    public enum InterpolationMode: String, Sendable, CustomStringConvertible {
        /// The source pixel at `floor(dst * in / out)` (PyTorch's `nearest`).
        case nearest
        /// The source pixel under the output pixel's centre, `floor((dst + 0.5) * in / out)` (PyTorch's
        /// `nearest-exact`, and what Pillow's NEAREST does).
        case nearestExact = "nearest-exact"
        case bilinear, bicubic
        public var description: String { rawValue }
    }

    /// How `pad` fills the border (torchvision's `padding_mode`).
    public enum PaddingMode: String, Sendable, CustomStringConvertible {
        /// A constant value (`fill`).
        case constant
        /// Repeats the last pixel.
        case edge
        /// Mirrors without repeating the last pixel: `[1, 2, 3, 4]` padded by 2 is `[3, 2, 1, 2, 3, 4, 3, 2]`.
        case reflect
        /// Mirrors repeating the last pixel: `[1, 2, 3, 4]` padded by 2 is `[2, 1, 1, 2, 3, 4, 4, 3]`.
        case symmetric
        public var description: String { rawValue }
    }

    /// torchvision's `transforms.functional`: each transform as a plain function of an image tensor
    /// (…, C, H, W), uint8 or floating point, with explicit parameters.
    ///
    /// ```swift
    /// let small = transforms.functional.resize(img, [64, 64])
    /// let turned = transforms.functional.rotate(img, 30, interpolation: .bilinear)
    /// ```
    public enum functional {}
}

extension transforms.functional {
    /// `[channels, height, width]` of an image tensor (torchvision's `get_dimensions`).
    public static func getDimensions(_ img: Tensor) -> [Int] {
        precondition(img.dim >= 2, "get_dimensions: expected a tensor image of shape (..., H, W), got shape \(img.shape)")
        return [img.dim == 2 ? 1 : img.shape[img.dim - 3], img.shape[img.dim - 2], img.shape[img.dim - 1]]
    }

    /// The output (height, width) of `resize` for `size` (one value: the smaller edge, keeping the aspect
    /// ratio and capped at `maxSize` on the longer edge; two values: height and width).
    public static func resizedOutputSize(height: Int, width: Int, _ size: [Int], maxSize: Int? = nil) -> (Int, Int) {
        precondition(size.count == 1 || size.count == 2, "resize: size must be an int or a sequence of length 1 or 2, got \(size)")
        if size.count == 2 {
            precondition(maxSize == nil, "maxSize should only be passed if size specifies the length of the smaller edge, i.e. size should be an int or a sequence of length 1 in torchscript mode.")
            return (size[0], size[1])
        }
        let (short, long) = width <= height ? (width, height) : (height, width)
        var newShort = size[0], newLong = Int(Double(size[0]) * Double(long) / Double(short))
        if let maxSize {
            precondition(maxSize > size[0], "maxSize = \(maxSize) must be strictly greater than the requested size for the smaller edge size = \(size[0])")
            if newLong > maxSize {
                newShort = Int(Double(maxSize) * Double(newShort) / Double(newLong))
                newLong = maxSize
            }
        }
        return width <= height ? (newLong, newShort) : (newShort, newLong)
    }

    /// Resizes to `size` (`[h, w]`, or `[s]` for the smaller edge) with `interpolation`; `antialias`
    /// low-pass filters when shrinking with bilinear/bicubic (torchvision's default for tensors).
    /// uint8 images are computed in floating point and rounded back. A GPU image stays on its device: the
    /// per-axis filters become small dense matrices and the planes are resampled as `Wh · plane · Wwᵀ`
    /// (nearest modes pick rows and columns).
    public static func resize(_ img: Tensor, _ size: [Int], interpolation: transforms.InterpolationMode = .bilinear,
                              maxSize: Int? = nil, antialias: Bool = true) -> Tensor {
        let d = getDimensions(img)
        let (oh, ow) = resizedOutputSize(height: d[1], width: d[2], size, maxSize: maxSize)
        precondition(oh > 0 && ow > 0, "resize: output size must be positive, got (\(oh), \(ow)) for input \(img.shape)")
        if oh == d[1] && ow == d[2] { return img }
        func filter(_ n: Int, _ m: Int) -> AxisFilter {
            switch interpolation {
            case .nearest: return .nearest(n, m)
            case .nearestExact: return .nearest(n, m, exact: true)
            case .bilinear, .bicubic:
                let cubic = interpolation == .bicubic
                return antialias ? .antialiased(n, m, cubic: cubic) : .interpolating(n, m, cubic: cubic)
            }
        }
        let (rows, cols) = (filter(d[1], oh), filter(d[2], ow))
        if DeviceImage.isOnDevice(img) {
            if interpolation == .nearest || interpolation == .nearestExact { return DeviceImage.picked(img, rows: rows, cols: cols) }
            return DeviceImage.stored(DeviceImage.resampled(img, rows: rows, cols: cols, outHeight: oh, outWidth: ow), as: img.dtype)
        }
        var out = PixelPlanes(img, op: "resize").resampled(rows: rows, cols: cols, outHeight: oh, outWidth: ow)
        if interpolation == .nearest || interpolation == .nearestExact { return out.tensor(img.dtype) }
        if interpolation == .bicubic && img.dtype == .uint8 { out.data = out.data.map { Swift.min(Swift.max($0, 0), 255) } }
        return out.tensor(img.dtype)
    }

    /// Resizes with one value per edge, as `resize(img, [h, w])`.
    public static func resize(_ img: Tensor, _ size: Int, interpolation: transforms.InterpolationMode = .bilinear,
                              maxSize: Int? = nil, antialias: Bool = true) -> Tensor {
        resize(img, [size], interpolation: interpolation, maxSize: maxSize, antialias: antialias)
    }

    /// The `height`×`width` region whose top-left corner is (`top`, `left`); parts outside the image
    /// are zero-padded, as in torchvision.
    public static func crop(_ img: Tensor, _ top: Int, _ left: Int, _ height: Int, _ width: Int) -> Tensor {
        let d = getDimensions(img)
        precondition(height >= 0 && width >= 0, "crop: height and width must be non-negative, got \(height)×\(width)")
        let (h, w) = (d[1], d[2])
        let right = left + width, bottom = top + height
        let y0 = max(top, 0), y1 = min(bottom, h), x0 = max(left, 0), x1 = min(right, w)
        let inner = img.narrow(img.dim - 2, min(y0, h), max(y1 - y0, 0)).narrow(img.dim - 1, min(x0, w), max(x1 - x0, 0))
        if left >= 0 && top >= 0 && right <= w && bottom <= h { return inner }
        return pad(inner, [x0 - left, y0 - top, right - max(x1, x0), bottom - max(y1, y0)])
    }

    /// The centre `outputSize` (`[h, w]` or `[s]`) region, zero-padded first when the image is smaller.
    public static func centerCrop(_ img: Tensor, _ outputSize: [Int]) -> Tensor {
        precondition(outputSize.count == 1 || outputSize.count == 2, "center_crop: size must be an int or a sequence of 1 or 2 ints, got \(outputSize)")
        let d = getDimensions(img)
        let (ch, cw) = (outputSize[0], outputSize.count == 2 ? outputSize[1] : outputSize[0])
        var img = img
        var (h, w) = (d[1], d[2])
        if ch > h || cw > w {
            let l = cw > w ? (cw - w) / 2 : 0, t = ch > h ? (ch - h) / 2 : 0
            let r = cw > w ? (cw - w + 1) / 2 : 0, b = ch > h ? (ch - h + 1) / 2 : 0
            img = pad(img, [l, t, r, b])
            (h, w) = (h + t + b, w + l + r)
            if ch == h && cw == w { return img }
        }
        let top = Int((Double(h - ch) / 2).rounded(.toNearestOrEven))
        let left = Int((Double(w - cw) / 2).rounded(.toNearestOrEven))
        return crop(img, top, left, ch, cw)
    }

    /// `crop` then `resize` (torchvision's `resized_crop`).
    public static func resizedCrop(_ img: Tensor, _ top: Int, _ left: Int, _ height: Int, _ width: Int, _ size: [Int],
                                   interpolation: transforms.InterpolationMode = .bilinear, antialias: Bool = true) -> Tensor {
        resize(crop(img, top, left, height, width), size, interpolation: interpolation, antialias: antialias)
    }

    /// Mirrors left to right.
    public static func hflip(_ img: Tensor) -> Tensor {
        precondition(img.dim >= 2, "hflip: expected a tensor image of shape (..., H, W), got shape \(img.shape)")
        return img.flip(img.dim - 1)
    }

    /// Mirrors top to bottom.
    public static func vflip(_ img: Tensor) -> Tensor {
        precondition(img.dim >= 2, "vflip: expected a tensor image of shape (..., H, W), got shape \(img.shape)")
        return img.flip(img.dim - 2)
    }

    /// The four corner crops and the centre crop of `size` (`[h, w]` or `[s]`), in torchvision's order:
    /// top-left, top-right, bottom-left, bottom-right, centre.
    public static func fiveCrop(_ img: Tensor, _ size: [Int]) -> [Tensor] {
        precondition(size.count == 1 || size.count == 2, "five_crop: please provide only two dimensions (h, w) for size, got \(size)")
        let d = getDimensions(img)
        let (ch, cw) = (size[0], size.count == 2 ? size[1] : size[0])
        precondition(ch <= d[1] && cw <= d[2], "Requested crop size \((ch, cw)) is bigger than input size \((d[1], d[2]))")
        return [crop(img, 0, 0, ch, cw), crop(img, 0, d[2] - cw, ch, cw), crop(img, d[1] - ch, 0, ch, cw),
                crop(img, d[1] - ch, d[2] - cw, ch, cw), centerCrop(img, [ch, cw])]
    }

    /// `fiveCrop` of the image and of its horizontal (or, with `verticalFlip`, vertical) mirror.
    public static func tenCrop(_ img: Tensor, _ size: [Int], verticalFlip: Bool = false) -> [Tensor] {
        fiveCrop(img, size) + fiveCrop(verticalFlip ? vflip(img) : hflip(img), size)
    }

    /// Pads the last two dimensions: `padding` is `[all]`, `[leftRight, topBottom]` or
    /// `[left, top, right, bottom]`; negative values crop. `fill` is used by `.constant`.
    public static func pad(_ img: Tensor, _ padding: [Int], fill: Double = 0,
                           paddingMode: transforms.PaddingMode = .constant) -> Tensor {
        precondition([1, 2, 4].contains(padding.count),
                     "Padding must be an int or a 1, 2, or 4 element tuple, not a \(padding.count) element tuple")
        precondition(img.dim >= 2, "pad: expected a tensor image of shape (..., H, W), got shape \(img.shape)")
        let p = padding.count == 1 ? [Int](repeating: padding[0], count: 4)
            : padding.count == 2 ? [padding[0], padding[1], padding[0], padding[1]] : padding
        let hd = img.dim - 2, wd = img.dim - 1
        if paddingMode == .constant {
            // Crop the negative sides, then place the image inside a filled canvas.
            let c = img.narrow(hd, max(-p[1], 0), img.shape[hd] - max(-p[1], 0) - max(-p[3], 0))
                .narrow(wd, max(-p[0], 0), img.shape[wd] - max(-p[0], 0) - max(-p[2], 0))
            var shape = c.shape
            shape[hd] += max(p[1], 0) + max(p[3], 0)
            shape[wd] += max(p[0], 0) + max(p[2], 0)
            let out = torch.full(shape, fill, dtype: img.dtype, device: img.device)
            _ = out.narrow(hd, max(p[1], 0), c.shape[hd]).narrow(wd, max(p[0], 0), c.shape[wd]).copy_(c)
            return out
        }
        let n = img.shape[hd], m = img.shape[wd]
        if paddingMode == .reflect {
            precondition(p.allSatisfy { $0 < 0 } || (max(p[0], p[2]) < m && max(p[1], p[3]) < n),
                         "pad: padding size should be less than the corresponding input dimension for reflect mode, got padding \(p) for input \(img.shape)")
        }
        func indices(_ size: Int, _ before: Int, _ after: Int) -> Tensor {
            let idx = (-before..<(size + after)).map { i -> Int64 in
                var j = i
                switch paddingMode {
                case .edge: j = min(max(i, 0), size - 1)
                case .reflect:
                    let period = max(2 * (size - 1), 1)
                    j = ((i % period) + period) % period
                    if j >= size { j = period - j }
                case .symmetric:
                    let period = 2 * size
                    j = ((i % period) + period) % period
                    if j >= size { j = period - 1 - j }
                case .constant: break
                }
                return Int64(j)
            }
            return Tensor(idx, shape: [idx.count]).to(img.device)
        }
        return img.indexSelect(hd, indices(n, p[1], p[3])).indexSelect(wd, indices(m, p[0], p[2]))
    }

    /// Sets the `h`×`w` region at (`i`, `j`) to `v` (broadcast to the region); a copy unless `inplace`.
    public static func erase(_ img: Tensor, _ i: Int, _ j: Int, _ h: Int, _ w: Int, _ v: Tensor, inplace: Bool = false) -> Tensor {
        precondition(img.dim >= 2, "erase: expected a tensor image of shape (..., H, W), got shape \(img.shape)")
        let out = inplace ? img : img.clone()
        let region = out.narrow(out.dim - 2, i, h).narrow(out.dim - 1, j, w)
        _ = region.copy_(v.to(img.dtype).expand(region.shape).contiguous())
        return out
    }

    /// Converts between image dtypes, rescaling values (torchvision's `convert_image_dtype`): integers
    /// map to [0, 1] floats by dividing by their maximum; floats become integers by
    /// `x * (max + 1 - 0.001)` truncated; wider integer types are shifted.
    public static func convertImageDtype(_ img: Tensor, _ dtype: DType = .float32) -> Tensor {
        if img.dtype == dtype { return img }
        if img.dtype.isFloatingPoint {
            if dtype.isFloatingPoint { return img.to(dtype) }
            precondition(!(img.dtype == .float32 && (dtype == .int32 || dtype == .int64)) && !(img.dtype == .float64 && dtype == .int64),
                         "The cast from \(img.dtype) to \(dtype) cannot be performed safely.")
            return img.mul(imageMaxValue(dtype) + 1 - 1e-3).to(dtype)
        }
        let inMax = imageMaxValue(img.dtype)
        if dtype.isFloatingPoint { return img.to(dtype).div(inMax) }
        let outMax = imageMaxValue(dtype)
        if inMax > outMax {
            let factor = Int64((inMax + 1) / (outMax + 1))
            return img.to(.int64).floorDivide(Tensor([factor], shape: []).to(img.device)).to(dtype)
        }
        let factor = Int64((outMax + 1) / (inMax + 1))
        return img.to(dtype).mul(Tensor([factor], shape: []).to(img.device, dtype: dtype))
    }

    /// Normalises each channel: `(x - mean[c]) / std[c]` (see `transforms.Normalize`).
    public static func normalize(_ tensor: Tensor, mean: [Double], std: [Double], inplace: Bool = false) -> Tensor {
        transforms.Normalize(mean, std, inplace: inplace)(tensor)
    }

    /// An H×W or H×W×C image array as a C×H×W tensor, uint8 scaled to [0, 1] (see `transforms.ToTensor`).
    public static func toTensor(_ pic: Tensor) -> Tensor { transforms.ToTensor()(pic) }
}
