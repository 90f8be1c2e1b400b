// Atomic file replacement: write a temporary file in the destination's folder, fsync it, rename it
// over the destination, fsync the folder. A crash or an error leaves either the old file or the new
// one, never a truncated mix, and no temporary file behind (on error). A process killed mid-write
// does leave its temporary file; the next write of the same destination removes such leftovers.

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// temporary files of the same destination whose process is no longer alive are removed
    /// (see ``removeStaleTemporaries(of:)``).
    ///
    /// - Throws: what `body` throws, or ``SerializationError/io(path:operation:code:message:)``.
    public static func write(to path: String, _ body: (_ fileDescriptor: Int32) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        let base = url.lastPathComponent
        guard !base.isEmpty, base != "/" else {
            throw SerializationError.io(path: path, operation: "open", code: EISDIR, message: "not a file path")
        }
        removeStaleTemporaries(of: path)
        var tempPath = ""
        var fd: Int32 = -1
        for _ in 0..<16 {
            let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            tempPath = (dir as NSString).appendingPathComponent(".\(base).tmp-\(getpid())-\(suffix)")
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
        let prefix = ".\(url.lastPathComponent).tmp-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.isEmpty ? "." : dir) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]), pid > 0, pid != getpid() else { continue }
            // kill(pid, 0) fails with ESRCH only when no such process exists.
            guard kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let full = (dir as NSString).appendingPathComponent(name)
            if unlink(full) == 0 { removed.append(full) }
        }
        return removed
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
