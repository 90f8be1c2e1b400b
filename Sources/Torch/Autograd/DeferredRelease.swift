/// Releases long chains of graph objects iteratively. Without it, freeing the last tensor of a
/// 100,000-op chain would recurse through 100,000 nested deinits and overflow the stack.
/// Deinits hand their strong references here; the outermost caller drains them in a loop.
final class DeferredRelease {
    private var pending: [Any] = []
    private var draining = false

    private static let slot = ThreadLocalSlot("DeferredRelease") { p in
        if let p { Unmanaged<DeferredRelease>.fromOpaque(p).release() }
    }

    private static var current: DeferredRelease {
        if let p = slot.pointer { return Unmanaged<DeferredRelease>.fromOpaque(p).takeUnretainedValue() }
        let d = DeferredRelease()
        slot.pointer = Unmanaged.passRetained(d).toOpaque()
        return d
    }

    /// Takes ownership of `object` and releases it after the current deinit returns.
    /// Callers must hand over their only reference (`Optional.take()` / `consume`), so the object
    /// is freed here, inside the drain loop, and not when the caller's deinit returns.
    static func release(_ object: consuming Any) {
        let d = current
        d.pending.append(consume object)
        if d.draining { return }
        d.draining = true
        while let next = d.pending.popLast() {
            _ = consume next   // its deinit may append more; freed here, not nested
        }
        d.draining = false
    }
}
