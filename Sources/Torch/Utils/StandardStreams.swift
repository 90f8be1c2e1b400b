// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `FileHandle` comes from
// swift-corelibs-foundation, and using it links Foundation's ICU data (about 44 MB) into a static binary.

/// Writes `text` to file descriptor `fd` unbuffered with `write(2)`, as `FileHandle.standardError.write` did
/// (so it interleaves with other writers to that descriptor in call order). Errors are ignored, as there.
func writeUnbuffered(_ text: String, to fd: Int32) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// Writes `text` to standard error unbuffered (warnings and diagnostics).
func writeStandardError(_ text: String) { writeUnbuffered(text, to: STDERR_FILENO) }
