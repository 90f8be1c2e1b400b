// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `trimmingCharacters(in:)`,
// `CharacterSet` and `addingPercentEncoding` come from swift-corelibs-foundation, and using them links
// Foundation's ICU data (about 44 MB) into a static binary. (`replacingOccurrences(of:with:)` and `range(of:)`
// have standard-library spellings: `replacing(_:with:)` and `firstRange(of:)`.)

extension StringProtocol {
    /// The string without leading and trailing white space: spaces and tabs (Unicode `White_Space` less the line
    /// breaks, as `trimmingCharacters(in: .whitespaces)`), and line breaks too when `newlines` is true
    /// (`.whitespacesAndNewlines`).
    public func trimmingWhitespace(newlines: Bool = false) -> String {
        func drop(_ c: Character) -> Bool {
            c.unicodeScalars.allSatisfy { s in
                s.properties.isWhitespace && (newlines || !isLineBreak(s))
            }
        }
        guard let first = firstIndex(where: { !drop($0) }) else { return "" }
        let last = lastIndex(where: { !drop($0) })!
        return String(self[first...last])
    }

    /// The string without leading and trailing characters from `set` (`trimmingCharacters(in:
    /// CharacterSet(charactersIn:))`).
    public func trimming(charactersIn set: Set<Character>) -> String {
        guard let first = firstIndex(where: { !set.contains($0) }) else { return "" }
        let last = lastIndex(where: { !set.contains($0) })!
        return String(self[first...last])
    }

    /// Every byte outside ASCII letters and digits as `%XX` (`addingPercentEncoding(withAllowedCharacters:
    /// .alphanumerics)` for ASCII text; non-ASCII letters are encoded here too).
    func percentEncodingNonAlphanumerics() -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in utf8 {
            if (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private func isLineBreak(_ s: Unicode.Scalar) -> Bool {
    switch s.value {
    case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
    default: return false
    }
}
