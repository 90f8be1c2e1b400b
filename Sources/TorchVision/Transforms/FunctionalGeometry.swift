#if canImport(Glibc)
import Glibc
#endif
import Torch

extension transforms.functional {
    /// The inverse of the affine map "rotate by `angle` degrees about `center`, shear by `shear` degrees,
    /// scale, translate" as a row-major 2×3 matrix taking output pixel positions (relative to the image
    /// centre) to input positions (torchvision's `_get_inverse_affine_matrix`).
    public static func inverseAffineMatrix(center: (Double, Double), angle: Double, translate: (Double, Double),
                                           scale: Double, shear: (Double, Double)) -> [Double] {
        precondition(scale != 0, "affine: scale should not be zero")
        let rot = angle * .pi / 180, sx = shear.0 * .pi / 180, sy = shear.1 * .pi / 180
        let (cx, cy) = center, (tx, ty) = translate
        let a = cos(rot - sy) / cos(sy)
        let b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot)
        let c = sin(rot - sy) / cos(sy)
        let d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot)
        var m = [d, -b, 0, -c, a, 0].map { $0 / scale }
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
        m[2] += cx
        m[5] += cy
        return m
    }

    /// Rotates by `angle` degrees counter-clockwise about `center` (pixel coordinates; default the image
    /// centre). `expand` grows the output to hold the whole rotated image; `fill` colours the area outside
    /// the source (per channel or one value; nil leaves zeros without blending the edges).
    public static func rotate(_ img: Tensor, _ angle: Double, interpolation: transforms.InterpolationMode = .nearest,
                              expand: Bool = false, center: [Int]? = nil, fill: [Double]? = nil) -> Tensor {
        let d = getDimensions(img)
        var c = (0.0, 0.0)
        if let center {
            precondition(center.count == 2, "rotate: center should be a sequence of two ints, got \(center)")
            c = (Double(center[0]) - Double(d[2]) * 0.5, Double(center[1]) - Double(d[1]) * 0.5)
        }
        let m = inverseAffineMatrix(center: c, angle: -angle, translate: (0, 0), scale: 1, shear: (0, 0))
        let (ow, oh) = expand ? affineOutputSize(m, width: d[2], height: d[1]) : (d[2], d[1])
        return applyAffine(img, m, outWidth: ow, outHeight: oh, interpolation: interpolation, fill: fill, op: "rotate")
    }

    /// Rotation, translation (pixels), scale and shear (degrees; one value shears along x) about `center`
    /// (default the image centre), keeping the image size (torchvision's `affine`).
    public static func affine(_ img: Tensor, angle: Double, translate: [Int], scale: Double, shear: [Double],
                              interpolation: transforms.InterpolationMode = .nearest, fill: [Double]? = nil,
                              center: [Int]? = nil) -> Tensor {
        precondition(translate.count == 2, "Argument translate should be a sequence of length 2, got \(translate)")
        precondition(scale > 0, "Argument scale should be positive, got \(scale)")
        precondition(shear.count == 1 || shear.count == 2, "Shear should be a sequence containing two values. Got \(shear)")
        let d = getDimensions(img)
        var c = (0.0, 0.0)
        if let center {
            precondition(center.count == 2, "affine: center should be a sequence of two ints, got \(center)")
            c = (Double(center[0]) - Double(d[2]) * 0.5, Double(center[1]) - Double(d[1]) * 0.5)
        }
        let m = inverseAffineMatrix(center: c, angle: angle, translate: (Double(translate[0]), Double(translate[1])),
                                    scale: scale, shear: (shear[0], shear.count == 2 ? shear[1] : 0))
        return applyAffine(img, m, outWidth: d[2], outHeight: d[1], interpolation: interpolation, fill: fill, op: "affine")
    }

    /// The size that holds the whole image after the inverse affine `matrix` (for `rotate(expand:)`).
    static func affineOutputSize(_ matrix: [Double], width w: Int, height h: Int) -> (Int, Int) {
        let m = matrix.map { Float($0) }
        let hw = Float(w) * 0.5, hh = Float(h) * 0.5
        let pts: [(Float, Float)] = [(-hw, -hh), (-hw, hh), (hw, hh), (hw, -hh)]
        var lo = (Float.infinity, Float.infinity), hi = (-Float.infinity, -Float.infinity)
        for (x, y) in pts {
            let nx = m[0] * x + m[1] * y + m[2], ny = m[3] * x + m[4] * y + m[5]
            lo = (min(lo.0, nx), min(lo.1, ny))
            hi = (max(hi.0, nx), max(hi.1, ny))
        }
        let tol: Float = 1e-4
        func up(_ v: Float) -> Float { ((v / tol).rounded(.towardZero) * tol).rounded(.up) }
        func down(_ v: Float) -> Float { ((v / tol).rounded(.towardZero) * tol).rounded(.down) }
        let sw = up(hi.0 + hw) - down(lo.0 + hw), sh = up(hi.1 + hh) - down(lo.1 + hh)
        return (Int(sw), Int(sh))
    }

    /// Samples `img` through the inverse affine `matrix` (output pixel centre relative to the output
    /// centre → input position relative to the input centre), computed in float32 like torchvision's grid.
    static func applyAffine(_ img: Tensor, _ matrix: [Double], outWidth ow: Int, outHeight oh: Int,
                            interpolation: transforms.InterpolationMode, fill: [Double]?, op: String) -> Tensor {
        precondition(interpolation == .nearest || interpolation == .bilinear,
                     "\(op): interpolation mode \(interpolation) is not supported for tensor images, use nearest or bilinear")
        let d = getDimensions(img)
        let (w, h) = (Float(d[2]), Float(d[1]))
        let m = matrix.map { Float($0) }
        let ax = m[0] / (0.5 * w), bx = m[1] / (0.5 * w), cx = m[2] / (0.5 * w)
        let ay = m[3] / (0.5 * h), by = m[4] / (0.5 * h), cy = m[5] / (0.5 * h)
        var grid: [(Double, Double)] = []
        grid.reserveCapacity(ow * oh)
        for r in 0..<oh {
            let y = -Float(oh) * 0.5 + 0.5 + Float(r)
            for k in 0..<ow {
                let x = -Float(ow) * 0.5 + 0.5 + Float(k)
                let gx = x * ax + y * bx + cx, gy = x * ay + y * by + cy
                grid.append((Double(((gx + 1) * w - 1) / 2), Double(((gy + 1) * h - 1) / 2)))
            }
        }
        return sample(img, at: grid, outHeight: oh, outWidth: ow, nearest: interpolation == .nearest, fill: fill, op: op)
    }

    /// Samples `img` at the source pixel positions `grid` (row major over `outHeight`×`outWidth`, as
    /// `PixelPlanes.sampled`): on the host for a CPU image; for a GPU image the positions (float32 values
    /// computed on the host, like the CPU's) go to its device and the image is sampled there.
    static func sample(_ img: Tensor, at grid: [(Double, Double)], outHeight oh: Int, outWidth ow: Int, nearest: Bool,
                       fill: [Double]?, op: String) -> Tensor {
        if DeviceImage.isOnDevice(img) {
            let points = Tensor(grid.flatMap { [$0.0, $0.1] }, shape: [grid.count, 2]).to(img.device, dtype: .float32)
            return DeviceImage.sampled(img, at: points, outHeight: oh, outWidth: ow, nearest: nearest, fill: fill)
        }
        return PixelPlanes(img, op: op).sampled(at: grid, outHeight: oh, outWidth: ow, nearest: nearest, fill: fill)
            .tensor(img.dtype)
    }

    /// The 8 coefficients of the projective map from `endpoints` to `startpoints` (four (x, y) corners
    /// each), as torchvision's `_get_perspective_coeffs`, rounded to float32.
    public static func perspectiveCoefficients(_ startpoints: [[Int]], _ endpoints: [[Int]]) -> [Double] {
        precondition(startpoints.count == 4 && endpoints.count == 4 && (startpoints + endpoints).allSatisfy { $0.count == 2 },
                     "Please provide only four corners (x, y) for startpoints and endpoints, got \(startpoints) and \(endpoints)")
        var a = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for i in 0..<4 {
            let (x, y) = (Double(endpoints[i][0]), Double(endpoints[i][1]))
            let (u, v) = (Double(startpoints[i][0]), Double(startpoints[i][1]))
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y, u]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y, v]
        }
        // Gaussian elimination with partial pivoting on the augmented 8×9 system.
        for col in 0..<8 {
            let p = (col..<8).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            precondition(abs(a[p][col]) > 1e-12, "perspective: the corner points are degenerate (\(startpoints) → \(endpoints))")
            a.swapAt(col, p)
            for r in 0..<8 where r != col {
                let f = a[r][col] / a[col][col]
                if f != 0 { for k in col..<9 { a[r][k] -= f * a[col][k] } }
            }
        }
        return (0..<8).map { Double(Float(a[$0][8] / a[$0][$0])) }
    }

    /// Warps the image so that `startpoints` (its four corners, (x, y)) move to `endpoints`
    /// (torchvision's `perspective`).
    public static func perspective(_ img: Tensor, _ startpoints: [[Int]], _ endpoints: [[Int]],
                                   interpolation: transforms.InterpolationMode = .bilinear, fill: [Double]? = nil) -> Tensor {
        precondition(interpolation == .nearest || interpolation == .bilinear,
                     "perspective: interpolation mode \(interpolation) is not supported for tensor images, use nearest or bilinear")
        let c = perspectiveCoefficients(startpoints, endpoints).map { Float($0) }
        let dims = getDimensions(img)
        let (oh, ow) = (dims[1], dims[2])
        let (w, h) = (Float(ow), Float(oh))
        var grid: [(Double, Double)] = []
        grid.reserveCapacity(ow * oh)
        for r in 0..<oh {
            let y = Float(r) + 0.5
            for k in 0..<ow {
                let x = Float(k) + 0.5
                let den = c[6] * x + c[7] * y + 1
                let gx = (x * (c[0] / (0.5 * w)) + y * (c[1] / (0.5 * w)) + c[2] / (0.5 * w)) / den - 1
                let gy = (x * (c[3] / (0.5 * h)) + y * (c[4] / (0.5 * h)) + c[5] / (0.5 * h)) / den - 1
                grid.append((Double(((gx + 1) * w - 1) / 2), Double(((gy + 1) * h - 1) / 2)))
            }
        }
        return sample(img, at: grid, outHeight: oh, outWidth: ow, nearest: interpolation == .nearest, fill: fill, op: "perspective")
    }
}

