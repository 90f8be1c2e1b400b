import Torch

/// The working form of the transforms' device paths: an image tensor on a GPU stays there and is computed with
/// tensor ops that run on its device (elementwise math, reductions, matrix products, gathers), never copied to
/// the host. Each device path follows its CPU twin's formulas (torchvision's), in float32 (float64 for float64
/// images) where the CPU path rounds every step to float32 in Double, so results agree to float32 rounding
/// (integer images: at most 1 apart where a value lands on a rounding boundary).
enum DeviceImage {
    /// Whether `img` lives on a GPU, so a transform takes its device path.
    static func isOnDevice(_ img: Tensor) -> Bool { img.device != .cpu }

    /// The dtype the device paths compute `dtype` images in: float64 stays, everything else is float32
    /// (the type torchvision computes integer images in).
    static func workingDType(_ dtype: DType) -> DType { dtype == .float64 ? .float64 : .float32 }

    /// `img`'s values (not rescaled) in its working dtype, on its device.
    static func working(_ img: Tensor) -> Tensor { img.to(workingDType(img.dtype)) }

    /// Working values `x` stored as a `dtype` image: floating types are cast; integer types are rounded
    /// (half to even, or toward zero with `truncating`, torchvision's `.to(uint8)`) and clamped to the
    /// type's range, as `PixelPlanes.tensor(_:)` stores the CPU's results.
    static func stored(_ x: Tensor, as dtype: DType, truncating: Bool = false) -> Tensor {
        if dtype.isFloatingPoint { return x.to(dtype) }
        let (lo, hi) = integerRange(dtype)
        return (truncating ? x.trunc() : x.round()).clamp(min: lo, max: hi).to(dtype)
    }

    /// The one-line error of a transform without a device path, in the backend's words ("NotImplementedError
    /// … 'CUDA' …"): such a transform stops rather than copy the image through the host.
    static func notImplementedMessage(_ op: String, _ img: Tensor) -> String {
        "NotImplementedError: \"\(op)\" has no 'CUDA' path in TorchVision (a tensor image on \(img.device), shape "
            + "\(img.shape), \(img.dtype)); move the image with .cpu() first."
    }

    /// Stops with `notImplementedMessage` when `img` is on a GPU.
    static func requireHost(_ op: String, _ img: Tensor) {
        precondition(!isOnDevice(img), notImplementedMessage(op, img))
    }
}

extension AxisFilter {
    /// The filter as a dense `[outputs, inputSize]` matrix (taps that hit the same source index add up, as
    /// they do in the CPU's sums), of `dtype` on `device`: resampling a plane is then `Wh · plane · Wwᵀ`.
    func matrix(inputSize n: Int, dtype: DType, device: Device) -> Tensor {
        let outputs = taps == 0 ? 0 : index.count / taps
        var dense = [Double](repeating: 0, count: outputs * n)
        for o in 0..<outputs {
            for k in 0..<taps { dense[o * n + index[o * taps + k]] += weight[o * taps + k] }
        }
        return Tensor(dense, shape: [outputs, n]).to(device, dtype: dtype)
    }

    /// The source indices of a one-tap filter (nearest neighbour) as an int64 tensor on `device`.
    func sourceIndices(device: Device) -> Tensor {
        precondition(taps == 1, "AxisFilter.sourceIndices: expected a one-tap (nearest) filter, got \(taps) taps")
        return Tensor(index.map { Int64($0) }, shape: [index.count]).to(device)
    }
}

extension DeviceImage {
    /// Resamples the last two dimensions of a device image separably, rows by `fy` and columns by `fx`, as
    /// `Wh · plane · Wwᵀ` over every (…, C) plane: the result in the working dtype, `(…, outHeight, outWidth)`.
    static func resampled(_ img: Tensor, rows fy: AxisFilter, cols fx: AxisFilter, outHeight: Int, outWidth: Int) -> Tensor {
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        let lead = Array(img.shape.dropLast(2))
        if img.numel == 0 { return torch.zeros(lead + [outHeight, outWidth], dtype: workingDType(img.dtype), device: img.device) }
        let planes = working(img).reshape([-1, h, w])
        let wx = fx.matrix(inputSize: w, dtype: planes.dtype, device: img.device)
        let wy = fy.matrix(inputSize: h, dtype: planes.dtype, device: img.device)
        // Both passes fold the planes into the rows of one GEMM (no per-plane copy of a weight matrix).
        let resampledRows = planes.matmul(wx.t())                         // [P, H, outWidth]
        let resampled = resampledRows.transpose(1, 2).matmul(wy.t())      // [P, outWidth, outHeight]
        return resampled.transpose(1, 2).reshape(lead + [outHeight, outWidth])
    }

