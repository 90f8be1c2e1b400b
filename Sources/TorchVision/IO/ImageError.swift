import Torch

/// Why an image could not be read, decoded, encoded or written. Every case names the file (or says
/// the bytes came from memory) and carries libpng's or libjpeg's own message where there is one.
public enum ImageError: Error, CustomStringConvertible {
    /// The operating system refused an operation on a file.
    case io(path: String, operation: String, message: String)
    /// The bytes are neither PNG nor JPEG (`detected` names a recognised other format, if any).
    case unsupportedFormat(source: String, detected: String?)
    /// The decoder rejected the data: truncated, corrupt or hostile input, or an image over the size limit.
    case decode(source: String, format: String, message: String)
    /// The requested read mode does not apply to this format (JPEG has no alpha).
    case unsupportedMode(source: String, format: String, mode: String)
    /// The encoder failed.
    case encode(format: String, message: String)
    /// The file name's extension names no format `Image.save` can write.
    case unknownExtension(path: String)
    /// The image's mode cannot be stored in the requested format (e.g. RGBA as JPEG).
    case unsupportedImageMode(path: String, format: String, mode: String)

    public var description: String {
        switch self {
        case let .io(path, operation, message):
            return "\(operation) failed for '\(path)': \(message)"
        case let .unsupportedFormat(source, detected):
            let what = detected.map { "a \($0) file" } ?? "an unrecognised file"
            return "\(source) is \(what); only PNG and JPEG images are supported"
        case let .decode(source, format, message):
            return "cannot decode \(format) \(source): \(message)"
        case let .unsupportedMode(source, format, mode):
            return "read mode \(mode) is not supported for \(format) files (\(source)); use unchanged, gray or RGB"
        case let .encode(format, message):
            return "cannot encode \(format): \(message)"
        case let .unknownExtension(path):
            return "unknown file extension in '\(path)'; use .png, .jpg or .jpeg"
        case let .unsupportedImageMode(path, format, mode):
            return "cannot write mode \(mode) as \(format) ('\(path)')"
        }
    }
}
