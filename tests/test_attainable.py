"""No attainable rate the package reports is above the peak of the unit it is reported on.

The rate of unit ``u`` is ``F_u / T`` with ``T`` the time lower bound, and ``T >= F_u / P_u``,
so ``F_u / T <= P_u``. Before, the rate was all FLOPs over ``T``: FlashAttention's softmax
work lifted it above the matrix peak (999.2 against 989.5 TFLOP/s on H100 SXM).
"""

import json
import re

import pytest

import roofline_book as rb
from roofline_book import cli
from roofline_book.cli.operators import OPERATORS, parse_point
from roofline_book.devices.catalog import catalog
from roofline_book.present.tables import block_table, cost_table
from roofline_book.units import parse_si, si

# Points sized to reach every regime, then each registered operator at the calculator form's
# first values (its required sizes' examples), so a new operator is held to the rule too.
POINTS = [
    "gemm:8192,8192,8192",
    "gemm:16,4096,4096",
    "add:16Mi",
    "residual_add:16Mi",
    "relu:16Mi",
    "gelu:16Mi",
    "swiglu:16Mi",
    "elementwise:1Mi,inputs=1,outputs=1,flops_per_element=64",
    "rmsnorm:4096,4096",
    "layernorm:4096,4096",
    "softmax:131072,4096",
    "adamw:1M,impl=fused",
    "attention:4,16,4096,4096,64",
    "attention:4,16,4096,4096,128,causal=true",
    "attention:1,32,16384,16384,64,dtype=fp8",
    "attention:1,32,4096,4096,128,impl=eager,causal=true",
    "attention:1,8,1,8192,128,causal=true",
    "attention_backward:2,16,4096,4096,128",
    "attention_backward:1,8,2048,2048,64,impl=stored,causal=true",
    "tiled_gemm:4096,4096,4096,128",
    "linear_backward:4096,4096,11008",
    "rmsnorm_eager:4096,4096",
    "rope:4096,32,128",
] + [
    f"{name}:" + ",".join(f"{p.name}={p.example}" for p in entry.params if p.required)
    for name, entry in OPERATORS.items()
]
DEVICES = sorted(catalog())
SLACK = 1 + 1e-12  # F / (F / P) can round one ulp above P


def _precisions(device):
    return [p for p in ("fp8", "bf16", "fp16", "fp32") if p in device.precisions]


@pytest.mark.parametrize("key", DEVICES)
def test_no_rate_above_its_units_peak(key):
    device = rb.hardware(key)
    checked = 0
    for dtype in _precisions(device):
        named = []
        for point in POINTS:
            try:
                _, label, cost, _ = parse_point(point, dtype, device)
            except ValueError:  # e.g. FP8 attention off Hopper's FA3 table is still modelled
                continue
            named.append((label, cost))
        for row in cost_table(named, device, dtype):
            for unit, rate in row.rates.items():
                assert rate <= device.ceiling(unit, dtype) * SLACK, (key, dtype, row.name, unit)
                checked += 1
            if row.unit is not None:
                assert row.attainable == row.rates[row.unit]
    assert checked > 0


@pytest.mark.parametrize("key", DEVICES)
def test_block_rows_stay_under_their_units_peaks(key):
    device = rb.hardware(key)
    for row in block_table(rb.LLAMA2_7B, device):
        assert row.attainable <= device.ceiling(row.unit, "bf16") * SLACK, (key, row.name)


def test_flash_attention_on_h100_prints_the_matrix_peak_not_above(capsys):
    # 4 x 16 heads, 4096 tokens, d = 128: 555.1 GFLOP, of which 4 * 4096^2 * 128 * 64 =
    # 549.8 GFLOP on the matrix units; the matrix time binds, so the matrix units run at
    # their peak and the total FLOPs over that time (1.0097x the peak) is not printed.
    h100 = rb.hardware("h100-sxm")
    argv = ["op", "attention", "--batch", "4", "--heads", "16", "--seq-q", "4096"]
    assert cli.main([*argv, "--head-dim", "128", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    matrix = 4 * 4096**2 * 128 * 64
    assert out["flops_by_unit"]["matrix"] == matrix
    assert out["bound"] == "matrix" and out["attainable_unit"] == "matrix"
    assert out["attainable_per_s"] == pytest.approx(h100.peak_flops("bf16"))
    assert out["flops"] / out["time_lower_bound_s"] > h100.peak_flops("bf16")  # the old figure
    assert cli.main([*argv, "--head-dim", "128"]) == 0
    printed = [re.split(r"  +", line, maxsplit=1) for line in capsys.readouterr().out.splitlines()]
    rates = {label: value for label, value in printed if label.startswith("attainable")}
    # every unit the kernel uses gets its rate, printed beside that unit's peak, never above it
    assert set(rates) == {f"attainable, {u}" for u in ("matrix units", "vector units",
                                                        "special functions")}  # fmt: skip
    for value in rates.values():
        rate, peak = value.rstrip(")").split(" (peak ")
        assert parse_si(rate.replace(" exp/s", "")) <= parse_si(peak.replace(" exp/s", ""))
    assert rates["attainable, matrix units"].startswith(si(h100.peak_flops("bf16"), "FLOP/s"))
