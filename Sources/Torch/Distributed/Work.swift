import CMPIShim

extension dist {
    /// The handle of an asynchronous collective or point-to-point operation (PyTorch's `Work`),
    /// returned when `async: true` is passed, and by `isend`/`irecv`.
    ///
    /// ```swift
    /// let work = try dist.allReduce(t, async: true)
    /// // ... compute ...
    /// try work!.wait()            // t now holds the sum
    /// ```
    public final class Work: @unchecked Sendable {
        private let condition = PosixCondition()
        private var done = false
        private var error: Error?
        /// For operations backed by an MPI request (isend/irecv): the request and what to do once it completes.
        private var request: stmpi_request = 0
        private var onRequestComplete: ((Int) throws -> Void)?
        private let opName: String
        private let timeout: Double
        /// Runs once on the thread that observes completion (`wait`/`isCompleted`): copying a
        /// staged result back into a non-contiguous or half-precision tensor.
        var finisher: (() -> Void)?
        /// The sender's rank after a completed `irecv`.
        public private(set) var sourceRank: Int?

        init(op: String, timeout: Double) {
            self.opName = op
            self.timeout = timeout
        }

        /// A work already finished (operations run inline).
        static func completed(op: String) -> Work {
            let w = Work(op: op, timeout: 0)
            w.done = true
            return w
        }

        /// A work backed by an MPI request; `completion(sourceRank)` runs once it has completed.
        static func request(_ req: stmpi_request, op: String, timeout: Double,
                            completion: @escaping (Int) throws -> Void) -> Work {
            let w = Work(op: op, timeout: timeout)
            w.request = req
            w.onRequestComplete = completion
            return w
        }

        /// Marks a thread-backed work finished (called by the communication thread).
        func finish(_ error: Error?) {
            condition.lock()
            self.error = error
            done = true
            condition.broadcast()
            condition.unlock()
        }

        /// Whether the operation has finished (PyTorch's `is_completed()`); never blocks.
        public func isCompleted() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            if done { runFinisherLocked(); return true }
            guard onRequestComplete != nil else { return false }
            var flag: Int32 = 0, source: Int32 = -1
            let rc = stmpi_test(&request, &flag, &source)
            if rc != 0 {
                completeRequestLocked(source: nil, error: DistributedError.mpiFailed(op: opName, code: rc, message: MPIRuntime.errorString(rc)))
                return true
            }
            if flag != 0 { completeRequestLocked(source: Int(source), error: nil) }
            if done { runFinisherLocked() }
            return done
        }

        /// Blocks until the operation has finished; rethrows its failure.
        public func wait() throws {
            condition.lock()
            defer { condition.unlock() }
            if !done, onRequestComplete != nil {
                var source: Int32 = -1
                let rc = Watchdog.shared.guarding("\(opName) (Work.wait)", timeout: timeout) { stmpi_wait(&request, &source) }
                completeRequestLocked(source: Int(source),
                                      error: rc == 0 ? nil : DistributedError.mpiFailed(op: opName, code: rc, message: MPIRuntime.errorString(rc)))
            }
            while !done { condition.wait() }
            if let error { throw error }
            runFinisherLocked()
        }

        private func runFinisherLocked() {
            guard error == nil, let f = finisher else { return }
            finisher = nil
            f()
        }

        private func completeRequestLocked(source: Int?, error: Error?) {
            let completion = onRequestComplete
            onRequestComplete = nil
            sourceRank = source
            self.error = error
            if error == nil, let completion {
                do { try completion(source ?? -1) } catch { self.error = error }
            }
            done = true
            condition.broadcast()
        }
    }
}
