#!/usr/bin/env python3
"""Fits the alpha-beta model of a ring all-reduce to `ddp-worker bench-allreduce` output and
predicts the time of an all-reduce on more ranks.

    mpirun -np 2 .build/release/ddp-worker bench-allreduce | python3 scripts/alpha_beta.py

Ring all-reduce of n bytes on p ranks: T(p, n) = 2 (p - 1) alpha + 2 (p - 1) / p * n * beta
(a reduce-scatter then an all-gather; beta also absorbs the reduction arithmetic). With p = 2 the
measurements give T = 2 alpha + n beta: alpha from the smallest message (pure latency), beta as the
least-squares slope through the messages of 1 MiB and more (pure bandwidth; the sizes in between sit
in the caches and fit neither). Pure Python, no NumPy needed.
"""
import re
import sys


def main():
    pts = []
    world = 2
    for line in sys.stdin:
        m = re.search(r"RESULT allreduce bytes=(\d+) world=(\d+) mpiMicros=([\d.e+-]+) distMicros=([\d.e+-]+)", line)
        if m:
            world = int(m.group(2))
            pts.append((int(m.group(1)), float(m.group(4)) * 1e-6))
    if len(pts) < 2:
        sys.exit("no RESULT allreduce lines on stdin")
    pts.sort()
    a = pts[0][1]                                   # 2 (p - 1) alpha, from the smallest message
    big = [(n, t - a) for n, t in pts if n >= 1 << 20]
    b = sum(n * t for n, t in big) / sum(n * n for n, _ in big)   # slope through the origin
    p = world
    alpha = a / (2 * (p - 1))
    beta = b / (2 * (p - 1) / p)
    print(f"fitted on {len(pts)} sizes, {p} ranks: alpha = {alpha * 1e6:.2f} us, beta = {beta * 1e9:.4f} ns/byte "
          f"({1 / beta / 1e9:.2f} GB/s)")
    for n, t in pts:
        print(f"  {n:>10d} B  measured {t * 1e6:10.1f} us  model {(a + b * n) * 1e6:10.1f} us")
    print("predicted ring all-reduce time with the same alpha and beta (one machine's links; see docs/distributed.md):")
    print("     bytes      p=2          p=8          p=64")
    for n in [1 << 20, 4 << 20, 25 << 20, 45 << 20, 100 << 20]:
        cols = [2 * (q - 1) * alpha + 2 * (q - 1) / q * n * beta for q in (2, 8, 64)]
        print(f"  {n:>10d}  " + "  ".join(f"{c * 1e3:9.2f} ms" for c in cols))


if __name__ == "__main__":
    main()
