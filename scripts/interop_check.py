#!/usr/bin/env python3
"""Interop check: SwiftTorch's files in real PyTorch and safetensors, and back.

Run by hand where torch and safetensors are installed (tests never need this):
    /root/torchenv/bin/python scripts/interop_check.py [--release]

1. Builds and runs SaveLoadTests.testInteropExport with SWIFTTORCH_INTEROP_DIR set: SwiftTorch
   trains nn.Sequential(Linear(4, 8), ReLU(), Linear(8, 2)) with SGD + momentum for 30 steps and
   writes model.pt (its state dict), optimizer.pt, checkpoint.pt (model + optimizer + epoch +
   losses + input/target/output), after_step.pt (the parameters after one more step),
   tensors.pt (every dtype, a tied weight, views), tensors.safetensors and expected.json (the
   exact bytes of every tensor).
2. PyTorch loads every .pt with weights_only=True (and with mmap=True); the archives have no
   unsafe globals, good CRCs, 64-byte-aligned records, only the opcodes of docs/formats.md §1.4;
   the same nn.Sequential loads the state dict strictly and reproduces SwiftTorch's outputs within
   1e-6; torch.optim.SGD resumes from optimizer.pt and its next step matches SwiftTorch's within
   1e-6; every tensor is bit-identical, with the same strides and offsets; tied weights stay tied.
3. safetensors.torch.load_file reads SwiftTorch's .safetensors, bit-identically.
4. convert-checkpoint converts a torch-made .pt to .safetensors and a safetensors-made file to .pth,
   and both load in Python unchanged.
"""
import json
import os
import pickletools
import subprocess
import sys
import tempfile
import zipfile

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED_OPCODES = {"PROTO", "GLOBAL", "MARK", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE", "EMPTY_LIST",
                   "EMPTY_DICT", "EMPTY_SET", "BINUNICODE", "SHORT_BINSTRING", "BININT", "BININT1", "BININT2", "LONG1",
                   "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET",
                   "REDUCE", "NEWOBJ", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "BINPERSID", "STOP"}
failures = []


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what)
    if not cond:
        failures.append(what)


def raw_hex(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex()


def same_tensor(t, e):
    return (str(t.dtype).replace("torch.", "") == e["dtype"] and list(t.shape) == e["shape"]
            and raw_hex(t) == e["hex"])


def run(cmd, env=None):
    print("$ " + " ".join(cmd))
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:])
        sys.exit(f"command failed: {' '.join(cmd)}")
    return r.stdout


def check_archive(path):
    name = os.path.basename(path)
    check(torch.serialization.get_unsafe_globals_in_checkpoint(path) == [], f"{name}: no unsafe globals")
    with zipfile.ZipFile(path) as z:
        check(z.testzip() is None, f"{name}: zipfile CRCs good")
        pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    ops = {op.name for op, _, _ in pickletools.genops(pkl)}
    check(ops <= ALLOWED_OPCODES, f"{name}: data.pkl uses only docs/formats.md §1.4 opcodes ({sorted(ops - ALLOWED_OPCODES)} extra)")
    r = torch._C.PyTorchFileReader(path)
    offsets = [r.get_record_offset(n) % 64 for n in r.get_all_records()]
    check(all(o == 0 for o in offsets), f"{name}: all {len(offsets)} records 64-byte aligned")


