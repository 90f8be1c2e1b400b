#if canImport(Glibc)
import Glibc
#endif

extension utils.data {
    /// Splits `dataset` into non-overlapping random subsets of the given lengths (PyTorch's
    /// `random_split`). The permutation is `torch.randperm(count, generator)`, so a seeded
    /// generator gives PyTorch's split.
    ///
    /// ```swift
    /// let parts = utils.data.randomSplit(ds, [3, 7], generator: Generator().manualSeed(42))
    /// ```
    public static func randomSplit<D: Dataset>(_ dataset: D, _ lengths: [Int], generator: Generator? = nil) -> [Subset<D>] {
        if let message = randomSplitError(datasetCount: dataset.count, lengths: lengths) {
            preconditionFailure(message)
        }
        let indices = torch.randperm(lengths.reduce(0, +), generator: generator).toArray(as: Int.self)
        var result: [Subset<D>] = []
        var offset = 0
        for n in lengths {
            result.append(Subset(dataset, Array(indices[offset..<(offset + n)])))
            offset += n
        }
        return result
    }

    /// Splits by fractions summing to 1: each part gets `floor(count * fraction)` samples and the
    /// remainder is dealt out one by one from the first part on, as in PyTorch.
    ///
    /// ```swift
    /// let parts = utils.data.randomSplit(ds, [0.8, 0.2])
    /// ```
    public static func randomSplit<D: Dataset>(_ dataset: D, _ fractions: [Double], generator: Generator? = nil) -> [Subset<D>] {
        switch randomSplitLengths(datasetCount: dataset.count, fractions: fractions) {
        case .success(let lengths): return randomSplit(dataset, lengths, generator: generator)
        case .failure(let error): preconditionFailure(error.message)
        }
    }

    /// Same as `randomSplit(_:_:generator:)` with the lengths labelled.
    public static func randomSplit<D: Dataset>(_ dataset: D, lengths: [Int], generator: Generator? = nil) -> [Subset<D>] {
        randomSplit(dataset, lengths, generator: generator)
    }

    /// Same as `randomSplit(_:_:generator:)` (fractions) with the lengths labelled.
    public static func randomSplit<D: Dataset>(_ dataset: D, lengths: [Double], generator: Generator? = nil) -> [Subset<D>] {
        randomSplit(dataset, lengths, generator: generator)
    }

    /// An argument error message (the text of PyTorch's `ValueError`).
    struct ArgumentError: Error, Equatable { let message: String }

    /// PyTorch's check of integer split lengths; nil when they are valid.
    static func randomSplitError(datasetCount: Int, lengths: [Int]) -> String? {
        if let bad = lengths.firstIndex(where: { $0 < 0 }) {
            return "random_split: length at index \(bad) is negative (\(lengths[bad]))"
        }
        if lengths.reduce(0, +) != datasetCount {
            return "Sum of input lengths does not equal the length of the input dataset!"
        }
        return nil
    }

    /// PyTorch's conversion of fractions to lengths (`math.isclose(sum, 1) and sum <= 1`).
    static func randomSplitLengths(datasetCount: Int, fractions: [Double]) -> Result<[Int], ArgumentError> {
        let total = fractions.reduce(0, +)
        // math.isclose(total, 1) with rel_tol 1e-9
        guard Swift.abs(total - 1) <= 1e-9 * Swift.max(Swift.abs(total), 1), total <= 1 else {
            // Integral "fractions" are lengths (Python treats [3.0, 7.0] like [3, 7]).
            if fractions.allSatisfy({ $0 >= 0 && $0 == $0.rounded() && $0 < 9e18 }) {
                let lengths = fractions.map { Int($0) }
                if let e = randomSplitError(datasetCount: datasetCount, lengths: lengths) { return .failure(ArgumentError(message: e)) }
                return .success(lengths)
            }
            return .failure(ArgumentError(message: "Sum of input lengths does not equal the length of the input dataset!"))
        }
        var lengths: [Int] = []
        for (i, f) in fractions.enumerated() {
            guard f >= 0 && f <= 1 else { return .failure(ArgumentError(message: "Fraction at index \(i) is not between 0 and 1")) }
            lengths.append(Int(Glibc.floor(Double(datasetCount) * f)))
        }
        let remainder = datasetCount - lengths.reduce(0, +)
        for i in 0..<Swift.max(remainder, 0) { lengths[i % lengths.count] += 1 }
        return .success(lengths)
    }
}
