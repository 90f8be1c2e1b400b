// Atomic file replacement: write a temporary file in the destination's folder, fsync it, rename it
// over the destination, fsync the folder. A crash or an error leaves either the old file or the new
// one, never a truncated mix, and no temporary file behind (on error). A process killed mid-write
// does leave its temporary file; the next atomic write into the same folder removes such leftovers
// (of any destination) once their writing process is gone.

/// Crash-safe file writing: the new contents appear under the destination path all at once, or not
/// at all.
public enum AtomicFile {
    /// Writes the file at `path` atomically.
    ///
    /// `body` receives a file descriptor open for writing on a new temporary file in the same
    /// folder (named `.<name>.tmp-<pid>-<random>`). When `body` returns, the file is flushed to disk
    /// (`fsync`), renamed over `path`, and the folder is synced. If `body` throws, or any step fails,
    /// the temporary file is removed, `path` is left untouched, and the error is rethrown.
    ///
    /// The new file gets the permission bits of the file it replaces, or `0666` minus the umask for
    /// a new file. `body` must not close the descriptor.
    ///
    /// A process killed while writing leaves its temporary file behind; before writing, the
    /// temporary files in the same folder whose process is no longer alive are removed, whatever
    /// their destination (see ``removeStaleTemporaries(inFolder:)``).
    ///
    /// - Throws: what `body` throws, or ``SerializationError/io(path:operation:code:message:)``.
    public static func write(to path: String, _ body: (_ fileDescriptor: Int32) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        let base = url.lastPathComponent
        guard !base.isEmpty, base != "/" else {
            throw SerializationError.io(path: path, operation: "open", code: EISDIR, message: "not a file path")
        }
        removeStaleTemporaries(inFolder: dir.isEmpty ? "." : dir)
        var tempPath = ""
        var fd: Int32 = -1
        for _ in 0..<16 {
            let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            tempPath = PathString.join(dir, ".\(base).tmp-\(getpid())-\(suffix)")
            fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd >= 0 || errno != EEXIST { break }
        }
        if fd < 0 { throw serIOError(path: tempPath, operation: "open (temporary file)") }

        var fdOpen = true
        var committed = false
        defer {
            if fdOpen { _ = close(fd) }
            if !committed { _ = unlink(tempPath) }
        }

        // Keep the permissions of the file being replaced.
        var st = stat()
        if stat(path, &st) == 0 {
            _ = fchmod(fd, st.st_mode & 0o7777)
        }

        try body(fd)

        if fsync(fd) != 0 { throw serIOError(path: tempPath, operation: "fsync") }
        fdOpen = false
        if close(fd) != 0 { throw serIOError(path: tempPath, operation: "close") }
        if rename(tempPath, path) != 0 { throw serIOError(path: path, operation: "rename") }
        committed = true

        // Make the rename itself durable (best effort: some file systems refuse fsync on folders).
        let dfd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            _ = close(dfd)
        }
    }

    /// Removes the temporary files `.<name>.tmp-<pid>-<random>` that writes of `path` by processes
    /// no longer running left behind (a killed `torch.save`), and returns their paths. Files of
    /// live processes — including this one — are kept: they may be writes in progress.
    @discardableResult
    public static func removeStaleTemporaries(of path: String) -> [String] {
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        return removeStaleTemporaries(inFolder: dir.isEmpty ? "." : dir, destination: url.lastPathComponent)
    }

    /// Removes the temporary files that atomic writes into `folder` by processes no longer running
    /// left behind, whatever their destination, and returns their paths. Only regular files named
    /// exactly as ``write(to:_:)`` names them (`.<name>.tmp-<pid>-<random>`, the random part in
    /// lowercase base 36) are candidates; those whose process is alive, or may be (`kill(pid, 0)`
    /// fails with anything but `ESRCH`), are kept.
    @discardableResult
    public static func removeStaleTemporaries(inFolder folder: String) -> [String] {
        removeStaleTemporaries(inFolder: folder, destination: nil)
    }

    private static func removeStaleTemporaries(inFolder dir: String, destination: String?) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        var removed: [String] = []
        for name in names {
            guard let (target, pid) = temporaryFileOwner(name), pid != getpid() else { continue }
            if let destination = destination, target != destination { continue }
            // kill(pid, 0) fails with ESRCH only when no such process exists.
            guard kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let full = PathString.join(dir, name)
            var st = stat()
            guard lstat(full, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            if unlink(full) == 0 { removed.append(full) }
        }
        return removed
    }

    /// The destination name and writing process of a temporary file name `.<name>.tmp-<pid>-<random>`,
    /// or nil for any other name.
    static func temporaryFileOwner(_ fileName: String) -> (destination: String, pid: pid_t)? {
        let u = Array(fileName.utf8)
        guard u.first == UInt8(ascii: "."), let dash = u.lastIndex(of: UInt8(ascii: "-")) else { return nil }
        let random = u[(dash + 1)...]
        guard (1...13).contains(random.count),
              random.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
        let marker = Array(".tmp-".utf8)
        var digitsStart = dash
        while digitsStart > 0 && (0x30...0x39).contains(u[digitsStart - 1]) { digitsStart -= 1 }
        guard digitsStart < dash, dash - digitsStart <= 10, digitsStart - marker.count > 1,
              Array(u[(digitsStart - marker.count)..<digitsStart]) == marker,
              let pid = pid_t(String(decoding: u[digitsStart..<dash], as: UTF8.self)), pid > 0 else { return nil }
        return (String(decoding: u[1..<(digitsStart - marker.count)], as: UTF8.self), pid)
    }

    /// Writes `bytes` to `path` atomically (see ``write(to:_:)``).
    public static func write(_ bytes: [UInt8], to path: String) throws {
        try write(to: path) { fd in
            try bytes.withUnsafeBytes { raw in
                if let b = raw.baseAddress { try serializationWriteAll(fd: fd, b, raw.count, path: path) }
            }
        }
    }
}

extension ZipWriter {
    /// Writes a zip archive to `path` atomically: `body` adds the entries to a writer on a
    /// temporary file in the same folder; the archive is then finished (if `body` did not call
    /// ``finish()``), synced to disk and renamed over `path`. On any error the temporary file is
    /// removed and `path` is left as it was.
    ///
    /// ```swift
    /// try ZipWriter.atomicWrite(to: "ckpt.pt") { zip in
    ///     try zip.addEntry(name: "ckpt/data.pkl", bytes: pickle)
    /// }
    /// ```
    public static func atomicWrite(to path: String, options: Options = Options(),
                                   _ body: (inout ZipWriter) throws -> Void) throws {
        try AtomicFile.write(to: path) { fd in
            var writer = ZipWriter(fileDescriptor: fd, path: path, options: options)
            try body(&writer)
            if !writer.isFinished { try writer.finish() }
        }
    }
}
