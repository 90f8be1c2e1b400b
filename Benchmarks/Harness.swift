// The benchmark harness: a monotonic clock, calibrated repetitions with a median, JSON output and the case
// registry. scripts/bench_pytorch.py mirrors this file's methodology line by line; keep the two in step.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Torch

// MARK: - Clock

/// Whether `now()` reads the process CPU-time clock instead of the wall clock (`--cpu-time`).
nonisolated(unsafe) var useCPUTime = false

/// Monotonic time in seconds: `CLOCK_MONOTONIC`, or `CLOCK_PROCESS_CPUTIME_ID` with `--cpu-time` (on a shared
/// machine the CPU time of a one-thread case leaves out the time other processes held the core; with n threads
/// it is the CPU time of all of them, not a wall time).
@inline(__always)
func now() -> Double { clockSeconds(useCPUTime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC) }

/// Monotonic wall-clock time in seconds, whatever `--cpu-time` says (for cases that compare thread counts).
@inline(__always)
func wallClock() -> Double { clockSeconds(CLOCK_MONOTONIC) }

/// The process's CPU time in seconds (all threads), whatever `--cpu-time` says.
@inline(__always)
func cpuClock() -> Double { clockSeconds(CLOCK_PROCESS_CPUTIME_ID) }

@inline(__always)
private func clockSeconds(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Keeps results alive so the optimizer cannot drop the work that produced them. Assigning a new result releases
/// the previous one, as rebinding a Python variable does.
nonisolated(unsafe) var sink: Tensor?

/// Drops `t` at once, as Python drops the value of an expression statement such as the loop body `a + b` in
/// scripts/bench_pytorch.py: the next iteration's result can then reuse the same buffer, as PyTorch's does.
/// (`sink = a + b` would keep two results alive, alternating between two 16 MB outputs for the 4M cases.)
@inline(never)
func discard(_ t: Tensor) {
    sink = t
    sink = nil
}

// MARK: - Settings

/// How long and how often to measure; `--quick` shortens everything.
struct BenchSettings {
    var quick = false
    /// Seconds of untimed warm-up before calibration ends.
    var warmupSeconds: Double { quick ? 0.02 : 0.2 }
    /// Target seconds per timed repetition (a repetition runs `iters` iterations back to back).
    var repSeconds: Double { quick ? 0.05 : 0.25 }
    /// Timed repetitions; the reported figure is their median.
    var reps: Int { quick ? 3 : 7 }
    /// At most this many seconds of timed work per case (reps shrink to `minReps` to fit).
    var caseBudgetSeconds: Double { quick ? 2 : 10 }
    let minReps = 3
}

// MARK: - Measurement

/// Per-iteration timings of one case at one thread count.
struct Timing {
    /// Median over repetitions of (repetition time / iters), in seconds.
    var median: Double
    /// Fastest repetition, in seconds per iteration.
    var min: Double
    /// Iterations per repetition.
    var iters: Int
    /// Timed repetitions.
    var reps: Int
}

/// Called by `measure` between warm-up and the timed repetitions (`--parallel-model` starts its model there, so
/// set-up and first-touch page faults stay out of it).
nonisolated(unsafe) var beforeTimedRepetitions: (() -> Void)? = nil

/// Times `body(n)`, which must run its workload `n` times in a plain loop.
///
/// Warm-up: runs single iterations (then doubling batches) for at least `warmupSeconds` and at least once, which
/// also estimates the cost of one iteration. Calibration: `iters` is chosen so a repetition lasts about
/// `repSeconds` (at least 1). Then `reps` repetitions are timed (fewer, but at least `minReps`, when they would
/// exceed `caseBudgetSeconds`), and the median per-iteration time is reported.
func measure(_ s: BenchSettings, _ body: (Int) -> Void) -> Timing {
    var batch = 1
    var spent = 0.0
    var perIter = Double.infinity
    repeat {
        let t0 = now()
        body(batch)
        let dt = now() - t0
        spent += dt
        perIter = Swift.min(perIter, dt / Double(batch))
        if dt < s.warmupSeconds / 8 { batch *= 2 }
    } while spent < s.warmupSeconds
    let iters = Swift.max(1, Int(s.repSeconds / Swift.max(perIter, 1e-9)))
    let repCost = perIter * Double(iters)
    let reps = Swift.max(s.minReps, Swift.min(s.reps, Int(s.caseBudgetSeconds / Swift.max(repCost, 1e-9))))
    var samples: [Double] = []
    samples.reserveCapacity(reps)
    beforeTimedRepetitions?()
    for _ in 0..<reps {
        let t0 = now()
        body(iters)
        samples.append((now() - t0) / Double(iters))
    }
    return Timing(median: median(samples), min: samples.min()!, iters: iters, reps: reps)
}

/// The median of a non-empty list (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    let v = values.sorted()
    return v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2
}

