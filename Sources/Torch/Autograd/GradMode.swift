#if canImport(Glibc)
import Glibc
#endif

/// Per-thread switch that turns graph recording on and off (`torch.noGrad`).
enum GradMode {
    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// True when operations record autograd nodes on this thread (the default).
    static var isEnabled: Bool {
        @inline(__always) get { pthread_getspecific(key) == nil }
        set { pthread_setspecific(key, newValue ? nil : UnsafeRawPointer(bitPattern: 1)) }
    }

    /// Runs `body` with recording set to `enabled`, restoring the previous state after.
    static func with<R>(_ enabled: Bool, _ body: () throws -> R) rethrows -> R {
        let old = isEnabled
        isEnabled = enabled
        defer { isEnabled = old }
        return try body()
    }
}
