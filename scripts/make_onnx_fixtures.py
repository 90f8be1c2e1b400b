#!/usr/bin/env python3
"""Writes the PyTorch-exported ONNX fixtures read by Tests/TorchTests/ONNXPyTorchFixtureTests.swift.

Needs torch (2.13 was used), onnx, and onnxscript for the dynamo exporter; run from the repository root:

    python3 scripts/make_onnx_fixtures.py [MODEL ...]       # a virtualenv's python with those packages

Each seed model is built with a fixed seed, put in eval mode (BatchNorm statistics first warmed on random
batches so they are not the identity), and exported twice with a symbolic batch dimension:

    torchscript.onnx   torch.onnx.export(..., dynamo=False)   opset 17, dynamic_axes
    dynamo.onnx        torch.onnx.export(..., dynamo=True)    opset 18, dynamic_shapes
                       (lenet5 also with external_data=True: its weights go to dynamo.onnx.data)

next to one input at a batch size other than the one exported (input_0.pb) and PyTorch's eager output on it
(output_0.pb), both ONNX TensorProtos. The folder is Tests/Fixtures/onnx/pytorch/<model>/; manifest.json lists
the models, their files and the versions that wrote them. Everything is float32 except the token ids (int64).
"""
import json
import os
import shutil
import sys

import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

from bench_pytorch import LeNet5  # tutorial 001's LeNet-5, the twin of TutorialModels.TutorialLeNet5

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures", "onnx", "pytorch")


class TutorialMLP(nn.Module):
    """Tutorial 000's network (Linear+BatchNorm1d, ReLU, twice, then Linear) on the 8×8 digits: 64-32-16-10."""

    def __init__(self, in_dim=64, h1=32, h2=16, out_dim=10):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(in_dim, h1), nn.BatchNorm1d(h1))
        self.layer2 = nn.Sequential(nn.Linear(h1, h2), nn.BatchNorm1d(h2))
        self.layer3 = nn.Sequential(nn.Linear(h2, out_dim))

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


class TwoLayerNet(nn.Module):
    """The two-layer net of the tutorials (no biases), smaller: 32 → 24 → 4."""

    def __init__(self, d_in=32, h=24, d_out=4):
        super().__init__()
        self.linear1 = nn.Linear(d_in, h, bias=False)
        self.linear2 = nn.Linear(h, d_out, bias=False)

    def forward(self, x):
        return self.linear2(self.linear1(x).clamp(min=0))


class ConvNet(nn.Module):
    """Conv/ReLU/MaxPool twice, then Linear, on 1×16×16 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)      # 16 → 14 → 7
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)      # 7 → 5 → 2
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class RecurrentLM(nn.Module):
    """Embedding → LSTM or GRU (batch_first, two layers) → Linear to the vocabulary, per time step."""

    def __init__(self, cell, vocab=40, embed=12, hidden=16, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(embed, hidden, num_layers=layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.embedding(tokens))
        return self.decoder(out)


def warm_batchnorm(model, make_batch):
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(make_batch() * 2 + 0.5)
    model.eval()


def seed_models():
    """(name, model in eval mode, export input at batch 2, test input at batch 3, input name, external data).

    The language models' sequence dimension is symbolic too: exported at length 7, tested at length 9."""
    out = []

    torch.manual_seed(0)
    m = TutorialMLP()
    warm_batchnorm(m, lambda: torch.randn(16, 64))
    out.append(("mlp", m, torch.randn(2, 64), torch.randn(3, 64), "input", False))

    torch.manual_seed(1)
    out.append(("adder", nn.Linear(2, 1).eval(), torch.rand(2, 2), torch.rand(3, 2), "input", False))

    torch.manual_seed(2)
    out.append(("two_layer_net", TwoLayerNet().eval(), torch.randn(2, 32), torch.randn(3, 32), "input", False))

    torch.manual_seed(3)
    out.append(("conv_net", ConvNet().eval(), torch.randn(2, 1, 16, 16), torch.randn(3, 1, 16, 16), "input", False))

    torch.manual_seed(4)
    out.append(("lenet5", LeNet5(in_channels=1).eval(), torch.randn(2, 1, 32, 32), torch.randn(3, 1, 32, 32), "input", True))

    for seed, cell in ((5, "lstm"), (6, "gru")):
        torch.manual_seed(seed)
        m = RecurrentLM(cell).eval()
        out.append((f"{cell}_lm", m, torch.randint(0, 40, (2, 7)), torch.randint(0, 40, (3, 9)), "tokens", False))
    return out


def save_tensor(t, path, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t.detach().numpy(), name).SerializeToString())


def symbolic_dims(x):
    """Batch, and for token ids (N, L) the sequence length too."""
    return {0: "batch", 1: "seq"} if x.dtype == torch.int64 else {0: "batch"}


def export_torchscript(model, x, path, input_name):
    axes = symbolic_dims(x)
    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=17, input_names=[input_name],
                      output_names=["output"], dynamic_axes={input_name: axes, "output": axes})


def export_dynamo(model, x, path, input_name, external):
    dims = {k: torch.export.Dim(v, min=2, max=1024) for k, v in symbolic_dims(x).items()}
    program = torch.onnx.export(model, (x,), dynamo=True, opset_version=18, input_names=[input_name],
                                output_names=["output"], dynamic_shapes=(dims,))
    program.save(path, external_data=external)


def op_types(path):
    m = onnx.load(path, load_external_data=False)
    return m.opset_import[0].version if m.opset_import else 0, sorted({n.op_type for n in m.graph.node}), len(m.graph.node)


def main():
    only = set(sys.argv[1:])
    os.makedirs(OUT, exist_ok=True)
    manifest = {"torch": torch.__version__, "onnx": onnx.__version__, "models": []}
    try:
        import onnxscript
        manifest["onnxscript"] = onnxscript.__version__
    except ImportError:
        pass
    for name, model, x_export, x_test, input_name, external in seed_models():
        if only and name not in only:
            continue
        folder = os.path.join(OUT, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        with torch.no_grad():
            y = model(x_test)
        save_tensor(x_test, os.path.join(folder, "input_0.pb"), input_name)
        save_tensor(y, os.path.join(folder, "output_0.pb"), "output")
        entry = {"name": name, "input": input_name, "input_shape": list(x_test.shape), "output_shape": list(y.shape),
                 "files": {}}
        export_torchscript(model, x_export, os.path.join(folder, "torchscript.onnx"), input_name)
        export_dynamo(model, x_export, os.path.join(folder, "dynamo.onnx"), input_name, external)
        for exporter in ("torchscript", "dynamo"):
            f = f"{exporter}.onnx"
            opset, ops, count = op_types(os.path.join(folder, f))
            entry["files"][exporter] = {"file": f, "opset": opset, "nodes": count, "ops": ops,
                                        "external_data": exporter == "dynamo" and external}
            print(f"{name:14} {exporter:12} opset {opset:2} {count:4} nodes  {' '.join(ops)}")
        manifest["models"].append(entry)
    if not only:
        with open(os.path.join(OUT, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
