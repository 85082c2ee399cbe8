"""The numbers of chapters 11 and 12, as the built book shows them, recomputed by hand.

Every expected value is written out as arithmetic on the models' published shapes and
the catalog's figures, not by calling the package functions the chapters used, so a
wrong formula in either place shows up here.
"""

import pytest

from roofline_book import hardware

pytestmark = pytest.mark.site  # reads the built book's glued values

CH11 = "chapters/12-inference-prefill-decode"

# --------------------------------------------------------------------------
# Chapter 11

# Catalog figures, the inputs of the arithmetic below (test_hardware checks them against
# their datasheets): BF16 and FP8 dense matrix peaks (FLOP/s), HBM bandwidth (byte/s),
# memory capacity (byte).
_H100, _H200 = hardware("h100-sxm"), hardware("h200-sxm")
H100_BF16, H200_BF16 = _H100.peak_flops("bf16"), _H200.peak_flops("bf16")
H100_FP8 = _H100.peak_flops("fp8")
H100_BW, H200_BW = _H100.memory_bandwidth, _H200.memory_bandwidth
PEAK = {H100_BW: H100_BF16, H200_BW: H200_BF16}  # the BF16 peak of the device of a bandwidth

# Published shapes (config.json): layers, hidden, query heads, KV heads, head dim, MLP width,
# vocabulary. Everything BF16: 2 bytes per weight, activation and cached element.
LLAMA2_7B = dict(L=32, h=4096, heads=32, kv=32, d=128, F=11008, V=32000)
LLAMA3_8B = dict(L=32, h=4096, heads=32, kv=8, d=128, F=14336, V=128256)
MISTRAL_7B = dict(L=32, h=4096, heads=32, kv=8, d=128, F=14336, V=32000)
C = 4096  # prompt and decode context


def _params(L, h, heads, kv, d, F, V):
    # q and o: h x heads*d each; k and v: h x kv*d each; gate, up, down; two norms per layer;
    # the embedding, the untied LM head and the final norm.
    layer = 2 * h * heads * d + 2 * h * kv * d + 3 * h * F + 2 * h
    return L * layer + 2 * V * h + h


def _decode_bytes(L, h, heads, kv, d, F, V, c):
    """One decode step at batch 1 over c cached tokens, every byte of every kernel."""
    q, k = heads * d, kv * d
    norm = 3 * 2 * h  # read x and the weight, write y
    add = 3 * 2 * h
    qkv = 2 * h + 2 * h * (q + 2 * k) + 2 * (q + 2 * k)
    cache = 2 * 2 * k + 2 * 2 * k  # the new K, V read from the projection's output, written
    qkv += cache
    attn = 2 * q + 2 * 2 * c * k + 2 * q  # the query, every cached K and V, the output
    out = 2 * q + 2 * q * h + 2 * h
    up = 2 * h + 2 * h * 2 * F + 2 * 2 * F
    act = 2 * 2 * F + 2 * F  # SwiGLU: read gate and up, write one
    down = 2 * F + 2 * F * h + 2 * h
    layer = 2 * norm + 2 * add + qkv + attn + out + up + act + down
    embed, final, head = 2 * h + 2 * h, norm, 2 * h + 2 * h * V + 2 * V
    return L * layer + embed + final + head


def _prefill_seconds(L, h, heads, kv, d, F, V, T, bw):
    """A T-token prefill at batch 1: GEMMs and attention on the matrix units, the rest on HBM."""
    q, k = heads * d, kv * d
    gemm = 2 * T * (h * (q + 2 * k) + q * h + h * 2 * F + F * h)
    attn = 4 * d * heads * T * (T + 1) // 2  # causal pairs, QK^T and PV
    small = 2 * (2 * 2 * T * h + 2 * h) + 2 * (3 * 2 * T * h) + 3 * 2 * T * F  # norms, adds, SwiGLU
    small += 8 * T * k  # the new K and V (2 k per token) read and written into the cache
    rest = (2 * T * h + 2 * T * h) + (2 * 2 * T * h + 2 * h) + (2 * h + 2 * h * V + 2 * V)
    return L * (gemm + attn) / PEAK[bw] + (L * small + rest) / bw


