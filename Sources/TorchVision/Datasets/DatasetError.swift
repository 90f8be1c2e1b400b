import Torch

extension datasets {
    /// Why a dataset could not be loaded. Every case says what is wrong and where.
    public enum DatasetError: Error, CustomStringConvertible {
        /// A required file is in none of the places looked at.
        case fileNotFound(file: String, searched: [String], hint: String)
        /// The operating system refused an operation on a file.
        case io(path: String, operation: String, message: String)
        /// A file's contents are not what the format requires.
        case invalidFile(path: String, reason: String)
        /// A compressed file could not be decompressed.
        case decompression(path: String, underlying: SerializationError)
        /// Two files of one dataset disagree (e.g. image and label counts).
        case inconsistent(String)

        public var description: String {
            switch self {
            case let .fileNotFound(file, searched, hint):
                return "dataset file '\(file)' not found; looked for: \(searched.joined(separator: ", ")). \(hint)"
            case let .io(path, operation, message):
                return "\(operation) failed for '\(path)': \(message)"
            case let .invalidFile(path, reason):
                return "invalid file '\(path)': \(reason)"
            case let .decompression(path, underlying):
                return "cannot decompress '\(path)': \(underlying)"
            case let .inconsistent(message):
                return message
            }
        }
    }
}
