#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#endif

// No Foundation here (docs/architecture.md §2, "No Foundation proper"): `Error.localizedDescription` comes from
// swift-corelibs-foundation (it bridges to `NSError`), and using it links Foundation's ICU data (about 44 MB) into
// a static binary.

/// A one-line message for `error`, in place of `localizedDescription`: for a file-system `CocoaError` (from
/// `FileManager` or `Data`) the path and the system's message for its POSIX error ("/x/y: Permission denied"),
/// for a `POSIXError` the system's message, else the error's own description.
/// Public because TorchVision and the `swifttorch` CLI use it too; it is not part of the PyTorch-shaped API.
public func errorDescription(_ error: Error) -> String {
    if let e = error as? CocoaError {
        let reason = (e.underlying as? POSIXError).map { String(cString: strerror($0.code.rawValue)) }
            ?? "file error \(e.code.rawValue)"
        return e.filePath.map { "\($0): \(reason)" } ?? reason
    }
    if let e = error as? POSIXError { return String(cString: strerror(e.code.rawValue)) }
    return "\(error)"
}
