import Torch

extension transforms.Transform {
    /// Transforms a PIL-style image, as torchvision's transforms take PIL images: the picture goes through
    /// the transform as its uint8 C×H×W pixels and comes back as an image.
    ///
    /// ```swift
    /// let small: Image = transforms.Resize(64)(photo)
    /// ```
    public func callAsFunction(_ image: Image) -> Image {
        guard case .image(let pixels) = apply(.image(image.tensor())) else {
            preconditionFailure("\(self) turns an image into a tensor; call it as `let x: Tensor = transform(image)`")
        }
        return Image(tensor: pixels)
    }

    /// Transforms a PIL-style image into a tensor: the pipeline must convert it (`ToTensor`,
    /// `PILToTensor`).
    ///
    /// ```swift
    /// let x: Tensor = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])(photo)
    /// ```
    public func callAsFunction(_ image: Image) -> Tensor {
        guard case .tensor(let t) = apply(.image(image.tensor())) else {
            preconditionFailure("\(self) leaves an image an image; add ToTensor() or PILToTensor(), or call it as `let y: Image = transform(image)`")
        }
        return t
    }
}

extension transforms.ToTensor {
    /// A PIL-style image as a float C×H×W tensor in [0, 1].
    public func callAsFunction(_ image: Image) -> Tensor { transforms.functional.toTensor(image) }
}

extension transforms.PILToTensor {
    /// A PIL-style image's pixels as a uint8 C×H×W tensor.
    public func callAsFunction(_ image: Image) -> Tensor { transforms.functional.pilToTensor(image) }
}

extension transforms.functional {
    /// A PIL-style image as a float C×H×W tensor in [0, 1] (torchvision's `to_tensor` on a PIL image).
    public static func toTensor(_ pic: Image) -> Tensor { pic.tensor().to(torch.defaultDType).div(255) }

    /// A PIL-style image's pixels as a uint8 C×H×W tensor (torchvision's `pil_to_tensor`).
    public static func pilToTensor(_ pic: Image) -> Tensor { pic.tensor() }

    /// An image tensor (C×H×W or H×W, uint8 or float in [0, 1], times 255 and truncated) as a PIL-style
    /// image of `mode` (nil: from the channel count), torchvision's `to_pil_image`.
    public static func toPILImage(_ pic: Tensor, mode: Image.Mode? = nil) -> Image {
        Image(tensor: toPILImagePixels(pic, mode: mode?.rawValue))
    }

    /// Converts a PIL-style image to greyscale by PIL's luma rule (`Image.convert("L")`), repeated to RGB
    /// when `numOutputChannels` is 3 (torchvision's `to_grayscale`).
    public static func toGrayscale(_ img: Image, numOutputChannels: Int = 1) -> Image {
        precondition(numOutputChannels == 1 || numOutputChannels == 3, "num_output_channels should be either 1 or 3")
        let grey = img.convert(.L)
        return numOutputChannels == 1 ? grey : grey.convert(.RGB)
    }
}

extension transforms.ToPILImage {
    /// An image tensor as a PIL-style image.
    ///
    /// ```swift
    /// let picture: Image = transforms.ToPILImage()(x)
    /// ```
    public func callAsFunction(_ pic: Tensor) -> Image { Image(tensor: callAsFunction(pic) as Tensor) }
}
