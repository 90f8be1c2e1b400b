/// One thread per process group that runs its asynchronous operations in submission order (MPI
/// requires every rank to issue collectives on a communicator in the same order, so one FIFO
/// thread per communicator keeps that order while the caller goes on computing).
final class CommThread: @unchecked Sendable {
    private let condition = PosixCondition()
    private var queue: [(work: dist.Work, body: () throws -> Void)] = []
    private var head = 0
    /// Operations submitted and not yet finished.
    private(set) var pending = 0
    private var stopping = false
    private var thread: PosixThread?

    init(name: String) {
        let t = PosixThread(name: name) { [unowned self] in self.loop() }
        thread = t
        t.start()
    }

    /// Queues `body`; the returned work finishes when it has run (with its error, if any).
    func submit(_ work: dist.Work, _ body: @escaping () throws -> Void) {
        condition.lock()
        queue.append((work, body))
        pending += 1
        condition.signal()
        condition.unlock()
    }

    /// Whether operations are queued or running (a synchronous call must then queue behind them).
    var isBusy: Bool {
        condition.lock()
        defer { condition.unlock() }
        return pending > 0
    }

    /// Finishes the queued operations, then ends the thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        while thread != nil { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while head == queue.count && !stopping { condition.wait() }
            if head == queue.count {
                thread = nil
                condition.broadcast()
                condition.unlock()
                return
            }
            let item = queue[head]
            head += 1
            if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
            condition.unlock()

            var failure: Error?
            do { try item.body() } catch { failure = error }
            condition.lock()
            pending -= 1
            condition.unlock()
            item.work.finish(failure)
        }
    }
}
