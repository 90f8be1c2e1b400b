// Checkpoint I/O cases: saving and loading a 100 MB state dict (25 float32 tensors of 1M elements)
// with torch.save/torch.load and safetensors. Twins in scripts/bench_pytorch.py. Figures are GB/s of
// tensor bytes. The file lives in the temporary folder (normally in the page cache once written):
// loads measure parsing + mapping (+ reading every byte in the `_read` cases), saves measure
// CRC-32 + write + fsync + rename (SwiftTorch saves are atomic; torch.save does not fsync).
import Foundation
import Torch

/// 25 tensors of 1M float32 elements: 100 MiB of tensor data.
let checkpointTensors = 25
let checkpointBytes = Double(checkpointTensors * 1024 * 1024 * 4)

func checkpointStateDict() -> [(String, Tensor)] {
    (0..<checkpointTensors).map { ("layer\($0).weight", torch.randn(1024, 1024)) }
}

func checkpointPath(_ name: String) -> String {
    (NSTemporaryDirectory() as NSString).appendingPathComponent("swifttorch-bench-\(getpid())-\(name)")
}

/// Reads every tensor fully (a sum per tensor), so lazily mapped pages are really read.
func readAll(_ tensors: [Tensor]) {
    for t in tensors { sink = t.sum() }
}

func checkpointCase(_ format: String, save: Bool, read: Bool = false) -> (BenchSettings) -> BenchResult {
    return { s in
        let sd = checkpointStateDict()
        let path = checkpointPath("ckpt.\(format)")
        defer { unlink(path) }
        func write() {
            do {
                if format == "pt" { try torch.save(sd, path) } else { try safetensors.saveFile(sd, path) }
            } catch { fatalError("\(error)") }
        }
        write()
        let t = measure(s) { iters in
            for _ in 0..<iters {
                if save { write(); continue }
                do {
                    let loaded = format == "pt" ? try torch.loadStateDict(path) : try safetensors.loadFile(path)
                    if read { readAll(loaded.map(\.1)) } else { sink = loaded[0].1 }
                } catch { fatalError("\(error)") }
            }
        }
        sink = nil
        return .bandwidth(t, bytes: checkpointBytes)
    }
}

func registerSaveLoadCases() {
    register("torch_save_100MB", "torch.save of a 100 MB state dict (GB/s, atomic: includes fsync)", checkpointCase("pt", save: true))
    register("torch_load_100MB", "torch.load of a 100 MB state dict (GB/s, memory-mapped)", checkpointCase("pt", save: false))
    register("torch_load_100MB_read", "torch.load of a 100 MB state dict + a sum of every tensor (GB/s)",
             checkpointCase("pt", save: false, read: true))
    register("safetensors_save_100MB", "safetensors.saveFile of 100 MB (GB/s, atomic: includes fsync)",
             checkpointCase("safetensors", save: true))
    register("safetensors_load_100MB", "safetensors.loadFile of 100 MB (GB/s, memory-mapped)",
             checkpointCase("safetensors", save: false))
}
