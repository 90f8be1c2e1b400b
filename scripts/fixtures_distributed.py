#!/usr/bin/env python3
"""Writes Tests/Fixtures/distributed.json: torch.utils.data.DistributedSampler's index lists for
several dataset sizes, replica counts, ranks, seeds, epochs, shuffle and drop_last settings.

    /root/torchenv/bin/python scripts/fixtures_distributed.py

Tests never need PyTorch; only this script does.
"""
import json
import os

import torch
from torch.utils.data import DistributedSampler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def main():
    cases = []
    for n in [0, 1, 5, 10, 17, 64, 101, 1000]:
        for replicas in [1, 2, 3, 4, 8]:
            for shuffle in [False, True]:
                for drop_last in [False, True]:
                    for seed, epoch in [(0, 0), (0, 1), (42, 3)] if shuffle else [(0, 0)]:
                        lists = []
                        for rank in range(replicas):
                            s = DistributedSampler(Sized(n), num_replicas=replicas, rank=rank, shuffle=shuffle,
                                                   seed=seed, drop_last=drop_last)
                            s.set_epoch(epoch)
                            idx = list(s)
                            assert len(idx) == len(s)
                            lists.append(idx)
                        cases.append({"n": n, "num_replicas": replicas, "shuffle": shuffle, "drop_last": drop_last,
                                      "seed": seed, "epoch": epoch, "indices": lists})
    out = os.path.join(ROOT, "Tests", "Fixtures", "distributed.json")
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
    print(f"wrote {out}: {len(cases)} sampler cases (torch {torch.__version__})")


if __name__ == "__main__":
    main()
