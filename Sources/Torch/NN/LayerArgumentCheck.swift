/// Argument checks that tests can call: a check throws `LayerArgumentError` with PyTorch's message, and the
/// public op turns it into a precondition failure (programmer errors stop the program, as everywhere else).

/// A programmer error found by a layer's argument check, with the message the op stops with.
struct LayerArgumentError: Error, Equatable {
    let message: String
}

/// Throws `message` unless `condition` holds.
@inline(__always)
func requireArgument(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw LayerArgumentError(message: message()) }
}

/// Runs a throwing check and stops with its message on failure.
func checkedArguments<R>(_ body: () throws -> R) -> R {
    do {
        return try body()
    } catch let e as LayerArgumentError {
        preconditionFailure(e.message)
    } catch {
        preconditionFailure("\(error)")
    }
}
