import Foundation

/// Background threads that turn index batches into batches for `DataLoader(numWorkers: n)`.
///
/// The iterating thread submits index batches in sampler order (PyTorch's `_try_put_index`) and
/// takes results back in that same order; workers take tasks first come first served. The number
/// of tasks in flight is bounded by the caller (it submits one task per batch it takes). When the
/// pool is released (the iteration ends or is abandoned), the workers finish their current task
/// and exit.
final class PrefetchPool<Batch> {
    private final class State {
        let condition = NSCondition()
        var tasks: [(sequence: Int, indices: [Int])] = []
        var taskHead = 0
        var results: [Int: Batch] = [:]
        var shutdown = false
        var liveWorkers = 0
    }

    private let state = State()
    private var submitted = 0
    private var taken = 0

    /// Starts `workers` threads running `fetch`.
    init(workers: Int, fetch: @escaping ([Int]) -> Batch) {
        let state = self.state
        state.liveWorkers = workers
        for k in 0..<workers {
            let thread = Thread {
                while true {
                    state.condition.lock()
                    while state.taskHead == state.tasks.count && !state.shutdown { state.condition.wait() }
                    if state.shutdown {
                        state.liveWorkers -= 1
                        state.condition.broadcast()
                        state.condition.unlock()
                        return
                    }
                    let task = state.tasks[state.taskHead]
                    state.taskHead += 1
                    if state.taskHead == state.tasks.count {
                        state.tasks.removeAll(keepingCapacity: true)
                        state.taskHead = 0
                    }
                    state.condition.unlock()
                    let batch = fetch(task.indices)
                    state.condition.lock()
                    state.results[task.sequence] = batch
                    state.condition.broadcast()
                    state.condition.unlock()
                }
            }
            thread.name = "DataLoader worker \(k)"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    deinit {
        state.condition.lock()
        state.shutdown = true
        state.tasks.removeAll()
        state.taskHead = 0
        state.condition.broadcast()
        state.condition.unlock()
    }

    /// Queues the next index batch.
    func submit(_ indices: [Int]) {
        state.condition.lock()
        state.tasks.append((submitted, indices))
        submitted += 1
        state.condition.signal()
        state.condition.unlock()
    }

    /// The next batch in submission order, waiting for it; nil when every submitted batch was taken.
    func takeNext() -> Batch? {
        if taken == submitted { return nil }
        state.condition.lock()
        defer { state.condition.unlock() }
        while state.results[taken] == nil { state.condition.wait() }
        let batch = state.results.removeValue(forKey: taken)!
        taken += 1
        return batch
    }
}
