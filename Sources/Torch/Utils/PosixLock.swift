// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `NSLock` and `NSCondition` come from
// swift-corelibs-foundation, and using them links Foundation's ICU data (about 44 MB) into a static binary.

/// A mutual-exclusion lock on a `pthread_mutex_t`, standing in for Foundation's `NSLock` (same `lock()`,
/// `unlock()` and `withLock(_:)`), so that the package needs no Foundation proper.
final class PosixLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }

    func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A condition variable with its own mutex, standing in for Foundation's `NSCondition`: `lock()`, `unlock()`,
/// `wait()` (with the lock held), `signal()` and `broadcast()`.
final class PosixCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }

    func unlock() { pthread_mutex_unlock(mutex) }

    /// Releases the lock until signalled, then takes it again (spurious wake-ups happen: wait in a loop).
    func wait() { pthread_cond_wait(condition, mutex) }

    func signal() { pthread_cond_signal(condition) }

    func broadcast() { pthread_cond_broadcast(condition) }
}
