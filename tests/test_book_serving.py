"""roofline_book.book.serving: the serving chapter's figures, against hand arithmetic.

Llama-3-8B (config.json): hidden 4096, 32 layers, 32 query heads and 8 KV heads of 128,
intermediate 14336 (gated), vocabulary 128256, 8,030,261,248 parameters, untied LM head.
Linear layers: 32 x (4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336) = 6,979,321,856
weights, 2 FLOPs each a token. A step reads every parameter but the embedding table:
2 x (8030261248 - 128256 x 4096) B = 15.01 GB in BF16. KV cache a token: 2 x 32 x 8 x 128 x 2 B
= 131072 B. Attention of one query over c keys: 4 x 32 heads x 128 x c FLOPs a layer.
H100 SXM (the catalog's datasheet figures): 989.4 TFLOP/s BF16 dense, 3.35 TB/s HBM,
81,559 MiB, NVLink 450 GB/s a direction. DeepSeek-V3 (config.json): 61 layers, MLA cache of
512 + 64 values a token a layer, one MTP layer; H800: 3.35 TB/s, 80 GiB.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from serving_hand import ATT, CTX, HEAD, HIDDEN, LINEAR, M_KV, PARAMS, VOCAB, B, P, W  # noqa: E402

from roofline_book import hardware
from roofline_book.book import serving as bs
from roofline_book.llm.config import model
from roofline_book.measure import published
from roofline_book.present.diagrams.serving import timeline_runs
from roofline_book.serving.engine import StepRecord
from roofline_book.serving.search import Load, Slo
from roofline_book.serving.simulate import Deployment, Percentiles, ServeResult
from roofline_book.serving.steps import StepTime
from roofline_book.serving.workload import Lengths

MEM = 81_559 * 2**20
PRE_1000 = 1000 * 2 * LINEAR + ATT * 1000 * 1001 / 2 + HEAD  # a 1000-token prompt's FLOPs

H100 = hardware("h100-sxm")
LLAMA = Deployment(model("llama-3-8b"), H100)


def _load(requests: int, prompt: int = 1000, output: int = 2) -> Load:
    return Load(requests, Lengths.parse("prompt", prompt), Lengths.parse("output", output))


def _spread(x: float) -> Percentiles:
    return Percentiles(x, x, x, x)


def _result(
    ttft: tuple[float, ...],
    tpot: tuple[float | None, ...] = (),
    *,
    timeline: tuple[StepRecord, ...] = (),
    makespan: float = 1.0,
    preemptions: int = 0,
) -> ServeResult:
    """A result written by hand: only the fields a test reads are meaningful."""
    n = len(ttft)
    return ServeResult(
        requests=n,
        makespan_s=makespan,
        requests_per_s=n / makespan,
        output_tokens_per_s=0.0,
        ttft_s=_spread(max(ttft)),
        tpot_s=None,
        e2e_s=_spread(1.0),
        mean_batch=1.0,
        memory_bound_share=1.0,
        steps=len(timeline),
        preemptions=preemptions,
        mean_in_system=1.0,
        estimate=False,
        ttft_each=ttft,
        tpot_each=tpot or (None,) * n,
        e2e_each=(1.0,) * n,
        finish_each=(1.0,) * n,
        timeline=timeline,
    )


def test_step_intensity_reads_flops_over_bytes():
    # FLOPs / P = 3 ms and bytes / B = 1 ms: FLOPs / bytes = 3 P / B = 3 x 295.3
    step = StepTime(3e-3, "compute", 3e-3, 1e-3, 0.0)
    assert bs.step_intensity(step, H100) == pytest.approx(3 * P / B)


def test_decode_steps_read_the_weights_and_the_cache():
    s = bs.decode_step_figures(LLAMA, CTX, 64)
    # one sequence: (15.01e9 + 1100 x 131072) B / 3.35e12 = 4.52 ms; 64: 7.24 ms
    assert s["step_b1"] == pytest.approx((W + CTX * M_KV) / B * 1e3, rel=0.005)
    assert s["step_b64"] == pytest.approx((W + 64 * CTX * M_KV) / B * 1e3, rel=0.005)
    assert s["step_b"] == 64
    # the MLP up GEMM (K 4096, N 2 x 14336) at I* = 989.4 / 3.35: I* 2KN / (2KN - I* 2 (K + N))
    k, n, r = 4096, 2 * 14336, P / B
    assert s["b_star"] == pytest.approx(r * 2 * k * n / (2 * k * n - r * 2 * (k + n)))


def test_a_decode_step_has_room_for_a_prefill_chunk():
    c = bs.piggyback_figures(LLAMA, 32, CTX, 2048)
    # 32 decodes at 1100: FLOPs 32 x (2 x 6.98e9 + LM head + 1100 keys of attention);
    # bytes the weights and 32 x 1100 cached tokens
    flops = 32 * (2 * LINEAR + HEAD + ATT * CTX)
    nbytes = W + 32 * CTX * M_KV
    assert c["ridge"] == pytest.approx(P / B)
    assert c["ch_i"] == pytest.approx(flops / nbytes, rel=0.02)
    assert c["ch_ms"] == pytest.approx(nbytes / B * 1e3, rel=0.005)
    # a chunk fills the spare compute: (5.86 ms x 989.4 TFLOP/s - decode's FLOPs) / (2 x 6.98e9)
    assert c["ch_free"] == pytest.approx((nbytes / B * P - flops) / (2 * LINEAR), rel=0.03)
    # 2048 prompt tokens: at least their linear layers' FLOPs at the peak (29 ms)
    assert c["ch_big_ms"] > 2048 * 2 * LINEAR / P * 1e3
    assert (c["ch_b"], c["ch_big"]) == (32, 2048)


def test_disaggregation_moves_one_prompts_cache_over_nvlink():
    split = dataclasses.replace(LLAMA, replicas=2, scheduler="disaggregated")
    d = bs.disaggregation_figures(split, 1000, 64, CTX)
    # 1000 x 131072 B = 131.1 MB over 450 GB/s = 0.29 ms
    assert d["dg_kv_mb"] == pytest.approx(1000 * M_KV / 1e6)
    assert d["dg_link"] == pytest.approx(450)
    assert d["dg_ms"] == pytest.approx(1000 * M_KV / 450e9 * 1e3)
    # prefill: its FLOPs over the weights and its own cache; decode as in the chunk test
    assert d["dg_i_pre"] == pytest.approx(PRE_1000 / (W + 1000 * M_KV), rel=0.01)
    dec = 64 * (2 * LINEAR + HEAD + ATT * CTX)
    assert d["dg_i_dec"] == pytest.approx(dec / (W + 64 * CTX * M_KV), rel=0.02)
    assert d["dg_i_dec"] < P / B < d["dg_i_pre"] and d["dg_b"] == 64


def test_a_prefix_hit_saves_whole_blocks_of_compute():
    f = bs.prefix_hit_figures(LLAMA, _load(10), Slo(ttft=0.2, tpot=0.05), 1000, hit=0.5)
    # no hit: a 1000-token prompt's FLOPs at the peak, 14.2 ms
    assert f["pre_ms"] == pytest.approx(PRE_1000 / P * 1e3, rel=0.005)
    # half a hit, in whole 16-token blocks: 31 blocks = 496 tokens cached, 504 new tokens,
    # each query i (497..1000) over i keys
    half = 504 * 2 * LINEAR + ATT * sum(range(497, 1001)) + HEAD
    assert f["pre_hit_ms"] == pytest.approx(half / P * 1e3, rel=0.005)
    assert f["hit_pct"] == 50 and f["hit_rate"] > 0


def test_max_rates_keeps_the_names():
    # one 1000-token prefill takes 14.2 ms: a 1 ms TTFT is never met
    assert bs.max_rates({"a": LLAMA}, _load(5), Slo(ttft=1e-3)) == {"a": 0.0}
    # a lone request meets any SLO at any rate, so the highest is its own pace: one request in
    # a prefill of 1000 tokens plus one decode step at context 1001
    got = bs.max_rates({"b": LLAMA}, _load(1), Slo(ttft=1.0))
    alone = PRE_1000 / P + (W + 1001 * M_KV) / B
    assert got["b"] == pytest.approx(1 / alone, rel=0.005)


def test_bound_and_estimate_of_a_lone_request():
    v = bs.bound_and_estimate(LLAMA, _load(1), 4)
    assert (v["n_req"], v["demo_rate"]) == (1, 4)
    # the prefill, then one decode step at context 1001, memory-bound
    dec_ms = (W + 1001 * M_KV) / B * 1e3
    assert v["demo_ttft"] == pytest.approx(PRE_1000 / P * 1e3, rel=0.005)
    assert v["demo_tpot"] == pytest.approx(dec_ms, rel=0.005)
    assert v["demo_tps"] == pytest.approx(2 / (v["demo_ttft"] + v["demo_tpot"]) * 1e3)
    # MAMF on H100: 794.5 of 989.4 TFLOP/s
    assert v["eff_c"] == pytest.approx(794.5 / 989.4 * 100)
    # a memory-bound step's estimate is its memory term over the memory efficiency
    assert 0 < v["eff_m"] <= 100
    assert v["est_tpot"] == pytest.approx(v["demo_tpot"] / (v["eff_m"] / 100), rel=1e-9)


def test_timeline_figures_read_the_steps():
    def steps(*ends: float) -> tuple[StepRecord, ...]:
        starts = (0.0, *ends[:-1])
        return tuple(StepRecord(0, a, b, "memory", ()) for a, b in zip(starts, ends, strict=True))

    runs = {
        "static": _result((0.0042, 0.0127, 0.0127, 0.0127), timeline=steps(0.0042, 0.0085, 0.0127)),
        "continuous": _result((0.0042, 0.0049, 0.0091, 0.0136), timeline=steps(0.0045, 0.0091)),
    }
    t = bs.timeline_figures(runs)
    assert t["tl_n"] == 4
    assert (t["tl_static"], t["tl_cont"]) == (pytest.approx(12.7), pytest.approx(9.1))
    # the second request (index 1)
    assert (t["tl_wait_static"], t["tl_wait_cont"]) == (pytest.approx(12.7), pytest.approx(4.9))
    # steps of 4.5 and 4.6 ms
    assert (t["tl_min"], t["tl_max"]) == (pytest.approx(4.5), pytest.approx(4.6))


def test_timeline_steps_each_read_the_weights():
    t = bs.timeline_figures(timeline_runs(chunk=256))
    # every continuous-batching step reads the weights once: >= 15.01e9 / 3.35e12 = 4.48 ms
    assert W / B * 1e3 <= t["tl_min"] <= t["tl_max"] <= 1.01 * W / B * 1e3
    assert t["tl_wait_static"] > 4 * t["tl_wait_cont"]


def test_pareto_figures_count_goodput():
    slo = Slo(ttft=0.2, tpot=0.05)
    low = _result((0.9, 1.5))
    # four requests in 2 s: #1 misses the TTFT, #2 the TPOT; #3 has no TPOT (one token)
    top = _result((0.1, 0.3, 0.1, 0.1), (0.01, 0.01, 0.06, None), makespan=2.0)
    curves = {"static": [(4, low), (96, low)], "continuous": [(4, low), (96, top)]}
    p = bs.pareto_figures(curves, slo)
    assert (p["slo_ttft"], p["slo_tpot"], p["slo_pct"]) == (200, 50, 90)
    assert (p["low_rate"], p["gp_rate"]) == (4, 96)
    assert p["static_low"] == pytest.approx(1500)  # p90 written as the largest, 1.5 s
    # 4 requests in 2 s, 2 of them within the SLO: 1 a second, 50%
    assert (p["gp_tput"], p["gp_good"], p["gp_share"]) == (2.0, 1.0, 50.0)
    with pytest.raises(ValueError, match="slo"):
        bs.pareto_figures(curves, Slo(ttft=0.2))


def test_kv_capacity_follows_vllms_rule():
    curves = {"a": [(1, _result((0.1,), preemptions=3))], "b": [(2, _result((0.1,)))]}
    k = bs.kv_capacity_figures(LLAMA, 1200, curves)
    # 0.9 x 81,559 MiB, less the BF16 weights (2 x 8.03e9 B) and vLLM's profile peak of
    # activations (8192 tokens through the MLP, 256 sequences' FP32 logits), over 131072 B
    act = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 128256
    tokens = math.floor((0.9 * MEM - 2 * PARAMS - act) / M_KV)
    assert k == {"block": 16, "kv_tokens": tokens, "kv_fit": tokens // 1200, "preempt_top": 3}


def test_littles_law_holds_on_a_simulation():
    f = bs.little_figures(LLAMA, _load(20, output=20), 8)
    # N = lambda W (Little, 1961), whatever the scheduler
    assert f["little_in"] == 8
    assert f["little_l"] == pytest.approx(f["little_rate"] * f["little_w"], rel=1e-9)


@pytest.fixture(scope="module")
def deepseek():
    rows = [published.row(f"deepseek-service-{ph}-node") for ph in ("prefill", "decode")]
    return model("deepseek-v3"), hardware("h800-sxm"), *rows


def test_deepseek_bounds_sit_above_the_published(deepseek):
    config, h800, pre, dec = deepseek
    d = bs.node_throughput_bounds(config, h800, pre, dec)
    # the published statistics (open-infra-index, day 6): 73.7k in, 14.8k out a node
    assert (d["ds_prefill_pub_k"], d["ds_decode_pub_k"]) == (73.7, 14.8)
    assert (d["ds_node"], d["ds_ep_pre"], d["ds_ep_dec"], d["ds_ctx"]) == (8, 32, 144, 4989)
    assert d["ds_hit"] == pytest.approx(56.3)
    assert d["ds_decode_pct"] < 100 and d["ds_prefill_pct"] < 100
    # prefill is bound by the NIC (50 GB/s a GPU, 8 a node): group-limited routing (4 of 8
    # groups of 32 experts, 8 of their 128 experts) over EP 32's 4 nodes of two groups sends a
    # token to 2.196 other nodes, FP8 dispatch and BF16 combine of 7168 values (3 bytes) in 58
    # MoE layers; 56.3% of input tokens hit the cache: 8 x 50e9 / (2.196 x 7168 x 3 x 58) /
    # (1 - 0.563) = 334.2k tokens/s
    pre = 3 * sum(
        math.comb(2, j) * math.comb(6, 4 - j) / math.comb(8, 4)
        * (1 - math.comb(128 - 32 * j, 8) / math.comb(128, 8))
        for j in (1, 2)
    )  # fmt: skip
    nic = 8 * 50e9 / (pre * 7168 * 3 * 58) / (1 - 0.563)
    assert (d["ds_pre_by"], d["ds_prefill_k"]) == ("网卡的带宽", pytest.approx(nic / 1e3, rel=1e-3))
    # MLA cache a token: 61 layers x (512 + 64) x 2 B = 70272 B; a GPU's sequences fit 80 GiB,
    # and reading them alone at 3.35 TB/s caps a node at 8 x 3.35e12 / (4989 x 70272) = 76.4k
    assert d["ds_seq_gpu"] * 4989 * 70272 < 80 * 2**30
    assert d["ds_decode_k"] < 8 * B / (4989 * 70272) / 1e3
    assert d["ds_pre_by"] == "网卡的带宽"


def test_deepseek_prefill_bound_is_per_token(deepseek):
    # the data file's note: the bound is the all-to-all's time per token, so a longer prompt
    # (64 or 4096 tokens instead of 1024) leaves it where it was
    config, h800, pre, dec = deepseek
    base = bs.node_throughput_bounds(config, h800, pre, dec)["ds_prefill_k"]
    for prompt in (64, 4096):
        other = dataclasses.replace(pre, config={**pre.config, "prompt": prompt})
        got = bs.node_throughput_bounds(config, h800, other, dec)
        assert got["ds_prefill_k"] == pytest.approx(base, rel=1e-9)
        assert got["ds_prompt"] == prompt


def test_an_fp8_deployments_intensity_is_read_at_the_fp8_ridge():
    # W8A8 with an FP8 cache: the step's compute time is its FLOPs over the FP8 peak
    # (1978.9 TFLOP/s), so its intensity is read at the FP8 ridge 1978.9 / 3.35 = 590.7
    from roofline_book.llm.inference import Precisions

    fp8 = dataclasses.replace(LLAMA, precisions=Precisions("fp8", "fp8", "fp8"))
    c = bs.piggyback_figures(fp8, 32, CTX, 2048)
    assert c["ridge"] == pytest.approx(1978.9e12 / B)
    # 32 decodes at 1100: FLOPs as in BF16; bytes: the linear weights at 1 B each, the LM
    # head in BF16 (2 x 128256 x 4096 B), 32 x 1100 cached tokens at 2 x 32 x 8 x 128 x 1 B:
    # 1.97e12 / (6.98e9 + 1.05e9 + 2.31e9) B = 48.2 FLOP/byte (the BF16 ridge gave half)
    flops = 32 * (2 * LINEAR + HEAD + ATT * CTX)
    nbytes = LINEAR + 2 * VOCAB * HIDDEN + 32 * CTX * M_KV // 2
    assert c["ch_i"] == pytest.approx(flops / nbytes, rel=0.02)
    split = dataclasses.replace(fp8, replicas=2, scheduler="disaggregated")
    d = bs.disaggregation_figures(split, 1000, 64, CTX)
    dec = 64 * (2 * LINEAR + HEAD + ATT * CTX)
    assert d["dg_i_dec"] == pytest.approx(
        dec / (LINEAR + 2 * VOCAB * HIDDEN + 64 * CTX * M_KV // 2), rel=0.02
    )
    # the step itself also equals FLOPs / bytes when read from a hand-made FP8 bound
    step = StepTime(3e-3, "compute", 3e-3, 1e-3, 0.0)
    assert bs.step_intensity(step, H100, "fp8") == pytest.approx(3 * 1978.9e12 / B)
