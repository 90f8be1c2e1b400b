// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `NSString`'s path methods come from
// swift-corelibs-foundation, and bridging a `String` to `NSString` links Foundation's ICU data (about 44 MB) into
// a static binary.

/// Path arithmetic on plain strings, standing in for `NSString`'s `appendingPathComponent`, `lastPathComponent`,
/// `deletingLastPathComponent`, `expandingTildeInPath` and `resolvingSymlinksInPath`, with their results on the
/// paths the package builds. Unlike `URL(fileURLWithPath:)` they keep a relative path relative.
/// Public because TorchVision and the `swifttorch` CLI use it too; it is not part of the PyTorch-shaped API.
public enum PathString {
    /// `base` joined with `component` by one `/` (`NSString.appendingPathComponent`).
    public static func join(_ base: String, _ component: String) -> String {
        if base.isEmpty { return component }
        if component.isEmpty { return stripTrailingSlashes(base) }
        var head = stripTrailingSlashes(base)
        if head == "/" { head = "" }
        var tail = Substring(component)
        while tail.first == "/" { tail = tail.dropFirst() }
        return head + "/" + stripTrailingSlashes(String(tail))
    }

    /// The part after the last `/`, trailing slashes ignored (`NSString.lastPathComponent`).
    public static func lastComponent(_ path: String) -> String {
        let p = stripTrailingSlashes(path)
        if p == "/" { return "/" }
        guard let slash = p.lastIndex(of: "/") else { return p }
        return String(p[p.index(after: slash)...])
    }

    /// The path without its last component (`NSString.deletingLastPathComponent`): `"a/b"` → `"a"`,
    /// `"/a"` → `"/"`, `"a"` → `""`.
    public static func deletingLastComponent(_ path: String) -> String {
        let p = stripTrailingSlashes(path)
        if p == "/" { return "/" }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        return stripTrailingSlashes(String(p[..<slash]))
    }

    /// A leading `~` or `~/` replaced by the home folder (`NSString.expandingTildeInPath`; `~user` stays).
    public static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return join(homeDirectory(), String(path.dropFirst(2)))
    }

    /// The real path with symbolic links resolved (`realpath(3)`), or `path` itself when it does not exist.
    public static func resolvingSymlinks(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `$HOME`, else the password database's home folder, else `/` (`NSHomeDirectory()`).
    public static func homeDirectory() -> String {
        if let home = getenv("HOME"), home.pointee != 0 { return String(cString: home) }
        if let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    /// `$TMPDIR` (else `/tmp`) with one trailing `/` (`NSTemporaryDirectory()`).
    public static func temporaryDirectory() -> String {
        var dir = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        if dir.isEmpty { dir = "/tmp" }
        return dir.hasSuffix("/") ? dir : dir + "/"
    }

    /// Whether `path` names a folder, symbolic links followed (`FileManager.fileExists(atPath:isDirectory:)`,
    /// whose `ObjCBool` argument is Foundation proper).
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    private static func stripTrailingSlashes(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.last == "/" { p = p.dropLast() }
        return String(p)
    }
}
