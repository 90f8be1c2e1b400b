#!/usr/bin/env python3
"""Converts scikit-learn's copy of the UCI 8x8 handwritten digits (1797 images, values 0..16,
CC BY 4.0, E. Alpaydin & C. Kaynak) into IDX files, the format MNIST uses, so the embedded
default dataset loads through the same IDX reader.

    python3 scripts/make_digits.py path/to/sklearn/datasets/data/digits.csv.gz
"""
import gzip
import os
import struct
import sys

src = sys.argv[1]
rows = [list(map(int, line.strip().split(","))) for line in gzip.open(src, "rt") if line.strip()]
images = bytes(v for r in rows for v in r[:64])
labels = bytes(r[64] for r in rows)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "SwiftTorchCLI", "Resources")
with open(os.path.join(out, "digits-images-idx3-ubyte"), "wb") as f:
    f.write(struct.pack(">IIII", 0x803, len(rows), 8, 8) + images)
with open(os.path.join(out, "digits-labels-idx1-ubyte"), "wb") as f:
    f.write(struct.pack(">II", 0x801, len(rows)) + labels)
print(len(rows), "digits written to", out)