def _prefill_flops(L, h, heads, kv, d, F, V, T):
    """The matrix-unit FLOPs of a T-token prefill: weight GEMMs, QK^T and PV, one LM-head row."""
    q, k = heads * d, kv * d
    gemm = 2 * T * (h * (q + 2 * k) + q * h + h * 2 * F + F * h)
    return L * (gemm + 4 * d * heads * T * (T + 1) // 2) + 2 * h * V


def test_chapter_11_layer_table(glued):
    g = glued(CH11)
    m = LLAMA2_7B
    h, F, T = m["h"], m["F"], C
    # Prefill: QKV is 6h^3 FLOPs over 2Th + 6h^2 + 6Th + 4Th bytes = h / 3 at T = h, and so is
    # the output projection (2h^3 / 6h^2); the MLP GEMMs are higher.
    assert g["pre_i"] == pytest.approx(4096 / 3)
    gemm_s = 2 * T * (4 * h * h + 3 * h * F) / H100_BF16
    attn_s = 4 * 128 * 32 * T * (T + 1) // 2 / H100_BF16
    # the norms, adds and SwiGLU, and the copy of the new K, V into the cache (8 T h bytes)
    small_s = (2 * (4 * T * h + 2 * h) + 2 * 6 * T * h + 6 * T * F + 8 * T * h) / H100_BW
    assert g["pre_us"] == pytest.approx((gemm_s + attn_s + small_s) * 1e6)  # ~1860 us
    assert g["pre_share"] == pytest.approx(gemm_s / (gemm_s + attn_s + small_s))  # ~84%
    # Decode: the attention is the highest, 32 heads x 4096 keys x (4 x 128 + 5) FLOPs over the
    # query, 2 x 2 x 4096 x 4096 cached bytes and the output.
    assert g["dec_i"] == pytest.approx(32 * 4096 * 517 / (2 * h + 4 * 4096 * 4096 + 2 * h))
    layer = (_decode_bytes(**m, c=C) - (4 * h + 6 * h + 2 * h + 2 * h * 32000 + 2 * 32000)) / 32
    assert g["dec_us"] == pytest.approx(layer / H100_BW * 1e6)  # ~141 us
    assert g["ridge"] == pytest.approx(H100_BF16 / H100_BW)
    # the sentence names the ridge's inputs: H100 whitepaper dense BF16, datasheet HBM3
    assert (g["h100_peak_tflops"], g["h100_bw_tbps"]) == (989.4, 3.35)
    assert g["ridge"] == pytest.approx(989.4 / 3.35)  # 295.3


def test_chapter_11_weight_gemm_intensities(glued):
    g = glued(CH11)
    h, F, T = LLAMA2_7B["h"], LLAMA2_7B["F"], C
    # A BF16 GEMM of M x K by K x N: I = 2MKN / (2KN + 2M(K + N)) = 1 / (1/M + 1/N + 1/K).
    # Decode (M = 1): the gate-and-up GEMM (N = 2F) is the highest weight GEMM, 0.99971.
    assert g["dec_w_i"] == pytest.approx(1 / (1 + 1 / (2 * F) + 1 / h))
    # Prefill (M = T): the diagram's up projection alone (N = F), ~1727, and the table's fused
    # gate-and-up row (N = 2F), ~1874.
    assert g["up_i"] == pytest.approx(1 / (1 / T + 1 / F + 1 / h))
    assert g["pre_gateup_i"] == pytest.approx(1 / (1 / T + 1 / (2 * F) + 1 / h))


def test_chapter_11_sliding_windows(glued):
    g = glued(CH11)
    # Mistral-7B at 8192: 32 layers keep their 4096-token rolling buffer of 8 KV heads of 128
    assert g["win_mistral"] == pytest.approx(32 * 4096 * 2 * 8 * 128 * 2 / 1e9)  # 0.537 GB
    assert g["full_mistral"] == pytest.approx(32 * 8192 * 2 * 8 * 128 * 2 / 1e9)  # 1.074 GB
    # Gemma-2-9B: 21 local layers keep 4096, 21 global 8192; 8 KV heads of 256
    assert g["win_gemma"] == pytest.approx((21 * 4096 + 21 * 8192) * 2 * 8 * 256 * 2 / 1e9)
    assert g["full_gemma"] == pytest.approx(42 * 8192 * 2 * 8 * 256 * 2 / 1e9)  # 2.819 GB
    assert (g["gemma_local"], g["gemma_layers"], g["window"], g["long"]) == (21, 42, 4096, 8192)
    # the largest group in the catalog: Qwen3-235B-A22B's config.json, 64 query heads over 4 KV
    # heads of 128; its decode attention: 64 heads x 4096 keys x 517 FLOPs over q and o
    # (2 x 64 x 128 x 2 B) and K, V (2 x 2 x 4096 x 4 x 128 B)
    assert g["g_max"] == 16
    assert g["attn_i_max"] == pytest.approx(64 * 4096 * 517 / (4 * 8192 + 4 * 4096 * 512))


def test_chapter_11_kv_cache(glued):
    g = glued(CH11)
    # 2 x layers x KV heads x head dim x 2 bytes
    # in decimal kB, as chapter 2 counts bytes: 524288 B = 524.288 kB, 131072 B = 131.072 kB
    assert g["kv_l2_kb"] == 2 * 32 * 32 * 128 * 2 / 1e3 == 524.288
    assert g["kv_l3_kb"] == 2 * 32 * 8 * 128 * 2 / 1e3 == 131.072
    assert g["kv_ratio"] == 4  # 32 / 8 KV heads
    assert g["seq_l2"] == pytest.approx(4096 * 524_288 / 1e9)  # 2.15 GB
    assert g["seq_l3"] == pytest.approx(4096 * 131_072 / 1e9)  # 0.54 GB


def test_chapter_11_decode_intensity_ignores_batch(glued):
    g = glued(CH11)
    # Llama-3-8B: 32 query heads x 4096 keys x 517 FLOPs over the query, 2 x 2 x 4096 x 1024
    # cached bytes and the output, for each sequence: the batch cancels, g = 4 gives about 4.
    assert g["attn_i"] == pytest.approx(32 * 4096 * 517 / (2 * 4096 + 4 * 4096 * 1024 + 2 * 4096))
    # QKV at batch 256: 2 x 256 x 4096 x 6144 FLOPs over x, W and y (the copy of the new K, V
    # into the cache is a kernel of its own).
    b, h, n = 256, 4096, 6144
    assert g["qkv_i"] == pytest.approx(2 * b * h * n / (2 * b * h + 2 * h * n + 2 * b * n))


def test_chapter_11_step_bounds(glued):
    g = glued(CH11)
    for tag, m in (("l2", LLAMA2_7B), ("l3", LLAMA3_8B)):
        for dev, bw in (("h100", H100_BW), ("h200", H200_BW)):
            # Batch-1 decode: every kernel is HBM-bound, so the bound is all bytes / bandwidth.
            assert g[f"decode_{tag}_{dev}"] == pytest.approx(_decode_bytes(**m, c=C) / bw * 1e3)
            assert g[f"prefill_{tag}_{dev}"] == pytest.approx(
                _prefill_seconds(**m, T=C, bw=bw) * 1e3
            )
        # (W + c KV) / B: all weights (the whole embedding table included) and the cache.
        kv = 2 * m["L"] * m["kv"] * m["d"] * 2
        assert g[f"est_{tag}"] == pytest.approx((2 * _params(**m) + C * kv) / H100_BW * 1e3)
        assert g[f"emb_{tag}"] == pytest.approx(m["V"] * m["h"] * 2 / H100_BW * 1e3)
        # ... which the sum over operators undercuts by about the embedding table (less the
        # activations and the new K, V, a few MB).
        gap = g[f"est_{tag}"] - g[f"decode_{tag}_h100"]
        assert gap == pytest.approx(g[f"emb_{tag}"], rel=0.05)
    assert g["decode_l2_h100"] == pytest.approx(4.589, abs=5e-4)  # ms
    assert g["decode_l3_h100"] == pytest.approx(4.644, abs=5e-4)
    assert g["gain_decode"] == pytest.approx(H200_BW / H100_BW)
    assert g["gain_bandwidth"] == pytest.approx(H200_BW / H100_BW)
    assert g["gain_peak"] == pytest.approx(H200_BF16 / H100_BF16)
    # Any implementation: prefill at the matrix peak (57.5 TFLOP for Llama-2-7B), decode at
    # batch 1 all its weights (one embedding row), the cache read and the new K, V written.
    for tag, m in (("l2", LLAMA2_7B), ("l3", LLAMA3_8B)):
        for dev, bw in (("h100", H100_BW), ("h200", H200_BW)):
            flops = _prefill_flops(**m, T=C)
            assert g[f"any_prefill_{tag}_{dev}"] == pytest.approx(flops / PEAK[bw] * 1e3)
            kv = 2 * m["L"] * m["kv"] * m["d"] * 2
            weights = 2 * _params(**m) - 2 * m["V"] * m["h"] + 2 * m["h"]
            floor = (weights + C * kv + 2 * m["V"]) / bw
            assert g[f"any_decode_{tag}_{dev}"] == pytest.approx(floor * 1e3)
            assert g[f"any_decode_{tag}_{dev}"] <= g[f"decode_{tag}_{dev}"]
    assert _prefill_flops(**LLAMA2_7B, T=C) / 1e12 == pytest.approx(57.5, abs=0.05)
    assert g["fused_share"] == pytest.approx(1 - g["any_prefill_l2_h100"] / g["prefill_l2_h100"])
    l2 = LLAMA2_7B
    assert g["gain_prefill"] == pytest.approx(
        _prefill_seconds(**l2, T=C, bw=H100_BW) / _prefill_seconds(**l2, T=C, bw=H200_BW)
    )  # ~1.03
    assert g["tps_l2"] == pytest.approx(H100_BW / _decode_bytes(**l2, c=C))  # ~218
    # Per token, decode over prefill is about the ridge point P / B.
    for dev, bw in (("h100", H100_BW), ("h200", H200_BW)):
        ratio = (_decode_bytes(**l2, c=C) / bw) / (_prefill_seconds(**l2, T=C, bw=bw) / C)
        assert g[f"pt_{dev}"] == pytest.approx(ratio)
    # "相差无几": 288.0 against the ridge 989.4 / 3.35 = 295.3, within 4% (2.5%)
    assert g["pt_h100"] == pytest.approx(H100_BF16 / H100_BW, rel=0.04)
    gap = abs(g["pt_h100"] / (H100_BF16 / H100_BW) - 1)  # 288.0 against 295.3: 2.5 %
    assert g["pt_phrase"] == f"只差 {gap:.1%}"
    assert g["ridge2"] == pytest.approx(H200_BF16 / H200_BW)
    assert g["vocab3"] == 128_256


def test_chapter_11_answers(glued):
    g = glued(CH11)
    # 1. Llama-2-70B: 2 x 80 layers x 8 KV heads x 128 x 2 bytes; 64 heads without GQA.
    assert g["q1_kv"] == 2 * 80 * 8 * 128 * 2 == 327_680
    assert g["q1_kb"] == pytest.approx(327.68)  # 327680 B in decimal kB
    assert g["q1_ratio"] == 64 / 8
    assert g["q1_seq_gb"] == pytest.approx(4096 * 327_680 / 1e9)  # 1.34 GB
    # 2. Mistral-7B: Llama-3-8B's layers with a 32,000-token vocabulary.
    m = MISTRAL_7B
    assert _params(**m) == 7_241_732_096
    assert g["q2_w_gb"] == pytest.approx(2 * 7_241_732_096 / 1e9)  # 14.48 GB
    assert g["q2_ms"] == pytest.approx(_decode_bytes(**m, c=C) / H100_BW * 1e3)  # ~4.41 ms
    assert g["q2_tps"] == pytest.approx(H100_BW / _decode_bytes(**m, c=C))  # ~227
    kv = 2 * 32 * 8 * 128 * 2
    assert g["q2_est_ms"] == pytest.approx((2 * 7_241_732_096 + C * kv) / H100_BW * 1e3)
    # 3. Llama-3-8B: the prompt in one prefill, or one token per decode step over 1..4096.
    steps = sum(_decode_bytes(**LLAMA3_8B, c=c) for c in range(1, C + 1)) / H100_BW
    assert g["q3_steps_s"] == pytest.approx(steps)  # ~18.7 s
    prefill = _prefill_seconds(**LLAMA3_8B, T=C, bw=H100_BW)
    assert g["prefill_l3_h100"] == pytest.approx(prefill * 1e3)  # ~69 ms
    assert g["q3_ratio"] == pytest.approx(steps / prefill)  # ~270
    # one token at a time evaluates the LM head 4096 times, not once: 4095 x 2 x 4096 x 128256
    assert g["q3_extra_tflop"] == pytest.approx(4095 * 2 * 4096 * 128256 / 1e12)  # 4.30 TFLOP
    share = 4095 * 2 * 4096 * 128256 / _prefill_flops(**LLAMA3_8B, T=C)
    assert g["q3_extra_share"] == pytest.approx(share, rel=0.01)  # ~7% (elementwise FLOPs aside)


def test_chapter_11_pencil_estimates(glued):
    g = glued(CH11)
    # 2. Mistral-7B: 7,241,732,096 parameters (Llama-3-8B's layers, a 32,000-token vocabulary)
    assert g["q2_params"] == pytest.approx(_params(**MISTRAL_7B) / 1e9)
    # 3. by pencil: 2 Psi l / P = 2 x 8,030,261,248 x 4096 / 989.4e12 = 66.5 ms; one token at a
    # time, the mean context l / 2: l (m_w + l/2 m_kv) / B = 4096 x 16.53 GB / 3.35 TB/s = 20.0 s
    psi = _params(**LLAMA3_8B)
    assert psi == 8_030_261_248
    assert g["q3_pencil_pre"] == pytest.approx(2 * psi * C / H100_BF16 * 1e3)
    kv = 2 * 32 * 8 * 128 * 2
    assert g["q3_pencil_steps"] == pytest.approx(C * (2 * psi + C / 2 * kv) / H100_BW)
    # ... within 10 % of the package's sums (the embedding table, one LM head row)
    assert g["q3_pencil_pre"] == pytest.approx(g["prefill_l3_h100"], rel=0.1)
    assert g["q3_pencil_steps"] == pytest.approx(g["q3_steps_s"], rel=0.1)
    # 4. published H100 STREAM copy, 2.90 TB/s: every decode byte at that rate
    assert g["q4_band"] == 2.9
    m = LLAMA2_7B
    weights = 2 * _params(**m) - 2 * m["V"] * m["h"] + 2 * m["h"]  # one embedding row
    floor = (weights + C * 2 * m["L"] * m["kv"] * m["d"] * 2 + 2 * m["V"]) / 2.9e12
    assert g["q4_ms"] == pytest.approx(floor * 1e3)  # 5.30 ms


# A100 SXM 80GB: 312 TFLOP/s dense BF16/FP16, 2.039 TB/s (NVIDIA A100 datasheet)
A100_PEAK, A100_BW = 312e12, 2.039e12


def test_chapter_11_published(glued):
    g = glued(CH11)
    # gpt-fast README @ 32971d3: Llama-2-7B base, 104.9 tok/s on A100 (330 W), batch 1
    assert g["gf_tps"] == 104.9
    # the bound by hand: 200 tokens after a 5-token prompt, each step reading every weight
    # (one embedding row) and a cache of at most 205 tokens: about 200 decode steps at c ~ 105
    bound = 200 * _decode_bytes(**LLAMA2_7B, c=105) / A100_BW
    assert g["gf_eta"] == pytest.approx(104.9 * bound / 200, rel=0.01)  # 0.68
    # Azure benchmarking guide, A100 STREAM copy 1.61 TB/s against 2.039 TB/s
    assert g["copy_eta"] == pytest.approx(1.61 / 2.039)  # 0.79
    assert g["gf_of_copy"] == pytest.approx(g["gf_eta"] / g["copy_eta"])
    # TensorRT-LLM performance.md v0.5, A100 FP16, LLaMA 7B, 2048-token prompt: 133 ms
    assert (g["ttft_ms"], g["ttft_prompt"]) == (133, 2048)
    assert g["pub_dec_ms"] == pytest.approx(1e3 / 104.9)  # 9.53 ms a token
    assert g["pub_pre_us"] == pytest.approx(133e3 / 2048)  # 64.9 us a token
    assert g["pub_ratio"] == pytest.approx((1e3 / 104.9) / (133 / 2048))  # 146.8
    assert g["a100_ridge"] == pytest.approx(A100_PEAK / A100_BW)  # 153.0
    # the rule of thumb holds on the published numbers: within 10 % of the ridge
    assert g["pub_ratio"] == pytest.approx(g["a100_ridge"], rel=0.1)


# --------------------------------------------------------------------------
# Chapter 12

CH12 = "chapters/13-inference-batch-memory"

# max_batch follows vLLM: of gpu_memory_utilization = 0.9 of the memory, the weights and the
# activation peak come first (vLLM Worker.determine_num_available_blocks).
H100_MEM, H200_MEM, USABLE = _H100.memory_capacity, _H200.memory_capacity, 0.9
R_H100, R_H200 = H100_BF16 / H100_BW, H200_BF16 / H200_BW  # FLOP/byte
R8_H100 = H100_FP8 / H100_BW
CTX = 4096

# Llama-2-7B: hidden 4096, 32 layers, 32 heads = 32 KV heads of 128, FFN 11008, vocab 32000.
L2_LAYER = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096  # 202,383,360
L2_PARAMS = 32 * L2_LAYER + 2 * 32000 * 4096 + 4096  # 6,738,415,616
L2_KV = 2 * 32 * 32 * 128 * 2  # 524,288 bytes per token
# Llama-3-8B: the same but 8 KV heads, FFN 14336, vocab 128256.
L3_LAYER = 4096 * (4096 + 2 * 1024) + 4096**2 + 3 * 4096 * 14336 + 2 * 4096  # 218,112,000
L3_PARAMS = 32 * L3_LAYER + 2 * 128256 * 4096 + 4096  # 8,030,261,248
L3_KV = 2 * 32 * 8 * 128 * 2  # 131,072 bytes per token
L3_EMBED = 128256 * 4096  # a decode step reads one row of it per sequence, not the table

# Weight-only int4 (GPTQ, symmetric): half a byte and a 2-byte FP16 scale per 128 weights;
# AWQ adds a 4-bit zero point per group; int8 (GPTQ): 1 byte and the scale; FP8: per-tensor
# scales, nothing per weight. The embedding, the LM head and the norms stay BF16.
INT4, AWQ, INT8, FP8W = 0.5 + 2 / 128, 0.5 + 2.5 / 128, 1 + 2 / 128, 1.0
L3_MATRICES = 32 * (L3_LAYER - 2 * 4096)  # the linear layers' weights
L3_TABLES = 2 * L3_EMBED + 32 * 2 * 4096 + 4096  # embedding, LM head, norms

# Activation peak (vLLM subtracts the profiled one): an 8192-token MLP, its residual, gate and
# up outputs and activation output in BF16, and 256 rows of FP32 logits.
ACT_L2 = 2 * 8192 * (4096 + 3 * 11008) + 4 * 256 * 32000
ACT_L3 = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 128256


def batch_to_ridge(ridge, ffn, w, a=2, k=4096):
    """(b x k) @ (k x 2 ffn) at the ridge: 2bkn = ridge (w kn + a b (k + n))."""
    n = 2 * ffn
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n))


