// SwiftTorch benchmarks: one JSON line per (case, thread count) on stdout; progress and notes on stderr.
//
//   swift run -c release Benchmarks [--filter NAME[,NAME...]] [--exact] [--threads N[,N...]] [--quick] [--cpu-time] [--list]
//                                  [--parallel-model N[,N...] [--dispatch-us US]]
//
// Compare with PyTorch: scripts/compare (runs this and scripts/bench_pytorch.py, each in its own process).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTorchKernels
import Torch

func usage() -> Never {
    let text = """
    usage: Benchmarks [--filter NAME[,NAME...]] [--exact] [--threads N[,N...]] [--quick] [--cpu-time] [--list]
                      [--parallel-model N[,N...] [--dispatch-us US]]
      --filter   run cases whose name contains any of the given substrings
      --exact    --filter names whole case names (torch_load_100MB then leaves out torch_load_100MB_read)
      --threads  run every selected case at these thread counts (default: each case's own list)
      --quick    shorter warm-up and repetitions (rough figures)
      --cpu-time time with the process CPU-time clock (one-thread cases on a busy machine)
      --list     print the case names and exit
      --parallel-model N[,N...]  project each case at N threads on this machine: regions split as at N threads,
                 their chunks timed one after another (ParallelModel.swift); prints the projection and the
                 regions that limit it instead of a result line
      --dispatch-us US  the model's pool cost per region on the target machine (default 3)

    """
    fputs(text, stderr)
    exit(2)
}

var settings = BenchSettings()
var filters: [String] = []
var threadOverride: [Int]? = nil
var parallelModel: [Int]? = nil
var listOnly = false
var exactNames = false

var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--quick": settings.quick = true
    case "--cpu-time": useCPUTime = true
    case "--list": listOnly = true
    case "--exact": exactNames = true
    case "--filter":
        guard let v = args.popFirst() else { usage() }
        filters += v.split(separator: ",").map(String.init)
    case "--parallel-model":
        guard let v = args.popFirst() else { usage() }
        let ns = v.split(separator: ",").map { Int($0) }
        guard !ns.isEmpty, ns.allSatisfy({ ($0 ?? 0) > 0 }) else { usage() }
        parallelModel = ns.map { $0! }
    case "--dispatch-us":
        guard let v = args.popFirst(), let us = Double(v), us >= 0 else { usage() }
        modelDispatchMicros = us
    case "--threads":
        guard let v = args.popFirst() else { usage() }
        let ns = v.split(separator: ",").map { Int($0) }
        guard !ns.isEmpty, ns.allSatisfy({ ($0 ?? 0) > 0 }) else { usage() }
        threadOverride = ns.map { $0! }
    case "-h", "--help": usage()
    default:
        if a.hasPrefix("--filter=") { filters += a.dropFirst(9).split(separator: ",").map(String.init) }
        else if a.hasPrefix("--threads="), let n = Int(a.dropFirst(10)), n > 0 { threadOverride = [n] }
        else { fputs("unknown argument \(a)\n", stderr); usage() }
    }
}

registerAllCases()
let selected = registry.filter { c in filters.isEmpty || filters.contains { exactNames ? c.name == $0 : c.name.contains($0) } }
if listOnly {
    for c in registry { print("\(c.name)\tthreads \(c.threads.map(String.init).joined(separator: ","))\t\(c.summary)") }
    exit(0)
}
if selected.isEmpty {
    fputs("no case matches \(filters); try --list\n", stderr)
    exit(1)
}

fputs("# SwiftTorch benchmarks: isa=\(String(cString: ct_isa_name())) default_threads=\(torch.getNumThreads())"
      + (settings.quick ? " (quick)" : "") + (useCPUTime ? " (cpu time)" : "") + "\n", stderr)
setvbuf(stdout, nil, _IOLBF, 0)
for c in selected {
    if let counts = parallelModel {
        for n in counts { runParallelModel(c, threads: n, settings: settings) }
        continue
    }
    for n in threadOverride ?? c.threads {
        torch.setNumThreads(n)
        torch.manualSeed(0)
        let r = c.run(settings)
        sink = nil
        if let why = r.skipped {
            fputs("# \(c.name): skipped: \(why)\n", stderr)
            continue
        }
        print(r.jsonLine(caseName: c.name, threads: n))
    }
}
