#!/usr/bin/env python3
"""PyTorch twin of SwiftTorch's Benchmarks executable (Benchmarks/*.swift).

Runs the same cases with the same methodology and prints the same JSON lines, one per (case, thread count):

    /root/torchenv/bin/python scripts/bench_pytorch.py [--filter NAME[,NAME...]] [--exact] [--threads N[,N...]] [--quick] [--cpu-time] [--list]

Keep each case's inputs and loop body identical to its Swift twin in Benchmarks/Cases.swift, and the measurement
in `measure` identical to Benchmarks/Harness.swift.
"""
import argparse
import json
import sys
import time

import torch

BIG_N = 4 * 1024 * 1024  # 4M floats, as Benchmarks/Cases.swift's bigN


# --- settings and measurement (mirror of Benchmarks/Harness.swift) -------------------------------------------

class Settings:
    def __init__(self, quick=False):
        self.quick = quick
        self.warmup_seconds = 0.02 if quick else 0.2
        self.rep_seconds = 0.05 if quick else 0.25
        self.reps = 3 if quick else 7
        self.case_budget_seconds = 2 if quick else 10
        self.min_reps = 3


class Timing:
    def __init__(self, median, best, iters, reps):
        self.median, self.min, self.iters, self.reps = median, best, iters, reps


now = time.perf_counter  # monotonic clock (CLOCK_MONOTONIC on Linux); time.process_time with --cpu-time


def measure(s, body):
    """Times body(n), which runs its workload n times in a plain loop; see Harness.swift's `measure`."""
    batch = 1
    spent = 0.0
    per_iter = float("inf")
    while True:
        t0 = now()
        body(batch)
        dt = now() - t0
        spent += dt
        per_iter = min(per_iter, dt / batch)
        if dt < s.warmup_seconds / 8:
            batch *= 2
        if spent >= s.warmup_seconds:
            break
    iters = max(1, int(s.rep_seconds / max(per_iter, 1e-9)))
    rep_cost = per_iter * iters
    reps = max(s.min_reps, min(s.reps, int(s.case_budget_seconds / max(rep_cost, 1e-9))))
    samples = []
    for _ in range(reps):
        t0 = now()
        body(iters)
        samples.append((now() - t0) / iters)
    return Timing(median(samples), min(samples), iters, reps)


def throughput(t, flops):
    return dict(metric="GFLOP/s", value=flops / t.median / 1e9, timing=t,
                extra=dict(us=t.median * 1e6, best=flops / t.min / 1e9))


def bandwidth(t, nbytes):
    return dict(metric="GB/s", value=nbytes / t.median / 1e9, timing=t,
                extra=dict(us=t.median * 1e6, best=nbytes / t.min / 1e9))


def micros(t):
    return dict(metric="us", value=t.median * 1e6, timing=t, extra=dict(best=t.min * 1e6))


def millis(t):
    return dict(metric="ms", value=t.median * 1e3, timing=t, extra=dict(best=t.min * 1e3))


def seconds(t):
    return dict(metric="s", value=t.median, timing=t, extra=dict(best=t.min))


def skip(why):
    """A case that cannot run here (Harness.swift's BenchResult.skip)."""
    return dict(skipped=why)


# --- cases (mirror of Benchmarks/Cases.swift) ----------------------------------------------------------------

def sgemm_case(n):
    def run(s):
        a, b = torch.randn(n, n), torch.randn(n, n)

        def body(iters):
            for _ in range(iters):
                torch.mm(a, b)
        return throughput(measure(s, body), 2.0 * n * n * n)
    return run


def add_tiny_case(s):
    a, b = torch.randn(10), torch.randn(10)

    def body(iters):
        for _ in range(iters):
            a + b
    return micros(measure(s, body))


def tiny_forward_backward_case(s):
    w, x = torch.randn(10, requires_grad=True), torch.randn(10)

    def body(iters):
        for _ in range(iters):
            w.grad = None
            (w * x).sum().backward()
    return micros(measure(s, body))


def add_big_case(s):
    a, b = torch.randn(BIG_N), torch.randn(BIG_N)

    def body(iters):
        for _ in range(iters):
            a + b
    return bandwidth(measure(s, body), 12.0 * BIG_N)