def fits(memory, weight_bytes, kv_per_token, act):
    return int((USABLE * memory - weight_bytes - act) // (CTX * kv_per_token))


def up_intensity(rows, ffn=14336, k=4096):
    n = 2 * ffn
    return 2 * rows * k * n / (2 * k * n + 2 * rows * (k + n))


def test_chapter_12_parameter_counts():
    assert L2_PARAMS == 6_738_415_616
    assert L3_PARAMS == 8_030_261_248


def test_chapter_12_batch_to_ridge(glued):
    g = glued(CH12)
    assert g["ridge"] == pytest.approx(R_H100)
    assert g["b_approx"] == pytest.approx(R_H100 * 2 / 2)
    assert g["bstar2"] == pytest.approx(batch_to_ridge(R_H100, 11008, 2))  # 323.0 at 989.5 TFLOP/s
    assert g["bstar3"] == pytest.approx(batch_to_ridge(R_H100, 14336, 2))  # 321.9
    assert g["bstar3_h200"] == pytest.approx(batch_to_ridge(R_H200, 14336, 2))  # 218.7
    # Attention over the cache at batch 1, one layer: 32 query heads x 4096 keys x (4 x 128 + 5)
    # FLOPs over the query read and output written (2 x 4096 bytes each) and the cache read.
    flops = 32 * 4096 * (4 * 128 + 5)
    assert g["attn2"] == pytest.approx(flops / (2 * 8192 + 2 * 2 * 4096 * 4096))  # 1.01
    assert g["attn3"] == pytest.approx(flops / (2 * 8192 + 2 * 2 * 1024 * 4096))  # 4.04
    assert g["g3"] == 32 // 8


def test_chapter_12_capacity(glued):
    g = glued(CH12)
    assert g["w2"] == pytest.approx(2 * L2_PARAMS / 1e9)
    assert g["w3"] == pytest.approx(2 * L3_PARAMS / 1e9)
    assert g["act2"] == pytest.approx(ACT_L2 / 1e9)  # 0.64 GB
    assert g["act3"] == pytest.approx(ACT_L3 / 1e9)  # 0.90 GB
    assert g["kv2"] == pytest.approx(CTX * L2_KV / 1e9)  # 2.15 GB per sequence
    assert g["kv3"] == pytest.approx(CTX * L3_KV / 1e9)  # 0.54 GB
    assert g["wall2"] == fits(H100_MEM, 2 * L2_PARAMS, L2_KV, ACT_L2)
    assert g["wallh2"] == fits(H200_MEM, 2 * L2_PARAMS, L2_KV, ACT_L2)
    assert g["wall3"] == fits(H100_MEM, 2 * L3_PARAMS, L3_KV, ACT_L3)
    assert g["wallh3"] == fits(H200_MEM, 2 * L3_PARAMS, L3_KV, ACT_L3)
    assert g["utilization"] == pytest.approx(USABLE)
    # nvidia-smi's totals: 81559 MiB = 79.65 GiB (H100 SXM), 143771 MiB = 140.4 GiB (H200)
    assert (g["cap_h100_mib"], g["cap_h100_bin"]) == (81559, "79.65 GiB")
    assert g["cap_h200_bin"] == "140.4 GiB"
    assert (g["profile_tokens"], g["profile_seqs"]) == (8192, 256)
    # the sentence on H200 follows the numbers: past the ridge, close to it, or short of it
    share = g["wallh3"] / g["bstar3_h200"]
    expected = "越过了" if share >= 1 else "相当接近" if share >= 0.8 else "仍在 ridge point 之前"
    assert expected in g["h200_wall_text"]


def test_chapter_12_step_and_ceiling(glued):
    g = glued(CH12)
    # Memory-bound below b*: a step reads the weights (less the embedding table) and every
    # sequence's cache; activations add a little (under 0.1% at batch 1, under 3% at the wall).
    weights = 2 * (L3_PARAMS - L3_EMBED)
    assert 1 / g["tps1"] == pytest.approx((weights + CTX * L3_KV) / H100_BW, rel=2e-3)
    wall = g["wall3"]
    wall_bytes = weights + wall * CTX * L3_KV
    assert wall / g["tps_wall"] == pytest.approx(wall_bytes / H100_BW, rel=0.03)
    assert g["ceiling"] == pytest.approx(H100_BW / (CTX * L3_KV))  # 6240 tokens/s at 3.35 TB/s
    assert g["tps1"] < g["tps_wall"] < g["tps_star"] < g["ceiling"]
    assert 0.5 < g["attn_share"] < 1  # the cache's reads dominate the step at the wall
    # The plateau at batch 1024, operator by operator: a token's attention reads its cache and
    # its query and output, 32 x (4096 x 2 x 1024 x 2 + 2 x 8192) bytes = 160.4 us at 3.35 TB/s;
    # the rest is mostly the GEMMs past b*: 2 (params - embedding) FLOPs = 15.2 us at the peak,
    # plus norms and residuals (a few %).
    assert g["top_batch"] == 1024
    assert g["kv_us"] == pytest.approx(32 * (4096 * 2 * 1024 * 2 + 2 * 8192) / H100_BW * 1e6)
    gemm_us = 2 * (L3_PARAMS - L3_EMBED) / H100_BF16 * 1e6
    assert gemm_us < g["rest_us"] < 1.15 * gemm_us
    assert g["tps_top"] == pytest.approx(1e6 / (g["kv_us"] + g["rest_us"]))  # 5641 tokens/s
    assert g["top_share"] == pytest.approx(g["tps_top"] / g["ceiling"]) and g["top_share"] < 1
    # any implementation at 1024: the bytes bound, the weights once and 1024 caches
    floor = (2 * (L3_PARAMS - L3_EMBED) + 1024 * CTX * L3_KV) / H100_BW
    assert g["tps_any_top"] == pytest.approx(1024 / floor, rel=2e-3)  # 6074 tokens/s
    assert g["tps_top"] < g["tps_any_top"] < g["ceiling"]


def test_chapter_12_weight_quantization(glued):
    g = glued(CH12)
    assert g["sw_int8"] == pytest.approx(INT8)
    assert g["sw_int4"] == pytest.approx(INT4)
    assert g["sw_awq"] == pytest.approx(AWQ)  # 0.5195
    assert g["sw_fp8"] == g["sw_w8a8"] == FP8W
    # 6,979,321,856 = 128 x 54,525,952: whole groups, one scale each
    assert L3_MATRICES % 128 == 0
    assert g["gb_int4"] == pytest.approx((INT4 * L3_MATRICES + 2 * L3_TABLES) / 1e9)  # 5.70 GB
    assert g["gb_int4_all"] == pytest.approx(INT4 * (L3_MATRICES + L3_TABLES) / 1e9)  # 4.14 GB
    assert g["gb_fp8"] == pytest.approx((L3_MATRICES + 2 * L3_TABLES) / 1e9)
    assert g["bstar_int8"] == pytest.approx(batch_to_ridge(R_H100, 14336, INT8))
    assert g["bstar_int4"] == pytest.approx(batch_to_ridge(R_H100, 14336, INT4))  # 83.0
    assert g["bstar_fp8"] == pytest.approx(batch_to_ridge(R_H100, 14336, 1.0))
    # W8A8: FP8 ridge, 1-byte weights and activations: b* as in BF16
    assert g["bstar_w8a8"] == pytest.approx(batch_to_ridge(R8_H100, 14336, 1.0, a=1))
    # FP8's 1978.9 is twice BF16's 989.4, rounded
    assert g["bstar_w8a8"] == pytest.approx(g["bstar_bf16"], rel=1e-4)
    assert g["ridge_fp8"] == pytest.approx(R8_H100)
    # batch 1, any implementation: int4 matrices, BF16 LM head and norms, one embedding row, cache
    int4_floor = INT4 * L3_MATRICES + 2 * (L3_TABLES - L3_EMBED + 4096) + CTX * L3_KV
    assert g["floor_ms_int4"] == pytest.approx(int4_floor / H100_BW * 1e3, rel=1e-3)  # 1.55 ms
    assert g["fits_int4"] == fits(H100_MEM, g["gb_int4"] * 1e9, L3_KV, ACT_L3)
    assert g["cross_int4"] == ("超过了" if g["fits_int4"] > g["bstar_int4"] else "仍不到")


def test_chapter_12_kv_cache_and_gqa(glued):
    g = glued(CH12)
    assert g["kv_fits_h100"] == fits(H100_MEM, 2 * L3_PARAMS, L3_KV // 2, ACT_L3)
    assert g["kv_fits_h200"] == fits(H200_MEM, 2 * L3_PARAMS, L3_KV // 2, ACT_L3)
    assert g["kv_ceiling"] == pytest.approx(2 * H100_BW / (CTX * L3_KV))
    assert g["kib_32"] == 2 * 32 * 32 * 128 * 2 / 1024 == 512
    assert g["kib_1"] == 2 * 32 * 1 * 128 * 2 / 1024 == 16
    # the prose's decimal kB (1 kB = 1000 bytes, chapter 2's convention)
    assert (g["kb_32"], g["kb_8"], g["kb_1"]) == (524.288, 131.072, 16.384)
    # MQA: the K and V projections shrink to 128 columns each.
    mqa = (
        32 * (4096 * (4096 + 2 * 128) + 4096**2 + 3 * 4096 * 14336 + 2 * 4096)
        + 2 * 128256 * 4096
        + 4096
    )
    assert g["kv_heads_fits_1"] == fits(H100_MEM, 2 * mqa, 2 * 32 * 128 * 2, ACT_L3)


def test_chapter_12_moe(glued):
    g = glued(CH12)
    # Mixtral-8x7B: 8 experts of 3 x 4096 x 14336, 2 per token, a router of 4096 x 8.
    expert = 3 * 4096 * 14336
    attention = 4096 * (4096 + 2 * 1024) + 4096**2
    active = 32 * (attention + 2 * expert + 4096 * 8 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    total = active + 32 * 6 * expert
    assert g["used_1"] == pytest.approx(2)
    assert g["used_64"] == pytest.approx(8 * (1 - 0.75**64))
    assert g["dense_gb"] == pytest.approx(2 * active / 1e9)  # 25.8 GB
    read64 = 2 * (active + 32 * (8 * (1 - 0.75**64) - 2) * expert) / 1e9
    assert g["read_gb_64"] == pytest.approx(read64, rel=1e-9)
    assert g["gb_ratio"] == pytest.approx(read64 / (2 * active / 1e9))
    assert g["mx_gb"] == pytest.approx(2 * total / 1e9)  # 93.4 GB
    # 2 of 8 experts per token: the activation peak's MLP has 2 experts' rows
    act = 2 * 8192 * (4096 + 2 * 3 * 14336) + 4 * 256 * 32000
    assert g["mx_h100"] == max(0, fits(H100_MEM, 2 * total, L3_KV, act))
    assert g["mx_h200"] == fits(H200_MEM, 2 * total, L3_KV, act)
    assert g["mx_bstar"] == pytest.approx(8 / 2 * batch_to_ridge(R_H200, 14336, 2))


def test_chapter_12_speculative(glued):
    g = glued(CH12)
    assert g["per_step"] == pytest.approx((1 - 0.8**5) / (1 - 0.8))  # 3.3616
    assert g["xi"] == 0.05  # the draft's step time over the target's
    # Leviathan et al. 2023, Theorem 3.8 with c = 0.05: 3.3616 / (4 x 0.05 + 1) = 2.80
    assert g["theorem"] == pytest.approx(0.67232 / (0.2 * 1.2))
    assert round(g["theorem"], 2) == 2.80
    assert g["verify_rows"] == 64 * 5
    assert g["verify_i"] == pytest.approx(up_intensity(320))
    # batch 1: verifying 5 positions costs about one step, so about the theorem's figure
    assert g["gain_1"] == pytest.approx(g["theorem"], rel=0.02)
    assert g["free_draft_1"] == pytest.approx(g["per_step"], rel=0.02)
    assert 1 < g["gain_64"] < g["gain_1"] < g["free_draft_1"] <= g["per_step"]
    assert g["blocks"] == 32 and g["sms"] == 132


def test_chapter_12_answers(glued):
    g = glued(CH12)
    # 1. FP8 KV cache for Llama-2-7B: 262,144 bytes per token.
    assert g["ans_q1"] == fits(H100_MEM, 2 * L2_PARAMS, L2_KV // 2, ACT_L2)
    assert g["ans_q1h"] == fits(H200_MEM, 2 * L2_PARAMS, L2_KV // 2, ACT_L2)
    # 2. int4 weights for Llama-2-7B: the linear layers (6,476,267,520 = 128 x 50,595,840
    # weights) in int4 with their scales, the tables in BF16
    matrices = 32 * (L2_LAYER - 2 * 4096)
    tables = 2 * 32000 * 4096 + 32 * 2 * 4096 + 4096
    int4_bytes = INT4 * matrices + 2 * tables
    assert g["ans_q2"] == pytest.approx(batch_to_ridge(R_H100, 11008, INT4))  # 83.3
    assert g["ans_q2w"] == fits(H100_MEM, int4_bytes, L2_KV, ACT_L2)
    # 3. a = 0.7, g = 3: (1 - 0.7^4) / 0.3 tokens; with c = 0.05, / (3 x 0.05 + 1)
    assert g["ans_q3"] == pytest.approx((1 - 0.7**4) / 0.3)  # 2.533
    assert g["ans_q3s"] == pytest.approx((1 - 0.7**4) / (0.3 * 1.15))  # 2.203
    assert g["ans_q3i"] == pytest.approx(up_intensity(256))
    assert g["q3_text"] == ("仍低于" if g["ans_q3i"] < R_H100 else "已高于")


def test_chapter_12_pencil_and_measured(glued):
    g = glued(CH12)
    # 1. what is left for the FP8 cache: 0.9 x 85.52 GB - 13.48 GB - 0.64 GB = 62.85 GB,
    # 2,147,483,648 / 2 bytes per sequence at 4096 tokens: 58 sequences
    free = USABLE * H100_MEM - 2 * L2_PARAMS - ACT_L2
    assert g["q1_free"] == pytest.approx(free / 1e9)
    assert g["ans_q1"] == int(free // (CTX * L2_KV // 2)) == 58
    # the figures the problem states are the ones the convention needs
    assert g["q1_params"] == pytest.approx(L2_PARAMS / 1e9)  # 6.74
    assert (g["q1_hidden"], g["q1_ffn"], g["q1_vocab"]) == (4096, 11008, 32000)
    act = (
        2 * g["profile_tokens"] * (g["q1_hidden"] + 3 * g["q1_ffn"])
        + 4 * g["profile_seqs"] * g["q1_vocab"]
    )
    assert act == ACT_L2 and g["act2"] == pytest.approx(act / 1e9)
    # 2. int4 Llama-2-7B: 6,476,267,520 matrix weights x (0.5 + 2/128) + 2 x 262,410,240 BF16
    matrices = 32 * (L2_LAYER - 2 * 4096)
    tables = 2 * 32000 * 4096 + 32 * 2 * 4096 + 4096
    assert g["q2_w_gb"] == pytest.approx((INT4 * matrices + 2 * tables) / 1e9)  # 3.86 GB
    # 4. published H100 ceilings: cuBLAS BF16 at n = 8192, 795 TFLOP/s; STREAM copy 2.90 TB/s
    assert (g["q4_peak"], g["q4_band"]) == (795.0, 2.9)
    assert g["q4_ridge"] == pytest.approx(795 / 2.90)  # 274.1
    assert g["q4_bstar"] == pytest.approx(batch_to_ridge(795 / 2.90, 14336, 2))  # 296.8


def test_chapter_12_published_throughput(glued):
    g = glued(CH12)
    # TensorRT-LLM performance.md, H100 FP8, LLaMA 7B: batch 48, 2048 in, 2048 out, 2740 tok/s
    assert (g["trt_batch"], g["trt_prompt"], g["trt_out"], g["trt_tps"]) == (48, 2048, 2048, 2740)
    # The bound by hand, FP8 weights and cache: the prefill of 48 x 2048 tokens at the FP8 peak
    # (2 x params FLOPs a token), then 2047 decode steps, each reading every weight once at one
    # byte and 48 caches of 262,144 / 2 bytes a token at contexts 2049..4095 (their sum is
    # 2047 x 3072). The package's tables, norms and attention FLOPs move it by about 1 %.
    prefill = 2 * L2_PARAMS * 48 * 2048 / H100_FP8
    kv = 48 * (L2_KV // 2) * 2047 * 3072
    decode = (2047 * L2_PARAMS + kv) / H100_BW
    assert g["trt_eta"] == pytest.approx(2740 / (48 * 2048 / (prefill + decode)), rel=0.03)
