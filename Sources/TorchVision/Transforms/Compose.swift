import Torch

extension transforms {
    /// Applies transforms one after the other (torchvision's `Compose`).
    ///
    /// ```swift
    /// let t = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    /// let x = t(image)   // float 1×28×28 in [-1, 1]
    /// ```
    public struct Compose: Transform {
        /// The transforms, in application order.
        public var transforms: [any Transform]

        /// Composes `transforms`.
        public init(_ transforms: [any Transform]) { self.transforms = transforms }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            transforms.reduce(input) { x, t in t(x) }
        }

        /// Batched when every part is.
        public func applyToBatch(_ batch: Tensor) -> Tensor? {
            var x = batch
            for t in transforms {
                guard let y = t.applyToBatch(x) else { return nil }
                x = y
            }
            return x
        }

        /// torchvision's repr: `Compose(` then each transform on its own indented line, then `)`.
        public var description: String {
            "Compose(" + transforms.map { "\n    \($0)" }.joined() + "\n)"
        }
    }
}