def exp_big_case(s):
    a = torch.randn(BIG_N)

    def body(iters):
        for _ in range(iters):
            a.exp()
    return bandwidth(measure(s, body), 8.0 * BIG_N)


def leaky_relu_big_case(s):
    a = torch.randn(BIG_N)

    def body(iters):
        for _ in range(iters):
            torch.nn.functional.leaky_relu(a, 0.1)
    return bandwidth(measure(s, body), 8.0 * BIG_N)


def sum_big_case(s):
    a = torch.randn(BIG_N)

    def body(iters):
        for _ in range(iters):
            a.sum()
    return bandwidth(measure(s, body), 4.0 * BIG_N)


# --- checkpoint I/O (twin of Benchmarks/SaveLoadCases.swift) -------------------------------------------------

CHECKPOINT_TENSORS = 25
CHECKPOINT_BYTES = float(CHECKPOINT_TENSORS * 1024 * 1024 * 4)


def checkpoint_case(fmt, save, read=False):
    def run(s):
        import collections
        import os
        import tempfile
        from safetensors.torch import load_file, save_file
        sd = collections.OrderedDict((f"layer{i}.weight", torch.randn(1024, 1024)) for i in range(CHECKPOINT_TENSORS))
        path = os.path.join(tempfile.gettempdir(), f"torch-bench-{os.getpid()}-ckpt.{fmt}")

        def write():
            if fmt == "pt":
                torch.save(sd, path)
            else:
                save_file(sd, path)
        write()

        def body(iters):
            for _ in range(iters):
                if save:
                    write()
                    continue
                loaded = torch.load(path, weights_only=True, mmap=True) if fmt == "pt" else load_file(path)
                if read:
                    for t in loaded.values():
                        t.sum()
        try:
            return bandwidth(measure(s, body), CHECKPOINT_BYTES)
        finally:
            os.unlink(path)
    return run


# --- recurrent layers (twin of Benchmarks/RecurrentCases.swift) ----------------------------------------------

def lstm_step_case(s):
    lstm, fc = torch.nn.LSTM(28, 128, batch_first=True), torch.nn.Linear(128, 10)
    criterion = torch.nn.CrossEntropyLoss()
    opt = torch.optim.Adam(list(lstm.parameters()) + list(fc.parameters()), lr=1e-3)
    x, y = torch.randn(64, 28, 28), torch.randint(0, 10, (64,))

    def body(iters):
        for _ in range(iters):
            opt.zero_grad()
            out, _ = lstm(x)
            loss = criterion(fc(out[:, -1, :]), y)
            loss.backward()
            opt.step()
    return millis(measure(s, body))


# --- training (twin of Benchmarks/TrainingCases.swift) -----------------------------------------------------

FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"


def mlp_step_case(adam):
    def run(s):
        from tutorial000_mlp import Net
        model = Net(28 * 28, 300, 100, 10)
        x, y = torch.randn(64, 28 * 28), torch.randint(0, 10, (64,))
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = (torch.optim.Adam(model.parameters(), lr=1e-3) if adam
                     else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5))
        model.train()

        def body(iters):
            for _ in range(iters):
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        return millis(measure(s, body))
    return run