    /// Picks the nearest-neighbour rows `fy` and columns `fx` of a device image (exact, in its own dtype).
    static func picked(_ img: Tensor, rows fy: AxisFilter, cols fx: AxisFilter) -> Tensor {
        img.indexSelect(img.dim - 2, fy.sourceIndices(device: img.device))
            .indexSelect(img.dim - 1, fx.sourceIndices(device: img.device))
    }

    /// Samples every plane of a device image at `points` (`[outHeight·outWidth, 2]`, (x, y) pixel coordinates,
    /// row major) with zeros outside, nearest (ties to even) or bilinear, and blends in `fill` as
    /// `PixelPlanes.sampled` does: the result stored as `img`'s dtype, `(…, outHeight, outWidth)`.
    static func sampled(_ img: Tensor, at points: Tensor, outHeight: Int, outWidth: Int, nearest: Bool,
                        fill: [Double]?) -> Tensor {
        let (h, w) = (img.shape[img.dim - 2], img.shape[img.dim - 1])
        let lead = Array(img.shape.dropLast(2))
        let channels = lead.last ?? 1
        if let fill { PixelPlanes.checkFill(fill, channels: channels) }
        let count = points.shape[0]
        precondition(points.shape == [outHeight * outWidth, 2],
                     "grid sampling of an image of shape \(img.shape): expected \(outHeight * outWidth)×2 sampling points, got \(points.shape)")
        let planes = working(img).reshape([-1, h * w])
        let p = planes.shape[0]
        let work = planes.dtype
        let xy = points.to(img.device, dtype: work)
        let (x, y) = (xy.select(1, 0), xy.select(1, 1))
        /// The source index (0 outside) and weight (0 outside) of the tap at integral (xi, yi).
        func tap(_ xi: Tensor, _ yi: Tensor, _ weight: Tensor?) -> (index: Tensor, weight: Tensor) {
            let inside = ((xi .>= 0) & (xi .< Double(w)) & (yi .>= 0) & (yi .< Double(h)))
            let flat = (yi.to(.int64) * w + xi.to(.int64)) * inside.to(.int64)
            let insideWeight = inside.to(work)
            return (flat, weight.map { $0 * insideWeight } ?? insideWeight)
        }
        let taps: [(index: Tensor, weight: Tensor)]
        if nearest {
            taps = [tap(x.round(), y.round(), nil)]
        } else {
            let x0 = x.floor(), y0 = y.floor()
            let tx = x - x0, ty = y - y0
            taps = [tap(x0, y0, (1 - tx) * (1 - ty)), tap(x0 + 1, y0, tx * (1 - ty)),
                    tap(x0, y0 + 1, (1 - tx) * ty), tap(x0 + 1, y0 + 1, tx * ty)]
        }
        var value = taps.map { planes.gather(1, $0.index.unsqueeze(0).expand([p, count])) * $0.weight }
            .reduce(torch.zeros([p, count], dtype: work, device: img.device), +)
        if let fill {
            let inside = taps.map { $0.weight }.reduce(torch.zeros([count], dtype: work, device: img.device), +)
            let perPlane = (0..<p).map { fill.count == 1 ? fill[0] : fill[$0 % channels] }
            let f = Tensor(perPlane, shape: [p, 1]).to(img.device, dtype: work)
            value = nearest ? torch.where(inside .< 0.5, f, value) : value * inside + (1 - inside) * f
        }
        return stored(value.reshape(lead + [outHeight, outWidth]), as: img.dtype)
    }
}
