// No Foundation here (docs/architecture.md §2, "No Foundation proper"): Foundation's `Thread` comes from
// swift-corelibs-foundation, and using it links Foundation's ICU data (about 44 MB) into a static binary.

/// A detached POSIX thread, standing in for Foundation's `Thread`: made with its body, a name (shown by
/// debuggers and `top -H`; the system keeps the first 15 bytes) and a stack size (0: the system's default, as
/// `Thread`), and started by `start()`.
final class PosixThread: @unchecked Sendable {
    let name: String
    let stackSize: Int
    private let body: () -> Void

    init(name: String, stackSize: Int = 0, _ body: @escaping () -> Void) {
        self.name = name
        self.stackSize = stackSize
        self.body = body
    }

    /// Starts the thread; it keeps this object alive until its body returns.
    func start() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if stackSize > 0 { pthread_attr_setstacksize(&attributes, stackSize) }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { raw in
            let me = Unmanaged<PosixThread>.fromOpaque(raw!).takeRetainedValue()
            _ = PosixThread.setThreadName(pthread_self(), String(decoding: me.name.utf8.prefix(15), as: UTF8.self))
            me.body()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(String(cString: strerror(rc)))")
    }

    /// glibc's `pthread_setname_np`, which the Glibc module does not import (it is a GNU extension).
    @_silgen_name("pthread_setname_np")
    private static func setThreadName(_ thread: pthread_t, _ name: UnsafePointer<CChar>) -> Int32

    /// Sleeps the calling thread for `seconds` (Foundation's `Thread.sleep(forTimeInterval:)`).
    static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
