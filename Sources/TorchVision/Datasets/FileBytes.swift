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

    /// The bytes of the file at `path`, as a 1-D uint8 tensor (no intermediate copy).
    static func read(_ path: String, limit: Int) throws -> Tensor {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ioError(path, "open") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ioError(path, "fstat") }
        let size = Int(st.st_size)
        guard size <= limit else {
            throw datasets.DatasetError.invalidFile(path: path, reason: "file is \(size) bytes, more than the limit of \(limit)")
        }
        let bytes = torch.empty([size], dtype: .uint8)
        let base = bytes.storage.data + bytes.storageOffset
        var done = 0
        while done < size {
            let n = Glibc.read(fd, base + done, size - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError(path, "read")
            }
            if n == 0 { break }
            done += n
        }
        return done < size ? bytes.narrow(0, 0, done) : bytes   // the file shrank while being read
    }

    private static func ioError(_ path: String, _ op: String) -> datasets.DatasetError {
        let code = errno
        let message = strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return .io(path: path, operation: op, message: message)
    }
}

extension Tensor {
    /// The bytes of a contiguous tensor.
    func withRawBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(isContiguous, "withRawBytes: the tensor must be contiguous")
        return try body(UnsafeRawBufferPointer(start: storage.data + storageOffset * elementSize, count: numel * elementSize))
    }
}