// MARK: - Results

/// A JSON scalar for the extra fields of a result line.
enum JSONValue {
    case number(Double)
    case int(Int)
    case string(String)

    var encoded: String {
        switch self {
        case .number(let d): return d.isFinite ? "\(d)" : "null"
        case .int(let i): return "\(i)"
        case .string(let s): return jsonString(s)
        }
    }
}

func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 {
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}

/// What a case reports: the headline figure (`metric`, `value`) plus extra fields.
struct BenchResult {
    /// "GFLOP/s", "GB/s", "img/s", "x" (a speed-up; higher is better), "us", "ms" or "s" (lower is better).
    var metric: String
    var value: Double
    var timing: Timing
    var extra: [(String, JSONValue)] = []
    /// Why the case could not run (a missing dataset); such a result prints a note instead of a line.
    var skipped: String? = nil

    /// Figure from a timing and an amount of work per iteration.
    static func throughput(_ t: Timing, flops: Double) -> BenchResult {
        BenchResult(metric: "GFLOP/s", value: flops / t.median / 1e9, timing: t,
                    extra: [("us", .number(t.median * 1e6)), ("best", .number(flops / t.min / 1e9))])
    }
    static func bandwidth(_ t: Timing, bytes: Double) -> BenchResult {
        BenchResult(metric: "GB/s", value: bytes / t.median / 1e9, timing: t,
                    extra: [("us", .number(t.median * 1e6)), ("best", .number(bytes / t.min / 1e9))])
    }
    static func micros(_ t: Timing) -> BenchResult {
        BenchResult(metric: "us", value: t.median * 1e6, timing: t, extra: [("best", .number(t.min * 1e6))])
    }
    static func millis(_ t: Timing) -> BenchResult {
        BenchResult(metric: "ms", value: t.median * 1e3, timing: t, extra: [("best", .number(t.min * 1e3))])
    }
    static func seconds(_ t: Timing) -> BenchResult {
        BenchResult(metric: "s", value: t.median, timing: t, extra: [("best", .number(t.min))])
    }
    /// A case that cannot run here, with the reason.
    static func skip(_ why: String) -> BenchResult {
        BenchResult(metric: "", value: .nan, timing: Timing(median: .nan, min: .nan, iters: 0, reps: 0), skipped: why)
    }

    func jsonLine(caseName: String, threads: Int) -> String {
        var fields: [(String, JSONValue)] = [
            ("case", .string(caseName)), ("threads", .int(threads)), ("metric", .string(metric)),
            ("value", .number(value)), ("iters", .int(timing.iters)), ("reps", .int(timing.reps)),
        ]
        fields += extra
        fields.append(("lib", .string("swifttorch")))
        return "{" + fields.map { "\(jsonString($0.0)): \($0.1.encoded)" }.joined(separator: ", ") + "}"
    }
}

// MARK: - Registry

/// One named workload. `setUp` builds inputs (untimed) and returns the measured run, so inputs are created after
/// the thread count is set and live only while the case runs.
struct BenchCase {
    var name: String
    /// Thread counts the case runs at when `--threads` is not given.
    var threads: [Int]
    /// One line of description for `--list`.
    var summary: String
    var run: (BenchSettings) -> BenchResult
}

/// All cases in run order. Add new cases in Cases.swift by appending to this list.
nonisolated(unsafe) var registry: [BenchCase] = []

func register(_ name: String, threads: [Int] = [1], _ summary: String, _ run: @escaping (BenchSettings) -> BenchResult) {
    precondition(!registry.contains { $0.name == name }, "duplicate benchmark case \(name)")
    registry.append(BenchCase(name: name, threads: threads, summary: summary, run: run))
}
