#if canImport(Glibc)
import Glibc
#endif
import Torch

/// Whole-file reading with typed errors, bounded by `limit` bytes.
enum FileBytes {
    /// True when `path` names an existing regular file.
    static func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// The bytes of the file at `path`.
    static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ioError(path, "open") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ioError(path, "fstat") }
        let size = Int(st.st_size)
        guard size <= limit else {
            throw datasets.DatasetError.invalidFile(path: path, reason: "file is \(size) bytes, more than the limit of \(limit)")
        }
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        try bytes.withUnsafeMutableBytes { buf in
            while done < size {
                let n = Glibc.read(fd, buf.baseAddress! + done, size - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ioError(path, "read")
                }
                if n == 0 { break }
                done += n
            }
        }
        if done < size { bytes.removeLast(size - done) }   // the file shrank while being read
        return bytes
    }

    private static func ioError(_ path: String, _ op: String) -> datasets.DatasetError {
        let code = errno
        let message = strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return .io(path: path, operation: op, message: message)
    }
}
