import Torch

extension transforms {
    /// Converts a picture, or an image array, to a C×H×W tensor (torchvision's `ToTensor`): a picture's
    /// pixels become floats in [0, 1]; an H×W or H×W×C array is moved to channels-first, `uint8` values
    /// scaled to floats in [0, 1] (`x.to(defaultDType) / 255`), other dtypes keeping values and type.
    ///
    /// ```swift
    /// let x = transforms.ToTensor()(image)   // uint8 28×28 → float32 1×28×28
    /// ```
    public struct ToTensor: Transform, BatchSteppable {
        public init() {}

        public func callAsFunction(_ input: Tensor) -> Tensor {
            if let message = Self.inputError(input.shape) { preconditionFailure(message) }
            return Self.convert(input.dim == 2 ? input.unsqueeze(0) : input.permute(2, 0, 1))
        }

        /// A picture (uint8 C×H×W pixels) becomes a float tensor in [0, 1].
        public func apply(_ sample: Sample) -> Sample {
            switch sample {
            case .image(let pixels): return .tensor(Self.convert(pixels))
            case .tensor(let t): return .tensor(callAsFunction(t))
            }
        }

        /// `[B, H, W]` or `[B, H, W, C]` → `[B, C, H, W]`.
        public func applyToBatch(_ batch: Tensor) -> Tensor? {
            guard batch.dim == 3 || batch.dim == 4 else { return nil }
            return Self.convert(batch.dim == 3 ? batch.unsqueeze(1) : batch.permute(0, 3, 1, 2))
        }

        /// H×W → 1×H×W, H×W×C → C×H×W.
        func batchStep(sampleShape: [Int]) -> BatchStep? {
            switch sampleShape.count {
            case 2: return MapStep(outputShape: [1] + sampleShape) { applyToBatch($0)! }
            case 3: return MapStep(outputShape: [sampleShape[2], sampleShape[0], sampleShape[1]]) { applyToBatch($0)! }
            default: return nil
            }
        }

        /// Channels-first view → contiguous result, scaled when uint8.
        private static func convert(_ chw: Tensor) -> Tensor {
            chw.dtype == .uint8 ? chw.contiguous().to(torch.defaultDType).div(255) : chw.contiguous()
        }

        /// torchvision's message for an input that is not an image; nil for H×W or H×W×C.
        static func inputError(_ shape: [Int]) -> String? {
            shape.count == 2 || shape.count == 3 ? nil : "pic should be 2/3 dimensional. Got \(shape.count) dimensions."
        }

        public var description: String { "ToTensor()" }
    }
}
