#!/usr/bin/env python3
"""Writes torchviz's DOT sources that Tests/TorchTests/MakeDotTests.swift compares `makeDot` with.

Run with a Python that has torch, torchviz and graphviz installed (tests never need them):
    python3 scripts/make_dot_fixtures.py

Each graph is written to Tests/Fixtures/make_dot/<name>.dot (and printed). Node ids are Python
id()s; the Swift test renumbers both sides by first appearance before comparing. The Swift test
builds the same graphs (same shapes, same parameter names); values do not matter.

Tests/Fixtures/make_dot/op_labels.json holds torchviz's show_attrs label (the attribute table) of
the grad_fn of one op per entry, for the ops whose saved attributes SwiftTorch lists; the Swift test
runs the same op on the same shapes.
"""
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchviz import make_dot
from torchviz.dot import get_fn_name

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


def index_columns():
    # A tuple of saved tensors with a None: IndexBackward0's indices are (None, idx), drawn as indices[1].
    x = torch.rand(3, 4, requires_grad=True)
    y = x[:, torch.tensor([1, 1])].sum()
    return make_dot(y, params={"x": x}, show_attrs=True, show_saved=True)


def small_cnn():
    # conv -> relu -> maxpool -> flatten -> linear -> cross entropy, written as log_softmax +
    # nll_loss (what F.cross_entropy records in PyTorch). The input does not require grad.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3))
    x = torch.randn(2, 1, 4, 4)
    target = torch.tensor([0, 2])
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), target)
    return make_dot(loss, params=dict(model.named_parameters()), show_attrs=True, show_saved=True)


