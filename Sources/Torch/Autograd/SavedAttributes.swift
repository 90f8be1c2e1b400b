/// A backward node's saved attributes: what PyTorch shows as `grad_fn._saved_<name>`
/// (`_saved_self`, `_saved_alpha`, `_saved_self_sym_sizes`), and what torchviz's
/// `make_dot(show_attrs=True, show_saved=True)` draws.
///
/// Ops list them in the `saved:` closure of `record`, built from values their backward closure
/// keeps anyway; the closure runs only when something asks (`makeDot`), so recording an op
/// costs one closure context and no formatting. The list goes with the saved tensors when a
/// backward pass frees them.
struct SavedAttribute {
    enum Value {
        /// A saved tensor: the object itself, so a saved leaf is drawn as the leaf's node, as
        /// PyTorch hands back the leaf's own Python object.
        case tensor(Tensor)
        /// A tuple of tensors, `None` where a dim is not indexed (`_saved_indices` of `IndexBackward0`).
        case tensors([Tensor?])
        /// Python's `str()` of any other value: `1`, `0.5`, `(3, 2)`, `None`, `True`.
        case text(String)
    }

    /// The name without `_saved_`.
    let name: String
    let value: Value
}

extension SavedAttribute {
    /// A saved tensor, or `None` where PyTorch saves none because no wanted gradient needs it.
    static func tensor(_ name: String, _ t: Tensor?) -> SavedAttribute {
        SavedAttribute(name: name, value: t.map { .tensor($0) } ?? .text("None"))
    }

    /// The tensor behind a `SavedTensor` (the input itself, or the output's grad_fn-less alias).
    static func tensor(_ name: String, _ s: SavedTensor?) -> SavedAttribute { tensor(name, s?.tensor) }

    static func tensors(_ name: String, _ ts: [Tensor?]) -> SavedAttribute {
        SavedAttribute(name: name, value: .tensors(ts))
    }

    /// An `int64_t` attribute. PyTorch reads these back as unsigned 64-bit numbers, so `dim=-1`
    /// shows as `18446744073709551615` and `ignore_index=-100` as `18446744073709551516`.
    static func int(_ name: String, _ v: Int) -> SavedAttribute {
        SavedAttribute(name: name, value: .text(pythonInt(v)))
    }

    /// An int list (sizes, strides, dims): a Python tuple, `(3,)` for one element, `()` for none.
    static func ints(_ name: String, _ v: [Int]) -> SavedAttribute {
        SavedAttribute(name: name, value: .text(pythonTuple(v)))
    }

    /// An optional int list: the tuple, or `None`.
    static func ints(_ name: String, _ v: [Int]?) -> SavedAttribute {
        SavedAttribute(name: name, value: .text(v.map(pythonTuple) ?? "None"))
    }

    /// A `double` attribute (`eps`, `negative_slope`): Python's float repr, `1e-05`, `1.0`.
    static func float(_ name: String, _ v: Double) -> SavedAttribute {
        SavedAttribute(name: name, value: .text(pyFloat(v)))
    }

    /// A `Scalar` attribute (`alpha`, `beta`, `exponent`): PyTorch gives back the Python number
    /// the caller wrote, which SwiftTorch's `Double` cannot tell apart, so integral values show as
    /// ints (`1`, the common `alpha`/`beta`/`exponent`) and others as floats (`0.5`); a Python
    /// `2.0` shows here as `2`.
    static func scalar(_ name: String, _ v: Double) -> SavedAttribute {
        let integral = v.isFinite && v.rounded() == v && Swift.abs(v) < 9.2e18
        return SavedAttribute(name: name, value: .text(integral ? String(Int(v)) : pyFloat(v)))
    }

    /// An optional `Scalar` (`clamp`'s bounds): the number, or `None`.
    static func scalar(_ name: String, _ v: Double?) -> SavedAttribute {
        v.map { scalar(name, $0) } ?? none(name)
    }

    static func bool(_ name: String, _ v: Bool) -> SavedAttribute {
        SavedAttribute(name: name, value: .text(pyBool(v)))
    }

    static func none(_ name: String) -> SavedAttribute { SavedAttribute(name: name, value: .text("None")) }

    /// A loss's `reduction`, as PyTorch's enum value (0 none, 1 mean, 2 sum).
    static func reduction(_ r: nn.Reduction) -> SavedAttribute {
        let v: Int
        switch r {
        case .none: v = 0
        case .mean: v = 1
        case .sum: v = 2
        case .batchmean: v = 2   // computed as a sum, then divided by the batch size
        }
        return int("reduction", v)
    }
}

/// Python's `str()` of an int64 attribute as PyTorch returns it (unsigned).
private func pythonInt(_ v: Int) -> String { v < 0 ? String(UInt64(bitPattern: Int64(v))) : String(v) }

private func pythonTuple(_ v: [Int]) -> String { pyTuple(strings: v.map(pythonInt)) }
