"""roofline_book.book.inference and .prefill_decode: the two inference chapters' figures,
recomputed by hand.

The expected values are arithmetic on the models' published shapes (config.json) and the
catalog's H100 SXM figures (989.4 TFLOP/s dense BF16, 3.35 TB/s, 81,559 MiB), not calls to
the functions the modules use.
"""

from dataclasses import replace

import pytest

from roofline_book import cost_table, hardware
from roofline_book.book import inference as bi
from roofline_book.book import prefill_decode as bp
from roofline_book.book.inference import batch_words, levers, levers_table
from roofline_book.llm.inference import Precisions, layer_ops, model
from roofline_book.measure import published

H100 = hardware("h100-sxm")
BW, MEM, RIDGE = 3.35e12, 81_559 * 2**20, 989.4e12 / 3.35e12
CTX = 4096
# Llama-3-8B: 32 layers, hidden 4096, 32 heads of 128, 8 KV heads, FFN 14336, vocab 128256
L3_PARAMS = 8_030_261_248
L3_KV = 2 * 32 * 8 * 128 * 2  # 131,072 bytes a token
ACT_L3 = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 128256  # vLLM-style profile peak


# Llama-2-7B: 32 layers, hidden 4096, 32 heads of 128 (MHA), FFN 11008, vocab 32000
L2_PARAMS = 6_738_415_616
L2_KV = 2 * 32 * 32 * 128 * 2  # 524,288 bytes a token
ACT_L2 = 2 * 8192 * (4096 + 3 * 11008) + 4 * 256 * 32000


def _b_star(ridge, w, ffn=14336, k=4096, a=2):
    n = 2 * ffn  # gate and up in one GEMM
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n))


@pytest.fixture(scope="module")
def rows():
    return {r.key: r for r in levers(model("llama-3-8b"), model("mixtral-8x7b"), H100, CTX)}


