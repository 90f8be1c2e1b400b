import Torch

/// The random draws torchvision's transforms make, taken the same way from `torch.defaultGenerator`
/// (a `uniform_` of the default dtype, `randint`, `rand(1)`), so a seeded pipeline is reproducible with
/// `torch.manualSeed`. The scalar draws read the generator directly, with the formulas of the
/// one-element tensor ops (no tensor is made per draw).
enum RandomDraw {
    /// `torch.empty(1).uniform_(lo, hi).item()`.
    static func uniform(_ lo: Double, _ hi: Double) -> Double {
        let g = torch.defaultGenerator
        if torch.defaultDType == .float64 {
            let u = Double(g.random64() & ((1 << 53) - 1)) * (1.0 / 9_007_199_254_740_992.0)
            return lo.addingProduct(u, hi - lo)
        }
        let u = Float(g.random() & ((1 << 24) - 1)) * (1.0 / 16_777_216.0)
        return Double(Float(lo).addingProduct(u, Float(hi) - Float(lo)))
    }

    /// `torch.randint(lo, hi, (1,)).item()`.
    static func randint(_ lo: Int, _ hi: Int) -> Int {
        precondition(hi > lo, "random_ expects 'from' to be less than 'to', but got from=\(lo) >= to=\(hi)")
        let g = torch.defaultGenerator
        let range = UInt64(hi - lo)
        return lo + Int(range >= (1 << 32) ? g.random64() % range : UInt64(g.random()) % range)
    }

    /// `torch.rand(1) < p`.
    static func chance(_ p: Double) -> Bool {
        uniform(0, 1) < p
    }

    /// `torch.randperm(n)` as Ints.
    static func permutation(_ n: Int) -> [Int] {
        torch.randperm(n).toArray(as: Int64.self).map { Int($0) }
    }
}

/// Python's spelling of values in torchvision's reprs.
enum PyRepr {
    /// `0.5`, `1.0`, `1e-05`: Python's shortest round-trip float.
    static func float(_ v: Double) -> String { "\(v)" }
    /// An integer-valued number as an int, anything else as a float (how a user-passed `fill` prints).
    static func number(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? "\(Int(v))" : "\(v)" }
    /// `(a, b)`.
    static func tuple(_ v: [Int]) -> String { "(" + v.map(String.init).joined(separator: ", ") + (v.count == 1 ? ",)" : ")") }
    /// `(a, b)` of floats.
    static func tuple(_ v: [Double]) -> String { "(" + v.map(float).joined(separator: ", ") + (v.count == 1 ? ",)" : ")") }
    /// `[a, b]` of floats.
    static func list(_ v: [Double]) -> String { "[" + v.map(float).joined(separator: ", ") + "]" }
    /// `True` / `False`.
    static func bool(_ v: Bool) -> String { v ? "True" : "False" }
    /// A fill value: one number, or a list.
    static func fill(_ v: [Double]) -> String { v.count == 1 ? number(v[0]) : "[" + v.map(number).joined(separator: ", ") + "]" }
    /// Python's `round(x, 4)`.
    static func round4(_ v: Double) -> Double { (v * 10_000).rounded(.toNearestOrEven) / 10_000 }
}

extension transforms {
    /// The fill list torchvision's random geometric transforms pass for a tensor image: one value
    /// repeated for every channel.
    static func fillList(_ fill: [Double], channels: Int) -> [Double] {
        fill.count == 1 ? [Double](repeating: fill[0], count: channels) : fill
    }
}
