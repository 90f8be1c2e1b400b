#!/usr/bin/env python3
"""PyTorch DDP (gloo) baseline for SwiftTorch's `ddp-worker bench-ddp`: the same workloads, one
process without DDP against N processes with DDP, one thread per process.

    /root/torchenv/bin/python scripts/bench_ddp_pytorch.py mlp [steps]       # tutorial 000's MLP, batch 64/rank
    /root/torchenv/bin/python scripts/bench_ddp_pytorch.py resnet18 [steps]  # ResNet-18 on 3x32x32, batch 32/rank

Without a launcher it spawns 1 and then 2 processes itself. Under torchrun (as scripts/scaling runs it) it is one
rank of the launched world, and rank 0 prints the one RESULT line of that world size (one process: no DDP):

    python -m torch.distributed.run --standalone --nproc_per_node 4 scripts/bench_ddp_pytorch.py resnet18 [steps]

Never needed by the tests.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class TutorialMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(784, 300), nn.BatchNorm1d(300))
        self.layer2 = nn.Sequential(nn.Linear(300, 100), nn.BatchNorm1d(100))
        self.layer3 = nn.Sequential(nn.Linear(100, 10))

    def forward(self, x):
        return self.layer3(F.relu(self.layer2(F.relu(self.layer1(x)))))


def worker(rank, world, kind, steps, queue):
    torch.set_num_threads(1)
    if world > 1:  # under torchrun MASTER_ADDR and MASTER_PORT are set already
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    if kind == "mlp":
        net, batch, shape, warmup = TutorialMLP(), 64, (64, 784), 20
    else:
        import torchvision
        net, batch, shape, warmup = torchvision.models.resnet18(num_classes=10), 32, (32, 3, 32, 32), 3
    model = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batches = [(torch.randn(*shape), torch.randint(0, 10, (batch,))) for _ in range(4)]

    def step(i):
        x, y = batches[i % 4]
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for i in range(warmup):
        step(i)
    if world > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    if world > 1:
        dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        queue.put(world * batch * steps / seconds)
    if world > 1:
        dist.destroy_process_group()


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else (400 if kind == "mlp" else 20)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # launched by torchrun: one rank of its world
        world = int(os.environ["WORLD_SIZE"])
        rank = int(os.environ["RANK"])

        class Printer:
            def put(self, samples_per_sec):
                print(f"RESULT pytorch-ddp model={kind} world={world} samplesPerSec={samples_per_sec:.1f} "
                      f"torch={torch.__version__}", flush=True)
        worker(rank, world, kind, steps, Printer())
        return
    ctx = mp.get_context("spawn")
    results = {}
    for world in (1, 2):
        q = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, world, kind, steps, q)) for r in range(world)]
        for p in procs:
            p.start()
        results[world] = q.get()
        for p in procs:
            p.join()
        print(f"RESULT pytorch-ddp model={kind} world={world} samplesPerSec={results[world]:.1f}", flush=True)
    print(f"PyTorch {torch.__version__} DDP gloo {kind}: 2 processes = {results[2] / results[1]:.2f}x one process")


if __name__ == "__main__":
    main()
