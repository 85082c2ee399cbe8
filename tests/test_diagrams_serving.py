"""The serving chapter's diagrams, against the simulation's own records and hand arithmetic.

Llama-3-8B (config.json): hidden 4096, 32 layers, 32 query heads and 8 KV heads of 128,
intermediate 14336 (gated), vocabulary 128256, 8,030,261,248 parameters, untied LM head.
Linear layers: 32 x (4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336) = 6,979,321,856
weights; read every step: all parameters but the embedding table (one row a token),
2 x (8030261248 - 128256 x 4096) = 15.01e9 bytes in BF16. KV cache a token:
2 x 32 x 8 x 128 x 2 B = 131072 B. H100 SXM: 989.4 TFLOP/s BF16 dense, 3.35 TB/s HBM,
NVLink 450 GB/s a direction.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

pytest.importorskip("noto_cjk_sans_otc", reason="the [zh] extra (noto-cjk-sans-otc)")

from test_diagrams import legible, words  # noqa: E402

from roofline_book import hardware  # noqa: E402
from roofline_book.llm.config import model  # noqa: E402
from roofline_book.present.diagrams import serving  # noqa: E402
from roofline_book.serving.search import Load, Slo, sweep  # noqa: E402
from roofline_book.serving.simulate import Deployment  # noqa: E402
from roofline_book.serving.steps import StepModel  # noqa: E402
from roofline_book.serving.workload import Lengths  # noqa: E402

pytestmark = pytest.mark.usefixtures("zh")

P, B = 989.4e12, 3.35e12
WEIGHT_BYTES = 2 * (8030261248 - 128256 * 4096)
LINEAR = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
M_KV = 2 * 32 * 8 * 128 * 2


def _patches(fig, gid):
    return [p for ax in fig.axes for p in ax.patches if p.get_gid() == gid]


@pytest.fixture(scope="module")
def runs():
    return serving.timeline_runs()


def test_timeline_one_cell_a_step_and_a_request(runs):
    for s, run in runs.items():
        fig = serving.timeline({s: run})
        steps = _patches(fig, "step")
        assert len(steps) == len(run.timeline)  # one cell a recorded step
        items = 0
        for cell, rec in zip(steps, run.timeline, strict=True):
            assert cell.get_width() > 0
            for idx, kind, _ in rec.items:
                if kind == "decode" and rec.start >= run.finish_each[idx]:
                    kind = "padding"
                # the request's cell sits in its step's column
                xs = [p.get_x() for p in _patches(fig, f"{kind} {idx}")]
                assert any(math.isclose(x, cell.get_x()) for x in xs), (s, rec, kind, idx)
                items += 1
        drawn = sum(
            len(_patches(fig, f"{k} {i}"))
            for k in ("prefill", "decode", "padding")
            for i in range(len(run.ttft_each))
        )
        assert drawn == items
    legible(serving.timeline(runs))


def test_timeline_static_waits_and_pads(runs):
    static = runs["static"]
    # request 0 (output 6) runs alone: 1 prefill + 5 decode steps; requests 1-3 (outputs 3, 5,
    # 4) arrive meanwhile and run as one batch: 1 prefill + 4 decode steps (the longest): 11
    assert static.steps == len(static.timeline) == 11
    starts = [rec.start for rec in static.timeline]
    ones = [rec for rec in static.timeline if any(i == 1 for i, _, _ in rec.items)]
    assert ones[0].start == starts[6]  # request 1 waits for request 0's whole batch
    # padding: request 1 is done after 2 of the 4 decode steps, request 3 after 3: 2 + 1 cells
    padded = [
        (i, rec.start)
        for rec in static.timeline
        for i, kind, _ in rec.items
        if kind == "decode" and rec.start >= static.finish_each[i]
    ]
    assert sorted(i for i, _ in padded) == [1, 1, 3]
    fig = serving.timeline({"static": static})
    assert len(_patches(fig, "padding 1")) == 2 and len(_patches(fig, "padding 3")) == 1
    assert f"静态批处理：11 步，{static.timeline[-1].end * 1e3:.1f} ms 全部完成" in words(fig)


def test_timeline_chunks_split_the_prompt(runs):
    chunked = runs["chunked"]
    # a budget of 256 tokens: request 0's 300-token prompt is 256 + 44 (300 - 256)
    first = chunked.timeline[0].items
    assert first == ((0, "prefill", 256),)
    assert chunked.timeline[1].items[0] == (0, "prefill", 44)
    # every request's prefill tokens add up to its prompt, under every scheduler
    for run in runs.values():
        for idx, prompt in enumerate((300, 200, 250, 150)):
            got = sum(
                n for rec in run.timeline for i, k, n in rec.items if i == idx and k == "prefill"
            )
            assert got == prompt
    fig = serving.timeline({"chunked": chunked})
    assert {"256", "44"} <= set(words(fig).split("\n"))


def test_free_chunk_fills_the_memory_time():
    sm = StepModel(model("llama-3-8b"), hardware("h100-sxm"))
    ctx = 32 * 1100
    n = serving.free_chunk(sm, 32, ctx)
    decode = sm.time(decodes=32, context_sum=ctx)
    # the FLOPs the memory time leaves, at 2 FLOPs a weight a token of the linear layers:
    # (5.86 ms - decode's compute) x 989.4 TFLOP/s / (2 x 6.98e9) = about 380 tokens
    estimate = (decode.memory_s - decode.compute_s) * P / (2 * LINEAR)
    assert n == pytest.approx(estimate, rel=0.03)


def test_chunk_roofline_times():
    fig = serving.chunk_roofline()
    text = words(fig)
    # decode of 32 at context 1100: weights and 32 x 1100 cached tokens over HBM:
    # (15.01e9 + 32 x 1100 x 131072) / 3.35e12 = 5.86 ms
    ms = (WEIGHT_BYTES + 32 * 1100 * M_KV) / B * 1e3
    assert f"decode 32 条：{ms:.2f} ms" in text
    # 2048 prompt tokens are compute-bound: at least 2048 x 2 x 6.98e9 / 989.4e12 = 28.9 ms
    line = next(t for t in text.split("\n") if t.startswith("+ prefill 2048 token"))
    assert float(line.split("：")[1].split()[0]) > 2048 * 2 * LINEAR / P * 1e3
    assert "ridge point 295" in text
    legible(fig)


def test_disaggregation_sends_the_prompts_cache():
    fig = serving.disaggregation()
    text = words(fig)
    # 1000 x 131072 B = 131 MB over one H100's NVLink, 450 GB/s: 0.29 ms
    assert "1000 ×\n$m_{kv}$\n= 131 MB" in text
    assert "链路 450 GB/s" in text
    assert f"传输 {1000 * M_KV / 450e9 * 1e3:.2f} ms" in text
    # prefill of 1000 tokens: 1000 x 2 x 6.98e9 + causal attention 4 x 32 x 32 x 128 x 1000^2 / 2
    # + the LM head's row (2 x 4096 x 128256) over the weights and the 1000 tokens' cache:
    # 1.42e13 / 15.14e9 = 939 > 295; decode of 64 at 1100 (25 FLOP/byte at 32) is below it
    flops = 1000 * 2 * LINEAR + 4 * 32 * 32 * 128 * 1000**2 / 2 + 2 * 4096 * 128256
    shown = next(t for t in text.split("\n") if t.startswith("$I$ = ") and "> $I^*$" in t)
    assert float(shown.split()[2]) == pytest.approx(flops / (WEIGHT_BYTES + 1000 * M_KV), rel=0.01)
    assert "compute-bound" in text and "memory-bound" in text
    legible(fig)


def test_pareto_draws_the_sweep_above_the_decode_bound():
    m, h = model("llama-3-8b"), hardware("h100-sxm")
    load = Load(60, Lengths.parse("prompt", 1000), Lengths.parse("output", 100))
    curves = {s: sweep(Deployment(m, h, scheduler=s, chunk=512), load, [5, 20]) for s in
              ("continuous", "chunked")}  # fmt: skip
    fig = serving.pareto(curves, slo=Slo(0.2, 0.05))
    ttft_ax, tpot_ax, step_ax = fig.axes
    for s, curve in curves.items():
        line = next(x for x in ttft_ax.get_lines() if x.get_label() == serving.NAMES[s])
        assert list(line.get_ydata()) == [r.ttft_s.p90 * 1e3 for _, r in curve]
        assert list(line.get_xdata()) == [r.output_tokens_per_s for _, r in curve]
    # the dashed decode-only curve lies under every simulated TPOT at the same throughput
    bound = next(x for x in tpot_ax.get_lines() if x.get_linestyle() == "--")
    for line in tpot_ax.get_lines():
        if line.get_label() in serving.NAMES.values():
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
                assert y >= float(np.interp(x, *bound.get_data()))
    # b = 1, context 1: the weights but the embedding table, 15.01e9 B / 3.35e12 = 4.48 ms
    short = next(x for x in step_ax.get_lines() if x.get_linestyle() == "--")
    assert short.get_ydata()[0] == pytest.approx(WEIGHT_BYTES / B * 1e3, rel=0.005)
    # b* of the MLP up GEMM (K 4096, N 2 x 14336) at I* = 989.4 / 3.35 = 295.3:
    # I* 2KN / (2KN - I* 2 (K + N)) = 321.9
    k, n, r = 4096, 2 * 14336, P / B
    b_star = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert f"$b^*$ = {b_star:.0f}" in [t.get_text() for t in fig.legends[0].texts] + [
        t.get_text() for t in step_ax.get_legend().texts
    ]
    legible(fig)
