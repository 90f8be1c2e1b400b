#!/usr/bin/env python3
"""Writes torchviz's DOT sources that Tests/TorchTests/MakeDotTests.swift compares `makeDot` with.

Run with a Python that has torch, torchviz and graphviz installed (tests never need them):
    python3 scripts/make_dot_fixtures.py

Each graph is written to Tests/Fixtures/make_dot/<name>.dot (and printed). Node ids are Python
id()s; the Swift test renumbers both sides by first appearance before comparing. The Swift test
builds the same graphs (same shapes, same parameter names); values do not matter.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchviz import make_dot

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "Tests", "Fixtures", "make_dot")


def tutorial001():
    # The tutorial's own example: y = w*x + b on 1-element leaves.
    w = torch.randn(1, requires_grad=True)
    b = torch.randn(1, requires_grad=True)
    x = torch.randn(1, requires_grad=True)
    y = w * x + b
    return make_dot(y, params={"x": x, "w": w, "b": b}, show_attrs=True, show_saved=True)


def tutorial001_plain():
    # The same graph without attributes or saved tensors.
    w = torch.randn(1, requires_grad=True)
    b = torch.randn(1, requires_grad=True)
    x = torch.randn(1, requires_grad=True)
    y = w * x + b
    return make_dot(y, params={"x": x, "w": w, "b": b})


def matmul_add_narrow():
    # Attribute values cut to 8 characters ("[saved tensor]" becomes "[save...").
    x = torch.rand(3, 3, requires_grad=True)
    w = torch.rand(3, 2, requires_grad=True)
    b = torch.rand(2, requires_grad=True)
    y = (x @ w + b).pow(2).sum()
    return make_dot(y, params={"x": x, "w": w, "b": b}, show_attrs=True, max_attr_chars=8)


def matmul_add():
    # x @ w + b records MmBackward0 then AddBackward0 in both libraries.
    x = torch.rand(3, 3, requires_grad=True)
    w = torch.rand(3, 2, requires_grad=True)
    b = torch.rand(2, requires_grad=True)
    y = (x @ w + b).pow(2).sum()
    return make_dot(y, params={"x": x, "w": w, "b": b}, show_attrs=True, show_saved=True)


def addmm():
    # The one-GEMM form F.linear uses: AddmmBackward0, its alpha/beta, sizes and strides.
    x = torch.rand(3, 3, requires_grad=True)
    w = torch.rand(3, 2, requires_grad=True)
    b = torch.rand(2, requires_grad=True)
    y = torch.addmm(b, x, w).pow(2).sum()
    return make_dot(y, params={"x": x, "w": w, "b": b}, show_attrs=True, show_saved=True)


def small_cnn():
    # conv -> relu -> maxpool -> flatten -> linear -> cross entropy, written as log_softmax +
    # nll_loss (what F.cross_entropy records in PyTorch). The input does not require grad.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3))
    x = torch.randn(2, 1, 4, 4)
    target = torch.tensor([0, 2])
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), target)
    return make_dot(loss, params=dict(model.named_parameters()), show_attrs=True, show_saved=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, build in [("tutorial001", tutorial001), ("tutorial001_plain", tutorial001_plain),
                        ("matmul_add", matmul_add), ("matmul_add_narrow", matmul_add_narrow), ("addmm", addmm),
                        ("small_cnn", small_cnn)]:
        source = build().source
        path = os.path.join(OUT, f"{name}.dot")
        with open(path, "w") as f:
            f.write(source)
        print(f"# {path}\n{source}")


if __name__ == "__main__":
    main()
