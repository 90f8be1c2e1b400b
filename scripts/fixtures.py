#!/usr/bin/env python3
"""Writes the golden values the Swift tests compare against, using real PyTorch.

Run with a Python that has torch installed (tests never need it):
    python3 scripts/fixtures.py            # all families
    python3 scripts/fixtures.py linalg     # one family

Each module in scripts/fixtures/ defines `cases()` returning a list of JSON-able dicts; the result
is written to Tests/Fixtures/<module>.json. Tensors are encoded with `enc(t)`:
    {"shape": [...], "dtype": "float32", "data": [row-major values]}  (nan/inf as strings)
"""
import importlib
import json
import os
import pkgutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def main():
    import fixtures as pkg
    wanted = set(sys.argv[1:])
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_") or (wanted and info.name not in wanted):
            continue
        mod = importlib.import_module(f"fixtures.{info.name}")
        data = {"cases": mod.cases()}
        out = os.path.join(ROOT, "Tests", "Fixtures", f"{info.name}.json")
        with open(out, "w") as f:
            json.dump(data, f, separators=(",", ":"))
        print(f"wrote {out} ({len(data['cases'])} cases, {os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
