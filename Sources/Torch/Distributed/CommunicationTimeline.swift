extension nn.parallel.DistributedDataParallel {
    /// Where the gradient averaging of synchronised backward passes spent its time, averaged over the
    /// iterations recorded since the last `resetCommunicationTimeline()` (recorded only when
    /// SWIFTTORCH_DDP_TRACE=1 was set at construction; a SwiftTorch addition, like the averages of PyTorch's
    /// DDP logging data). Times are seconds since the iteration's first gradient arrived (backward's start,
    /// give or take the loss's and the last layer's backward).
    ///
    /// A bucket whose `finished` is before `backwardDone` was all-reduced while backward computed; what is
    /// left after `backwardDone` (`exposed`) is the communication backward's caller waits for.
    public struct CommunicationTimeline: Sendable, CustomStringConvertible {
        /// One bucket's mean times.
        public struct Bucket: Sendable {
            public let index: Int
            public let bytes: Int
            /// Its last gradient arrived (the all-reduce was queued).
            public let ready: Double
            /// The communication thread (or, for the last bucket, backward's thread) began the all-reduce.
            public let started: Double
            /// The all-reduce returned.
            public let finished: Double
        }
        /// Which algorithm reduced the buckets (`shm` or `mpi`).
        public let algorithm: AllReduceAlgorithm
        public let iterations: Int
        public let buckets: [Bucket]
        /// The last gradient arrived (backward's computation is over).
        public let backwardDone: Double
        /// Every average is in `.grad` (the hook that ends backward returned).
        public let reduced: Double
        /// Communication not hidden behind backward: `reduced - backwardDone`.
        public var exposed: Double { reduced - backwardDone }

        public var description: String {
            func ms(_ s: Double) -> String { String(cFormat: "%8.2f", s * 1000) }
            var lines = ["DDP communication timeline (\(algorithm.rawValue), mean of \(iterations) iterations; ms since the first gradient)",
                         "bucket      bytes    ready  started finished     took"]
            for b in buckets {
                lines.append(String(cFormat: "%6d %10d ", b.index, b.bytes) + ms(b.ready) + " " + ms(b.started) + " "
                             + ms(b.finished) + " " + ms(b.finished - b.started))
            }
            lines.append("backward done at \(ms(backwardDone)) ms, averages in .grad at \(ms(reduced)) ms: exposed communication \(ms(exposed)) ms")
            return lines.joined(separator: "\n")
        }
    }

    /// The timeline recorded so far (nil unless SWIFTTORCH_DDP_TRACE=1 was set at construction, or before
    /// the first synchronised backward).
    public var communicationTimeline: CommunicationTimeline? { reducer.trace?.timeline(algorithm: reducer.algorithm) }

    /// Starts recording the timeline afresh (e.g. after warm-up iterations).
    public func resetCommunicationTimeline() { reducer.trace?.reset() }
}

/// The sums behind `CommunicationTimeline`, written by `GradientReducer` on backward's thread (bucket start
/// and end times come from the communication thread through the bucket, read after its work was waited for).
final class ReducerTrace {
    private var iterations = 0
    private var ready: [Double], started: [Double], finished: [Double]
    private var backwardDone = 0.0, reduced = 0.0
    private let bytes: [Int]
    /// The current iteration's origin (0 while no gradient has arrived).
    private(set) var origin = 0.0

    init(bucketBytes: [Int]) {
        bytes = bucketBytes
        ready = [Double](repeating: 0, count: bucketBytes.count)
        started = ready
        finished = ready
    }

    static var enabled: Bool { getenv("SWIFTTORCH_DDP_TRACE").map { String(cString: $0) == "1" } ?? false }

    func gradientArrived() { if origin == 0 { origin = Watchdog.now() } }

    func launched(_ bucket: Int) { ready[bucket] += Watchdog.now() - origin }

    func backwardFinished() { backwardDone += Watchdog.now() - origin }

    /// `start`/`end`: absolute times the all-reduce of `bucket` began and returned.
    func reducedBucket(_ bucket: Int, start: Double, end: Double) {
        started[bucket] += start - origin
        finished[bucket] += end - origin
    }

    func iterationFinished() {
        reduced += Watchdog.now() - origin
        iterations += 1
        origin = 0
    }

    func reset() {
        iterations = 0
        for i in ready.indices { ready[i] = 0; started[i] = 0; finished[i] = 0 }
        backwardDone = 0
        reduced = 0
    }

    func timeline(algorithm: AllReduceAlgorithm) -> nn.parallel.DistributedDataParallel.CommunicationTimeline? {
        guard iterations > 0 else { return nil }
        let n = Double(iterations)
        return .init(algorithm: algorithm, iterations: iterations,
                     buckets: bytes.indices.map { .init(index: $0, bytes: bytes[$0], ready: ready[$0] / n,
                                                        started: started[$0] / n, finished: finished[$0] / n) },
                     backwardDone: backwardDone / n, reduced: reduced / n)
    }
}