def mlp_epoch_case(s):
    import os
    import torchvision.transforms as transforms
    from torch.utils.data import DataLoader
    from torchvision.datasets import FashionMNIST
    from tutorial000_mlp import Net, torchvision_root
    if not os.path.exists(os.path.join(FASHION_MNIST_ROOT, "train-images-idx3-ubyte.gz")):
        return skip(f"{FASHION_MNIST_ROOT} has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    train = FashionMNIST(torchvision_root(FASHION_MNIST_ROOT), train=True, transform=transform, download=False)
    loader = DataLoader(train, batch_size=64, shuffle=True)
    model = Net(28 * 28, 300, 100, 10)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    totals = [0.0, 0.0]

    def body(iters):
        for _ in range(iters):
            for img, label in loader:
                img = img.view(img.size(0), -1)
                out = model(img)
                loss = criterion(out, label)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                totals[0] += loss.item()
                _, pred = out.max(1)
                totals[1] += (pred == label).sum().item() / img.shape[0]
    return seconds(measure(s, body))


def two_layer_adam_step_case(s):
    x, y = torch.randn(64, 1000), torch.randn(64, 10)
    model = torch.nn.Sequential(torch.nn.Linear(1000, 100, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(100, 10, bias=False))
    torch.nn.init.normal_(model[0].weight)
    torch.nn.init.normal_(model[2].weight)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def body(iters):
        for _ in range(iters):
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return millis(measure(s, body))


class FashionCNN(torch.nn.Module):
    """Twin of TutorialModels.FashionCNN: 2 x (conv 3x3 pad 1, BatchNorm2d, ReLU, max-pool 2), Linear, ReLU, Linear."""

    def __init__(self, num_classes=10):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(64 * 7 * 7, 128), nn.ReLU(inplace=True), nn.Linear(128, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class LeNet5(torch.nn.Module):
    """Twin of TutorialModels.TutorialLeNet5 (tutorial 001's LeNet-5 on 3x32x32)."""

    def __init__(self, in_channels=3, num_classes=10):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, kernel_size=5), nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=2, stride=2))
        self.classifier = nn.Sequential(nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace=True), nn.Linear(120, 84),
                                        nn.ReLU(inplace=True), nn.Linear(84, num_classes))

    def forward(self, x):
        f = self.features(x)
        return self.classifier(f.view(f.size(0), -1))


CONV_FLOPS = 2.0 * 32 * 64 * 64 * 9 * 32 * 32


def conv_forward_case(s):
    import torch.nn.functional as F
    x, w, b = torch.randn(32, 64, 32, 32), torch.randn(64, 64, 3, 3), torch.randn(64)

    def body(iters):
        with torch.no_grad():
            for _ in range(iters):
                F.conv2d(x, w, b, padding=1)
    return throughput(measure(s, body), CONV_FLOPS)


def conv_forward_backward_case(s):
    import torch.nn.functional as F
    x = torch.randn(32, 64, 32, 32, requires_grad=True)
    w = torch.randn(64, 64, 3, 3, requires_grad=True)
    b = torch.randn(64, requires_grad=True)

    def body(iters):
        for _ in range(iters):
            x.grad = w.grad = b.grad = None
            F.conv2d(x, w, b, padding=1).sum().backward()
    return throughput(measure(s, body), 3 * CONV_FLOPS)


def max_pool_case(s):
    import torch.nn.functional as F
    x = torch.randn(64, 6, 28, 28, requires_grad=True)

    def body(iters):
        for _ in range(iters):
            x.grad = None
            F.max_pool2d(x, 2, 2).sum().backward()
    return millis(measure(s, body))


def train_step(make_model, shape, lr=0.001, momentum=0.9):
    """One SGD-momentum train step of make_model() on a fixed random batch of `shape`, as a function."""
    model = make_model()
    model.train()
    x, y = torch.randn(*shape), torch.randint(0, 10, (shape[0],))
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    def step():
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    return step


def train_step_case(make_model, shape, lr=0.001, momentum=0.9):
    def run(s):
        step = train_step(make_model, shape, lr, momentum)

        def body(iters):
            for _ in range(iters):
                step()
        return millis(measure(s, body))
    return run


def resnet18_scaling_case(s):
    """resnet18_step at the case's thread count against 1 thread, pairs of two steps alternating, wall clock
    (see Benchmarks/ConvCases.swift's resnet18ScalingCase)."""
    threads = torch.get_num_threads()
    step = train_step(resnet18_10, (32, 3, 32, 32))

    def seconds_per_step(n):
        torch.set_num_threads(n)
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        step()
        return (time.perf_counter() - t0) / 2, (time.process_time() - c0) / 2

    seconds_per_step(1), seconds_per_step(threads)
    one, many, cpu_one, cpu_many = [], [], [], []
    for pair in range(5 if s.quick else 15):
        if pair % 2 == 0:
            a = seconds_per_step(1); b = seconds_per_step(threads)
        else:
            b = seconds_per_step(threads); a = seconds_per_step(1)
        one.append(a[0]); many.append(b[0]); cpu_one.append(a[1]); cpu_many.append(b[1])
    torch.set_num_threads(threads)
    ratios = [a / b for a, b in zip(one, many)]
    return dict(metric="x", value=median(ratios), timing=Timing(median(many), min(many), 2, len(ratios)),
                extra=dict(min=min(ratios), max=max(ratios), ms_1_thread=median(one) * 1e3,
                           ms_n_threads=median(many) * 1e3, cpu_ms_1_thread=median(cpu_one) * 1e3,
                           cpu_ms_n_threads=median(cpu_many) * 1e3))


