#!/usr/bin/env python3
"""Writes the byte-level serialization fixtures used by the Tests/TorchTests/Serialization*Tests.swift files.

Python 3 standard library only (zipfile, zlib, pickle). Output: Tests/Fixtures/serialization/
  deflate.zip            zip made by zipfile with ZIP_DEFLATED entries (fixed, dynamic and stored
                         DEFLATE blocks, an empty entry) plus one ZIP_STORED entry
  deflate_manifest.json  name, size, CRC-32 and method of every entry of deflate.zip
  nested_p0.pkl          pickle.dumps(NESTED, protocol=0)   (text opcodes)
  nested_p2.pkl          pickle.dumps(NESTED, protocol=2)   (torch.save's protocol)
  nested_p4.pkl          pickle.dumps(NESTED, protocol=4)   (FRAME, SHORT_BINUNICODE, STACK_GLOBAL, MEMOIZE, sets)
  state_dict_p2.pkl      a torch-style state_dict `data.pkl`, made with stand-in `torch` globals and a
                         persistent_id hook exactly as torch.save does (no torch needed)

Run from the repository root:  python3 scripts/make_serialization_fixtures.py
The Swift test spells out the expected values; keep NESTED in sync with it.
"""
import json
import os
import pickle
import random
import sys
import types
import zipfile
import zlib
from collections import OrderedDict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures", "serialization")


def make_zip():
    rng = random.Random(1234)
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
             "sigma tau upsilon phi chi psi omega tensor storage module parameter gradient").split()
    lorem = " ".join(rng.choice(words) for _ in range(20000)).encode()  # ~130 KB: several dynamic blocks
    entries = [
        ("archive/hello.txt", b"Hello, zip!\n", zipfile.ZIP_DEFLATED),       # fixed Huffman
        ("archive/lorem.txt", lorem, zipfile.ZIP_DEFLATED),                  # dynamic Huffman
        ("archive/random.bin", bytes(rng.getrandbits(8) for _ in range(5000)), zipfile.ZIP_DEFLATED),  # stored blocks
        ("archive/empty.txt", b"", zipfile.ZIP_DEFLATED),
        ("archive/stored.bin", bytes(range(256)), zipfile.ZIP_STORED),
        ("archive/dir/nested.txt", b"nested " * 50, zipfile.ZIP_DEFLATED),
    ]
    path = os.path.join(OUT, "deflate.zip")
    manifest = []
    with zipfile.ZipFile(path, "w") as z:
        for name, data, method in entries:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
            info.compress_type = method
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
            manifest.append({"name": name, "size": len(data), "crc32": zlib.crc32(data) & 0xFFFFFFFF,
                             "method": 8 if method == zipfile.ZIP_DEFLATED else 0})
    with open(os.path.join(OUT, "deflate_manifest.json"), "w") as f:
        json.dump({"entries": manifest}, f, indent=1)
        f.write("\n")


def nested():
    shared = [1, 2, 3]
    return {
        "ints": [0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31, 2**63 - 1, -2**63,
                 2**64, -(2**100), 12345678901234567890123],
        "floats": [0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, float("inf"), float("-inf")],
        "strings": ["", "hello", "h\u00e9llo \u2713 \U0001F680", "line\nbreak\\ 'q' \"dq\"", "x" * 300],
        "consts": [True, False, None],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4, 5)],
        "nested": {"a": {"b": {"c": [1, [2, [3, (4, {"d": None})]]]}}},
        7: "int key",
        (1, "x"): "tuple key",
        "bytes": b"\x00\xffabc\n",
        "empty": {"list": [], "dict": {}, "tuple": ()},
        "shared": [shared, shared],
        "set": {1, 2, 3},
        "odict": OrderedDict([("z", 1), ("y", 2)]),
        "long_list": list(range(1500)),
    }


def make_pickles():
    obj = nested()
    for proto in (0, 2, 4):
        with open(os.path.join(OUT, "nested_p%d.pkl" % proto), "wb") as f:
            f.write(pickle.dumps(obj, protocol=proto))


def make_state_dict():
    """A data.pkl as torch.save writes it, using stand-ins for the torch globals."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    torch._utils = utils

    def _rebuild_tensor_v2(*args):
        raise RuntimeError("never called")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2

    class FloatStorage:
        pass

    class LongStorage:
        pass

    for cls in (FloatStorage, LongStorage):
        cls.__module__ = "torch"
        cls.__qualname__ = cls.__name__
        setattr(torch, cls.__name__, cls)
    saved = {k: sys.modules.get(k) for k in ("torch", "torch._utils")}
    sys.modules["torch"] = torch
    sys.modules["torch._utils"] = utils
    try:
        class Storage:
            def __init__(self, cls, key, numel):
                self.cls, self.key, self.numel = cls, key, numel

        class Tensor:
            def __init__(self, storage, offset, size, stride, requires_grad=False):
                self.args = (storage, offset, size, stride, requires_grad, OrderedDict())

            def __reduce_ex__(self, proto):
                return (_rebuild_tensor_v2, self.args)

        class TorchPickler(pickle.Pickler):
            def persistent_id(self, obj):
                if isinstance(obj, Storage):
                    return ("storage", obj.cls, obj.key, "cpu", obj.numel)
                return None

        w = Storage(FloatStorage, "0", 6)
        b = Storage(FloatStorage, "1", 2)
        steps = Storage(LongStorage, "2", 1)
        sd = OrderedDict()
        sd["fc.weight"] = Tensor(w, 0, (2, 3), (3, 1))
        sd["fc.bias"] = Tensor(b, 0, (2,), (1,))
        sd["tied.row"] = Tensor(w, 3, (3,), (1,))     # a view sharing fc.weight's storage
        sd["steps"] = Tensor(steps, 0, (), ())
        sd._metadata = OrderedDict([("", {"version": 1}), ("fc", {"version": 1})])
        path = os.path.join(OUT, "state_dict_p2.pkl")
        with open(path, "wb") as f:
            TorchPickler(f, protocol=2).dump(sd)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def main():
    os.makedirs(OUT, exist_ok=True)
    make_zip()
    make_pickles()
    make_state_dict()
    print("wrote fixtures to", OUT)


if __name__ == "__main__":
    main()
