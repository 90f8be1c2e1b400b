/// The CUDA graph captures underway, as the rest of the backend sees them: which devices capture, and what
/// could not be captured.
///
/// Tensor ops cannot throw, so an operation a graph cannot hold does not stop the program where it happens (as
/// PyTorch's `RuntimeError` does): it is recorded here (`refuse`), the op goes on without effect (a refused
/// device-to-host copy yields zeros), and `CUDAGraph.captureEnd()` throws `CUDAGraphError.operationsRefused`
/// naming every refused operation, discarding the capture. Refused are: device-to-host copies and stream waits
/// (`item()`, `toArray()`, `cpu()`, printing, `torch.cuda.synchronize()`), host-to-device copies, random
/// numbers (their Philox offset would be frozen), and optimizers whose step count lives on the host.
enum CUDAGraphCapture {
    /// Captures underway, all devices: the only test hot paths make (one load, predicted false).
    nonisolated(unsafe) private(set) static var underway = 0
    nonisolated(unsafe) private static var refusals: [Int: [String]] = [:]
    private static let lock = PosixLock()

    /// Whether any device is capturing a graph now.
    @inline(__always) static var isUnderway: Bool { _slowPath(underway != 0) }

    /// Starts collecting refusals for a capture on `device`.
    static func begin(device: Int) {
        lock.lock(); defer { lock.unlock() }
        refusals[device] = []
        underway += 1
    }

    /// Ends the capture on `device` and returns what it refused (empty: the graph holds everything issued).
    static func end(device: Int) -> [String] {
        lock.lock(); defer { lock.unlock() }
        guard let refused = refusals.removeValue(forKey: device) else { return [] }
        underway -= 1
        return refused
    }

    /// Records that `operation` cannot be part of a graph, in every capture underway. Returns false when no
    /// capture is underway (the caller then stops as it would otherwise).
    @discardableResult
    static func refuse(_ operation: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard !refusals.isEmpty else { return false }
        let text = explained(operation)
        for device in refusals.keys where refusals[device]!.last != text { refusals[device]!.append(text) }
        return true
    }

    /// The driver call a tensor op issued, with the user-level ops that issue it.
    private static func explained(_ operation: String) -> String {
        if operation.hasPrefix("cuMemcpyDtoH") {
            return "\(operation) (a device-to-host copy: item(), toArray(), cpu(), printing)"
        }
        if operation.hasPrefix("cuStreamSynchronize") || operation.hasPrefix("torch.cuda.synchronize") {
            return "\(operation) (the host waits for the stream)"
        }
        if operation.hasPrefix("cuMemcpyHtoD") {
            return "\(operation) (a host-to-device copy: copy host data into a static device tensor before replay())"
        }
        return operation
    }
}
