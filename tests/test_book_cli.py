"""roofline_book.book.cli: the CLI appendix's figures, against the formulas worked out by hand
(2MKN, the bytes of each operand), the H100/H200 datasheets and Llama-3-8B's published config."""

import math

import pytest

from roofline_book import hardware
from roofline_book.book import cli
from roofline_book.cli import OPERATORS
from roofline_book.cli.schema import SCHEMAS

EXAMPLE = ("--peak", "100T", "--bandwidth", "1TB/s")  # the book's example device


def test_gemm_figures():
    f = cli.gemm_figures("op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096", *EXAMPLE)
    assert f["cli_gemm_gflop"] == pytest.approx(2 * 4096**3 / 1e9)  # 137.4 GFLOP
    assert f["cli_gemm_mb"] == pytest.approx(3 * 4096**2 * 2 / 1e6)  # A, W, C in BF16: 100.7 MB
    assert f["cli_gemm_intensity"] == pytest.approx(4096 / 3)  # 2n^3 / 6n^2 = 1365
    assert f["cli_ex_ridge"] == pytest.approx(100)  # 100 TFLOP/s / 1 TB/s
    assert f["cli_gemm_ms"] == pytest.approx(2 * 4096**3 / 100e12 * 1e3)  # 1.374 ms
    assert f["cli_gemm_mem_ms"] == pytest.approx(3 * 4096**2 * 2 / 1e12 * 1e3)  # 0.101 ms


def test_add_figures():
    f = cli.add_figures("op", "add", "--numel", "2^20", "--dtype", "bf16", *EXAMPLE)
    # one FLOP an element against two BF16 reads and one write: 6 bytes
    assert f["cli_add_bytes_per_flop"] == 6.0
    assert f["cli_add_intensity"] == pytest.approx(1 / 6)
    assert f["cli_add_gflops"] == pytest.approx(1e12 / 6 / 1e9)  # 166.7 GFLOP/s
    assert f["cli_add_percent"] == pytest.approx(100 * (1e12 / 6) / 100e12)  # 0.167 %


def test_operators_table():
    t = cli.operators_table()
    lines = t["cli-ops-md"].data.splitlines()
    # the CLI's registry holds 19 operators: a header, a rule and one row each, in its order
    assert t["cli_n_ops"] == len(OPERATORS) == 19 and len(lines) == 2 + 19
    assert [line.split("`")[1] for line in lines[2:]] == list(OPERATORS)
    gemm = next(line for line in lines if line.startswith("| `gemm`"))
    assert all(f"--{dim}" in gemm for dim in "mkn")  # C = A W with A M x K, W K x N


def test_ridge_points():
    r = cli.ridge_points("bf16")
    assert r["h100-sxm"] == pytest.approx(989.4e12 / 3.35e12)  # 295.3: datasheet BF16 / HBM3
    assert r["h200-sxm"] == pytest.approx(989.4e12 / 4.8e12)  # 206.1: same peak, 4.8 TB/s


def test_block_figures():
    f = cli.block_figures("block", "--device", "h100-sxm")
    # Llama-2-7B at 4096 tokens: 12 operators; the two norms, RoPE, the two residual adds and
    # the SwiGLU product stay memory-bound, the five projections and attention do not
    assert (f["cli_block_ops"], f["cli_block_memory_ops"]) == (12, 6)
    # one token: every weight serves one row, intensity about 1 FLOP/byte, below 295
    assert f["cli_seq1_memory_ops"] == 12
    # the projections' compute time: 2 x 4096 x (4 x 4096^2 + 3 x 4096 x 11008) FLOPs at
    # 989.4 TFLOP/s is 1.68 ms; the rest of the block's bound: the six memory-bound operators'
    # 742,408,192 B at 3.35 TB/s (0.22 ms) and FlashAttention's 4 x 128 x 4096 x 4097 / 2 x 32
    # FLOPs at the peak (0.14 ms): 1.676 of 2.036 ms
    gemm = 2 * 4096 * (4 * 4096**2 + 3 * 4096 * 11008) / 989.4e12
    rest = 742_408_192 / 3.35e12 + 4 * 128 * (4096 * 4097 // 2) * 32 / 989.4e12
    assert f["cli_block_gemm_share"] == pytest.approx(100 * gemm / (gemm + rest), rel=1e-3)


def test_infer_figures():
    f = cli.infer_figures("infer", "--model", "llama-3-8b", "--device", "h100-sxm", "--batch", "16")
    # Llama-3-8B config: 32 layers, 8 KV heads of 128, K and V in BF16
    kv = 32 * 8 * 128 * 2 * 2
    assert f["cli_inf_kv_kb"] == pytest.approx(kv / 1e3)  # 131.072 kB
    assert (f["cli_inf_reserve"], f["cli_inf_use"]) == (0.1, 0.9)  # vLLM's default 0.9
    assert f["cli_inf_weights_gb"] == pytest.approx(16.06, abs=0.01)  # 8.03 B params x 2 B
    # vLLM's rule: floor((0.9 x memory - weights - activations) / (context x kv))
    memory = hardware("h100-sxm").memory_capacity
    free = 0.9 * memory - f["cli_inf_weights_gb"] * 1e9 - f["cli_inf_act_gb"] * 1e9
    assert f["cli_inf_fits"] == math.floor(free / (f["cli_inf_context"] * kv))
    # gate and up as one K x N = 4096 x 28672 GEMM with B rows reaches the ridge R when
    # B K N / (K N + B (K + N)) = R, so B = R K N / (K N - R (K + N))
    k, n, ridge = 4096, 2 * 14336, 989.4e12 / 3.35e12
    assert f["cli_inf_ridge_batch"] == pytest.approx(ridge * k * n / (k * n - ridge * (k + n)))


def test_serve_steady():
    # --max-rate warns below 3x the requests in the system at once
    assert cli.serve_steady() == 3


def test_size_figures():
    assert cli.size_figures("4k", "64Ki", "1M") == {
        "cli_4k": 4000,
        "cli_64ki": 64 * 1024,
        "cli_1m": 1_000_000,
    }


def test_json_tables():
    t = cli.json_tables()
    commands = ("op", "block", "infer", "train", "devices", "plot", "profile", "claims")
    assert all(f"cli-json-{c}-md" in t for c in commands)
    # one table a schema in the CLI's registry: 10 commands
    assert t["cli_json_commands"] == len(SCHEMAS) == 10
    assert all(f"cli-json-{c}-md" in t for c in SCHEMAS)
    # the devices table: a row a key, the top-level keys in the schema's order
    rows = [line.split("`")[1] for line in t["cli-json-devices-md"].data.splitlines()[2:]]
    top = [r for r in rows if "." not in r and "[" not in r]
    assert top == list(SCHEMAS["devices"]["properties"])
    assert top == ["roofline_book_version", "command", "devices"]
    assert "`ridge_point`" in t["cli-json-device-md"].data
    assert "`flops`" in t["cli-json-cost-md"].data
