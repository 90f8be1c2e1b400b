import CMPIShim
/// Guards every blocking MPI call with the process group's timeout: MPI itself waits forever for a
/// rank that is alive but never joins a collective (stuck, or throwing past it), so a background
/// thread checks the calls in flight and, past their deadline, prints which call timed out and
/// ends the job with MPI_Abort. (A rank that exits is handled by mpirun/srun, which kill the others.)
final class Watchdog: @unchecked Sendable {
    static let shared = Watchdog()

    private let lock = PosixLock()
    private var inFlight: [Int: (op: String, deadline: Double, timeout: Double)] = [:]
    private var nextToken = 0
    private var thread: PosixThread?

    /// Registers a call; pass the token to `end`.
    func begin(_ op: @autoclosure () -> String, timeout: Double) -> Int {
        lock.lock()
        defer { lock.unlock() }
        nextToken += 1
        inFlight[nextToken] = (op(), Watchdog.now() + timeout, timeout)
        if thread == nil { startLocked() }
        return nextToken
    }

    func end(_ token: Int) {
        lock.lock()
        inFlight[token] = nil
        lock.unlock()
    }

    /// Runs `body` (a blocking MPI call) under the deadline.
    @inline(__always)
    func guarding<R>(_ op: @autoclosure () -> String, timeout: Double, _ body: () throws -> R) rethrows -> R {
        let token = begin(op(), timeout: timeout)
        defer { end(token) }
        return try body()
    }

    private func startLocked() {
        let t = PosixThread(name: "swifttorch-dist-watchdog", stackSize: 1 << 18) { [unowned self] in self.loop() }
        thread = t
        t.start()
    }

    private func loop() {
        while true {
            lock.lock()
            let now = Watchdog.now()
            let expired = inFlight.values.first { $0.deadline < now }
            let shortest = inFlight.values.map(\.timeout).min() ?? 1
            lock.unlock()
            if let expired {
                let rank = dist.isInitialized() ? "[rank \(dist.getRank())] " : ""
                MPIRuntime.abortJob("\(rank)dist.\(expired.op) did not complete within \(formatSeconds(expired.timeout)) "
                    + "(the process group's timeout): another rank has died, thrown or is not calling the same "
                    + "collective. Aborting the job with MPI_Abort.")
            }
            // Check often enough to fire within ~10 % of the shortest timeout, at most every 0.5 s.
            PosixThread.sleep(seconds: max(0.005, min(0.5, shortest / 10)))
        }
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? "\(Int(s)) s" : String(cFormat: "%.3g s", s)
}
