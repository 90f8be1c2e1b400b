/// One pointer-sized value per thread, nil on every thread until that thread sets it: the per-thread state the ops
/// read on their fast path (grad mode, the autocast region, the current CUDA device, the thread's generator).
///
/// A POSIX thread-specific key rather than Swift's `@TaskLocal`: a read is one `pthread_getspecific` call with no
/// allocation, which the smallest ops can afford, and a value follows the OS thread as PyTorch's thread-local
/// state does (the pool's worker threads start with nil).
///
/// ```swift
/// private static let slot = ThreadLocalSlot("GradMode")
/// static var isEnabled: Bool { slot.word == 0 }
/// ```
struct ThreadLocalSlot: @unchecked Sendable {
    private let key: pthread_key_t

    /// A new key; `destructor`, when given, runs on a thread's non-nil value as the thread exits.
    init(_ owner: String, destructor: (@convention(c) (UnsafeMutableRawPointer?) -> Void)? = nil) {
        var k = pthread_key_t()
        precondition(pthread_key_create(&k, destructor) == 0, "\(owner): pthread_key_create failed (too many keys)")
        key = k
    }

    /// The calling thread's value.
    var pointer: UnsafeMutableRawPointer? {
        @inline(__always) get { pthread_getspecific(key) }
        nonmutating set { pthread_setspecific(key, newValue) }
    }

    /// The calling thread's value as an integer (0 until set).
    var word: Int {
        @inline(__always) get { Int(bitPattern: pointer) }
        nonmutating set { pointer = UnsafeMutableRawPointer(bitPattern: newValue) }
    }
}
