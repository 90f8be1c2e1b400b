// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `String(format:)` comes from
// swift-corelibs-foundation, and one call to it links Foundation's ICU data (about 44 MB) into a static binary.

extension String {
    /// `printf`-style formatting by the C library's `vsnprintf`: `String(cFormat: "%.4f", x)`.
    ///
    /// Use it instead of Foundation's `String(format:)`, which drags Foundation proper and its ICU data into the
    /// static `swifttorch` binary. For the conversions the package uses (`%d`, `%5.2f`, `%.3e`, `%g`, `%s` with a
    /// C string, `%%`) it gives the same characters, because Foundation formats numbers with the same C routines;
    /// there is no `%@` (interpolate the string instead). `%d` takes an `Int32`-sized value: pass `Int`s that fit,
    /// or use `%ld`.
    public init(cFormat format: String, _ arguments: CVarArg...) {
        var capacity = 128
        while true {
            let (text, needed): (String?, Int) = withVaList(arguments) { list in
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
                    let n = Int(vsnprintf(buffer.baseAddress!, capacity, format, list))
                    guard n >= 0 else { return ("", 0) }
                    return n < capacity ? (String(cString: buffer.baseAddress!), n) : (nil, n)
                }
            }
            if let text { self = text; return }
            capacity = needed + 1
        }
    }
}
