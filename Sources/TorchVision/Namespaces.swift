import Torch

/// torchvision's `datasets`: MNIST and Fashion-MNIST read from their IDX files.
public enum datasets {}

/// torchvision's `io`: reading, decoding, encoding and writing PNG and JPEG images.
///
/// ```swift
/// let img = try io.readImage("photo.png")          // uint8 [C, H, W]
/// try io.writeJPEG(img, "photo.jpg", quality: 90)
/// ```
public enum io {}

/// torchvision's `transforms`: image preprocessing composable with `Compose`.
///
/// ```swift
/// let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
/// ```
public enum transforms {}
