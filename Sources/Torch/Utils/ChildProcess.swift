// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `Process` and `Pipe` come from
// swift-corelibs-foundation, and using them links Foundation's ICU data (about 44 MB) into a static binary.

/// A child program started with `posix_spawn`, standing in for Foundation's `Process` and `Pipe`: the
/// executable's path (not searched in `PATH`), its arguments, and for standard output and standard error each
/// whether the child inherits this process's, writes to `/dev/null`, or writes into a pipe that this side reads
/// (`read()`, `readToEnd()`); both piped share one pipe, in the order written. Public because the `swifttorch`
/// CLI uses it too; it is not part of the PyTorch-shaped API.
public final class ChildProcess {
    /// Where one of the child's output streams goes.
    public enum Output { case inherit, discard, pipe }

    /// How the child ended.
    public enum Termination: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    public let executable: String
    public let arguments: [String]
    private let standardOutput: Output, standardError: Output
    private var pid: pid_t = 0
    private var readEnd: Int32 = -1

    public init(executable: String, arguments: [String], standardOutput: Output = .inherit,
                standardError: Output = .inherit) {
        self.executable = executable
        self.arguments = arguments
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    deinit { if readEnd >= 0 { close(readEnd) } }

    /// An error from `pipe`, `open` or `posix_spawn`: the call and its `errno`-style code.
    public struct SpawnError: Error, CustomStringConvertible {
        public let call: String, code: Int32
        public var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// Starts the child. Throws ``SpawnError`` when it cannot be started (no such executable, ...).
    public func run() throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var fds: [Int32] = [-1, -1]
        if standardOutput == .pipe || standardError == .pipe {
            guard pipe(&fds) == 0 else { throw SpawnError(call: "pipe", code: errno) }
        }
        for (output, target) in [(standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)] {
            switch output {
            case .inherit: break
            case .discard: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .pipe: posix_spawn_file_actions_adddup2(&actions, fds[1], target)
            }
        }
        if fds[0] >= 0 {
            posix_spawn_file_actions_addclose(&actions, fds[0])
            posix_spawn_file_actions_addclose(&actions, fds[1])
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        if fds[1] >= 0 { close(fds[1]) }
        guard rc == 0 else {
            if fds[0] >= 0 { close(fds[0]) }
            throw SpawnError(call: "posix_spawn \(executable)", code: rc)
        }
        readEnd = fds[0]
    }

    /// The next bytes the child wrote into the pipe (at most 64 KiB); empty once it closed its end.
    public func read() -> [UInt8] {
        guard readEnd >= 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            return n > 0 ? Array(buffer[0..<n]) : []
        }
    }

    /// Everything the child writes into the pipe until it closes its end.
    public func readToEnd() -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = read()
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// Waits for the child to end (`Process.waitUntilExit`).
    @discardableResult
    public func wait() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
        if status & 0x7f == 0 { return .exited((status >> 8) & 0xff) }
        return .signalled(status & 0x7f)
    }
}