def median(values):
    v = sorted(values)
    k = len(v)
    return v[k // 2] if k % 2 == 1 else (v[k // 2 - 1] + v[k // 2]) / 2


def resnet18_10():
    import torchvision
    model = torchvision.models.resnet18()
    model.fc = torch.nn.Linear(512, 10)
    return model


def eval_forward_case(build):
    """`build()`'s model in eval mode on one 3x224x224 image under no_grad (ms)."""
    def case(s):
        model = build().eval()
        x = torch.randn(1, 3, 224, 224)

        def body(iters):
            with torch.no_grad():
                for _ in range(iters):
                    model(x)
        return millis(measure(s, body))
    return case


def resnet18_forward_case(s):
    import torchvision
    return eval_forward_case(torchvision.models.resnet18)(s)


def mobilenet_v2_forward_case(s):
    import torchvision
    return eval_forward_case(torchvision.models.mobilenet_v2)(s)


def depthwise_conv_case(s):
    import torch.nn.functional as F
    x = torch.randn(8, 96, 56, 56, requires_grad=True)
    w = torch.randn(96, 1, 3, 3, requires_grad=True)

    def body(iters):
        for _ in range(iters):
            x.grad = w.grad = None
            F.conv2d(x, w, padding=1, groups=96).sum().backward()
    return millis(measure(s, body))


def cnn_epoch_case(s):
    import os
    import torchvision.transforms as transforms
    from torch.utils.data import DataLoader
    from torchvision.datasets import FashionMNIST
    from tutorial000_mlp import torchvision_root
    if not os.path.exists(os.path.join(FASHION_MNIST_ROOT, "train-images-idx3-ubyte.gz")):
        return skip(f"{FASHION_MNIST_ROOT} has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    train = FashionMNIST(torchvision_root(FASHION_MNIST_ROOT), train=True, transform=transform, download=False)
    loader = DataLoader(train, batch_size=64, shuffle=True)
    model = FashionCNN()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    total = [0.0]

    def body(iters):
        for _ in range(iters):
            for img, label in loader:
                optimizer.zero_grad()
                loss = criterion(model(img), label)
                loss.backward()
                optimizer.step()
                total[0] += loss.item()
    return seconds(measure(s, body))


def decode_case(name):
    """Issue 10's decode target: Pillow decoding one of scikit-image's photos from bytes in memory, ms per image
    (twin of Benchmarks/VisionCases.swift's decodeCase, which calls io.decodeImage on the same bytes)."""
    def run(s):
        import io
        import os
        from PIL import Image
        try:
            import skimage
        except ImportError:
            return skip("scikit-image is not installed (pip install scikit-image)")
        path = os.path.join(os.path.dirname(skimage.__file__), "data", name)
        if not os.path.exists(path):
            return skip(f"scikit-image's {name} not found")
        data = open(path, "rb").read()

        def body(iters):
            for _ in range(iters):
                im = Image.open(io.BytesIO(data))
                im.load()
        return millis(measure(s, body))
    return run


def vision_pipeline_case(workers):
    """Issue 10's augmentation pipeline: Fashion-MNIST through ToTensor + Normalize(0.5, 0.5) + RandomCrop(28,
    padding=2) + RandomHorizontalFlip in DataLoader(batch_size=64, shuffle=True, num_workers=workers); one epoch
    per iteration, reported as images per second (twin of Benchmarks/VisionCases.swift)."""
    def run(s):
        import os
        import torchvision.transforms as transforms
        from torch.utils.data import DataLoader
        from torchvision.datasets import FashionMNIST
        from tutorial000_mlp import torchvision_root
        if not os.path.exists(os.path.join(FASHION_MNIST_ROOT, "train-images-idx3-ubyte.gz")):
            return skip(f"{FASHION_MNIST_ROOT} has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5]),
                                        transforms.RandomCrop(28, padding=2), transforms.RandomHorizontalFlip()])
        train = FashionMNIST(torchvision_root(FASHION_MNIST_ROOT), train=True, transform=transform, download=False)
        loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=workers)
        seen = [0]

        def body(iters):
            for _ in range(iters):
                for img, label in loader:
                    seen[0] += img.shape[0]
        t = measure(s, body)
        n = len(train)
        return dict(metric="img/s", value=n / t.median, timing=t,
                    extra=dict(s=t.median, best=n / t.min, workers=workers))
    return run


