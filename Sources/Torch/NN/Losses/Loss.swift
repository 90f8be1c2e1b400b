/// What every loss shares: `nn.Reduction`, the `nn.Loss` / `nn.WeightedLoss` base classes
/// (PyTorch's `_Loss` / `_WeightedLoss`), the reduction helper and the messages losses stop with.

extension nn {
    /// How a loss reduces its per-element values (PyTorch's `reduction=` string).
    ///
    /// ```swift
    /// let loss = nn.MSELoss(reduction: .sum)
    /// let perElement = F.l1Loss(x, y, reduction: .none)
    /// ```
    public enum Reduction: String, Sendable, CaseIterable, CustomStringConvertible {
        /// No reduction: one value per element (per sample for class losses).
        case none
        /// The mean (for NLL/CrossEntropy with class weights: the weighted mean).
        case mean
        /// The sum.
        case sum
        /// `KLDivLoss` only: the sum divided by the batch size.
        case batchmean

        /// PyTorch's string, e.g. `mean`.
        public var description: String { rawValue }
    }

    /// The base class of losses (PyTorch's `_Loss`): a module holding a `reduction`, called with
    /// an input and a target.
    ///
    /// Subclass it for a custom loss and override `forward(_:_:)`:
    ///
    /// ```swift
    /// final class MyLoss: nn.Loss {
    ///     override func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
    ///         F.mseLoss(input, target, reduction: reduction) + F.l1Loss(input, target, reduction: reduction)
    ///     }
    /// }
    /// let loss = MyLoss()(prediction, target)
    /// ```
    ///
    /// Module forward hooks (which take one tensor) are not run by the two-argument call.
    open class Loss: Module {
        /// How the per-element losses are reduced.
        public var reduction: Reduction

        public init(reduction: Reduction = .mean) {
            self.reduction = reduction
            super.init()
        }

        /// The loss of `input` against `target`; subclasses override it.
        open func forward(_ input: Tensor, _ target: Tensor) -> Tensor {
            preconditionFailure("Module [\(typeName)] is missing the required \"forward\" function")
        }

        /// `loss(input, target)`.
        public final func callAsFunction(_ input: Tensor, _ target: Tensor) -> Tensor {
            forward(input, target)
        }
    }

    /// A loss with an optional per-class `weight` (PyTorch's `_WeightedLoss`). The weight is a
    /// buffer: it is in `stateDict()` and follows `to(_:)`.
    open class WeightedLoss: Loss {
        /// The per-class (or per-element) rescaling weight, or nil.
        public var weight: Tensor? {
            get { registeredBuffers["weight"] }
            set { registerBuffer("weight", newValue) }
        }

        public init(weight: Tensor? = nil, reduction: Reduction = .mean) {
            super.init(reduction: reduction)
            registerBuffer("weight", weight)
        }
    }
}

// MARK: - Shared helpers

/// `loss.mean()`, `loss.sum()` or `loss` (PyTorch's `apply_loss_reduction`).
func applyLossReduction(_ loss: Tensor, _ reduction: nn.Reduction) -> Tensor {
    switch reduction {
    case .none: return loss
    case .mean: return loss.mean()
    case .sum: return loss.sum()
    case .batchmean: preconditionFailure(invalidReductionMessage(reduction))
    }
}

/// Stops unless `reduction` is one of none/mean/sum (`batchmean` is KLDivLoss's alone).
@inline(__always) func checkBasicReduction(_ reduction: nn.Reduction) {
    precondition(reduction != .batchmean, invalidReductionMessage(reduction))
}

/// PyTorch's message for a reduction a loss does not support.
func invalidReductionMessage(_ reduction: nn.Reduction) -> String {
    "\(reduction.rawValue) is not a valid value for reduction"
}

/// `t / d` recorded as PyTorch's `DivBackward1` (division by a Scalar inside a C++ loss).
func lossDivScalar(_ t: Tensor, _ d: Double) -> Tensor {
    let out = torch.noGrad { t / d }
    if t.needsGrad {
        record("DivBackward1", out, inputs: [t]) { _, g in [lossDivScalar(g, d)] }
    }
    return out
}

/// PyTorch's message for an op without a kernel for `dtype`, e.g. `"mse_cpu" not implemented for 'Long'`.
func lossDTypeMessage(op: String, _ dtype: DType) -> String {
    "\"\(op)\" not implemented for '\(scalarTypeName(dtype))'"
}

/// Python's `torch.Size([2, 3])` spelling used in messages raised from `torch.nn.functional`.
func torchSizeString(_ s: [Int]) -> String { "torch.Size(\(shapeString(s)))" }

/// Contiguous storage of `t` (itself when already contiguous), outside autograd.
@inline(__always) func lossContiguous(_ t: Tensor) -> Tensor { t.isContiguous ? t : t.contiguousCopy() }
