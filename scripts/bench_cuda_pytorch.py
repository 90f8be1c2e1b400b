#!/usr/bin/env python3
"""PyTorch's side of cuda-check's BENCH lines (issues 25 and 26's speed cases), printed in the same format.

Run it on the same GPU in the same call as `cuda-check`, e.g. on the lent machine:
    source .device-carry/unpack && .device-carry/bin/cuda-check && python3 scripts/bench_cuda_pytorch.py
Timing: like cuda-check's `timeIt`, one warm-up, then the best of 7 rounds of `reps` calls, each round ending
with torch.cuda.synchronize(). TF32 stays off (PyTorch's default for matmul), as in SwiftTorch.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def time_it(reps, body, rounds):
    body()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            body()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter_ns() - t0) / reps / 1000)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--fashion-mnist", metavar="DIR", help="also train the Fashion-MNIST CNN 3 epochs on the GPU "
                        "(the IDX .gz files in DIR), as cuda-check --fashion-mnist")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    dev = torch.device("cuda:0")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False   # convolutions in full float32, as SwiftTorch's (issue 26: TF32 off)
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")

    p, q = torch.rand(10, device=dev), torch.rand(10, device=dev)
    print("BENCH a+b 10 floats: %.2f us/op" % time_it(2000, lambda: p + q, rounds))
    print("BENCH a.add_(b) 10 floats: %.2f us/op" % time_it(2000, lambda: p.add_(q), rounds))
    print("BENCH torch.cuda.synchronize(): %.2f us" % time_it(2000, torch.cuda.synchronize, rounds))
    w = torch.rand(10, device=dev).requires_grad_()
    x = torch.rand(10, device=dev)
    print("BENCH (w*x).sum().backward() 10 floats: %.1f us" % time_it(500, lambda: (w * x).sum().backward(), rounds))
    for adam in (False, True):
        torch.manual_seed(4)
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3) if adam else torch.optim.SGD(model.parameters(), lr=0.01)
        xb, yb = torch.rand(64, 784, device=dev), torch.randint(0, 10, (64,), device=dev)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()

        us = time_it(200, step, rounds)
        print("BENCH MLP 784-512-256-10 train step batch 64 %s: %.0f us" % ("Adam" if adam else "SGD", us))
    graph_benchmarks(dev, rounds)
    for n in (4096, 8192):
        m1, m2 = torch.rand(n, n, device=dev), torch.rand(n, n, device=dev)
        us = time_it(20 if n == 4096 else 5, lambda: m1.mm(m2), rounds)
        print("BENCH sgemm %d: %.0f GFLOP/s" % (n, 2 * n ** 3 / us / 1000))
    torch.manual_seed(7)
    lenet = nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)).to(dev)
    opt = torch.optim.SGD(lenet.parameters(), lr=0.01, momentum=0.9)
    xb, yb = torch.rand(64, 3, 32, 32, device=dev), torch.randint(0, 10, (64,), device=dev)

    def lenet_step():
        opt.zero_grad()
        F.cross_entropy(lenet(xb), yb).backward()
        opt.step()
    print("BENCH LeNet-5 train step batch 64 SGD momentum: %.0f us" % time_it(100, lenet_step, rounds))
    for batch in (32, 256):
        xc, wc = torch.rand(batch, 64, 32, 32, device=dev), torch.rand(64, 64, 3, 3, device=dev)
        t = time_it(20, lambda: F.conv2d(xc, wc, padding=1), rounds)
        print("BENCH conv2d 64->64 3x3 32x32 batch %d forward: %.0f GFLOP/s" % (batch, 2 * batch * 64 * 64 * 9 * 32 * 32 / t / 1000))

    resnet_benchmarks(dev, rounds)

    if args.fashion_mnist:
        fashion_mnist(dev, args.fashion_mnist)
    big = torch.rand(64 << 20, device=dev)
    us = time_it(20, lambda: big + big, rounds)
    print("BENCH a+a 64 Mi floats: %.0f GB/s" % (2 * (64 << 20) * 4 / us / 1000))


def fashion_mnist(dev, root):
    """cuda-check's runFashionMNIST: FashionCNN, Adam 1e-3, batch 64, the whole split on the GPU, 3 epochs."""
    import gzip
    import os
    import sys
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_pytorch import FashionCNN

    def idx(name, offset):
        with gzip.open(os.path.join(root, name)) as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)

    def images(prefix):
        x = torch.from_numpy(idx(prefix + "-images-idx3-ubyte.gz", 16).copy()).view(-1, 1, 28, 28)
        return ((x.float() / 255 - 0.5) / 0.5).to(dev)

    def labels(prefix):
        return torch.from_numpy(idx(prefix + "-labels-idx1-ubyte.gz", 8).astype(np.int64)).to(dev)

    x_train, y_train, x_test, y_test = images("train"), labels("train"), images("t10k"), labels("t10k")
    torch.manual_seed(0)
    model = FashionCNN().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n, best = x_train.shape[0], float("inf")
    for epoch in range(1, 4):
        model.train()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        order = torch.randperm(n, device=dev)
        for start in range(0, n, 64):
            i = order[start:start + 64]
            opt.zero_grad()
            F.cross_entropy(model(x_train[i]), y_train[i]).backward()
            opt.step()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        best = min(best, seconds)
        model.eval()
        with torch.no_grad():
            correct = sum((model(x_test[s:s + 1000]).argmax(1) == y_test[s:s + 1000]).sum().item()
                          for s in range(0, x_test.shape[0], 1000))
        print("# Fashion-MNIST CNN on CUDA, epoch %d: test accuracy %.4f, %.2f s" % (epoch, correct / x_test.shape[0], seconds))
    print("BENCH Fashion-MNIST CNN epoch batch 64 Adam data on the GPU: %.2f s" % best)


