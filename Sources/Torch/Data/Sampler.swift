extension utils.data {
    /// A sequence of dataset indices (or of index batches) with a known length (PyTorch's
    /// `Sampler`). Each iteration starts afresh; random samplers draw new numbers each time.
    ///
    /// Arrays are samplers of their elements, so `DataLoader(ds, sampler: [3, 1, 2])` and
    /// `DataLoader(ds, batchSampler: [[0, 1], [2, 3]])` work like Python lists.
    public protocol Sampler<Element>: Sequence {
        /// The element: `Int` for index samplers, `[Int]` for batch samplers.
        associatedtype Element
        /// Number of elements one iteration yields (PyTorch's `__len__`).
        var count: Int { get }
    }
}

extension Array: utils.data.Sampler {}

/// Iterates the segments a PyTorch sampler's generator function yields: `segment(k)` is drawn
/// only when the consumer asks for an element after segment `k - 1` ran out, exactly when
/// Python would run that part of the generator body (this keeps the random draws in PyTorch's order).
struct SegmentedIterator: IteratorProtocol {
    private let segments: Int
    private let draw: (Int) -> [Int]
    private let start: () -> Void
    private var started = false
    private var segment = 0
    private var buffer: [Int] = []
    private var position = 0

    /// `start` runs at the first `next()` (the generator body's preamble), then `draw(k)` for each
    /// of the `segments` segments in order.
    init(segments: Int, start: @escaping () -> Void = {}, draw: @escaping (Int) -> [Int]) {
        self.segments = segments
        self.start = start
        self.draw = draw
    }

    mutating func next() -> Int? {
        if !started { started = true; start() }
        while position == buffer.count {
            if segment == segments { return nil }
            buffer = draw(segment)
            segment += 1
            position = 0
        }
        defer { position += 1 }
        return buffer[position]
    }
}