def main():
    config = ["-c", "release", "-Xswiftc", "-enable-testing"] if "--release" in sys.argv else []
    out = tempfile.mkdtemp(prefix="swifttorch-interop-")
    env = dict(os.environ, SWIFTTORCH_INTEROP_DIR=out)
    print(f"1. SwiftTorch writes its files into {out}")
    run(["swift", "build", "--build-tests"] + config, env)
    run(["swift", "test", "--skip-build", "--filter", "SaveLoadTests.testInteropExport"] + config, env)
    expected = json.load(open(os.path.join(out, "expected.json")))["tensors"]

    print("2. PyTorch", torch.__version__, "loads them with weights_only=True")
    for f in ["model.pt", "optimizer.pt", "checkpoint.pt", "after_step.pt", "tensors.pt"]:
        check_archive(os.path.join(out, f))

    # The trained model: same module in PyTorch, strict load, same outputs.
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    msd = torch.load(os.path.join(out, "model.pt"), weights_only=True)
    check(type(msd).__name__ == "OrderedDict" and list(msd) == ["0.weight", "0.bias", "2.weight", "2.bias"],
          f"model.pt: OrderedDict with PyTorch's keys {list(msd)}")
    check(all(same_tensor(msd[k], expected["model/" + k]) for k in msd) and len(msd) == 4,
          "model.pt: every tensor bit-identical to SwiftTorch's")
    model.load_state_dict(msd, strict=True)
    ck = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=True)
    check(ck["epoch"] == 30 and len(ck["losses"]) == 30 and ck["losses"][-1] < ck["losses"][0],
          f"checkpoint.pt: epoch {ck['epoch']}, loss {ck['losses'][0]:.4f} -> {ck['losses'][-1]:.6f}")
    check(all(torch.equal(ck["model_state_dict"][k], msd[k]) for k in msd), "checkpoint.pt: model_state_dict equals model.pt")
    with torch.no_grad():
        y = model(ck["input"])
    diff = (y - ck["output"]).abs().max().item()
    check(diff <= 1e-6, f"the model's outputs in PyTorch match SwiftTorch's on the saved input (max diff {diff:.2e})")

    # Resume training in PyTorch from SwiftTorch's checkpoint: the next step matches SwiftTorch's.
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    osd = torch.load(os.path.join(out, "optimizer.pt"), weights_only=True)
    bufs = [(f"optimizer/{i}/{name}", t) for i, st in osd["state"].items() for name, t in st.items()]
    check(len(bufs) == 4 and all(same_tensor(t, expected[k]) for k, t in bufs),
          f"optimizer.pt: {len(bufs)} momentum buffers bit-identical to SwiftTorch's")
    opt.load_state_dict(osd)
    g = opt.param_groups[0]
    check(g["lr"] == 0.02 and g["momentum"] == 0.9 and g["weight_decay"] == 1e-4 and len(opt.state) == 4,
          f"optimizer.pt: torch.optim.SGD.load_state_dict accepts it ({len(opt.state)} momentum buffers)")
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(ck["input"]), ck["target"]).backward()
    opt.step()
    after = torch.load(os.path.join(out, "after_step.pt"), weights_only=True)
    diff = max((p - after[k]).abs().max().item() for k, p in model.state_dict().items())
    check(diff <= 1e-6, f"one more SGD step in PyTorch from the checkpoint equals SwiftTorch's next step (max diff {diff:.2e})")
    check(all(same_tensor(after[k], expected["after_step/" + k]) for k in after), "after_step.pt: bit-identical to SwiftTorch's tensors")

    # Every dtype, tied weights and views.
    sd = torch.load(os.path.join(out, "tensors.pt"), weights_only=True)
    names = [k for k in expected if not k.startswith(("after_step/", "model/", "optimizer/"))]
    check(set(sd) == set(names), f"tensors.pt: {len(sd)} tensors, the expected keys")
    for k in names:
        t, e = sd[k], expected[k]
        check(same_tensor(t, e) and list(t.stride()) == e["stride"] and t.storage_offset() == e["offset"],
              f"tensors.pt[{k!r}]: {t.dtype} {tuple(t.shape)} stride {t.stride()} offset {t.storage_offset()} bit-identical")
    check(sd["linear.weight"].untyped_storage().data_ptr() == sd["head.weight"].untyped_storage().data_ptr()
          == sd["weight_t"].untyped_storage().data_ptr() == sd["row1"].untyped_storage().data_ptr(),
          "tensors.pt: tied weight and views share one storage")
    mm = torch.load(os.path.join(out, "tensors.pt"), weights_only=True, mmap=True)
    check(all(torch.equal(mm[k], sd[k]) for k in sd) and
          mm["linear.weight"].untyped_storage().data_ptr() == mm["head.weight"].untyped_storage().data_ptr(),
          "tensors.pt: mmap=True load (torch's storage-offset fast path) gives the same tensors, still tied")

    print("3. safetensors loads SwiftTorch's .safetensors")
    st_path = os.path.join(out, "tensors.safetensors")
    st = load_file(st_path)
    check(all(same_tensor(st[k], expected[k]) for k in st) and len(st) == len(names) - 3,
          f"tensors.safetensors: {len(st)} tensors bit-identical ({', '.join(sorted(st))})")
    with safe_open(st_path, "pt") as f:
        check(f.metadata() == {"format": "pt"}, f"tensors.safetensors: metadata {f.metadata()}")

    print("4. convert-checkpoint both ways")
    run(["swift", "build", "--product", "convert-checkpoint"] + config)
    binary = os.path.join(ROOT, ".build", "release" if config else "debug", "convert-checkpoint")
    src = os.path.join(out, "torch_made.pt")
    base = torch.randn(4, 3)
    torch_sd = {"enc.weight": base, "dec.weight": base, "half": torch.randn(3).half(), "idx": torch.arange(4)}
    torch.save(torch_sd, src)
    print(run([binary, src, os.path.join(out, "converted.safetensors")]).strip())
    conv = load_file(os.path.join(out, "converted.safetensors"))
    check(all(torch.equal(conv[k], v) for k, v in torch_sd.items()), "torch .pt -> SwiftTorch -> .safetensors: identical")
    save_file({"a": torch.randn(2, 2), "b": torch.arange(3, dtype=torch.int32)}, os.path.join(out, "py.safetensors"))
    print(run([binary, os.path.join(out, "py.safetensors"), os.path.join(out, "converted.pth")]).strip())
    back = torch.load(os.path.join(out, "converted.pth"), weights_only=True)
    ref = load_file(os.path.join(out, "py.safetensors"))
    check(list(back) == ["a", "b"] and all(torch.equal(back[k], ref[k]) for k in ref),
          "python .safetensors -> SwiftTorch -> .pth: torch.load(weights_only=True) identical")

    print(f"\n{'ALL OK' if not failures else f'{len(failures)} FAILED'}  (files in {out})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
