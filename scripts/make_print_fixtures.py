#!/usr/bin/env python3
"""Generate Tests/Fixtures/print_cases.json: PyTorch repr() strings for the tensor
printing tests of SwiftTorch (TensorFormattingTests.swift).

Usage: python scripts/make_print_fixtures.py   (needs torch)

Each case: {name, shape, dtype, values, requires_grad, grad_fn, options, expected}
  values   flat row-major list; floats are the exact values of the tensor's dtype
           (repr-safe Python floats); nan/inf encoded as "nan" / "inf" / "-inf"
  grad_fn  e.g. "MulBackward0" or null
  options  null or {precision, threshold, edgeitems, linewidth, sci_mode}
"""
import json
import math
import os

import torch

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "Tests", "Fixtures", "print_cases.json")

DTYPES = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int32: "int32", torch.int64: "int64",
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.float64: "float64",
}

cases = []


def enc(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def add(name, t, requires_grad=False, grad_fn=None, options=None):
    """t: a tensor. If grad_fn is a callable, it's applied to a leaf requiring grad."""
    t = t.detach().clone()
    flat = [enc(v) for v in t.reshape(-1).tolist()]
    shown = t
    gf_name = None
    if grad_fn is not None:
        leaf = t.clone().requires_grad_(True)
        shown = grad_fn(leaf)
        gf_name = type(shown.grad_fn).__name__
        flat = [enc(v) for v in shown.detach().reshape(-1).tolist()]
        t = shown.detach()
    elif requires_grad:
        shown = t.requires_grad_(True)
    if options:
        with torch._tensor_str.printoptions(**options):
            expected = repr(shown)
    else:
        expected = repr(shown)
    assert repr(shown) == str(shown) or options
    cases.append({
        "name": name,
        "shape": list(t.shape),
        "dtype": DTYPES[t.dtype],
        "values": flat,
        "requires_grad": bool(requires_grad),
        "grad_fn": gf_name,
        "options": options,
        "expected": expected,
    })


T = torch.tensor
nan, inf = float("nan"), float("inf")

# ---- 0-d tensors
add("scalar_int_valued_float", T(3.0))
add("scalar_neg_zero", T(-0.0))
add("scalar_zero", T(0.0))
add("scalar_half", T(0.5))
add("scalar_small", T(1e-5))
add("scalar_big", T(1.5e10))
add("scalar_nan", T(nan))
add("scalar_inf", T(-inf))
add("scalar_pi_f64", T(math.pi, dtype=torch.float64))
add("scalar_int64", T(5))
add("scalar_int64_neg", T(-12345))
add("scalar_int32", T(7, dtype=torch.int32))
add("scalar_uint8", T(200, dtype=torch.uint8))
add("scalar_bool", T(True))
add("scalar_requires_grad", T(2.5), requires_grad=True)
add("scalar_grad_fn", T(2.0), grad_fn=lambda x: x * 3)
add("scalar_f16", T(1.0 / 3, dtype=torch.float16))

# ---- 1-D floats
add("ints_as_float", T([1.0, 2.0, 3.0]))
add("simple_fixed", T([1.5, 2.25, -3.125]))
add("neg_and_frac", T([-1.0, 0.5]))
add("neg_zero_mix", T([-0.0, 0.0, 1.0]))
add("all_zero", torch.zeros(4))
add("all_neg_zero", T([-0.0, -0.0]))
add("nan_inf_int_mode", T([nan, 1.0, inf, -inf]))
add("nan_inf_fixed", T([nan, 1.25, inf, -inf, -2.5]))
add("only_nan", T([nan, nan]))
add("only_inf", T([inf, -inf]))
add("nan_inf_zero", T([nan, 0.0, -inf]))
add("sci_small", T([1e-5, 1.0]))
add("sci_big", T([1e10, 1.0]))
add("sci_int_mode_big", T([1e9, 2e9, -3e9]))
add("sci_ratio", T([0.1, 1000.5]))
add("ratio_exactly_1000_f64", T([0.0001, 0.1], dtype=torch.float64))
add("min_1e-4_f32", T([0.0001, 0.1]))
add("big_fixed", T([123456.789, 1.0]))
add("int_mode_1e8", T([1e8, 1.0]))
add("sci_with_nan_inf", T([1e-6, nan, inf, 0.0, -1e3]))
add("rounding_fixed", T([0.00005, 0.12345, 0.99995], dtype=torch.float64))
add("rounding_sci", T([1.23455e-7, 9.99995e5], dtype=torch.float64))
add("neg_zero_fixed", T([-0.0, 0.25]))
add("neg_zero_sci", T([-0.0, 1e-7]))
add("huge_f64", T([1e300, -2e-300], dtype=torch.float64))

# ---- random normal, several shapes and scales
for shape in [(5,), (3, 4), (2, 3, 4), (2, 2, 2, 3)]:
    for scale in [1.0, 1e-5, 1e10]:
        add(f"randn_{'x'.join(map(str, shape))}_scale{scale:g}", torch.randn(*shape) * scale)
add("randn_4x3_scale100", torch.randn(4, 3) * 100)
add("randn_3x3_scale1000_f64", torch.randn(3, 3, dtype=torch.float64) * 1000)
add("randn_2x5_f64", torch.randn(2, 5, dtype=torch.float64))
add("randn_6_f16", torch.randn(6).half())
add("randn_2x3_bf16", torch.randn(2, 3).bfloat16())
add("randn_8_f16_big", (torch.randn(8) * 1e4).half())
add("int_mode_f16", T([1.0, 2.0, 300.0], dtype=torch.float16))
add("int_mode_bf16_requires_grad", T([1.0, -2.0], dtype=torch.bfloat16), requires_grad=True)

# ---- multi-dim layouts
add("mat_2x3_int_valued", torch.arange(6.0).reshape(2, 3))
add("cube_2x2x2", torch.arange(8.0).reshape(2, 2, 2) - 3.5)
add("four_d_2x1x2x2", torch.arange(8).reshape(2, 1, 2, 2))
add("mat_1x1", T([[7.0]]))
add("mat_wide_rows_wrap", torch.randn(2, 30))
add("mat_3d_wide_rows_wrap", torch.randn(2, 2, 12) * 10)

# ---- long 1-D rows that wrap
add("long_arange_float", torch.arange(100.0))
add("long_randn_50", torch.randn(50))
add("long_int_200", torch.arange(200) * 37 - 3000)
add("long_bool_40", torch.randn(40) > 0)
add("long_f64_30", torch.randn(30, dtype=torch.float64) * 1e-6)

# ---- dtype suffix placement on multi-line / long last lines
for n in range(1, 11):
    add(f"f64_randn_{n}", torch.randn(n, dtype=torch.float64))
add("f64_mat_suffix", torch.randn(3, 7, dtype=torch.float64))
add("f16_long_suffix_rg", torch.randn(16).half(), requires_grad=True)
add("f64_grad_fn_long", torch.randn(8, dtype=torch.float64), grad_fn=lambda x: x * 2)
add("f32_grad_fn_sum", torch.randn(3, 2), grad_fn=lambda x: x.sum(0))
add("f32_grad_fn_long", torch.randn(9), grad_fn=lambda x: x + 1)

# ---- integers
add("int64_small", T([1, -2, 3]))
add("int64_large", T([2**62 + 1, -(2**63), 2**63 - 1, 0]))
add("int64_large_mat", T([[9007199254740993, 1], [-9007199254740993, 22]]))
add("int32_mat", torch.randint(-1000, 1000, (3, 4), dtype=torch.int32))
add("uint8_vec", torch.randint(0, 256, (10,), dtype=torch.uint8))
add("uint8_mat", T([[0, 255], [7, 128]], dtype=torch.uint8))
add("bool_vec", T([True, False, True]))
add("bool_mat", T([[True, False], [False, False]]))

# ---- summarized (numel > 1000)
add("sum_randn_2000", torch.randn(2000))
add("sum_arange_2000_int", torch.arange(2000))
add("sum_mat_30x40", torch.randn(30, 40))
add("sum_mat_big_center", torch.cat([torch.ones(3), torch.full((1994,), 1e9), torch.ones(3)]).reshape(2000))
add("sum_3d_12x10x10", torch.randn(12, 10, 10) * 1000)
add("sum_4d_3x7x5x10", torch.randn(3, 7, 5, 10))
add("sum_4d_8x2x8x10_int32", torch.randint(-50, 50, (8, 2, 8, 10), dtype=torch.int32))
add("sum_1001_f64", torch.randn(1001, dtype=torch.float64))
add("sum_bool_1200", (torch.randn(1200) > 0))
add("sum_mat_2x600", torch.randn(2, 600))
add("not_sum_1000", torch.arange(1000.0))

# ---- empty tensors
add("empty_1d", torch.empty(0))
add("empty_0x3", torch.empty(0, 3))
add("empty_2x0x4", torch.empty(2, 0, 4))
add("empty_int64", torch.empty(0, dtype=torch.int64))
add("empty_int64_2d", torch.empty(3, 0, dtype=torch.int64))
add("empty_bool", torch.empty(0, dtype=torch.bool))
add("empty_f64", torch.empty(0, 2, dtype=torch.float64))
add("empty_requires_grad", torch.empty(0, 3), requires_grad=True)

# ---- print options
add("opt_precision2", T([1.12345, 2.5]), options={"precision": 2})
add("opt_precision6_sci", T([1e-7, 1.0], dtype=torch.float64), options={"precision": 6})
add("opt_sci_true", T([1.0, 2.5]), options={"sci_mode": True})
add("opt_sci_true_int", T([1.0, 2.0]), options={"sci_mode": True})
add("opt_sci_false", T([1e-7, 1e9]), options={"sci_mode": False})
add("opt_threshold5", torch.arange(10), options={"threshold": 5})
add("opt_threshold5_mat", torch.arange(64.0).reshape(8, 8), options={"threshold": 5})
add("opt_edgeitems2", torch.randn(30, 40), options={"edgeitems": 2})
add("opt_linewidth40", torch.randn(20), options={"linewidth": 40})
add("opt_linewidth40_mat_f64", torch.randn(2, 10, dtype=torch.float64), options={"linewidth": 40})
add("opt_edgeitems0_vec", torch.arange(10.0), options={"threshold": 5, "edgeitems": 0})
add("opt_edgeitems0_mat", torch.arange(12.0).reshape(3, 4), options={"threshold": 5, "edgeitems": 0})
add("opt_edgeitems0_nosum", torch.arange(4), options={"edgeitems": 0})

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    # one case per line keeps the file small and diffable
    f.write("[\n")
    f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in cases))
    f.write("\n]\n")
print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