def test_base_row(rows):
    base = rows["base"]
    assert base.weights == 2 * L3_PARAMS  # 16.06 GB
    assert base.kv == L3_KV
    assert base.b_star == pytest.approx(_b_star(RIDGE, 2))  # 321.9
    assert base.b_max == int((0.9 * MEM - 2 * L3_PARAMS - ACT_L3) // (CTX * L3_KV)) == 111
    assert base.ceiling == pytest.approx(BW / (CTX * L3_KV))  # 6240 tokens/s


def test_levers_move_their_quantities(rows):
    base = rows["base"]
    # int4 (GPTQ): 0.5 byte + a 2-byte scale per 128 weights: b* = 83.0
    assert rows["int4"].b_star == pytest.approx(_b_star(RIDGE, 0.5 + 2 / 128))
    # W8A8: the FP8 ridge (1978.9 TFLOP/s dense) is twice BF16's, 1-byte weights and
    # activations: b* as BF16
    assert rows["w8a8"].b_star == pytest.approx(_b_star(1978.9e12 / BW, 1, a=1))
    # FP8 cache: half the bytes a token, twice the ceiling
    assert rows["kv_fp8"].kv == L3_KV // 2
    assert rows["kv_fp8"].ceiling == pytest.approx(2 * BW / (CTX * L3_KV))
    # MQA: one KV head of 128: 16 KiB a token; K and V projections shrink to 128 columns
    assert rows["mqa"].kv == 2 * 32 * 1 * 128 * 2
    assert rows["mqa"].weights == 2 * (L3_PARAMS - 32 * 4096 * 2 * (1024 - 128))
    # Mixtral-8x7B in BF16 is 93.4 GB: above 0.9 x 85.5 GB, nothing fits
    assert rows["moe"].weights == pytest.approx(93.4e9, rel=1e-3)
    assert rows["moe"].b_max == 0
    # speculative decoding, draft 4 at acceptance 0.8: 5 rows a sequence, (1 - 0.8^5) / 0.2
    assert rows["speculative"].b_star == pytest.approx(base.b_star / 5)
    assert rows["speculative"].ceiling == pytest.approx(base.ceiling * (1 - 0.8**5) / 0.2)
    for key in ("flash_decoding", "paged"):
        assert rows[key].weights == base.weights and rows[key].b_max == base.b_max


def test_table_marks_unchanged_cells(rows):
    table = levers_table(list(rows.values()))
    first, kv = table[0], table[3]
    # decimal units (chapter 2): 131,072 bytes a token = 131.1 kB, FP8 half of it
    assert first["$m_w$"] == "16.06 GB" and first["$m_{kv}$"] == "131.1 kB"
    assert kv["$m_w$"] == "不变" and kv["$m_{kv}$"] == "65.5 kB"
    assert kv["吞吐天花板 [token/s]"] == f"{2 * BW / (CTX * L3_KV):.0f}"  # 12480
    assert table[2]["$b^{*}$"] == "不变"  # W8A8
    # Mixtral is another model: its cache (32 layers x 8 KV heads x 128 x 2 x 2 bytes = 131,072,
    # as Llama-3-8B's) is written out, and 93.4 GB of weights leave no room for a sequence
    moe = table[5]
    assert moe["$m_{kv}$"] == "131.1 kB"
    assert moe["吞吐天花板 [token/s]"] == f"{BW / (CTX * L3_KV):.0f}"  # 6240, as the baseline's
    assert moe["$m_w$"] == "93.41 GB" and moe["$b_{\\max}$"] == "放不下"


def test_words_follow_the_numbers():
    n = dict(wall3=111, bstar3=321.9, wallh3=200, bstar3_h200=218.7, mx_h100=3,
             fits={"int4": 80, "w8a8": 125}, bstar={"int4": 83.0, "w8a8": 321.9},
             kv_fits={"h200": 442}, ans_q1h=113, bstar2=323.0, ans_q2=83.3, ans_q2w=90,
             ans_q3i=300.0, ridge=295.3)  # fmt: skip
    w = batch_words(n, 0)
    assert w["h200_wall_text"] == "墙已到它的 91%，与 ridge point 相当接近"  # 200 / 218.7
    assert w["cross_int4"] == "仍不到" and w["q2_text"] == "已超过" and w["q3_text"] == "已高于"
    assert w["mx_h100_text"] == "只放得下 3 条"
    assert w["gqa_text"] == "三种形状的墙都还没有越过"
    figures = {"flat": True, "flat_batch": 4, "flat_spread": 1.1, "flat_over_model": 1.0,
               "within": False, "rise": 3.0}  # fmt: skip
    flat = bp.sweep_words(figures, 4)
    assert flat["cpu_within"] == "不在"
    assert flat["cpu_flat_cause"] == "平坦段与按带宽算的下界相差不大"
    assert flat["cpu_shape"].startswith("先平、后升")


# --- prefill and decode (roofline_book.book.prefill_decode) -------------------------------


def _gemm_i(m, k, n):
    """BF16 GEMM intensity: 2mkn FLOPs over 2(mk + kn + mn) bytes."""
    return m * k * n / (m * k + k * n + m * n)


def test_phase_figures_llama2_layer():
    m, p = model("llama-2-7b"), Precisions()
    prefill, decode = (cost_table(layer_ops(m, 1, n, CTX, p), H100) for n in (CTX, 1))
    v = bp.phase_figures(prefill, decode, H100, m, CTX, ("projection", "MLP up", "MLP down"))
    # the weight GEMMs at 4096 tokens: QKV 4096x12288, output 4096x4096, up 4096x22016,
    # down 11008x4096; the square output projection is the lowest, 4096 / 3
    assert v["pre_i"] == pytest.approx(_gemm_i(CTX, 4096, 4096)) == pytest.approx(1365.33, abs=0.01)
    assert v["pre_gateup_i"] == pytest.approx(_gemm_i(CTX, 4096, 2 * 11008))  # 1873.7
    assert v["up_i"] == pytest.approx(_gemm_i(CTX, 4096, 11008))  # 1726.7
    # decode is a GEMV: I = 4096 x 22016 / (4096 + 4096 x 22016 + 22016), just under 1
    assert v["dec_w_i"] == pytest.approx(_gemm_i(1, 4096, 2 * 11008))
    # one layer's weights, 4096 x (12288 + 4096) + 3 x 4096 x 11008 = 202.4 M, and 4096 tokens
    # of one layer's cache (2 x 4096 x 2 bytes each) are read once: 472 MB / 3.35 TB/s
    floor_us = (2 * (4096 * 16384 + 3 * 4096 * 11008) + CTX * 2 * 4096 * 2) / BW * 1e6
    assert floor_us <= v["dec_us"] <= 1.02 * floor_us  # 141 us
    assert (v["ridge"], v["h100_peak_tflops"], v["h100_bw_tbps"]) == pytest.approx(
        (RIDGE, 989.4, 3.35)
    )
    assert v["prompt"] == CTX and v["tbl-11-phases"].data.count("prefill") == len(prefill)


def test_kv_and_window_figures():
    v = bp.kv_figures({"l2": L2_KV, "l3": L3_KV}, CTX)
    assert v["kv_l2_kb"] == pytest.approx(524.288) and v["kv_ratio"] == 4  # 32 KV heads over 8
    assert v["seq_l3"] == pytest.approx(CTX * 131072 / 1e9)  # 0.537 GB a sequence
    # Mistral-7B's window is 4096 tokens; Gemma-2-9B alternates local and global over 42 layers
    w = bp.window_figures({"m": 0.5}, {"m": 1.1}, model("mistral-7b"), model("gemma-2-9b"), 8192)
    assert (w["window"], w["gemma_local"], w["gemma_layers"], w["long"]) == (4096, 21, 42, 8192)
    assert (w["win_m"], w["full_m"]) == (0.5, 1.1)


def test_group_figures_follow_the_kv_heads():
    p = Precisions()
    v = bp.group_figures(dict(layer_ops(model("llama-3-8b"), 1, 1, CTX, p)), CTX, p)
    # decode attention: 4 h l d FLOPs over the cache's 2 x 2 kv_heads l d bytes, about g = 32 / 8
    assert v["attn_i"] == pytest.approx(4, rel=0.03)
    assert v["qkv_i"] == pytest.approx(_gemm_i(1, 4096, 4096 + 2 * 1024))  # a GEMV: about 1
    # Qwen3-235B-A22B's config.json: 64 query heads over 4 KV heads, g = 16
    assert v["g_max"] == 16 and v["attn_i_max"] == pytest.approx(16, rel=0.03)


def test_device_step_words():
    ms = {"prefill_l2_h100": 400.0, "decode_l2_h100": 8.0}
    same = {"prefill": 1.02, "decode": 4.8 / 3.35, "bandwidth": 4.8 / 3.35, "peak": 1.0}
    v = bp.device_step_figures(ms, {"prefill_l2_h100": 380.0, "decode_l2_h100": 8.0}, same)
    assert v["tps_l2"] == 125.0 and v["fused_share"] == pytest.approx(0.05)  # 1 - 380 / 400
    assert v["any_prefill_l2_h100"] == 380.0 and v["gain_peak"] == 1.0
    assert v["peak_phrase"] == "与 H100 SXM 相同" and v["decode_phrase"] == "完全相同"
    other = same | {"peak": 1.5, "decode": 1.3}
    w = bp.device_step_figures(ms, {"prefill_l2_h100": 380.0}, other)
    assert w["peak_phrase"] == "是 H100 SXM 的 1.50 倍" and w["decode_phrase"] == "几乎相同"
    assert w["prefill_phrase"].startswith("其中既有峰值之差")


def test_decode_estimates_and_per_token():
    v = bp.decode_estimates(
        {"l3": model("llama-3-8b")}, {"l3": 2 * L3_PARAMS}, {"l3": L3_KV}, CTX, H100
    )
    assert v["est_l3"] == pytest.approx((16.06e9 + 0.537e9) / BW * 1e3, rel=1e-3)  # 4.95 ms
    assert v["emb_l3"] == pytest.approx(128256 * 4096 * 2 / BW * 1e3)  # 0.314 ms
    near = bp.per_token_figures({"pt_h100": 300.0}, H100, hardware("h200-sxm"))
    assert near["pt_phrase"] == "只差 1.6%"  # 300 / 295.34 - 1
    assert near["ridge2"] == pytest.approx(989.4 / 4.8)
    far = bp.per_token_figures({"pt_h100": 150.0}, H100, hardware("h200-sxm"))
    assert far["pt_phrase"] == "在同一量级（相差 49%）"  # 1 - 150 / 295.34


def test_published_decode_figures():
    gptfast = published.row("gptfast-llama2-7b").measurements()
    ttft = published.measurement("trtllm-ttft-a100-fp16", prompt=2048)
    copy = published.measurement("stream-a100", kernel="copy")
    v = bp.published_decode_figures(gptfast, ttft, copy, hardware("a100-sxm"))
    # gpt-fast: 104.9 tokens/s in BF16; TensorRT-LLM: 133 ms to the first of 2048 tokens
    assert v["gf_tps"] == 104.9 and v["pub_dec_ms"] == pytest.approx(1000 / 104.9)  # 9.53 ms
    assert v["pub_pre_us"] == pytest.approx(133 / 2048 * 1e3)  # 64.9 us a prompt token
    assert v["pub_ratio"] == pytest.approx((1000 / 104.9) / (133 / 2048))  # 147
    assert v["copy_eta"] == pytest.approx(1.61 / 2.039)  # STREAM copy on 2.039 TB/s
    assert v["a100_ridge"] == pytest.approx(312 / 2.039)  # 153 FLOP/byte
    assert v["gf_eta"] > v["gf8_eta"] > v["gf4_eta"]  # faster, not proportionally: 105, 156, 197
    assert v["gf_source"].data.startswith("[pytorch-labs/gpt-fast]")


def test_l2_note():
    assert bp.l2_note(H100).startswith("灰色虚线是 L2 带宽")  # the catalog holds H100's L2 rate
    assert bp.l2_note(hardware("h200-sxm")) == ""


# --- batch and memory (roofline_book.book.inference) --------------------------------------


def test_named_flattens_dicts():
    ns = {"ridge": 295.3, "fits": {"int4": 131, 8: 111}, "other": 1}
    assert bi.named(ns, "ridge fits") == {"ridge": 295.3, "fits_int4": 131, "fits_8": 111}
    with pytest.raises(KeyError):
        bi.named(ns, "missing")


def test_decode_batch_figures_llama2_and_llama3():
    h200 = hardware("h200-sxm")  # 143,771 MiB
    v = bi.decode_batch_figures(
        model("llama-2-7b"), model("llama-3-8b"), H100, h200, CTX, Precisions()
    )
    assert (
        v["ridge"] == pytest.approx(RIDGE)
        and v["s_w"] == 2
        and v["b_approx"] == pytest.approx(RIDGE)
    )
    assert v["bstar3"] == pytest.approx(_b_star(RIDGE, 2))  # 321.9
    assert v["bstar2"] == pytest.approx(_b_star(RIDGE, 2, ffn=11008))  # 323.0
    assert v["bstar3_h200"] == pytest.approx(_b_star(989.4e12 / 4.8e12, 2))  # 218.7
    # decode attention reads the cache once: about g = heads / kv_heads FLOPs a byte
    assert v["attn2"] == pytest.approx(1, rel=0.02) and v["attn3"] == pytest.approx(4, rel=0.02)
    assert (v["heads3"], v["kv_heads3"], v["g3"]) == (32, 8, 4)
    assert v["w2"] == 2 * L2_PARAMS / 1e9 and v["kv2"] == CTX * L2_KV / 1e9  # 13.48 GB, 2.15 GB
    assert v["act3"] == ACT_L3 / 1e9 and v["act2"] == ACT_L2 / 1e9
    # vLLM: 0.9 of the memory, less weights and the profiled activations, over a sequence's cache
    assert v["wall2"] == int((0.9 * MEM - 2 * L2_PARAMS - ACT_L2) // (CTX * L2_KV)) == 29
    assert v["wall3"] == 111 and v["short2"] == pytest.approx(v["bstar2"] / 29)
    assert v["wallh3"] == int((0.9 * 143_771 * 2**20 - 2 * L3_PARAMS - ACT_L3) // (CTX * L3_KV))
    assert v["cap_h100"] == pytest.approx(85.52, abs=0.01) and v["cap_h100_mib"] == 81_559
    assert v["cap_h100_bin"] == "79.65 GiB"  # 81,559 / 1024
    assert (v["utilization"], v["profile_tokens"], v["profile_seqs"]) == (0.9, 8192, 256)


def test_throughput_figures_llama3():
    v = bi.throughput_figures(model("llama-3-8b"), H100, CTX, Precisions(), top=1024)
    assert v["ceiling"] == pytest.approx(BW / (CTX * L3_KV))  # 6240 tokens/s
    # batch 1 reads every weight but the embedding table, 2 x (8.03e9 - 128256 x 4096) B =
    # 15.01 GB, and 0.54 GB of cache: 3.35e12 / 15.55e9 = 215.5 steps a second
    weights = 2 * (L3_PARAMS - 128256 * 4096)
    assert v["tps1"] == pytest.approx(BW / (weights + CTX * L3_KV), rel=1e-3)
    # a token's attention at batch 1024 reads its 537 MB of cache: 160 us at 3.35 TB/s
    assert v["kv_us"] == pytest.approx(CTX * L3_KV / BW * 1e6, rel=0.01)
    # at the wall (111) attention is 111 x 0.537 GB of 111 x 0.537 + 16.06 GB read
    assert v["attn_share"] == pytest.approx(111 * 0.537 / (111 * 0.537 + 16.06), rel=0.01)
    # batch 1024, µs a token: the cache 4096 x 131072 B / 3.35 TB/s = 160.26; attention's own
    # Q read and output write 32 x 2 x 4096 x 2 B: 0.16; the linear layers' 2 x 6.979e9 FLOPs
    # and the LM head's 2 x 4096 x 128256 at 989.4 TFLOP/s: 14.11 + 1.06; the norms, adds,
    # SwiGLU and cache write, 32 x (2 x 16384 + 2 x 24576 + 3 x 14336 x 2 + 8192) B, and the
    # embedding and final norm (32776 B): 1.69. The share of the ceiling: 160.26 / 177.28
    cache = CTX * L3_KV / BW
    linear = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
    rest = 32 * 2 * 4096 * 2 / BW + (2 * linear + 2 * 4096 * 128256) / 989.4e12
    rest += (32 * (2 * 16384 + 2 * 24576 + 3 * 14336 * 2 + 8192) + 32776) / BW
    assert v["top_batch"] == 1024
    assert v["top_share"] == pytest.approx(cache / (cache + rest), rel=1e-3)  # 0.904
    assert v["tps1"] < v["tps_wall"] < v["tps_top"] < v["tps_any_top"] < v["ceiling"]


def test_published_throughput_and_walls():
    # TensorRT-LLM's table, Llama-2-7B in FP8 on one H100: 2244 tokens/s at batch 80, 2048 + 128
    # (the short output keeps the bound's simulation quick)
    row = "trtllm-throughput-h100-fp8"
    v = bi.published_throughput(row, batch_prompt_generated=(80, 2048, 128))
    assert (v["trt_batch"], v["trt_prompt"], v["trt_out"]) == (80, 2048, 128)
    assert v["trt_tps"] == 2244.0 and 0 < v["trt_eta"] < 1
    assert v["trt_source"].data.startswith("[NVIDIA/TensorRT-LLM]")
    # the MLP up GEMM sets b* and does not change with the KV heads: 321.9 for every shape
    shapes = {n: replace(model("llama-3-8b"), kv_heads=n) for n in (32, 8, 1)}
    assert bi.walls_past_ridge(shapes, {32: 27, 8: 321, 1: 322}, H100, Precisions()) == 1
    assert bi.walls_past_ridge(shapes, {32: 400, 8: 400, 1: 400}, H100, Precisions()) == 3


def test_decode_batch_figures_read_the_ridge_at_the_activations_precision():
    # W8A8: the up GEMM runs at the FP8 peak, 1978.9 TFLOP/s / 3.35 TB/s = 590.7 FLOP/byte;
    # one byte a weight, so b_approx = 590.7 x 1 / 2 = 295.4, and the exact b* of
    # R w kn / (2kn - R a (k + n)) with w = a = 1
    fp8 = Precisions("fp8", "fp8", "fp8")
    h200 = hardware("h200-sxm")
    v = bi.decode_batch_figures(model("llama-2-7b"), model("llama-3-8b"), H100, h200, CTX, fp8)
    ridge = 1978.9e12 / BW
    assert v["ridge"] == pytest.approx(ridge) and v["s_w"] == 1
    assert v["b_approx"] == pytest.approx(ridge / 2)
    assert v["bstar3"] == pytest.approx(_b_star(ridge, 1, a=1))
    assert v["bstar3"] == pytest.approx(v["b_approx"], rel=0.15)  # b_approx tracks b*