def op_labels():
    """name -> get_fn_name(y.grad_fn, show_attrs=True, max_attr_chars=50) for one op each."""
    g = lambda *shape: torch.rand(*shape, requires_grad=True)
    x, a, w, b, c = g(3, 4), g(3, 4), g(4, 2), g(2), g(3, 1)
    x3, img, cw, cb = g(2, 3, 4), g(2, 3, 8, 8), g(4, 3, 3, 3), g(4)
    bw, bb, lw, lb = g(3), g(3), g(4), g(4)
    t = torch.tensor([0, 1, 3])
    p = torch.rand(3, 4)
    ops = {
        "mul": lambda: x * a, "mul_scalar": lambda: x * 2, "mul_other_only": lambda: x.detach() * a,
        "add": lambda: x + a, "add_scalar": lambda: x + 2.5, "sub": lambda: x - a, "rsub": lambda: 1 - x,
        "div": lambda: x / a, "div_scalar": lambda: x / 2, "maximum": lambda: x.maximum(a),
        "pow_scalar": lambda: x.pow(3), "pow_half": lambda: x.pow(0.5), "square": lambda: x.pow(2),
        "pow_tensor": lambda: x.pow(a), "scalar_pow": lambda: torch.pow(2, x),
        "exp": lambda: x.exp(), "log": lambda: x.log(), "tanh": lambda: x.tanh(), "sigmoid": lambda: x.sigmoid(),
        "relu": lambda: x.relu(), "sqrt": lambda: x.sqrt(), "neg": lambda: -x, "sin": lambda: x.sin(),
        "abs": lambda: x.abs(), "clamp": lambda: x.clamp(0, 1), "clamp_min": lambda: x.clamp_min(0.5),
        "sum": lambda: x.sum(), "sum_dim": lambda: x.sum(1), "sum_dims_keep": lambda: x.sum((0, 1), keepdim=True),
        "sum_neg": lambda: x.sum(-1), "mean": lambda: x.mean(), "mean_dim": lambda: x.mean(1, keepdim=True),
        "view": lambda: x.view(12), "reshape": lambda: x.reshape(4, 3), "flatten": lambda: x3.flatten(1),
        "t": lambda: x.t(), "permute": lambda: x.permute(1, 0), "transpose": lambda: x.transpose(0, 1),
        "transpose_neg": lambda: x.transpose(-1, -2), "unsqueeze": lambda: x.unsqueeze(-1),
        "squeeze": lambda: x.unsqueeze(0).squeeze(0), "expand": lambda: c.expand(3, 4), "select": lambda: x.select(0, 1),
        "narrow": lambda: x.narrow(0, 1, 2),
        "mm": lambda: x @ w, "mm_self_only": lambda: x @ w.detach(), "mm_mat2_only": lambda: x.detach() @ w,
        "addmm": lambda: torch.addmm(b, x, w), "addmm_beta_alpha": lambda: torch.addmm(b, x, w, beta=0.5, alpha=2),
        "linear": lambda: F.linear(x, w.t(), b), "bmm": lambda: torch.bmm(x3, g(2, 4, 5)),
        "bmm_self_only": lambda: torch.bmm(x3, torch.rand(2, 4, 5)), "mv": lambda: x.mv(g(4)), "dot": lambda: b.dot(g(2)),
        "conv": lambda: F.conv2d(img, cw, cb, padding=1), "conv_nobias_stride": lambda: F.conv2d(img, cw, stride=2),
        "conv_transpose": lambda: F.conv_transpose2d(img, g(3, 4, 3, 3), stride=2, output_padding=1),
        "maxpool": lambda: F.max_pool2d(img, 2),
        "maxpool_ceil": lambda: F.max_pool2d(img, 3, stride=2, padding=1, ceil_mode=True),
        "avgpool": lambda: F.avg_pool2d(img, 2),
        "avgpool_pad": lambda: F.avg_pool2d(img, 2, stride=1, padding=1, count_include_pad=False),
        "batchnorm_train": lambda: F.batch_norm(img, torch.zeros(3), torch.ones(3), bw, bb, training=True),
        "batchnorm_eval": lambda: F.batch_norm(img, torch.zeros(3), torch.ones(3), bw, bb, training=False),
        "layernorm": lambda: F.layer_norm(x, (4,), lw, lb),
        "log_softmax": lambda: F.log_softmax(x, 1), "log_softmax_neg": lambda: F.log_softmax(x, -1),
        "softmax": lambda: F.softmax(x, 0),
        "nll": lambda: F.nll_loss(x, t), "nll_sum_ignore": lambda: F.nll_loss(x, t, reduction="sum", ignore_index=1),
        "nll_weight": lambda: F.nll_loss(x, t, weight=torch.ones(4)),
        "mse": lambda: F.mse_loss(x, a), "mse_sum": lambda: F.mse_loss(x, p, reduction="sum"),
        "smooth_l1": lambda: F.smooth_l1_loss(x, p), "huber": lambda: F.huber_loss(x, p, delta=0.5),
        "bce": lambda: F.binary_cross_entropy(x.sigmoid(), p),
        "bce_logits": lambda: F.binary_cross_entropy_with_logits(x, p),
        "leaky_relu": lambda: F.leaky_relu(x), "gelu": lambda: F.gelu(x), "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "elu": lambda: F.elu(x), "selu": lambda: F.selu(x), "celu": lambda: F.celu(x), "silu": lambda: F.silu(x),
        "mish": lambda: F.mish(x), "hardtanh": lambda: F.hardtanh(x), "relu6": lambda: F.relu6(x),
        "cat": lambda: torch.cat([x, a]), "stack": lambda: torch.stack([x, a], 1), "cumsum": lambda: x.cumsum(1),
        "where": lambda: torch.where(p > 0.5, x, a),
        "index": lambda: x[torch.tensor([0, 2])], "index_cols": lambda: x[:, torch.tensor([1, 1])],
        "hardsigmoid": lambda: F.hardsigmoid(x), "hardswish": lambda: F.hardswish(x), "softplus": lambda: F.softplus(x),
    }
    return {name: get_fn_name(op().grad_fn, True, 50) for name, op in ops.items()}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, build in [("tutorial001", tutorial001), ("tutorial001_plain", tutorial001_plain),
                        ("matmul_add", matmul_add), ("matmul_add_narrow", matmul_add_narrow), ("addmm", addmm),
                        ("index_columns", index_columns), ("small_cnn", small_cnn)]:
        source = build().source
        path = os.path.join(OUT, f"{name}.dot")
        with open(path, "w") as f:
            f.write(source)
        print(f"# {path}\n{source}")
    labels = op_labels()
    path = os.path.join(OUT, "op_labels.json")
    with open(path, "w") as f:
        json.dump(labels, f, indent=1, sort_keys=True)
    print(f"# {path}: {len(labels)} ops")


if __name__ == "__main__":
    main()
