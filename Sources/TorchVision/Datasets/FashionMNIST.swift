import Torch

extension datasets {
    /// Zalando's Fashion-MNIST (torchvision's `FashionMNIST`): 28×28 grey images of ten kinds of
    /// clothing, in MNIST's IDX format and file names.
    ///
    /// Files are looked for as `<root>/FashionMNIST/raw/<name>` and `<root>/<name>` (uncompressed
    /// or `.gz`). Debian's `dataset-fashion-mnist` package installs them in
    /// `/usr/share/datasets/fashion-mnist`:
    ///
    /// ```swift
    /// let train = try datasets.FashionMNIST("/usr/share/datasets/fashion-mnist", train: true,
    ///                                       transform: transforms.ToTensor())
    /// ```
    public final class FashionMNIST: MNIST {
        override class var folderName: String { "FashionMNIST" }
        override class var installHint: String {
            "On Debian/Ubuntu, `apt install dataset-fashion-mnist` puts the files in /usr/share/datasets/fashion-mnist; this implementation does not download."
        }
        /// The class names.
        override public class var classes: [String] {
            ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
        }
    }
}
