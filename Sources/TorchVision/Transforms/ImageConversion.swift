import Torch

extension transforms {
    /// Converts a PIL-style picture to a uint8 C×H×W tensor without scaling (torchvision's `PILToTensor`).
    /// On a tensor it takes the picture's pixel array as datasets store it: uint8 H×W or H×W×C.
    public struct PILToTensor: Transform {
        public init() {}

        /// An H×W or H×W×C pixel array as C×H×W, values unchanged.
        public func callAsFunction(_ input: Tensor) -> Tensor {
            precondition(input.dim == 2 || input.dim == 3, "pic should be 2/3 dimensional. Got \(input.dim) dimensions.")
            return (input.dim == 2 ? input.unsqueeze(0) : input.permute(2, 0, 1)).contiguous()
        }

        public func apply(_ sample: Sample) -> Sample {
            switch sample {
            case .image(let pixels): return .tensor(pixels)
            case .tensor(let t): return .tensor(callAsFunction(t))
            }
        }

        public var description: String { "PILToTensor()" }
    }

    /// Converts an image tensor (C×H×W or H×W; float scaled by 255 and truncated like torchvision's
    /// `pic.mul(255).byte()`, clamped to 0…255) to a PIL-style picture of `mode` "L", "RGB" or "RGBA"
    /// (nil: from the channel count), torchvision's `ToPILImage`. As a tensor transform it returns the
    /// picture's uint8 C×H×W pixels.
    public struct ToPILImage: Transform {
        public let mode: Image.Mode?

        public init(mode: Image.Mode? = nil) { self.mode = mode }

        public func apply(_ sample: Sample) -> Sample {
            switch sample {
            case .image(let pixels):
                if let mode { precondition(transforms.functional.pictureMode(channels: pixels.shape[0]) == mode.rawValue,
                                           "Incorrect mode (\(mode)) supplied for input type uint8 with \(pixels.shape[0]) channels") }
                return sample
            case .tensor(let t): return .image(callAsFunction(t))
            }
        }

        public var description: String { mode.map { "ToPILImage(mode=\($0.rawValue))" } ?? "ToPILImage()" }
    }
}

extension transforms.Transform where Self == transforms.ToPILImage {
    /// The picture's uint8 C×H×W pixels (the tensor form `Transform` needs; calling a `ToPILImage` on a
    /// tensor gives an `Image`, which this protocol-extension form leaves as the preferred overload).
    public func callAsFunction(_ input: Tensor) -> Tensor { transforms.functional.toPILImagePixels(input, mode: self.mode?.rawValue) }
}

extension transforms.functional {
    /// The PIL mode of a picture with `channels` channels: L, RGB or RGBA.
    static func pictureMode(channels: Int) -> String {
        switch channels {
        case 1: return "L"
        case 3: return "RGB"
        case 4: return "RGBA"
        default: preconditionFailure("to_pil_image: pictures have 1, 3 or 4 channels (modes L, RGB, RGBA), got \(channels)")
        }
    }

    /// `toPILImage`'s pixels: a C×H×W or H×W image tensor as uint8 C×H×W, floats times 255 truncated.
    static func toPILImagePixels(_ pic: Tensor, mode: String?) -> Tensor {
        precondition(pic.dim == 2 || pic.dim == 3, "pic should be 2/3 dimensional. Got \(pic.dim) dimensions.")
        var t = pic.dim == 2 ? pic.unsqueeze(0) : pic
        precondition(t.shape[0] <= 4, "pic should not have > 4 channels. Got \(t.shape[0]) channels.")
        if t.dtype.isFloatingPoint {
            t = t.mul(255).clamp(min: 0, max: 255).to(.uint8)
        } else {
            precondition(t.dtype == .uint8, "Input type \(t.dtype) is not supported; pictures hold uint8 or float image tensors")
        }
        let inferred = pictureMode(channels: t.shape[0])
        if let mode { precondition(mode == inferred, "Incorrect mode (\(mode)) supplied for input type uint8 with \(t.shape[0]) channels") }
        return t.contiguous()
    }
}
