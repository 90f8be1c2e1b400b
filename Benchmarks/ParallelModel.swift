// `--parallel-model N`: what a case would do on N threads, measured on however many cores this machine has.
// The thread pool's model (CTorchKernels' threadpool.c) runs each region's N chunks one after another and times
// them; this file turns its totals into a projected time and lists the regions that limit the scaling.
#if canImport(Glibc)
import Glibc
#endif
import CTorchKernels
import Torch

/// Pool dispatch and barrier per region on a many-core host, microseconds (`--dispatch-us`). The workers spin
/// between back-to-back regions, so a region costs the caller's handing out of chunks and the wait for the last
/// one; 3 µs is the order the pool's own timing comments give, to be replaced by a figure measured there.
nonisolated(unsafe) var modelDispatchMicros = 3.0

/// Runs `c` at `threads` threads under the parallel model and prints the projection and the limiting regions
/// (stdout, Markdown), then one JSON line like the other results with the projected step time.
func runParallelModel(_ c: BenchCase, threads: Int, settings: BenchSettings) {
    torch.setNumThreads(threads)
    torch.manualSeed(0)
    // The model starts with the timed repetitions (a case's set-up and warm-up run on the pool as usual) and
    // restarts if a case measures more than once, so the totals cover its last measurement.
    beforeTimedRepetitions = { ct_parallel_model_begin() }
    let r = c.run(settings)
    ct_parallel_model_end()
    beforeTimedRepetitions = nil
    sink = nil
    if let why = r.skipped {
        fputs("# \(c.name): skipped: \(why)\n", stderr)
        return
    }
    var wallNs: UInt64 = 0
    let count = Int(ct_parallel_model_rows(nil, 0, &wallNs))
    var rows = [ct_parallel_model_row](repeating: ct_parallel_model_row(), count: count)
    _ = rows.withUnsafeMutableBufferPointer { ct_parallel_model_rows($0.baseAddress, Int32(count), &wallNs) }
    let wall = Double(wallNs) * 1e-9
    let work = rows.reduce(0.0) { $0 + Double($1.work_ns) * 1e-9 }
    let critical = rows.reduce(0.0) { $0 + Double($1.critical_ns) * 1e-9 }
    let regions = rows.reduce(0) { $0 + Int($1.regions) }
    let serial = Swift.max(0, wall - work)
    let dispatch = Double(regions) * modelDispatchMicros * 1e-6
    let projected = serial + critical + dispatch
    // The case's timing was measured with every region run serially: scale it by projected / wall.
    let stepMs = r.timing.median * 1e3
    let projectedMs = stepMs * projected / wall
    func pct(_ x: Double) -> String { String(format: "%.1f %%", 100 * x / wall) }
    print("\n### \(c.name): parallel model at \(threads) threads")
    print("""
        measured under the model (chunks one after another): \(fmt(stepMs)) ms an iteration
        wall \(fmt(wall * 1e3)) ms = serial \(fmt(serial * 1e3)) ms (\(pct(serial))) + regions' work \
        \(fmt(work * 1e3)) ms (\(pct(work))) in \(regions) regions
        projected: serial + critical paths \(fmt(critical * 1e3)) ms + dispatch \(fmt(dispatch * 1e3)) ms \
        (\(fmt(modelDispatchMicros)) µs a region) = \(fmt(projected * 1e3)) ms, \(fmt(wall / projected))× faster \
        than the model's serial run: \(fmt(projectedMs)) ms an iteration
        """)
    print("\n| region body | regions | chunks/region | work | critical path | lost to \(threads) threads |")
    print("|---|---:|---:|---:|---:|---:|")
    let ranked = rows.sorted { lost($0, threads) > lost($1, threads) }
    for row in ranked.prefix(15) {
        print("| \(symbolName(row.fn)) | \(row.regions) | \(fmt(Double(row.chunks) / Double(Swift.max(1, row.regions)))) | "
              + "\(pct(Double(row.work_ns) * 1e-9)) | \(pct(Double(row.critical_ns) * 1e-9)) | "
              + "\(pct(lost(row, threads))) |")
    }
    print("| (serial: outside every region) | | | \(pct(serial)) | \(pct(serial)) | \(pct(serial * Double(threads - 1) / Double(threads))) |")
    print(#"{"case":"\#(c.name)","threads":\#(threads),"metric":"ms","model_serial_run":\#(stepMs),"projected":\#(projectedMs),"#
          + #""serial_fraction":\#(serial / wall),"regions":\#(regions),"dispatch_us":\#(modelDispatchMicros)}"#)
}

/// Seconds a region body loses at `threads` threads: its critical paths minus a perfect split of its work.
private func lost(_ row: ct_parallel_model_row, _ threads: Int) -> Double {
    (Double(row.critical_ns) - Double(row.work_ns) / Double(threads)) * 1e-9
}

/// The symbol that holds `address` (mangled, as the dynamic symbol table has it; `swift demangle` reads it), or
/// the bare address in a binary without one. dladdr is looked up at run time: Swift's Glibc module leaves out
/// the GNU extensions.
private func symbolName(_ address: UnsafeRawPointer?) -> String {
    typealias DladdrFunction = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer) -> Int32
    // Dl_info: file name, file base, symbol name, symbol address.
    var info: (UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafePointer<CChar>?, UnsafeRawPointer?) = (nil, nil, nil, nil)
    if let a = address, let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "dladdr") {
        let dladdr = unsafeBitCast(f, to: DladdrFunction.self)
        if withUnsafeMutablePointer(to: &info, { dladdr(a, UnsafeMutableRawPointer($0)) }) != 0 {
            if let name = info.2 { return String(cString: name) }
            // No exported name (an executable's own functions): the offset in its file, for addr2line -f -e.
            if let file = info.0, let base = info.1 {
                let path = String(cString: file)
                let name = path.split(separator: "/").last.map(String.init) ?? path
                return "\(name)+0x" + String(UInt(bitPattern: a - base), radix: 16)
            }
        }
    }
    return address.map { "\($0)" } ?? "?"
}

private func fmt(_ x: Double) -> String { String(format: x >= 100 ? "%.1f" : x >= 10 ? "%.2f" : "%.3f", x) }
