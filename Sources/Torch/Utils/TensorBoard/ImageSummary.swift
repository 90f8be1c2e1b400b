/// PyTorch's image path for TensorBoard (`convert_to_HWC`, `make_grid`, the uint8 conversion):
/// the tensor laid out as `dataformats` says, a batch tiled 8 a row, one channel repeated to RGB,
/// float values times 255 clipped to [0, 255] and truncated (uint8 values kept); then PNG-encoded.
/// Returns (png, height, width, channels).
func tensorBoardPNG(_ img: Tensor, dataformats: String) -> ([UInt8], Int, Int, Int) {
    let fmt = Array(dataformats.uppercased())
    precondition(Set(fmt).count == fmt.count && (2...4).contains(fmt.count) && img.dim == fmt.count,
                 "add_image: dataformats \"\(dataformats)\" does not match an image of shape \(img.shape) (expected one of NCHW, NHWC, CHW, HWC, HW)")
    func order(_ target: String) -> [Int] {
        target.map { c in
            guard let i = fmt.firstIndex(of: c) else {
                preconditionFailure("add_image: dataformats \"\(dataformats)\" has no \(c) (expected one of NCHW, NHWC, CHW, HWC, HW)")
            }
            return i
        }
    }
    let x = img.detach()
    let nchw: Tensor
    switch fmt.count {
    case 4: nchw = x.permute(order("NCHW"))
    case 3: nchw = x.permute(order("CHW")).unsqueeze(0)
    default: nchw = x.permute(order("HW")).unsqueeze(0).unsqueeze(0)
    }
    let (n, c, h, w) = (nchw.shape[0], nchw.shape[1], nchw.shape[2], nchw.shape[3])
    precondition([1, 3, 4].contains(c), "add_image: expected 1, 3 or 4 channels but got \(c) (shape \(img.shape), dataformats \(dataformats))")
    precondition(n > 0 && h > 0 && w > 0, "add_image: empty image of shape \(img.shape)")
    let scale: Float = img.dtype == .uint8 ? 1 : 255
    let vals = nchw.contiguous().toArray(as: Float.self)
    let oc = c == 1 ? 3 : c
    let ncols = Swift.min(n, 8), nrows = (n + ncols - 1) / ncols
    let gw = w * ncols, gh = h * nrows
    var pixels = [UInt8](repeating: 0, count: gh * gw * oc)
    for i in 0..<n {
        let oy = (i / ncols) * h, ox = (i % ncols) * w
        for y in 0..<h {
            for xx in 0..<w {
                for ch in 0..<oc {
                    let v = vals[((i * c + (c == 1 ? 0 : ch)) * h + y) * w + xx] * scale
                    let clipped = v.isNaN ? 0 : Swift.min(Swift.max(v, 0), 255)
                    pixels[((oy + y) * gw + ox + xx) * oc + ch] = UInt8(clipped)
                }
            }
        }
    }
    return (encodePNG(pixels: pixels, width: gw, height: gh, channels: oc), gh, gw, oc)
}
