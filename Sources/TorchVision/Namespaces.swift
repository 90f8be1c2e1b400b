import Torch

/// torchvision's `datasets`: MNIST and Fashion-MNIST read from their IDX files.
public enum datasets {}

/// torchvision's `transforms`: image preprocessing composable with `Compose`.
///
/// ```swift
/// let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
/// ```
public enum transforms {}
