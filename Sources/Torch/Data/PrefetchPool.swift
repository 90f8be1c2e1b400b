/// Background threads that turn index batches into batches for `DataLoader(numWorkers: n)`.
///
/// The iterating thread submits index batches in sampler order and takes results back in that
/// same order. As in PyTorch (`_try_put_index` cycling over the worker queues), batch `s` goes to
/// worker `s % n`, and worker `k` runs with its own `torch.defaultGenerator` seeded
/// `baseSeed + k` (PyTorch seeds each worker process so), so random transforms in the dataset draw
/// the same numbers as in PyTorch's workers and never race. The number of tasks in flight is
/// bounded by the caller (it submits one task per batch it takes). When the pool is released (the
/// iteration ends or is abandoned), the workers finish their current task and exit.
final class PrefetchPool<Batch> {
    private final class State {
        let condition = PosixCondition()
        /// Per-worker queues of (sequence number, indices).
        var tasks: [[(sequence: Int, indices: [Int])]]
        var results: [Int: Batch] = [:]
        var shutdown = false
        var liveWorkers = 0

        init(workers: Int) { tasks = Array(repeating: [], count: workers) }
    }

    private let state: State
    private let workers: Int
    private var submitted = 0
    private var taken = 0

    /// Starts `workers` threads running `fetch`, worker `k` with a default generator seeded `baseSeed + k`.
    init(workers: Int, baseSeed: UInt64, fetch: @escaping ([Int]) -> Batch) {
        let state = State(workers: workers)
        self.state = state
        self.workers = workers
        state.liveWorkers = workers
        for k in 0..<workers {
            let generator = Generator().manualSeed(baseSeed &+ UInt64(k))
            let thread = PosixThread(name: "DataLoader worker \(k)", stackSize: 8 << 20) {
                torch.withThreadDefaultGenerator(generator) {
                    while true {
                        state.condition.lock()
                        while state.tasks[k].isEmpty && !state.shutdown { state.condition.wait() }
                        if state.shutdown {
                            state.liveWorkers -= 1
                            state.condition.broadcast()
                            state.condition.unlock()
                            return
                        }
                        let task = state.tasks[k].removeFirst()
                        state.condition.unlock()
                        let batch = fetch(task.indices)
                        state.condition.lock()
                        state.results[task.sequence] = batch
                        state.condition.broadcast()
                        state.condition.unlock()
                    }
                }
            }
            thread.start()
        }
    }

    deinit {
        state.condition.lock()
        state.shutdown = true
        for k in state.tasks.indices { state.tasks[k].removeAll() }
        state.condition.broadcast()
        state.condition.unlock()
    }

    /// Queues the next index batch on the next worker in turn.
    func submit(_ indices: [Int]) {
        state.condition.lock()
        state.tasks[submitted % workers].append((submitted, indices))
        submitted += 1
        state.condition.broadcast()
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
