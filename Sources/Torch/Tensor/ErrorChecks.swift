/// `precondition` and `preconditionFailure` for the whole Torch module, shadowing the standard library's.
///
/// The standard library's versions print their message only in debug builds: a release build (how users run
/// SwiftTorch, and how its benchmarks and `cuda-check` are built) stops with a bare "precondition failure", so
/// PyTorch-style messages such as "Expected all tensors to be on the same device …" or an op's
/// "NotImplementedError … 'CUDA'" would never reach the user. These keep the check in every build mode and
/// always print the message (through `fatalError`), with the caller's file and line.
@_transparent
func precondition(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String = String(),
                  file: StaticString = #file, line: UInt = #line) {
    if _slowPath(!condition()) { fatalError(message(), file: file, line: line) }
}

/// Stops with `message` in every build mode (see `precondition`).
@_transparent
func preconditionFailure(_ message: @autoclosure () -> String = String(), file: StaticString = #file,
                         line: UInt = #line) -> Never {
    fatalError(message(), file: file, line: line)
}
