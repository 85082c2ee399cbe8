"""The command line: its figures are the library's figures. Most tests run it in this process (the
runner the chapters and the calculator page use, which test_calculator holds to a fresh
interpreter); those about the process itself (tracebacks, --version, the console script) run
a fresh one."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roofline_book as rb
from roofline_book import cli
from roofline_book.cli import calculator
from roofline_book.llm.block import LLAMA2_7B, DecoderConfig
from roofline_book.present.tables import block_table, optimizer_table

ROOT = Path(__file__).resolve().parents[1]
H100 = rb.hardware("h100-sxm")


#: The interpreter's own command line for the package: a fresh process, as a terminal runs it.
FRESH = (sys.executable, "-m", "roofline_book")


def run(*args: str, program: tuple[str, ...] | None = None) -> subprocess.CompletedProcess:
    """Run the CLI and return the CompletedProcess: in this process (the runner the chapters
    and the calculator page use, which test_calculator holds to a fresh interpreter's output),
    or, given ``program``, in a fresh interpreter."""
    if program is None:
        done = calculator.run(list(args))
        return subprocess.CompletedProcess(
            ["roofline-book", *args], done["code"], done["stdout"], done["stderr"]
        )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [*program, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def run_json(*args: str) -> dict:
    done = run(*args, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


@pytest.fixture
def call(capsys):
    """Run ``cli.main`` in this process (fast): return (status, stdout, stderr)."""

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        out, err = capsys.readouterr()
        return status, out, err

    return call


# --------------------------------------------------------------------------
# op


def test_op_gemm_json_equals_the_library():
    out = run_json("op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096", "--dtype", "bf16")
    cost = rb.gemm(4096, 4096, 4096, "bf16")
    peak, band = H100.peak_flops("bf16"), H100.memory_bandwidth
    assert out["flops"] == cost.flops == 137_438_953_472  # 2 * 4096**3
    assert out["bytes_read"] == cost.bytes_read == 2 * 2 * 4096**2  # A and B, 2 bytes each
    assert out["bytes_written"] == cost.bytes_written == 2 * 4096**2
    assert out["bytes"] == cost.bytes
    assert out["intensity"] == cost.intensity
    assert out["attainable_per_s"] == pytest.approx(rb.attainable(cost.intensity, peak, band))
    assert out["attainable_per_s"] == 989.4e12  # the whitepaper's dense BF16, as printed
    time = rb.time_bound(cost, H100, "bf16")
    # every resource the GEMM uses, the largest of them is the bound and names it
    assert out["time_by_resource_s"] == {
        "matrix": cost.flops / peak,
        "hbm": cost.bytes / band,
        "l2": cost.bytes / H100.bandwidth("l2"),
    }
    assert out["bound"] == time.resource == "matrix" and out["bound_kind"] == "compute"
    assert (out["time_compute_s"], out["time_memory_s"]) == (time.compute, time.memory)
    assert out["time_lower_bound_s"] == time.seconds == max(out["time_by_resource_s"].values())
    assert out["device"]["key"] == "h100-sxm"  # the default device
    assert out["device"]["ridge_point"] == H100.ridge_point("bf16")
    assert out["arguments"] == {
        "m": 4096,
        "k": 4096,
        "n": 4096,
        "dtype": "bf16",
        "batch": 1,
        "out_dtype": None,
    }


def test_op_add_on_the_example_device():
    # 100 TFLOP/s and 1 TB/s, typed with units; 2^20 BF16 elements, 6 bytes per FLOP
    out = run_json("op", "add", "--numel", "2^20", "--peak", "100T", "--bandwidth", "1TB/s")
    cost = rb.add(2**20, "bf16")
    assert out["flops"] == 2**20
    assert out["bytes"] == cost.bytes == 6 * 2**20
    assert out["intensity"] == cost.intensity == pytest.approx(1 / 6)
    assert out["attainable_per_s"] == rb.attainable(cost.intensity, 100e12, 1e12)
    assert out["attainable_per_s"] == pytest.approx(1e12 / 6)
    # an ad-hoc device has one compute peak that every unit shares
    assert out["time_by_resource_s"] == {"compute": 2**20 / 100e12, "hbm": 6 * 2**20 / 1e12}
    assert out["bound"] == "hbm"
    assert out["time_lower_bound_s"] == 6 * 2**20 / 1e12
    assert out["device"]["ridge_point"] == rb.ridge_point(100e12, 1e12) == 100.0


# Each operator: the command-line arguments, and the library call they must equal.
OPERATOR_CASES = {
    "gemm batched": (
        ["gemm", "--m", "64", "--k", "128", "--n", "32", "--batch", "8", "--dtype", "fp32"],
        rb.gemm(64, 128, 32, "fp32", batch=8),
    ),
    "residual_add": (["residual_add", "--numel", "4k"], rb.residual_add(4000)),
    "relu": (["relu", "--numel", "1Mi", "--dtype", "fp16"], rb.relu(2**20, "fp16")),
    "gelu": (["gelu", "--numel", "1000"], rb.gelu(1000)),
    "swiglu": (["swiglu", "--numel", "11008"], rb.swiglu(11008)),
    "elementwise": (
        ["elementwise", "--numel", "10", "--inputs", "3", "--outputs", "0"]
        + ["--flops-per-element", "2", "--dtype", "fp32"],
        rb.elementwise(10, "fp32", inputs=3, outputs=0, flops_per_element=2),
    ),
    "rmsnorm": (["rmsnorm", "--rows", "4096", "--d", "4096"], rb.rmsnorm(4096, 4096)),
    "layernorm": (
        ["layernorm", "--rows", "2", "--d", "8", "--dtype", "bf16", "--weight-dtype", "fp32"],
        rb.layernorm(2, 8, "bf16", weight_dtype="fp32"),
    ),
    "softmax": (["softmax", "--rows", "4096", "--cols", "4096"], rb.softmax(4096, 4096)),
    "adamw": (
        ["adamw", "--params", "1M", "--impl", "loop", "--tensors", "7"]
        + ["--grad-dtype", "bf16", "--model-dtype", "bf16"],
        rb.adamw(10**6, "loop", tensors=7, grad_dtype="bf16", model_dtype="bf16"),
    ),
    "attention window, GQA, FP8 cache": (
        ["attention", "--batch", "1", "--heads", "32", "--kv-heads", "8", "--seq-q", "8192"]
        + ["--head-dim", "128", "--causal", "--window", "4096", "--kv-dtype", "fp8"]
        + ["--sram-bytes", "64Ki"],
        rb.attention(
            1,
            32,
            8192,
            8192,
            128,
            causal=True,
            kv_heads=8,
            window=4096,
            kv_dtype="fp8",
            sram_bytes=65536,
        ),
    ),
    "attention flash causal": (
        ["attention", "--batch", "2", "--heads", "4", "--seq-q", "1024", "--head-dim", "64"]
        + ["--causal", "--sram-bytes", "64Ki"],
        rb.attention(2, 4, 1024, 1024, 64, causal=True, sram_bytes=65536),
    ),
    "attention materialized": (
        ["attention", "--batch", "1", "--heads", "1", "--seq-q", "512", "--seq-k", "2048"]
        + ["--head-dim", "128", "--impl", "materialized"],
        rb.attention(1, 1, 512, 2048, 128, impl="materialized"),
    ),
}


@pytest.mark.parametrize("case", OPERATOR_CASES, ids=list(OPERATOR_CASES))
def test_every_operator_equals_the_library(case, call):
    argv, cost = OPERATOR_CASES[case]
    status, stdout, stderr = call("op", *argv, "--device", "A100-SXM", "--json")  # any case
    assert (status, stderr) == (0, "")
    out = json.loads(stdout)
    got = (out["flops"], out["bytes_read"], out["bytes_written"], out["kernels"])
    assert got == (cost.flops, cost.bytes_read, cost.bytes_written, cost.kernels)
    a100 = rb.hardware("a100-sxm")
    precision = out["device"]["precision"]
    time = rb.time_bound(cost, a100, precision)
    assert out["time_by_resource_s"] == dict(time.by_resource)
    assert (out["bound"], out["time_lower_bound_s"]) == (time.resource, time.seconds)
    # no unit attains more than its ceiling (written-out rates: tests/test_cli_results.py)
    for unit, rate in out["attainable_by_unit_per_s"].items():
        assert rate <= a100.ceiling(unit, precision) * (1 + 1e-12)


def test_every_public_operator_is_registered():
    # one entry per function of roofline_book.ops that returns a cost (the CLI appendix lists
    # OPERATORS); adamw_passes and multi_tensor_launches are parts of adamw, not operators
    from roofline_book import ops
    from roofline_book.cli.operators import OPERATORS

    functions = {n for n in ops.__all__ if n.islower() and callable(getattr(ops, n))}
    helpers = {"adamw_passes", "multi_tensor_launches", "fa3_tile"}  # no Cost: not operators
    registered = {spec.func for spec in OPERATORS.values()}
    assert {n for n in functions - helpers if getattr(ops, n) not in registered} == set()
    for name, spec in OPERATORS.items():  # `op NAME` runs the function of that name
        module = sys.modules[spec.func.__module__]
        assert (spec.func.__name__, getattr(module, name, None)) == (name, spec.func), name


# H100 SXM: BF16 Tensor Cores 989.4e12 (the whitepaper's dense figure, rated at 1830 MHz),
# vector lane operations at half the packed BF16x2 133.8e12 (an add is one slot, not an
# FMA), 16 x 132 x 1.98e9 special evaluations (the 1980 MHz boost of the vector figures),
# HBM 3.35e12 B/s and L2 8.4286e12 B/s (measured by others)
H100_BF16 = 989.4e12


def _h100_time(matrix=0, vector=0, special=0, nbytes=0, rereads=0):
    """Each unit's work over its BF16 rate, the bytes over HBM and L2, the largest."""
    return max(
        matrix / H100_BF16,
        vector / (133.8e12 / 2),
        special / (16 * 132 * 1.98e9),
        nbytes / 3.35e12,
        (nbytes + rereads) / 8.4286e12,
    )


# The operators the text builds on beyond the forward ones, each by hand:
# argv, (FLOPs, bytes read, bytes written, kernels, bytes re-read), time by unit.
N16M = 4096 * 4096  # 16,777,216 elements
BY_HAND = {
    # 128 x 128 tiles of the BF16 4096^3 GEMM: A and B each read 4096 / 128 = 32 times,
    # 2 * 2 * 4096^3 / 128 = 2,147,483,648 bytes in; C written once, 2 * 4096^2.
    "tiled_gemm": (
        ["tiled_gemm", "--m", "4096", "--k", "4096", "--n", "4096", "--tile", "128"],
        (2 * 4096**3, 2_147_483_648, 33_554_432, 1, 0),
        {"matrix": 2 * 4096**3, "nbytes": 2_181_038_080},
    ),
    # dx = dy @ W (4096 x 11008 x 4096) and dW = dy^T @ x (11008 x 4096 x 4096):
    # 4 * 4096 * 4096 * 11008 FLOPs; reads 2 * (2 * 4096 * 11008) + 2 * (11008 * 4096 + 4096^2)
    # = 180,355,072 + 123,731,968; writes 2 * 4096^2 + 2 * 11008 * 4096 = 33,554,432 + 90,177,536.
    "linear_backward": (
        ["linear_backward", "--tokens", "4096", "--in-features", "4096"]
        + ["--out-features", "11008"],
        (4 * 4096 * 4096 * 11008, 304_087_040, 123_731_968, 2, 0),
        {"matrix": 4 * 4096 * 4096 * 11008, "nbytes": 427_819_008},
    ),
    # causal flash backward, 2 x 4 heads of 1024 x 64, BF16: 8 * 1024 * 1025 / 2 = 4,198,400
    # kept pairs, 10 * 64 matrix FLOPs, 3 vector and 1 exp each. One N x d tensor of all heads
    # is 8 * 1024 * 64 * 2 = 1,048,576 bytes: Q, O, dO, K, V read, dQ, dK, dV written. 64 KiB
    # holds 32,768 elements, 32,768 / (4 * 64) = 128 key rows, 8 key blocks: Q, dO read and dQ
    # read and written 7 more times, 7 * 4 * 1,048,576 = 29,360,128 bytes.
    "attention_backward": (
        ["attention_backward", "--batch", "2", "--heads", "4", "--seq-q", "1024"]
        + ["--head-dim", "64", "--causal", "--sram-bytes", "64Ki"],
        (4_198_400 * 644, 5 * 1_048_576, 3 * 1_048_576, 1, 29_360_128),
        {
            "matrix": 4_198_400 * 640,
            "vector": 3 * 4_198_400,
            "special": 4_198_400,
            "nbytes": 8 * 1_048_576,
            "rereads": 29_360_128,  # within the L2: charged to it, not to HBM
        },
    ),
    # eager RMSNorm, 4096 x 4096 BF16 upcast to FP32, n = 16,777,216, r = 4096 rows:
    # reads 2n (cast) + 4n (pow) + 4n (mean) + 4r (+eps) + 4r (rsqrt) + 4(n + r) (x * r)
    # + 4n (cast back) + 2(n + 4096) (weight) = 20n + 12r + 8192;
    # writes 4n + 4n + 4r + 4r + 4r + 4n + 2n + 2n = 16n + 12r; FLOPs 4n + 2r vector, r rsqrt.
    "rmsnorm_eager": (
        ["rmsnorm_eager", "--rows", "4096", "--d", "4096"],
        (4 * N16M + 3 * 4096, 20 * N16M + 12 * 4096 + 8192, 16 * N16M + 12 * 4096, 8, 0),
        {"vector": 4 * N16M + 2 * 4096, "special": 4096, "nbytes": 36 * N16M + 24 * 4096 + 8192},
    ),
    # without the upcast every pass moves 2-byte elements and the two casts are gone:
    # reads 2n + 2n + 2r + 2r + 2(n + r) + 2(n + 4096), writes 2n + 2r + 2r + 2r + 2n + 2n.
    "rmsnorm_eager no upcast": (
        ["rmsnorm_eager", "--rows", "4096", "--d", "4096", "--no-upcast"],
        (4 * N16M + 3 * 4096, 8 * N16M + 6 * 4096 + 8192, 6 * N16M + 6 * 4096, 6, 0),
        {"vector": 4 * N16M + 2 * 4096, "special": 4096, "nbytes": 14 * N16M + 12 * 4096 + 8192},
    ),
    # RoPE on Llama-2-7B's Q and K (4096 tokens x 32 heads x 128 each): 3 FLOPs per element;
    # read Q, K and the 4096 x 128 cos and sin tables, write Q and K, 2 bytes each.
    "rope": (
        ["rope", "--tokens", "4096", "--heads", "32", "--head-dim", "128"],
        (3 * 2 * N16M, 2 * (2 * N16M + 2 * 4096 * 128), 2 * 2 * N16M, 1, 0),
        {"vector": 3 * 2 * N16M, "nbytes": 2 * (4 * N16M + 2 * 4096 * 128)},
    ),
}


@pytest.mark.parametrize("case", BY_HAND, ids=list(BY_HAND))
def test_added_operators_by_hand(case, call):
    argv, counts, units = BY_HAND[case]
    status, stdout, stderr = call("op", *argv, "--json")
    assert (status, stderr) == (0, "")
    out = json.loads(stdout)
    got = (out["flops"], out["bytes_read"], out["bytes_written"], out["kernels"])
    assert got + (out["reread_bytes"],) == counts
    assert out["time_lower_bound_s"] == pytest.approx(_h100_time(**units))


def test_adamw_roof_is_the_parameter_precision(call):
    status, stdout, _ = call("op", "adamw", "--params", "100", "--impl", "fused", "--json")
    assert status == 0
    out = json.loads(stdout)
    assert out["device"]["precision"] == "fp32"
    assert out["device"]["peaks_per_s"]["matrix"] == H100.peak_flops("fp32") == 67e12


def test_op_table_is_aligned_with_si_units():
    done = run("op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    # the longest label, "attainable, matrix units", is 24 characters: values start at column 26
    assert all(line[24:26] == "  " and line[26] != " " for line in lines)
    values = {line[:26].strip(): line[26:] for line in lines}
    assert values["FLOPs"] == "137.4 GFLOP"
    assert values["bytes"] == "100.7 MB (compulsory)"
    assert values["intensity"] == "1365 FLOP/B"  # 2 * 4096 / (3 * 2) = 1365.3
    assert values["bound"] == "matrix units"
    # 2 x 4096^3 = 137.44e9 FLOP / 989.4e12 FLOP/s (vendor dense BF16) = 138.9 us
    assert values["time, matrix units"] == "138.9 us  <- bound"
    assert values["attainable, matrix units"] == "989.4 TFLOP/s (peak 989.4 TFLOP/s)"
    assert values["time lower bound"] == "138.9 us"


# --------------------------------------------------------------------------
# block


def test_block_json_equals_the_transformer_tables():
    out = run_json("block", "--optimizer", "--grad-dtype", "bf16", "--model-dtype", "bf16")
    rows = block_table(LLAMA2_7B, H100)
    assert [r["name"] for r in out["ops"]] == [r.name for r in rows]
    for got, row in zip(out["ops"], rows, strict=True):
        assert (got["flops"], got["bytes"]) == (row.cost.flops, row.cost.bytes)
        assert got["time_lower_bound_s"] == row.time.seconds
        assert (got["bound"], got["share"]) == (row.resource, row.share)
        assert got["time_by_resource_s"] == dict(row.time.by_resource)
    assert out["config"]["parameters"] == LLAMA2_7B.parameters == 202_383_360
    opt = optimizer_table(LLAMA2_7B, H100, grad_dtype="bf16", model_dtype="bf16")
    got_opt = {r["name"]: r for r in out["optimizer"]["ops"]}
    assert got_opt["AdamW (loop)"]["kernels"] == 63  # 8 passes x 7 tensors, and a cast each
    assert [r["bytes"] for r in out["optimizer"]["ops"]] == [r.cost.bytes for r in opt]


def test_block_custom_config_on_an_adhoc_device():
    out = run_json(
        "block",
        *("--batch", "2", "--seq", "2k", "--hidden", "2048", "--heads", "16", "--ffn", "5632"),
        *("--attention", "materialized", "--peak", "100T", "--bandwidth", "1T"),
    )
    config = DecoderConfig(batch=2, seq=2000, hidden=2048, heads=16, ffn=5632)
    rows = block_table(config, rb.adhoc("x", 100e12, 1e12), attention_impl="materialized")
    assert [r["time_lower_bound_s"] for r in out["ops"]] == [r.time.seconds for r in rows]
    assert out["ops"][3]["name"] == "attention (materialized)"  # after QKV and RoPE
    assert out["ops"][3]["kernels"] == 3


def test_block_table_text():
    done = run("block", "--seq", "1", "--device", "h200-sxm")
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    assert "seq=1" in text and "h200-sxm" in text
    total = [line for line in text.splitlines() if line.startswith("total")]
    assert len(total) == 1
    # decode-like: one token, so each projection reads its weights for one row
    up = next(line for line in text.splitlines() if line.startswith("MLP up projection"))
    assert " HBM " in up


def test_block_of_a_catalog_model():
    out = run_json("block", "--model", "Mixtral-8x7B", "--seq", "1Ki")
    ops = {r["id"]: r for r in out["ops"]}
    # Mixtral-8x7B's config.json: hidden_size 4096, num_local_experts 8, num_experts_per_tok 2,
    # intermediate_size 14336. The router is a 4096 x 8 GEMM over 1024 tokens; each token's
    # gate projection runs in 2 experts: 2 x (1024 x 2) x 4096 x 14336 FLOPs
    assert ops["router"]["flops"] == 2 * 1024 * 4096 * 8
    assert ops["experts_gate_projection"]["flops"] == 2 * 2048 * 4096 * 14336
    assert out["config"]["ffn"] == 14336 and out["config"]["tokens"] == 1024
    text = run("block", "--model", "mixtral-8x7b").stdout
    assert text.startswith("Mixtral-8x7B decoder block (batch=1, seq=4096, hidden=4096,")
    bad = run("block", "--model", "gpt-5")
    assert bad.returncode == 2
    assert "--model 'gpt-5' is not in the catalog; allowed: llama-2-7b" in bad.stderr


# --------------------------------------------------------------------------
# devices


def test_devices_json_dense_peaks_and_ridge_points():
    out = run_json("devices")
    devices = {d["key"]: d for d in out["devices"]}
    assert list(devices) == list(rb.catalog())
    h100 = devices["h100-sxm"]
    assert h100["matrix_peaks_per_s"]["bf16"] == 989.4e12  # whitepaper, dense
    assert h100["ridge_points"]["bf16"] == pytest.approx(989.4e12 / 3.35e12)  # 295.3
    assert h100["clock_hz"] == 1.98e9 and h100["memory_capacity_bytes"] == 81559 * 2**20
    assert h100["memory_capacity_basis"] == "driver"
    assert "sparse_peaks" not in h100 and "peak_flops_sparse" not in h100["sources"]
    assert h100["sources"]["peak_flops"]["title"] == H100.source("peak_flops").title


def test_devices_json_lists_every_ceiling_with_its_source():
    out = run_json("devices", "--device", "h100-sxm")
    (h100,) = out["devices"]
    ceilings = {(c["resource"], c["precision"]): c for c in h100["ceilings"]}
    assert ceilings[("matrix", "bf16")]["value"] == 989.4e12
    assert ceilings[("matrix", "bf16")]["clock_hz"] == 1.83e9  # the clock NVIDIA rates it at
    assert ceilings[("vector", "fp32")]["value"] == 67e12
    assert ceilings[("vector", "fp64")]["value"] == 34e12  # not the 67 of the FP64 Tensor Core
    assert ceilings[("vector", "bf16")]["value"] == 133.8e12  # packed BF16x2
    special = ceilings[("special", "fp32")]
    assert special["value"] == pytest.approx(16 * 132 * 1.98e9)
    assert special["unit"] == "evaluations/s" and special["clock_hz"] == 1.98e9
    assert "16 results/clock/SM" in special["derivation"]
    assert ceilings[("hbm", "")]["value"] == 3.35e12
    assert ceilings[("l2", "")]["source"]["firmness"] == "secondary"  # measured by others
    for c in h100["ceilings"]:
        if c["resource"] != "l2":
            assert c["source"]["title"] and c["source"]["firmness"] in ("vendor", "paper")
    assert h100["firmness"] == "vendor"


def test_devices_sparse_is_labelled_and_never_a_ridge():
    done = run("devices", "--sparse", "--device", "h100-sxm", "--dtype", "bf16")
    assert done.returncode == 0 and done.stderr == ""
    header, row = done.stdout.splitlines()[:2]
    assert "2:4-sparse peak (never a roof)" in header
    # ridge point from the dense 989.4 TFLOP/s (/ 3.35e12 = 295.3), not the sparse 1978.9;
    # the clock is the one NVIDIA rates the Tensor Core figure at, 1830 MHz
    assert row.split() == ["h100-sxm", "bf16", "989.4", "TFLOP/s", "1830", "MHz", "3.35"] + [
        "TB/s",
        "295.3",
        "FLOP/B",
        "1.979",
        "PFLOP/s",
    ]


def test_devices_prints_special_rates_as_evaluations_and_clocks():
    done = run("devices", "--device", "h100-sxm")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    (special,) = [line for line in lines if line.strip().startswith("special fp32")]
    # 16 x 132 x 1.98e9 = 4.182e12 evaluations/s; over 3.35e12 B/s, 1.248 evaluations/B
    assert special.strip().startswith(
        "special fp32: 4.182 T evaluations/s at 1980 MHz, ridge 1.248 evaluations/B"
    )
    assert "FLOP" not in special
    # the B200's two vendor bandwidths: the one taken and the one compared with it
    done = run("devices", "--device", "b200")
    assert "memory_bandwidth (compared, not taken): NVIDIA Blackwell Architecture" in done.stdout


# --------------------------------------------------------------------------
# plot


def test_plot_svg_with_points(tmp_path):
    svg = tmp_path / "roof.svg"
    out = run_json(
        "plot",
        *("--out", str(svg), "--point", "gemm:4096,4096,4096", "--point", "add:1048576"),
        *("--peak", "100T", "--bandwidth", "1T"),
    )
    text = svg.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    assert [p["label"] for p in out["points"]] == ["gemm 4096x4096x4096", "add 1048576"]
    gemm, add = out["points"]
    assert gemm["flops"] == rb.gemm(4096, 4096, 4096).flops
    assert gemm["attainable_per_s"] == 100e12 and gemm["bound"] == "compute"
    assert add["attainable_per_s"] == rb.attainable(rb.add(2**20).intensity, 100e12, 1e12)


def test_plot_png_on_a_catalog_device(tmp_path):
    png = tmp_path / "roof.png"
    done = run(
        "plot",
        *("--out", str(png), "--device", "mi300x", "--dtype", "fp16"),
        *("--point", "attention:1,32,4096,4096,128,impl=materialized"),
    )
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mi300x" in done.stdout and " HBM " in done.stdout


def test_parse_point_names_and_positions():
    _, label, cost, args = cli.parse_point("gemm:64,64,64,batch=8,dtype=fp32")
    assert cost == rb.gemm(64, 64, 64, "fp32", batch=8)
    assert label == "gemm 64x64x64 batch=8 dtype=fp32"
    _, _, cost, args = cli.parse_point("attention:1,2,128,256,64,causal=yes", dtype="fp16")
    assert cost == rb.attention(1, 2, 128, 256, 64, "fp16", causal=True)
    assert args["dtype"] == "fp16"
    # AdamW keeps its own precision defaults even when the plot's dtype is bf16
    assert cli.parse_point("adamw:1000", dtype="bf16")[2] == rb.adamw(1000)


# --------------------------------------------------------------------------
# bench


def test_bench_lists_its_options():
    done = run("bench", "--help")
    assert done.returncode == 0 and "usage: roofline-book bench" in done.stdout
    for option in ("--device", "--quick", "--suite", "--out", "--force", "--no-progress"):
        assert option in done.stdout


# --------------------------------------------------------------------------
# Bad input: one line on stderr, exit status 2, no traceback

GEMM = ("op", "gemm", "--m", "4", "--k", "4", "--n", "4")
ERRORS = {
    "unknown operator": (("op", "conv2d", "--m", "4"), "invalid choice: 'conv2d'"),
    "unknown device": ((*GEMM, "--device", "tpu-v9"), "allowed: a100-sxm, a800-sxm, h100-sxm"),
    "unknown precision": ((*GEMM, "--dtype", "bf17"), "allowed: fp64, fp32"),
    "precision the device lacks": ((*GEMM, "--device", "l20", "--dtype", "tf32"), "tf32"),
    "negative size": (("op", "gemm", "--m", "-4", "--k", "4", "--n", "4"), "--m"),
    "non-integer size": (("op", "add", "--numel", "1.5"), "whole number"),
    "zero size": (("op", "add", "--numel", "0"), "--numel: expected a whole number >= 1"),
    "missing size": (("op", "gemm", "--m", "4", "--k", "4"), "required: --n"),
    "malformed unit": ((*GEMM, "--peak", "100X", "--bandwidth", "1T"), "cannot read '100X'"),
    "bytes as a peak": ((*GEMM, "--peak", "1TB/s", "--bandwidth", "1T"), "--peak"),
    "peak alone": ((*GEMM, "--peak", "100T"), "--bandwidth is missing"),
    "device and peak": ((*GEMM, "--device", "b200", "--peak", "1T", "--bandwidth", "1T"), "not"),
    "bad impl": (("op", "adamw", "--params", "9", "--impl", "fast"), "loop, foreach, fused"),
    "bad block": (("block", "--hidden", "100", "--heads", "3"), "divisible"),
    "bad point": (("plot", "--out", "x.svg", "--point", "gemm:4,4"), "gemm needs n"),
    "bad plot file": (("plot", "--out", "x.pdf"), ".svg or .png"),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_bad_input_is_one_line_and_exit_2(case, call):
    argv, expected = ERRORS[case]
    status, stdout, stderr = call(*argv)
    assert (status, stdout) == (2, "")
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline-book")
    assert expected in lines[0]


# one of each kind, end to end: argparse's own error, a unit, the library's ValueError
@pytest.mark.parametrize(
    "case", ["unknown operator", "malformed unit", "unknown precision", "bad point"]
)
def test_bad_input_in_a_real_process_has_no_traceback(case):
    argv, expected = ERRORS[case]
    done = run(*argv, program=FRESH)
    assert (done.returncode, done.stdout) == (2, "")
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1 and expected in done.stderr


@pytest.mark.parametrize(
    "text,value",
    [("4096", 4096), ("1_048_576", 2**20), ("4k", 4000), ("4K", 4000), ("1.5M", 1_500_000)]
    + [("2G", 2 * 10**9), ("64Ki", 65536), ("1Mi", 2**20), ("2^20", 2**20), ("2**10", 1024)],
)
def test_sizes(text, value):
    assert cli.parse_size(text) == value


@pytest.mark.parametrize("text", ["-1", "4.5", "1.0001k", "4kb", "", "1e3", "four", "2^99999"])
def test_bad_sizes(text):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_size(text)


def test_help_and_version():
    done = run("--version", program=FRESH)
    assert (done.returncode, done.stdout.strip()) == (0, f"roofline-book {rb.__version__}")
    done = run("op", "attention", "--help")
    assert done.returncode == 0
    for flag in ("--seq-q", "--seq-k", "--head-dim", "--causal", "--sram-bytes", "--impl"):
        assert flag in done.stdout


def test_console_script():
    script = shutil.which("roofline-book", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the roofline-book console script is not installed beside this Python")
    done = run("op", "add", "--numel", "1", "--json", program=(script,))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bytes"] == 6  # read x, read y, write z: 3 x 2 bytes


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch, capsys):
    # a None entry in sys.modules makes `import matplotlib` fail as if it were not installed
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = cli.main(["plot", "--out", str(tmp_path / "r.svg"), "--point", "add:1000"])
    err = capsys.readouterr().err
    assert status == 2 and not (tmp_path / "r.svg").exists()
    assert err.splitlines() == [
        "roofline-book plot: error: plot needs matplotlib: pip install 'roofline-book[plot]'"
    ]


# --------------------------------------------------------------------------
# infer


def test_infer_json_by_hand():
    out = run_json("infer", "--model", "llama-2-7b", "--context", "4096", "--batch", "1")
    kv = 2 * 32 * 32 * 128 * 2
    assert out["kv_cache_bytes_per_token"] == kv
    assert out["weight_bytes"] == 2 * 6_738_415_616
    # batch 1: every byte of the weights (less the unused embedding rows) and the cache
    # streams from HBM once per token
    streamed = 2 * 6_738_415_616 - 2 * 32000 * 4096 + 4096 * kv
    h100 = rb.hardware("h100-sxm")  # the catalog's figures are inputs; test_hardware checks them
    assert out["decode"]["time_lower_bound_s"] == pytest.approx(
        streamed / h100.memory_bandwidth, rel=0.01
    )
    assert (
        out["decode"]["any_implementation_time_lower_bound_s"]
        <= out["decode"]["time_lower_bound_s"]
    )
    # vLLM's rule: 0.9 of the memory, less the weights and the activation peak (an MLP of
    # 8192 tokens and 256 rows of FP32 logits)
    act = 2 * 8192 * (4096 + 3 * 11008) + 4 * 256 * 32000
    assert out["activation_peak_bytes"] == act
    usable = 0.9 * h100.memory_capacity - 2 * 6_738_415_616 - act
    assert out["max_batch"] == int(usable // (4096 * kv))
    # prefill: at least the weight GEMMs' 2 x (weights - embedding) x 4096 FLOPs at the
    # matrix peak, and not much more (attention and the small operators add about a tenth)
    gemm_s = 2 * (6_738_415_616 - 32000 * 4096) * 4096 / h100.peak_flops("bf16")
    assert gemm_s < out["prefill"]["time_lower_bound_s"] < 1.25 * gemm_s
    assert (
        gemm_s
        < out["prefill"]["any_implementation_time_lower_bound_s"]
        < out["prefill"]["time_lower_bound_s"]
    )


def test_infer_sliding_window_and_embeddings():
    # Mistral-7B at 8192 tokens keeps its 4096-token rolling buffer: 0.537 GB per sequence
    out = run_json("infer", "--model", "mistral-7b", "--context", "8192")
    assert out["kv_cache_bytes_per_sequence"] == 32 * 4096 * 2 * 8 * 128 * 2
    assert out["sliding_window"] == 4096 and out["local_layers"] == 32
    # int4 keeps the embedding and the LM head in BF16 unless asked
    plain = run_json("infer", "--model", "llama-3-8b", "--weights-dtype", "int4")
    every = run_json(
        "infer", "--model", "llama-3-8b", "--weights-dtype", "int4", "--quantize-embeddings"
    )
    tables = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096
    assert plain["weight_bytes"] - every["weight_bytes"] == tables * (2 - (0.5 + 2 / 128))
    assert plain["precisions"]["scheme"] == "W4A16"


INFER_ERRORS = {
    "unknown model": (
        ("--model", "gpt-9"),
        "--model 'gpt-9' is not in the catalog; allowed: llama-2-7b",
    ),
    "context beyond the window": (
        ("--model", "llama-2-7b", "--context", "8192"),
        "context window (4096)",
    ),
    "batch that does not fit": (
        ("--model", "llama-2-7b", "--batch", "64"),
        "--batch 64 does not fit on h100-sxm at --context 4096: at most ",
    ),
    "weights that do not fit": (
        ("--model", "llama-2-70b"),
        "does not fit on h100-sxm at --context 4096, not even one sequence",
    ),
    "unknown weight format": (
        ("--model", "llama-2-7b", "--weights-dtype", "int3"),
        "--weights-dtype 'int3' is not a known precision; allowed: fp64",
    ),
    "unknown KV cache precision": (
        ("--model", "llama-2-7b", "--kv-dtype", "fp9"),
        "error: --kv-dtype 'fp9' is not a known precision",
    ),
    "unknown activation precision": (
        ("--model", "llama-2-7b", "--dtype", "bf17"),
        "error: --dtype 'bf17' is not a known precision",
    ),
}


@pytest.mark.parametrize("case", INFER_ERRORS, ids=list(INFER_ERRORS))
def test_infer_bad_input_is_one_line_and_exit_2(case, call):
    argv, message = INFER_ERRORS[case]
    status, out, err = call("infer", *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


# --------------------------------------------------------------------------
# the appendix page (built book)


@pytest.mark.site
def test_cli_appendix_lists_every_operator_and_explains_infer(glued):
    from roofline_book.cli.operators import OPERATORS

    g = glued("appendix/cli")
    assert g["cli_n_ops"] == len(OPERATORS)
    build = Path(os.environ.get("BOOK_BUILD", ROOT / "_build"))  # as conftest reads it
    page = (build / "html" / "appendix" / "cli.html").read_text("utf-8")
    table = page[page.index('id="tbl-cli-ops"') :].split("</table>")[0]
    for name in OPERATORS:
        assert f'<span class="pre">{name}</span>' in table, name
    # Llama-3-8B on H100 SXM, BF16 (config.json: 32 layers of width 4096, 32 query and 8 KV heads
    # of 128, MLP 14336, vocabulary 128,256, untied head). Weights: per layer
    # 2 * 4096^2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096 = 218,112,000; 32 layers, two
    # 128,256 x 4096 matrices and the final norm make 8,030,261,248 parameters, 2 bytes each.
    weights = 2 * (32 * 218_112_000 + 2 * 128_256 * 4096 + 4096)
    assert g["cli_inf_weights_gb"] == pytest.approx(weights / 1e9)  # 16.06 GB
    kv_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 heads of 128, 2 bytes: 131,072
    assert g["cli_inf_kv_kb"] == pytest.approx(kv_token / 1e3)
    # vLLM's rule: 90 % of the memory, less the weights and the activation peak (an MLP of 8192
    # tokens: residual, gate and up, activation, in BF16; 256 rows of FP32 logits), over 4096
    # tokens of cache per sequence
    act = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 128256
    assert g["cli_inf_act_gb"] == pytest.approx(act / 1e9)
    fits = int((0.9 * H100.memory_capacity - weights - act) // (4096 * kv_token))
    assert (g["cli_inf_fits"], g["cli_inf_use"], g["cli_inf_reserve"]) == (fits, 0.9, 0.1)
    # gate and up fused, k = 4096, n = 2 * 14336: 2Bkn / (2kn + 2B(k + n)) = R at
    # B = R * 2kn / (2kn - 2R(k + n)), R the BF16 ridge point (matrix peak / HBM bandwidth)
    ridge = H100.peak_flops("bf16") / H100.memory_bandwidth
    k, n = 4096, 2 * 14336
    assert g["cli_inf_ridge_batch"] == pytest.approx(
        ridge * 2 * k * n / (2 * k * n - 2 * ridge * (k + n))
    )
    assert fits < g["cli_inf_ridge_batch"]  # the page says decode stays bandwidth-bound


def test_op_help_lines_are_english_plain_text():
    # the docstrings are Chinese reST for the API appendix; ``op --help`` is the CLI's English
    from roofline_book.cli.operators import OPERATORS

    for name, spec in OPERATORS.items():
        line = spec.summary[0]
        assert not re.search(r"[\u4e00-\u9fff]|``|:func:|:data:", line), (name, line)


# --------------------------------------------------------------------------
# The command line's edges (the new-user review's Part B): every bad value gets one line that
# names the flag and what it takes, exit status 2, no traceback, before any work is done

EDGES = {
    # a rate's unit must measure the quantity the flag takes
    "bytes/s as FLOP/s": ((*GEMM, "--peak", "100Tbyte/s", "--bandwidth", "1T"),
                          "--peak: '100Tbyte/s' is in byte/s; this takes FLOP/s"),
    "bytes as FLOP/s": ((*GEMM, "--peak", "100Tbytes", "--bandwidth", "1T"),
                        "--peak: '100Tbytes' is in byte; this takes FLOP/s"),
    "seconds as FLOP/s": ((*GEMM, "--peak", "100Ts", "--bandwidth", "1T"),
                          "--peak: '100Ts' is in s; this takes FLOP/s"),
    "seconds as byte/s": ((*GEMM, "--peak", "100T", "--bandwidth", "1Ts"),
                          "--bandwidth: '1Ts' is in s; this takes byte/s"),
    "OP/s as byte/s": ((*GEMM, "--peak", "100T", "--bandwidth", "1TOP/s"),
                       "--bandwidth: '1TOP/s' is in FLOP/s; this takes byte/s"),
    "negative rate": ((*GEMM, "--peak", "-1T", "--bandwidth", "1T"),
                      "--peak: expected a rate > 0 in FLOP/s, got '-1T'"),
    # sizes: as Python writes integers, and no larger than a tensor can be
    "huge sizes": (("op", "gemm", "--m", "2^400", "--k", "2^400", "--n", "2^400"),
                   "--m: '2^400' is too large a size (at most 2^63 - 1)"),
    "0^0": (("op", "gemm", "--m", "0^0", "--k", "4", "--n", "4"), "--m: '0^0' is undefined"),
    "leading underscore": (("op", "add", "--numel", "_1"), "--numel: expected a whole number"),
    # an empty device is not the default one
    "empty device": (
        ("op", "add", "--numel", "1", "--device", ""),
        "--device '' is not in the catalog; allowed",
    ),
    "devices, empty device": (
        ("devices", "--device", ""),
        "--device '' is not in the catalog; allowed",
    ),
    # the flag the user typed, not the library's parameter
    "infer prompt 0": (("infer", "--model", "llama-3-8b", "--prompt", "0"),
                       "argument --prompt: expected a whole number >= 1"),
    "infer context 0": (("infer", "--model", "llama-3-8b", "--context", "0"), "--context"),
    "block attention": (("block", "--attention", "bogus"),
                        "--attention must be one of eager, materialized, flash; got 'bogus'"),
    "optimizer flags alone": (("block", "--grad-dtype", "bf16"),
                              "--grad-dtype is an option of the AdamW step: add --optimizer"),
    "adamw int8 weights": (("op", "adamw", "--params", "1M", "--param-dtype", "int8"),
                           "--param-dtype must be a floating-point precision"),
    "zero intensity point": (("plot", "--out", "x.svg", "--point",
                              "elementwise:1M,flops_per_element=0"), "intensity is 0 FLOP/byte"),
    "empty point": (("plot", "--out", "x.svg", "--point", ""), "--point '': unknown operator ''"),
    "library error, flag named": (("op", "rope", "--tokens", "4", "--heads", "4", "--head-dim",
                                   "3"), "--head-dim must be even (RoPE rotates pairs), got 3"),
    "unrecognized argument": ((*GEMM, "--bogus", "1"),
                              "unrecognized arguments: --bogus 1 (see 'roofline-book op gemm "),
}  # fmt: skip


@pytest.mark.parametrize("case", EDGES, ids=list(EDGES))
def test_edges_are_one_line_naming_the_flag(case, call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, expected = EDGES[case]
    status, stdout, stderr = call(*argv)
    assert (status, stdout) == (2, "")
    assert len(stderr.splitlines()) == 1 and expected in stderr, stderr
    assert not list(tmp_path.iterdir())  # refused before writing anything


def test_unwritable_output_paths_fail_first_in_one_line(tmp_path):
    (tmp_path / "adir.svg").mkdir()
    (tmp_path / "afile").write_text("")
    cases = {
        "/nonexistent/x.svg": "--out '/nonexistent/x.svg': the folder '/nonexistent' does not",
        "adir.svg": "--out 'adir.svg' is a folder; give a file name",
        "afile/x.svg": "--out 'afile/x.svg': the folder '" + str(tmp_path / "afile"),
    }
    for out, expected in cases.items():
        done = subprocess.run(
            [sys.executable, "-m", "roofline_book", "plot", "--out", out, "--point", "add:1M"],
            capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
        assert expected in done.stderr


def test_unreadable_run_files_name_the_file(tmp_path, call):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    utf16 = tmp_path / "utf16.json"
    utf16.write_bytes(b"\xff\xfe{}")
    status, _, err = call("claims", str(deep))
    assert status == 2 and f"'{deep}': its JSON nests too deeply" in err
    status, _, err = call("claims", str(utf16))
    assert status == 2 and f"'{utf16}': not UTF-8 text (byte 0 is 0xff)" in err
    assert len(err.splitlines()) == 1


def test_help_has_no_rest_markup(capsys):
    from roofline_book.cli import main as cli_main
    from roofline_book.cli.operators import OPERATORS

    commands = [(), ("op",), *[("op", name) for name in OPERATORS], ("block",), ("infer",),
                ("train",), ("collectives",), ("devices",), ("plot",), ("profile",), ("bench",),
                ("claims",)]  # fmt: skip
    for command in commands:  # in process: argparse prints the help, and main returns 0
        assert cli_main([*command, "--help"]) == 0, command
        out = capsys.readouterr().out
        assert out.startswith("usage:"), command
        assert not re.search(r"``|:[a-z]+:`", out), (command, out)


def test_plain_text_renders_rest_roles():
    from roofline_book.cli.common import plain_text

    text = ":func:`add`, :data:`~roofline_book.ops.GELU_FLOPS_PER_ELEMENT`, ``C = A @ B``"
    assert plain_text(text) == "add, GELU_FLOPS_PER_ELEMENT, C = A @ B"
    assert plain_text(":func:`the sum <roofline_book.ops.add>`") == "add"


def test_op_attention_arguments_reproduce_the_figures_through_the_api():
    # The CLI's sram_bytes and tile default to the device's (the API has no device, so its
    # sram_bytes defaults to A100's 192 KiB): --json lists every argument it passed, and the API
    # called with them gives the same figures, bit for bit.
    out = run_json("op", "attention", "--batch", "1", "--heads", "32", "--seq-q", "4096",
                   "--head-dim", "128", "--causal")  # fmt: skip
    arguments = dict(out["arguments"])
    assert arguments["sram_bytes"] == H100.shared_memory_per_sm == 228 * 1024
    if isinstance(arguments.get("tile"), dict):
        arguments["tile"] = rb.ops.FlashTile(**arguments["tile"])
    cost = rb.attention(**arguments)
    assert (out["flops"], out["bytes"], out["reread_bytes"]) == (
        cost.flops, cost.bytes, cost.reread_bytes
    )  # fmt: skip
    # and the API's own default differs, which the help says
    assert rb.attention(1, 32, 4096, 4096, 128, causal=True).reread_bytes != out["reread_bytes"]
    assert "default:" in run("op", "attention", "--help").stdout


# --------------------------------------------------------------------------
# One JSON vocabulary (the review's Part C): every output validates against its schema in
# roofline_book/cli/schema.py, carries the version, and names a quantity the same way everywhere


def _profile_script(tmp_path: Path) -> str:
    script = tmp_path / "mm.py"
    script.write_text("import torch\ntorch.randn(64, 64) @ torch.randn(64, 64)\n")
    return str(script)


def main_json(*args: str) -> dict:
    """``cli.main(args + --json)`` in this process (no interpreter start): its parsed stdout."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main([*args, "--json"])
    assert (status, err.getvalue()) == (0, ""), err.getvalue()
    return json.loads(out.getvalue())


def json_outputs(tmp_path: Path) -> dict[str, list[dict]]:
    """The real --json output of every command, a few ways each."""
    fixture = str(ROOT / "tests" / "data" / "fixture-cpu-pass.json")
    svg = str(tmp_path / "p.svg")
    out = {
        "op": [main_json(*GEMM), main_json("op", "attention", "--batch", "1", "--heads", "8",
                                         "--seq-q", "512", "--head-dim", "64"),
               main_json("op", "add", "--numel", "1M", "--peak", "1T", "--bandwidth", "1T")],
        "block": [main_json("block", "--optimizer", "--grad-dtype", "bf16", "--model-dtype",
                           "bf16"), main_json("block", "--peak", "1T", "--bandwidth", "1T")],
        "infer": [main_json("infer", "--model", "gemma-2-9b", "--context", "8192"),
                  main_json("infer", "--model", "mixtral-8x7b", "--device", "h200-sxm")],
        "devices": [main_json("devices", "--sparse"), main_json("devices", "--device", "h100-sxm")],
        "plot": [main_json("plot", "--out", svg, "--point", "gemm:64,64,64", "--point", "add:1M")],
        "claims": [main_json("claims", fixture)],
    }  # fmt: skip
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        script = _profile_script(tmp_path)  # options go before the script, --json too
        out["profile"] = []
        for roof in (("--device", "h100-sxm"), ("--device-ceilings", fixture)):
            printed, errors = io.StringIO(), io.StringIO()  # in process, as main_json does
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
                status = cli.main(["profile", "--json", *roof, script])
            assert status == 0, errors.getvalue()
            out["profile"].append(json.loads(printed.getvalue()))
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return json_outputs(tmp_path_factory.mktemp("json"))


def test_every_json_output_matches_its_schema(outputs):
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS

    assert set(outputs) <= set(SCHEMAS)
    for command, docs in outputs.items():
        validator = jsonschema.Draft202012Validator(SCHEMAS[command])
        jsonschema.Draft202012Validator.check_schema(SCHEMAS[command])
        for doc in docs:
            errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in
                      validator.iter_errors(doc)]  # fmt: skip
            assert not errors, (command, errors[:5])
            assert doc["roofline_book_version"] == rb.__version__
            assert doc["command"] == command


def test_device_is_one_object_everywhere(outputs):
    from roofline_book._base.records import json_schema
    from roofline_book.cli.results import Device

    DEVICE = json_schema(Device)
    devices = [doc["device"] for command in ("op", "block", "infer", "plot")
               for doc in outputs[command]]  # fmt: skip
    devices += [doc["optimizer"]["device"] for doc in outputs["block"] if "optimizer" in doc]
    assert all(set(d) == set(DEVICE["properties"]) for d in devices)
    h100 = outputs["op"][0]["device"]
    assert h100["peaks_per_s"]["matrix"] == H100.peak_flops("bf16")
    assert h100["bandwidths_Bps"] == {"hbm": H100.memory_bandwidth, "l2": H100.l2_bandwidth}


def test_operator_ids_are_stable_identifiers(outputs):
    # not display labels, never with a layer count: the same id on every model
    ident = re.compile(r"^[a-z][a-z0-9_]*$")
    infer = outputs["infer"]
    for doc in infer:
        for phase in ("prefill", "decode"):
            ids = [op["id"] for op in doc[phase]["ops"]]
            assert all(ident.match(i) for i in ids), ids
            assert len(ids) == len(set(ids))
            assert doc[phase]["time_lower_bound_s"] == pytest.approx(
                sum(op["time_lower_bound_s"] for op in doc[phase]["ops"])
            )
    gemma = {op["id"]: op for op in infer[0]["prefill"]["ops"]}
    assert gemma["attention_local"]["layers"] == gemma["attention_global"]["layers"] == 21
    assert gemma["qkv_projection"]["layers"] == 42 and gemma["lm_head"]["layers"] is None
    mixtral = {op["id"] for op in infer[1]["decode"]["ops"]}
    assert {"router", "experts_up", "experts_down", "qkv_projection"} <= mixtral
    block = outputs["block"][0]
    assert [op["id"] for op in block["ops"]][:4] == [
        "attention_norm", "qkv_projection", "rope", "attention"
    ]  # fmt: skip
    assert [op["id"] for op in block["optimizer"]["ops"]] == [
        "adamw_loop", "adamw_foreach", "adamw_fused"
    ]  # fmt: skip


# --------------------------------------------------------------------------
# A new user's inputs: what each is refused with, or how it prints


@pytest.mark.parametrize(
    "argv,named",
    [
        # argparse would take --param as the one flag it begins (--param-dtype) and answer
        # about the AdamW step
        (("block", "--param", "fp32"), "unrecognized arguments: --param fp32"),
        ((*GEMM, "--dev", "h20"), "unrecognized arguments: --dev h20"),
        (("infer", "--model", "llama-3-8b", "--bat", "2"), "unrecognized arguments: --bat 2"),
    ],
)
def test_a_flag_is_never_taken_for_a_longer_one(call, argv, named):
    status, stdout, stderr = call(*argv)
    assert (status, stdout) == (2, "")
    assert len(stderr.splitlines()) == 1 and named in stderr, stderr


def test_profile_without_a_script_asks_only_for_the_script(call):
    # a script may take no arguments: ARGS is optional
    status, _, stderr = call("profile")
    assert status == 2
    assert "the following arguments are required: SCRIPT (see" in stderr, stderr


@pytest.mark.parametrize("text", ["4.0", "1e3", "-1", "0"])
def test_sizes_one_rule_one_message(call, text):
    status, _, stderr = call("op", "gemm", "--m", text, "--k", "64", "--n", "64")
    assert status == 2
    assert "argument --m: expected a whole number >= 1 (e.g. 4096" in stderr, stderr
    assert f"got '{text}'" in stderr
    # the API refuses a float size too, whole or not: the same rule
    with pytest.raises(TypeError, match=r"m must be an integer >= 1, got 4.0 \(float\)"):
        rb.gemm(4.0, 64, 64)


def test_a_rate_with_a_milli_prefix_is_refused(call):
    status, _, stderr = call(*GEMM, "--peak", "100m", "--bandwidth", "1T")
    assert status == 2
    assert "--peak: '100m' has the prefix m (milli, 1e-3)" in stderr and "100M" in stderr


def test_long_times_print_in_seconds(call):
    # 2 * 64**3 = 524_288 FLOP at 100 FLOP/s = 5242.88 s: seconds, never "5.243 ks";
    # at 1 FLOP/s 524_288 s prints as 5.243e+05 s, never "524.3 ks" (and no "Ms")
    for peak, text in (("100", "5243 s"), ("1", "5.243e+05 s")):
        status, stdout, _ = call(
            "op", "gemm", "--m", "64", "--k", "64", "--n", "64", "--peak", peak,
            "--bandwidth", "1T",
        )  # fmt: skip
        assert status == 0
        assert f"time lower bound     {text}" in stdout, stdout


def test_a_torch_dtype_name_is_a_precision(call):
    # the error text says torch dtypes work; their printed names (str(torch.bfloat16) is
    # 'torch.bfloat16') work on the command line too: 2 bytes per element, as bf16
    status, stdout, stderr = call(
        "op", "gemm", "--m", "64", "--k", "64", "--n", "64", "--dtype", "torch.bfloat16", "--json"
    )
    assert (status, stderr) == (0, "")
    out = json.loads(stdout)
    assert out["bytes_read"] == 2 * 2 * 64 * 64  # A and B, 64 x 64 each, 2 bytes
    assert out["device"]["precision"] == "bf16"


def test_the_operator_line_prints_canonical_names(call):
    status, stdout, _ = call(
        "op", "attention", "--batch", "1", "--heads", "8", "--seq-q", "4096", "--head-dim",
        "128", "--impl", "FLASH", "--dtype", "BFloat16",
    )  # fmt: skip
    assert status == 0
    line = stdout.splitlines()[0]
    assert "impl=flash" in line and "dtype=bf16" in line, line
    # FlashAttention-3's forward tile for head dim 128, BF16, non-causal on Hopper:
    # kBlockM 128, kBlockN 176, a cluster of 2 (hopper/tile_size.h, tile_size_fwd_sm90)
    assert "tile=(block_m 128, block_n 176, cluster_m 2)" in line, line
    assert "{" not in line


def test_attention_help_states_the_causal_alignment(call):
    status, stdout, _ = call("op", "attention", "--help")
    assert status == 0
    text = " ".join(stdout.split())
    assert "aligned bottom-right as FlashAttention (>= 2.1)" in text
    assert "scaled_dot_product_attention(is_causal=True) aligns it top-left" in text


def test_json_counts_stay_exact_beyond_int64():
    # 2 * (2**62)**3 = 2**187 FLOPs: exact in the JSON, beyond int64, as the schema says
    out = run_json("op", "gemm", "--m", "2^62", "--k", "2^62", "--n", "2^62")
    assert out["flops"] == 2**187
    from roofline_book.cli.schema import SCHEMAS

    assert "2**53" in SCHEMAS["op"]["properties"]["flops"]["description"]


def test_a_model_that_does_not_fit_says_so_and_names_the_tp_that_fits(call):
    # Qwen2.5-72B in BF16: 145.4 GB of weights (72.7e9 parameters x 2 bytes) against
    # 0.9 x 85.52 GB = 76.97 GB of an H100 (10% left unused, vLLM's gpu_memory_utilization
    # 0.9): not one sequence fits. Split over 2 devices each holds 72.7 GB of weights, and one
    # 4096-token sequence's KV cache (80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes x 4096
    # = 1.342 GB, half of it per device) fits beside them: --tp 2 is the hint.
    status, _, stderr = call("infer", "--model", "qwen2.5-72b")
    assert status == 2
    assert "--batch" not in stderr, stderr  # no --batch was given
    assert "qwen2.5-72b does not fit on h100-sxm at --context 4096, not even one" in stderr
    assert "KV cache 1.342 GB per sequence per device" in stderr
    assert stderr.rstrip().endswith("add --tp 2 to split each layer over 2 devices"), stderr
    status, stdout, _ = call("infer", "--model", "qwen2.5-72b", "--tp", "2")
    assert status == 0 and "largest batch that fits" in stdout


def test_plot_rows_sit_under_the_roof_at_the_intensity_they_print(call, tmp_path):
    # a row's rate and its FLOP/B are the chart's point: under HBM, rate = FLOP/B x bandwidth,
    # H100 SXM's 3.35 TB/s (datasheet). softmax's total intensity (its exp counted too) once
    # sat beside its vector units' rate: 1.25 FLOP/B x 3.35 TB/s = 4.19 TFLOP/s, not 2.513.
    pytest.importorskip("matplotlib")
    status, stdout, _ = call(
        "plot", "--out", str(tmp_path / "r.svg"), "--point", "softmax:131072,4096",
        "--point", "add:1M", "--point", "gemm:4096,4096,4096",
    )  # fmt: skip
    assert status == 0
    lines = stdout.splitlines()
    head = re.split(r"\s{2,}", lines[1].strip())
    rows = {
        cells[0]: dict(zip(head, cells, strict=True))
        for line in lines[2:]
        if len(cells := re.split(r"\s{2,}", line.strip())) == len(head)
    }
    softmax = rows["softmax 131072x4096"]
    assert softmax["bound"] == "HBM"
    tera = float(softmax["attainable"].removesuffix(" TFLOP/s"))
    assert tera == pytest.approx(float(softmax["FLOP/B"]) * 3.35, rel=1e-3)
    assert softmax["unit"] == "vector units"
    # add: 1 FLOP per 6 bytes (two BF16 reads, one write) x 3.35 TB/s = 558.3 GFLOP/s
    add = rows["add 1M"]
    assert (add["FLOP/B"], add["bound"], add["attainable"]) == ("0.1667", "HBM", "558.3 GFLOP/s")
    # gemm 4096^3: 2 x 4096^3 / (3 x 4096^2 x 2 B) = 1365 FLOP/B, above any ridge: matrix-bound
    gemm = rows["gemm 4096x4096x4096"]
    assert (gemm["unit"], gemm["FLOP/B"], gemm["bound"]) == ("matrix units", "1365", "matrix units")


def _readme_samples() -> list[tuple[str, list[str]]]:
    """The README's ``$ roofline-book ...`` samples: each command and the lines shown under
    it (a line ``...`` ends what the sample shows)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    samples: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, *shown = part.rstrip("\n").split("\n")
            while shown and not shown[-1].strip():
                shown.pop()
            samples.append((command, shown))
    return samples


README_SAMPLES = _readme_samples()


@pytest.mark.parametrize(
    "command,shown", README_SAMPLES, ids=[" ".join(c.split()[1:3]) for c, _ in README_SAMPLES]
)
def test_readme_samples_are_what_the_command_prints(command, shown, tmp_path, monkeypatch):
    import shlex

    argv = shlex.split(command, comments=True)
    assert argv[0] == "roofline-book"
    if argv[1] == "plot":
        pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)  # plot writes its file here
    done = calculator.run(argv[1:])
    assert done["code"] == 0, done["stderr"]
    printed = done["stdout"].rstrip("\n").split("\n")
    cut = next((i for i, line in enumerate(shown) if line.strip() == "..."), len(shown))
    assert printed[:cut] == shown[:cut]
    assert cut < len(shown) or len(printed) == len(shown)


def test_readme_names_registered_operators_and_where_all_are_listed(call):
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    listed = re.search(r"Subcommands: `op` \(one operator of the package's registry, e\.g\. "
                       r"([^;]*); `roofline-book op --help` lists them all\)", text)  # fmt: skip
    assert listed is not None
    names = [name.strip() for name in listed[1].split(",")]
    assert len(names) >= 3 and set(names) <= set(cli.OPERATORS), names
    status, out, _ = call("op", "--help")
    assert status == 0 and all(f"\n    {name} " in out for name in names), out


def test_an_infinite_rate_is_too_large_not_below_zero(call):
    # 1e999 overflows a float to inf: it is refused as too large, not as "not > 0"
    status, _, stderr = call(*GEMM, "--peak", "1T", "--bandwidth", "1e999")
    assert status == 2
    assert "--bandwidth: '1e999' is too large a rate" in stderr, stderr


def test_plot_help_gives_each_points_sizes_in_the_order_parse_point_reads_them():
    """Every form the help prints parses with its required sizes filled in, and gemm's order is
    the package function's own (m, k, n, then batch)."""
    import inspect
    import re

    from roofline_book import gemm
    from roofline_book.cli.operators import OPERATORS, parse_point, point_form

    assert list(inspect.signature(gemm).parameters)[:3] == ["m", "k", "n"]
    assert point_form("gemm") == "gemm:M,K,N[,BATCH]"
    for name in OPERATORS:
        form = point_form(name)
        required = form.split("[", 1)[0]  # the sizes before the first optional one
        point = re.sub(r"[A-Z_]+", "64", required.split(":", 1)[1])
        _, _, cost, _ = parse_point(f"{name}:{point}")
        assert cost.flops >= 0, name


# --------------------------------------------------------------------------
# --model as a Hugging Face config.json; DeepSeek-V3 with DP attention and EP

HF_CONFIGS = ROOT / "tests" / "data" / "hf_configs"
CATALOG_CONFIGS = ROOT / "roofline_book" / "llm" / "data" / "configs"

#: KV cache bytes per token in BF16, by hand from each published config.json (its
#: num_hidden_layers, num_key_value_heads, head_dim or hidden_size / num_attention_heads;
#: MLA: kv_lora_rank + qk_rope_head_dim, one latent for every head): K and V, 2 bytes each.
KV_BY_HAND = {
    "deepseek-v2-lite": 27 * (512 + 64) * 2,  # 31,104
    "gemma-2-9b-it": 42 * 2 * 8 * 256 * 2,  # 344,064
    "mistral-7b-instruct-v0.3": 32 * 2 * 8 * 128 * 2,  # 131,072
    "mixtral-8x7b-v0.1": 32 * 2 * 8 * 128 * 2,
    "qwen2.5-7b": 28 * 2 * 4 * (3584 // 28) * 2,  # 57,344
    "qwen3-30b-a3b": 48 * 2 * 4 * 128 * 2,  # 98,304
    "qwen3-32b-fp8": 64 * 2 * 8 * 128 * 2,  # 262,144
}

#: The new catalog models, each with its config.json as source.
NEW_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-32b",
              "qwen3-235b-a22b", "deepseek-v3")  # fmt: skip


def _schema_errors(command: str, doc: dict) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS

    validator = jsonschema.Draft202012Validator(SCHEMAS[command])
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def _infer_that_fits(model: str, *extra: str) -> dict:
    """``infer --model MODEL --json`` on an H200, following the command's own advice
    (``add --tp N`` or ``add --ep N``) when the model does not fit: what a reader would do."""
    argv = ["infer", "--model", model, "--device", "h200-sxm", *extra]
    for _ in range(3):
        done = run(*argv, "--json")
        if done.returncode == 0:
            assert done.stderr == ""
            return json.loads(done.stdout)
        advice = re.search(r"; add (--tp|--ep) (\d+)", done.stderr)
        assert done.returncode == 2 and advice, done.stderr
        argv += [advice[1], advice[2]]
    raise AssertionError(f"{argv}: still does not fit")


@pytest.mark.parametrize("path", sorted(HF_CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_infer_and_block_take_every_published_config_json(path):
    out = _infer_that_fits(str(path))
    assert not _schema_errors("infer", out)
    if path.stem in KV_BY_HAND:
        assert out["kv_cache_bytes_per_token"] == KV_BY_HAND[path.stem]
    block = run_json("block", "--model", str(path))
    assert not _schema_errors("block", block)
    text = json.loads(path.read_text())
    assert block["config"]["hidden"] == text["hidden_size"]
    assert block["config"]["heads"] == text["num_attention_heads"]


@pytest.mark.parametrize("key", NEW_MODELS)
def test_new_catalog_models_infer_and_train_json_match_the_schema(key):
    out = _infer_that_fits(key)
    assert not _schema_errors("infer", out) and out["model"] == key
    # the catalog entry reads the same config.json the path does: the same figures
    path = _infer_that_fits(str(CATALOG_CONFIGS / f"{key}.json"), "--tp", str(out["tp"]),
                            "--ep", str(out["ep"]))  # fmt: skip
    for field in ("parameters", "weight_bytes", "kv_cache_bytes_per_token", "max_batch"):
        assert path[field] == out[field], field
    train = run_json("train", "--model", key, "--device", "h100-sxm", "--gpus", "64")
    assert not _schema_errors("train", train) and train["model"] == key


def test_deepseek_v3_kv_cache_and_its_checkpoints_precisions():
    out = run_json("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "8",
                   "--device", "h200-sxm")  # fmt: skip
    # MLA caches the 512-wide latent and the 64-wide RoPE key, one for all 128 heads, in
    # each of the 61 layers (config.json: kv_lora_rank 512, qk_rope_head_dim 64), BF16
    assert out["kv_cache_bytes_per_token"] == 61 * (512 + 64) * 2 == 70272
    # quantization_config: fp8 (e4m3), weight_block_size [128, 128], dynamic activations
    p = out["precisions"]
    assert (p["source"], p["scheme"], p["weight_block"]) == ("checkpoint", "W8A8", 128)
    assert p["weights"].startswith("fp8") and p["activations"].startswith("fp8")
    # a flag replaces the checkpoint's formats, and the text says which ran and why
    given = run_json("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "8",
                     "--device", "h200-sxm", "--weights-dtype", "fp8")  # fmt: skip
    assert given["precisions"]["source"] == "flags"
    assert given["precisions"]["activations"] == "bf16"
    text = run("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "8",
               "--device", "h200-sxm").stdout  # fmt: skip
    assert "precisions: the checkpoint's, from the config.json's quantization_config" in text
    assert "one FP32 scale per 128x128 block" in text
    # a model without a quantization_config prints no such line
    assert "precisions:" not in run("infer", "--model", "llama-3.1-8b").stdout


def _attention(ops: list[dict]) -> dict:
    (op,) = [o for o in ops if o["id"] == "attention"]
    return op


def test_deepseek_v3_decode_attention_intensity_and_what_tp_does_to_it():
    # FlashMLA's analysis: absorbed MLA decode reads the BF16 latent cache (576 elements a
    # token) once for all h_q = 128 heads, and does 2 x 128 x (576 + 512) FLOPs a token
    # (QK^T over 576, PV over 512): 128 x (576 + 512) / 576 = 241.8 FLOP per byte
    flashmla = 128 * (576 + 512) / 576
    dp = run_json("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "8", "--batch", "64",
                  "--context", "8192", "--kv-dtype", "bf16", "--device", "h200-sxm")  # fmt: skip
    one = _attention(dp["decode"]["device_ops"])["intensity"]
    assert one == pytest.approx(flashmla, rel=0.10)
    assert _attention(dp["decode"]["layer_ops"])["intensity"] == pytest.approx(one, rel=1e-9)
    # TP 8 splits the heads: each device does 1/8 of the FLOPs, yet reads the whole latent
    tp8 = run_json("infer", "--model", "deepseek-v3", "--tp", "8", "--batch", "64",
                   "--context", "8192", "--kv-dtype", "bf16", "--device", "h200-sxm")  # fmt: skip
    eight = _attention(tp8["decode"]["device_ops"])["intensity"]
    assert eight == pytest.approx(flashmla / 8, rel=0.10)
    assert 7 < one / eight <= 8


def test_ep_beyond_tp_runs_attention_data_parallel_over_nodes():
    # DeepSeek's decode deployment: EP 144 on 18 nodes of 8 H800s, attention data-parallel
    out = run_json("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "144",
                   "--batch", "4096", "--device", "h800-sxm")  # fmt: skip
    assert (out["devices"], out["nodes"], out["attention_dp"]) == (144, 18, 144)
    assert out["batch_per_device"] == -(-4096 // 144) == 29
    links = {c["what"]: c["link"] for c in out["decode"]["communication"]}
    assert links == {"EP all-to-all (dispatch)": "nvlink+ib-ndr",
                     "EP all-to-all (combine)": "nvlink+ib-ndr"}  # fmt: skip
    assert not _schema_errors("infer", out)
    # EP 8 in one node: NVLink only. A token's 8 experts come from 4 of the 8 groups of 32
    # (config.json: n_group 8, topk_group 4), one group on each GPU: a given other GPU holds
    # one of them with probability 1/2 x (1 - C(96, 8) / C(128, 8)), so a token goes to 7 x
    # that other GPUs, once each, 7168 FP8 bytes a copy
    import math

    one = run_json("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "8", "--batch", "8",
                   "--device", "h200-sxm")  # fmt: skip
    assert (one["devices"], one["nodes"], one["batch_per_device"]) == (8, 1, 1)
    comms = {c["what"]: c for c in one["decode"]["communication"]}
    dispatch = comms["EP all-to-all (dispatch)"]
    assert dispatch["link"] == "nvlink" and dispatch["devices"] == 8
    copies = 7 * 0.5 * (1 - math.comb(96, 8) / math.comb(128, 8))  # 3.18
    assert dispatch["bytes"] == pytest.approx(copies * 7168 * 1)
    assert dispatch["count"] == 61 - 3  # the MoE layers: all but first_k_dense_replace
    # TP 2 x EP 16: 16 devices, 8 attention groups of two
    mixed = run_json("infer", "--model", "deepseek-v3", "--tp", "2", "--ep", "16",
                     "--batch", "64", "--device", "h800-sxm")  # fmt: skip
    assert (mixed["devices"], mixed["nodes"], mixed["attention_dp"]) == (16, 2, 8)
    assert mixed["batch_per_device"] == 8
    text = run("infer", "--model", "deepseek-v3", "--tp", "1", "--ep", "144",
               "--batch", "4096", "--device", "h800-sxm").stdout  # fmt: skip
    assert "split: 144 devices = max(TP 1, EP 144) x PP 1, 18 nodes of 8 GPUs" in text
    assert "DP attention:" in text and "2 on each" in text  # ceil(256 / 144)
    assert re.search(r"EP all-to-all \(dispatch\) .* nvlink\+ib-ndr", text)


def test_llama_3_1_runs_at_its_128k_window():
    out = run_json("infer", "--model", "llama-3.1-8b", "--context", "131072")
    # 32 layers x K and V x 8 KV heads x 128 x 2 bytes = 131,072 bytes a token
    assert out["kv_cache_bytes_per_token"] == 32 * 2 * 8 * 128 * 2
    assert out["kv_cache_bytes_per_sequence"] == 131072 * 131072  # 17.2 GB
    assert out["context"] == 131072 and out["max_batch"] >= 1
    status = run("infer", "--model", "llama-3.1-8b", "--context", "131073")
    assert status.returncode == 2 and "context window (131072)" in status.stderr


MODEL_ERRORS = {
    "ep not a multiple of tp": (
        ("--model", "deepseek-v3", "--tp", "4", "--ep", "6", "--device", "h200-sxm"),
        "--ep (6) must divide tp (4), or be a multiple of it",
    ),
    "ep beyond the experts": (
        ("--model", "deepseek-v3", "--ep", "512", "--device", "h200-sxm"),
        "--ep (512) must be at most the model's 256 experts",
    ),
    "ep on a dense model": (
        ("--model", "llama-3.1-8b", "--ep", "2"),
        "--ep (2) needs a mixture-of-experts model",
    ),
    "a config.json that does not exist": (
        ("--model", "no/such/config.json"),
        "--model 'no/such/config.json': no such file",
    ),
    "neither a catalog name nor a file": (
        ("--model", "deepseek-v9"),
        "--model 'deepseek-v9' is not in the catalog; allowed: llama-2-7b",
    ),
}


@pytest.mark.parametrize("case", MODEL_ERRORS, ids=list(MODEL_ERRORS))
def test_model_and_ep_errors_name_the_flag(case, call):
    argv, message = MODEL_ERRORS[case]
    status, out, err = call("infer", *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_bad_config_json_is_one_line_naming_model(tmp_path, call):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    gpt2 = tmp_path / "config.json"
    gpt2.write_text('{"model_type": "gpt2", "n_embd": 768}')
    for path, message in ((bad, "is not valid JSON"),
                          (gpt2, "model_type 'gpt2' is not supported")):  # fmt: skip
        for command in ("infer", "block"):
            status, out, err = call(command, "--model", str(path))
            assert status == 2 and out == "", err
            assert err.startswith(f"roofline-book {command}: error: --model: ")
            assert message in err and len(err.strip().splitlines()) == 1
    # a real process: no traceback, the same line
    done = run("infer", "--model", str(gpt2), program=FRESH)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--model: model_type 'gpt2' is not supported" in done.stderr
    # the helper train uses: the same words
    from roofline_book.cli.common import UsageError, model_arg

    with pytest.raises(UsageError, match=r"^--model: model_type 'gpt2' is not supported"):
        model_arg(str(gpt2))
    assert model_arg(str(CATALOG_CONFIGS / "qwen3-32b.json")).hidden == 5120


def test_help_says_model_takes_a_config_json_and_what_ep_does():
    infer = " ".join(run("infer", "--help").stdout.split())
    assert "or the path to a Hugging Face config.json" in infer
    assert "N > --tp (a multiple of it) runs attention data-parallel in N / tp groups" in infer
    assert "(DeepSeek's DP attention)" in infer and "quantization_config" in infer
    block = " ".join(run("block", "--help").stdout.split())
    assert "or the path to a Hugging Face config.json" in block


def test_block_of_an_mla_config_json_uses_its_fp8_checkpoint():
    path = str(CATALOG_CONFIGS / "deepseek-v3.json")
    out = run_json("block", "--model", path)
    # 128 heads of qk_nope_head_dim 128 + qk_rope_head_dim 64; FP8 W8A8 checkpoint
    assert (out["config"]["heads"], out["config"]["head_dim"]) == (128, 192)
    assert out["config"]["dtype"].startswith("fp8")
    text = run("block", "--model", path).stdout
    assert "the checkpoint's (W8A8, from the config.json's quantization_config)" in text
    assert run_json("block", "--model", path, "--dtype", "bf16")["config"]["dtype"] == "bf16"


def test_an_awq_checkpoint_sets_infer_weights_and_block_says_it_keeps_one_dtype(tmp_path):
    # Qwen2.5-7B's published shapes with an AWQ quantization_config (4 bits, groups of 128,
    # zero points): infer runs W4A16 with a zero point per group; block keeps BF16 and says so
    config = json.loads((HF_CONFIGS / "qwen2.5-7b.json").read_text())
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128,
                                     "zero_point": True, "version": "gemm"}  # fmt: skip
    path = tmp_path / "qwen2.5-7b-awq.json"
    path.write_text(json.dumps(config))
    p = run_json("infer", "--model", str(path))["precisions"]
    assert (p["weights"], p["scheme"], p["zero_point"], p["source"]) == (
        "int4", "W4A16", True, "checkpoint")  # fmt: skip
    text = run("block", "--model", str(path)).stdout
    assert "dtype bf16: block has one precision, the checkpoint's W4A16 is not it" in text


def test_explicit_fp8_flags_keep_deepseek_v3s_block_scales():
    # the checkpoint stores one FP32 scale per 128 x 128 block of its FP8 weights
    # (config.json: quantization_config weight_block_size [128, 128]); asking for those same
    # FP8 weights by flag reads the same bytes, so the weights and their totals agree
    args = ("infer", "--model", "deepseek-v3", "--device", "h800-sxm", "--ep", "144")
    default = run_json(*args)
    flags = run_json(*args, "--weights-dtype", "fp8", "--dtype", "fp8")
    assert default["precisions"]["source"] == "checkpoint"
    assert flags["precisions"]["source"] == "flags"
    assert flags["precisions"]["weight_block"] == default["precisions"]["weight_block"] == 128
    assert flags["weight_bytes"] == default["weight_bytes"]
    bf16 = run_json(*args, "--weights-dtype", "bf16", "--dtype", "bf16")
    assert bf16["precisions"]["weight_block"] is None