# name, default thread counts, summary, run -- same names and order as registerAllCases() in Cases.swift
CASES = [
    ("sgemm_256", [1], "torch.mm 256x256 @ 256x256 float32", sgemm_case(256)),
    ("sgemm_512", [1], "torch.mm 512x512 @ 512x512 float32", sgemm_case(512)),
    ("sgemm_1024", [1, 2], "torch.mm 1024x1024 @ 1024x1024 float32", sgemm_case(1024)),
    ("sgemm_2048", [1], "torch.mm 2048x2048 @ 2048x2048 float32", sgemm_case(2048)),
    ("add_10", [1], "a + b, 10 float32 elements (us per op)", add_tiny_case),
    ("mul_sum_backward_10", [1], "w.grad = None; (w * x).sum().backward(), 10 elements (us per iteration)",
     tiny_forward_backward_case),
    ("add_4M", [1, 2], "a + b, 4M float32 elements (GB/s, 12 bytes/element)", add_big_case),
    ("exp_4M", [1], "a.exp(), 4M float32 elements (GB/s, 8 bytes/element)", exp_big_case),
    ("sum_4M", [1], "a.sum(), 4M float32 elements (GB/s, 4 bytes/element)", sum_big_case),
    ("leaky_relu_4M", [1, 2], "F.leaky_relu(a, 0.1), 4M float32 elements (GB/s, 8 bytes/element)", leaky_relu_big_case),
    ("torch_save_100MB", [1], "torch.save of a 100 MB state dict (GB/s; no fsync)", checkpoint_case("pt", True)),
    ("torch_load_100MB", [1], "torch.load(weights_only=True, mmap=True) of a 100 MB state dict (GB/s)",
     checkpoint_case("pt", False)),
    ("torch_load_100MB_read", [1], "torch.load(mmap=True) of a 100 MB state dict + a sum of every tensor (GB/s)",
     checkpoint_case("pt", False, read=True)),
    ("safetensors_save_100MB", [1], "safetensors save_file of 100 MB (GB/s; no fsync)", checkpoint_case("st", True)),
    ("safetensors_load_100MB", [1], "safetensors load_file of 100 MB (GB/s)", checkpoint_case("st", False)),
    ("lstm_step", [1], "LSTM(28,128,batch_first) + Linear(128,10) + CrossEntropyLoss + Adam, x [64,28,28]: "
     "one train step (ms)", lstm_step_case),

    ("mlp_step_sgd", [1], "tutorial 000 MLP train step, batch 64, SGD momentum 0.5 (ms)", mlp_step_case(False)),
    ("mlp_step_adam", [1], "tutorial 000 MLP train step, batch 64, Adam (ms)", mlp_step_case(True)),
    ("mlp_epoch", [1], "tutorial 000 MLP, one Fashion-MNIST epoch through DataLoader batch 64 shuffle (s)",
     mlp_epoch_case),
    ("twolayer_adam_step", [1], "tutorial 003 64x1000 -> 100 -> 10, ReLU, MSELoss sum, Adam step (ms)",
     two_layer_adam_step_case),
    ("conv2d_64x64_fwd", [1], "F.conv2d 64->64 3x3 pad 1, batch 32 of 32x32, forward (GFLOP/s)", conv_forward_case),
    ("conv2d_64x64_fwdbwd", [1], "the same conv forward + backward (GFLOP/s, 3x the forward FLOPs)",
     conv_forward_backward_case),
    ("maxpool2d_fwdbwd", [1], "F.max_pool2d(x, 2, 2) forward + backward, x 64x6x28x28 (ms)", max_pool_case),
    ("lenet5_step", [1, 2], "tutorial 001 LeNet-5 train step, batch 64 3x32x32, SGD momentum 0.9 (ms)",
     train_step_case(LeNet5, (64, 3, 32, 32))),
    ("cnn_epoch", [1], "2 conv+BN+pool, 2 linear CNN, one Fashion-MNIST epoch, batch 64, Adam (s)", cnn_epoch_case),
    ("resnet18_fwd", [1], "torchvision resnet18 eval forward, batch 1 of 3x224x224, no grad (ms)", resnet18_forward_case),
    ("depthwise_conv_fwdbwd", [1], "F.conv2d depthwise 3x3 pad 1, 96 channels, batch 8 of 56x56, forward + backward (ms)",
     depthwise_conv_case),
    ("mobilenet_v2_fwd", [1], "torchvision mobilenet_v2 eval forward, batch 1 of 3x224x224, no grad (ms)", mobilenet_v2_forward_case),
    ("resnet18_step", [1, 2], "resnet18 (fc -> 10 classes) train step, batch 32 of 3x32x32, SGD momentum 0.9 (ms)",
     train_step_case(resnet18_10, (32, 3, 32, 32))),
    ("resnet18_b256_step", [1], "resnet18 (fc -> 10 classes) train step, batch 256 of 3x32x32, SGD momentum 0.9 (ms)",
     train_step_case(resnet18_10, (256, 3, 32, 32))),
    ("resnet18_scaling", [2], "resnet18_step at n threads against 1 thread in the same process, pairs of steps alternating (x)",
     resnet18_scaling_case),
    ("vision_pipeline_w0", [1], "Fashion-MNIST epoch through ToTensor+Normalize+RandomCrop(28, padding 2)+RandomHorizontalFlip, "
     "DataLoader batch 64 shuffle, num_workers 0 (img/s)", vision_pipeline_case(0)),
    ("vision_pipeline_w2", [1], "the same pipeline with num_workers 2 (img/s)", vision_pipeline_case(2)),
    ("decode_png", [1], "decode scikit-image's astronaut.png (512x512 RGB) from memory (ms)", decode_case("astronaut.png")),
    ("decode_jpeg", [1], "decode scikit-image's hubble_deep_field.jpg (872x1000 RGB) from memory (ms)",
     decode_case("hubble_deep_field.jpg")),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", action="append", default=[],
                   help="run cases whose name contains any of these comma-separated substrings")
    p.add_argument("--exact", action="store_true", help="--filter names whole case names")
    p.add_argument("--threads", help="comma-separated thread counts for every selected case")
    p.add_argument("--quick", action="store_true", help="shorter warm-up and repetitions")
    p.add_argument("--cpu-time", action="store_true",
                   help="time with the process CPU-time clock (one-thread cases on a busy machine)")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    args = p.parse_args()

    filters = [f for arg in args.filter for f in arg.split(",") if f]
    threads = None
    if args.threads:
        threads = [int(t) for t in args.threads.split(",")]
        if not threads or any(t <= 0 for t in threads):
            p.error("--threads needs positive integers")
    if args.list:
        for name, ths, summary, _ in CASES:
            print(f"{name}\tthreads {','.join(map(str, ths))}\t{summary}")
        return 0
    selected = [c for c in CASES if not filters or any((f == c[0]) if args.exact else (f in c[0]) for f in filters)]
    if not selected:
        print(f"no case matches {filters}; try --list", file=sys.stderr)
        return 1

    s = Settings(args.quick)
    if args.cpu_time:
        global now
        now = time.process_time  # CLOCK_PROCESS_CPUTIME_ID, as the Swift harness's --cpu-time
    print(f"# PyTorch {torch.__version__} benchmarks: default_threads={torch.get_num_threads()} "
          f"mkldnn={torch.backends.mkldnn.is_available()} cpu_capability={torch.backends.cpu.get_cpu_capability()}"
          + (" (quick)" if s.quick else "") + (" (cpu time)" if args.cpu_time else ""), file=sys.stderr)
    for name, ths, _, run in selected:
        for n in threads or ths:
            torch.set_num_threads(n)
            torch.manual_seed(0)
            r = run(s)
            if "skipped" in r:
                print(f"# {name}: skipped: {r['skipped']}", file=sys.stderr, flush=True)
                continue
            t = r["timing"]
            line = {"case": name, "threads": n, "metric": r["metric"], "value": r["value"],
                    "iters": t.iters, "reps": t.reps}
            line.update(r["extra"])
            line["lib"] = "pytorch"
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