def graph_benchmarks(dev, rounds):
    """cuda-check's GraphChecks.swift: training steps (SGD momentum) eagerly, then captured once with
    torch.cuda.graph after warm-up steps on a side stream (PyTorch's recipe) and replayed: tutorial 000's MLP at
    batch 64 (us) and ResNet-18 on 3x32x32 at batch 32 (ms)."""
    import torchvision

    def mlp():
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    cases = [("MLP 784-512-256-10 SGD momentum step batch 64", 200, False, mlp, (64, 784), 4),
             ("ResNet-18 train step 3x32x32 batch 32 SGD momentum", 20, True,
              lambda: torchvision.models.resnet18(num_classes=10), (32, 3, 32, 32), 8)]
    for name, reps, millis, build, shape, seed in cases:
        def make():
            torch.manual_seed(seed)
            model = build().to(dev).train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            xb, yb = torch.rand(*shape, device=dev), torch.randint(0, 10, (shape[0],), device=dev)

            def step():
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                return loss
            return opt, step

        def line(how, us):
            return ("BENCH %s %s: %.2f ms" % (name, how, us / 1000)) if millis else ("BENCH %s %s: %.0f us" % (name, how, us))
        opt, step = make()

        def eager_step():
            opt.zero_grad()
            step()
        print(line("eager", time_it(reps, eager_step, rounds)))
        opt, step = make()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                step()
        torch.cuda.current_stream().wait_stream(side)
        opt.zero_grad(set_to_none=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        print(line("CUDA graph replay", time_it(reps, g.replay, rounds)))


def resnet_benchmarks(dev, rounds):
    """Issue 26's ResNet-18 cases, as cuda-check's runCNNBenchmarks: train steps on 3x32x32 (SGD momentum) and eval
    forwards on 3x224x224 in float32 and under bfloat16 autocast."""
    import torchvision
    torch.manual_seed(8)
    model = torchvision.models.resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for batch in (32, 256):
        xb, yb = torch.rand(batch, 3, 32, 32, device=dev), torch.randint(0, 10, (batch,), device=dev)
        model.train()

        def step():
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
        us = time_it(20 if batch == 32 else 5, step, rounds)
        print("BENCH ResNet-18 train step 3x32x32 batch %d SGD momentum: %.2f ms" % (batch, us / 1000))
    imagenet = torchvision.models.resnet18().to(dev).eval()
    with torch.no_grad():
        one = torch.rand(1, 3, 224, 224, device=dev)
        print("BENCH ResNet-18 eval 3x224x224 batch 1: %.2f ms" % (time_it(20, lambda: imagenet(one), rounds) / 1000))
        many = torch.rand(256, 3, 224, 224, device=dev)
        fp32 = time_it(2, lambda: imagenet(many), rounds)
        print("BENCH ResNet-18 eval 3x224x224 batch 256 float32: %.0f images/s" % (256 / (fp32 / 1e6)))

        def bf16():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                imagenet(many)
        print("BENCH ResNet-18 eval 3x224x224 batch 256 bfloat16 autocast: %.0f images/s" % (256 / (time_it(2, bf16, rounds) / 1e6)))


if __name__ == "__main__":
    main()