extension transforms.functional {
    /// `steps` evenly spaced float32 values from `start` to `end`, computed like `torch.linspace` (the first
    /// half counted up from `start`, the second down from `end`).
    static func linspace32(_ start: Float, _ end: Float, _ steps: Int) -> [Float] {
        if steps == 1 { return [start] }
        let step = (end - start) / Float(steps - 1)
        return (0..<steps).map { i in i < steps / 2 ? start + step * Float(i) : end - step * Float(steps - 1 - i) }
    }

    /// Moves every pixel by `displacement` (1×H×W×2, (x, y) in grid units where the image spans [-1, 1])
    /// and resamples (torchvision's `elastic_transform`).
    public static func elasticTransform(_ img: Tensor, _ displacement: Tensor, interpolation: transforms.InterpolationMode = .bilinear,
                                        fill: [Double]? = nil) -> Tensor {
        precondition(interpolation == .nearest || interpolation == .bilinear,
                     "elastic_transform: interpolation mode \(interpolation) is not supported for tensor images, use nearest or bilinear")
        let dims = getDimensions(img)
        let (h, w) = (dims[1], dims[2])
        precondition(displacement.shape == [1, h, w, 2],
                     "elastic_transform: displacement should be of shape [1, \(h), \(w), 2], got \(displacement.shape)")
        let xs = linspace32(Float(-w + 1) / Float(w), Float(w - 1) / Float(w), w)
        let ys = linspace32(Float(-h + 1) / Float(h), Float(h - 1) / Float(h), h)
        if DeviceImage.isOnDevice(img) {
            // The same float32 steps as the host loop below, as tensor ops on the image's device.
            let d = displacement.to(img.device, dtype: .float32).reshape([h, w, 2])
            let gx = Tensor(xs.map { Double($0) }, shape: [1, w]).to(img.device, dtype: .float32) + d.select(2, 0)
            let gy = Tensor(ys.map { Double($0) }, shape: [h, 1]).to(img.device, dtype: .float32) + d.select(2, 1)
            let px = ((gx + 1) * Double(w) - 1) / 2, py = ((gy + 1) * Double(h) - 1) / 2
            let points = torch.stack([px.reshape([h * w]), py.reshape([h * w])], dim: 1)
            return DeviceImage.sampled(img, at: points, outHeight: h, outWidth: w, nearest: interpolation == .nearest, fill: fill)
        }
        let d = displacement.to(.float32).contiguous().toArray(as: Float.self)
        var grid: [(Double, Double)] = []
        grid.reserveCapacity(h * w)
        for y in 0..<h {
            for x in 0..<w {
                let gx = xs[x] + d[2 * (y * w + x)], gy = ys[y] + d[2 * (y * w + x) + 1]
                grid.append((Double(((gx + 1) * Float(w) - 1) / 2), Double(((gy + 1) * Float(h) - 1) / 2)))
            }
        }
        return sample(img, at: grid, outHeight: h, outWidth: w, nearest: interpolation == .nearest, fill: fill, op: "elastic_transform")
    }
}
