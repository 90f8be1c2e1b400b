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

/// Flattens a dictionary of tensors (nested dictionaries get dotted names); returns skipped names.
func flatten(_ v: StateValue, prefix: String, into out: inout [(String, Tensor)], skipped: inout [String]) {
    guard case let .dict(entries) = v else { return }
    for (k, x) in entries {
        let name = prefix + (k.stringValue ?? k.intValue.map(String.init) ?? k.description)
        switch x {
        case let .tensor(t): out.append((name, t))
        case .dict: flatten(x, prefix: name + ".", into: &out, skipped: &skipped)
        default: skipped.append(name)
        }
    }
}

do {
    if toSafetensors {
        var value = try torch.load(input)
        if let key {
            guard let v = value[key] else { fail("'\(input)' has no entry '\(key)'") }
            value = v
        } else if let entries = value.dictValue, !entries.contains(where: { $0.value.tensorValue != nil }) {
            let candidates = ["state_dict", "model_state_dict", "model"].filter { value[$0]?.dictValue != nil }
            if candidates.count == 1 {
                print("using the entry '\(candidates[0])' (choose another with --key)")
                value = value[candidates[0]]!
            }
        }
        if let t = value.tensorValue { value = .dict([(key: "tensor", value: .tensor(t))]) }
        var tensors: [(String, Tensor)] = []
        var skipped: [String] = []
        flatten(value, prefix: "", into: &tensors, skipped: &skipped)
        guard !tensors.isEmpty else { fail("'\(input)' holds no tensors to convert (use --key to pick an entry)") }
        if !skipped.isEmpty { print("skipped non-tensor entries: \(skipped.joined(separator: ", "))") }
        try safetensors.saveFile(tensors, output, metadata: metadata)
        let bytes = tensors.reduce(0) { $0 + $1.1.numel * $1.1.elementSize }
        print("wrote \(tensors.count) tensors (\(bytes) bytes) to \(output)")
    } else {
        let tensors = try safetensors.loadFile(input)
        try torch.save(tensors, output)
        let bytes = tensors.reduce(0) { $0 + $1.1.numel * $1.1.elementSize }
        print("wrote \(tensors.count) tensors (\(bytes) bytes) to \(output)")
    }
} catch {
    fail("\(error)")
}
