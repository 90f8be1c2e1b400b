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

/// torchvision's `transforms`: image preprocessing and augmentation composable with `Compose`, on
/// uint8 or float image tensors (…, C, H, W); the random ones draw from `torch.defaultGenerator` exactly
/// as torchvision does, so `torch.manualSeed` makes a pipeline reproducible. `transforms.functional`
/// holds each operation as a plain function.
///
/// ```swift
/// let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
/// let augment = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
///                                   transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4)])
/// ```
public enum transforms {}
