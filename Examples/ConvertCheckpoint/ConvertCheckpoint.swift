// convert-checkpoint: converts PyTorch checkpoints (.pt/.pth/.bin/.ckpt, zip or legacy format)
// to safetensors and back.
//
//   swift run convert-checkpoint model.pth model.safetensors
//   swift run convert-checkpoint checkpoint.pt weights.safetensors --key model_state_dict
//   swift run convert-checkpoint model.safetensors model.pth
//
// .pth → .safetensors: the file is loaded like torch.load(weights_only=True); its state dict (the
// whole file, the entry named by --key, or else a single "state_dict"/"model_state_dict"/"model"
// entry) is written with metadata {"format": "pt"}. Nested dictionaries of tensors are flattened
// with dotted names; non-tensor entries are skipped (and listed).
// .safetensors → .pth: the tensors are saved as a state dict (an OrderedDict, sorted by name).

import ArgumentParser
import Foundation
import Torch

@main
struct ConvertCheckpoint: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert-checkpoint",
        abstract: "Convert a PyTorch checkpoint to safetensors, or safetensors to a PyTorch checkpoint.",
        discussion: """
            <input>.pt/.pth/.bin/.ckpt -> <output>.safetensors, or <input>.safetensors -> <output>.pt/.pth. \
            The state dict is the whole file, the --key entry, or the single state_dict/model_state_dict/model \
            entry of a wrapper; nested dictionaries get dotted names, non-tensor entries are skipped and listed.
            """)

    @Argument(help: "The checkpoint to read (.pt/.pth/.bin/.ckpt or .safetensors).")
    var input: String

    @Argument(help: "The file to write (.safetensors, or .pt/.pth for a safetensors input).")
    var output: String

    @Option(help: ArgumentHelp("The entry of the input holding the state dict.", valueName: "name"))
    var key: String?

    @Option(help: ArgumentHelp("Extra safetensors metadata (repeatable); format=pt is always written unless overridden.",
                               valueName: "key=value"))
    var metadata: [String] = []

    func validate() throws {
        guard input.hasSuffix(".safetensors") != output.hasSuffix(".safetensors") else {
            throw ValidationError("exactly one of <input> and <output> must end in .safetensors")
        }
        for m in metadata where !m.contains("=") { throw ValidationError("--metadata expects KEY=VALUE (got '\(m)')") }
    }

    func run() throws {
        var metadata: [String: String] = ["format": "pt"]
        for kv in self.metadata {
            let eq = kv.firstIndex(of: "=")!
            metadata[String(kv[..<eq])] = String(kv[kv.index(after: eq)...])
        }
        do {
            // The conversion itself is `torch.convertCheckpoint`, shared with `swifttorch convert`.
            let r = try torch.convertCheckpoint(input, output, key: key, metadata: metadata)
            if let e = r.entry, key == nil { print("using the entry '\(e)' (choose another with --key)") }
            if !r.skipped.isEmpty { print("skipped non-tensor entries: \(r.skipped.joined(separator: ", "))") }
            print("wrote \(r.tensorCount) tensors (\(r.byteCount) bytes) to \(output)")
        } catch {
            fail("\(error)")
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("convert-checkpoint: \(message)\n".utf8))
    exit(1)
}
