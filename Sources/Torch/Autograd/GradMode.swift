/// Per-thread switch that turns graph recording on and off (`torch.noGrad`).
enum GradMode {
    /// 0 while recording (every thread starts so), 1 inside `torch.noGrad`.
    private static let slot = ThreadLocalSlot("GradMode")

    /// True when operations record autograd nodes on this thread (the default).
    static var isEnabled: Bool {
        @inline(__always) get { slot.word == 0 }
        set { slot.word = newValue ? 0 : 1 }
    }

    /// Runs `body` with recording set to `enabled`, restoring the previous state after.
    static func with<R>(_ enabled: Bool, _ body: () throws -> R) rethrows -> R {
        let old = isEnabled
        isEnabled = enabled
        defer { isEnabled = old }
        return try body()
    }
}
