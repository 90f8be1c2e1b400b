// The benchmark cases. Each one has a twin of the same name in scripts/bench_pytorch.py doing the same work in
// PyTorch; keep inputs, loop bodies and figures identical when changing either side.
//
// To add a case: write a function that builds its inputs (untimed), then returns a result from
// `measure(s) { n in for _ in 0..<n { <one iteration> } }`, and register it in `registerAllCases()`.
import Torch

/// Elements of the large elementwise and reduction cases: 4M floats (16 MiB per tensor).
let bigN = 4 * 1024 * 1024

/// sgemm N³: `torch.mm` of two contiguous float32 `randn(N, N)`; 2·N³ flops.
func sgemmCase(_ n: Int) -> (BenchSettings) -> BenchResult {
    return { s in
        let a = torch.randn(n, n), b = torch.randn(n, n)
        let t = measure(s) { iters in
            for _ in 0..<iters { discard(a.mm(b)) }
        }
        return .throughput(t, flops: 2 * Double(n) * Double(n) * Double(n))
    }
}

/// `a + b` on two 10-element float32 tensors: per-op overhead (allocation, dispatch), µs per op.
func addTinyCase(_ s: BenchSettings) -> BenchResult {
    let a = torch.randn(10), b = torch.randn(10)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(a + b) }
    }
    return .micros(t)
}

/// `(w * x).sum().backward()` on 10 elements with `w` requiring grad, resetting `w.grad` to nil each iteration
/// (what `optimizer.zero_grad()` does by default in PyTorch): autograd record + engine overhead, µs per iteration.
func tinyForwardBackwardCase(_ s: BenchSettings) -> BenchResult {
    let w = torch.randn(10, requiresGrad: true), x = torch.randn(10)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            w.grad = nil
            (w * x).sum().backward()
        }
    }
    return .micros(t)
}

/// Elementwise add of two 4M-float tensors into a new one; 12 bytes per element moved.
func addBigCase(_ s: BenchSettings) -> BenchResult {
    let a = torch.randn(bigN), b = torch.randn(bigN)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(a + b) }
    }
    return .bandwidth(t, bytes: 12 * Double(bigN))
}

/// `exp` of a 4M-float tensor into a new one; 8 bytes per element moved.
func expBigCase(_ s: BenchSettings) -> BenchResult {
    let a = torch.randn(bigN)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(a.exp()) }
    }
    return .bandwidth(t, bytes: 8 * Double(bigN))
}

/// `F.leakyRelu` of a 4M-float tensor into a new one; 8 bytes per element moved. Its element
/// function carries a run-time constant (the slope), the case that once fell back to an
/// indirect call per element on the pool threads.
func leakyReluBigCase(_ s: BenchSettings) -> BenchResult {
    let a = torch.randn(bigN)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(F.leakyRelu(a, negativeSlope: 0.1)) }
    }
    return .bandwidth(t, bytes: 8 * Double(bigN))
}

/// Full `sum()` of a 4M-float tensor; 4 bytes per element read.
func sumBigCase(_ s: BenchSettings) -> BenchResult {
    let a = torch.randn(bigN)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(a.sum()) }
    }
    return .bandwidth(t, bytes: 4 * Double(bigN))
}

func registerAllCases() {
    register("sgemm_256", "torch.mm 256x256 @ 256x256 float32", sgemmCase(256))
    register("sgemm_512", "torch.mm 512x512 @ 512x512 float32", sgemmCase(512))
    register("sgemm_1024", threads: [1, 2], "torch.mm 1024x1024 @ 1024x1024 float32", sgemmCase(1024))
    register("sgemm_2048", "torch.mm 2048x2048 @ 2048x2048 float32", sgemmCase(2048))
    register("add_10", "a + b, 10 float32 elements (us per op)", addTinyCase)
    register("mul_sum_backward_10", "w.grad = None; (w * x).sum().backward(), 10 elements (us per iteration)",
             tinyForwardBackwardCase)
    register("add_4M", threads: [1, 2], "a + b, 4M float32 elements (GB/s, 12 bytes/element)", addBigCase)
    register("exp_4M", "a.exp(), 4M float32 elements (GB/s, 8 bytes/element)", expBigCase)
    register("sum_4M", "a.sum(), 4M float32 elements (GB/s, 4 bytes/element)", sumBigCase)
    register("leaky_relu_4M", threads: [1, 2], "F.leaky_relu(a, 0.1), 4M float32 elements (GB/s, 8 bytes/element)",
             leakyReluBigCase)
    registerSaveLoadCases()
    registerRecurrentCases()
    registerTrainingCases()
    registerConvCases()
    registerVisionCases()
    registerONNXCases()
}
