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

import Foundation
import Torch

func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("convert-checkpoint: \(message)\n".utf8))
    exit(code)
}

let usage = """
    usage: convert-checkpoint <input> <output> [--key NAME] [--metadata KEY=VALUE]...
      <input>.pt/.pth/.bin/.ckpt -> <output>.safetensors, or <input>.safetensors -> <output>.pt/.pth
    """

var positional: [String] = []
var key: String?
var metadata: [String: String] = ["format": "pt"]
var argv = CommandLine.arguments.dropFirst()
while let a = argv.popFirst() {
    switch a {
    case "--key":
        guard let k = argv.popFirst() else { fail(usage, code: 2) }
        key = k
    case "--metadata":
        guard let kv = argv.popFirst(), let eq = kv.firstIndex(of: "=") else { fail(usage, code: 2) }
        metadata[String(kv[..<eq])] = String(kv[kv.index(after: eq)...])
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        positional.append(a)
    }
}
guard positional.count == 2 else { fail(usage, code: 2) }
let (input, output) = (positional[0], positional[1])
let toSafetensors = output.hasSuffix(".safetensors")
let fromSafetensors = input.hasSuffix(".safetensors")
guard toSafetensors != fromSafetensors else {
    fail("exactly one of <input> and <output> must end in .safetensors\n\(usage)", code: 2)
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
