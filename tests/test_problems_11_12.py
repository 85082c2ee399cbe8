"""The numbers of chapters 11 and 12, as the built book shows them, recomputed by hand.

Every expected value is written out as arithmetic on the models' published shapes
and the catalog's figures, not by calling the package functions the chapters used,
so a wrong formula in either place shows up here.
"""

import pytest

# --------------------------------------------------------------------------
# Chapter 12

CH12 = "chapters/12-inference-batch-memory"

# Catalog figures: H100 SXM and H200 share the BF16 dense peak (FLOP/s); bandwidth (byte/s),
# capacity (byte). max_batch keeps 10% of memory free (vLLM's gpu_memory_utilization 0.9).
PEAK_BF16, H100_BW, H200_BW = 989.5e12, 3.35e12, 4.8e12
H100_MEM, H200_MEM, USABLE = 80e9, 141e9, 0.9
R_H100, R_H200 = PEAK_BF16 / H100_BW, PEAK_BF16 / H200_BW  # 295.37, 206.15 FLOP/byte
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

INT4 = 0.5 + 2 / 128  # half a byte per weight and a 2-byte scale per 128 weights
FP8W = 1 + 2 / 128


def batch_to_ridge(ridge, ffn, w, a=2, k=4096):
    """(b x k) @ (k x 2 ffn) at the ridge: 2bkn = ridge (w kn + a b (k + n))."""
    n = 2 * ffn
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n))


def fits(memory, weight_bytes, kv_per_token):
    return int((USABLE * memory - weight_bytes) // (CTX * kv_per_token))


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
    assert g["bstar2"] == pytest.approx(batch_to_ridge(R_H100, 11008, 2))  # 323.0
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
    assert g["kv2"] == pytest.approx(CTX * L2_KV / 1e9)  # 2.15 GB per sequence
    assert g["kv3"] == pytest.approx(CTX * L3_KV / 1e9)  # 0.54 GB
    assert g["wall2"] == fits(H100_MEM, 2 * L2_PARAMS, L2_KV) == 27
    assert g["wallh2"] == fits(H200_MEM, 2 * L2_PARAMS, L2_KV) == 52
    assert g["wall3"] == fits(H100_MEM, 2 * L3_PARAMS, L3_KV) == 104
    assert g["wallh3"] == fits(H200_MEM, 2 * L3_PARAMS, L3_KV) == 206
    assert g["reserve"] == pytest.approx(1 - USABLE)


def test_chapter_12_step_and_ceiling(glued):
    g = glued(CH12)
    # Memory-bound below b*: a step reads the weights (less the embedding table) and every
    # sequence's cache; activations add a little (under 0.1% at batch 1, under 3% at the wall).
    weights = 2 * (L3_PARAMS - L3_EMBED)
    assert 1 / g["tps1"] == pytest.approx((weights + CTX * L3_KV) / H100_BW, rel=2e-3)
    wall_bytes = weights + 104 * CTX * L3_KV
    assert 104 / g["tps_wall"] == pytest.approx(wall_bytes / H100_BW, rel=0.03)
    assert g["ceiling"] == pytest.approx(H100_BW / (CTX * L3_KV))  # 6240 tokens/s
    assert g["tps1"] < g["tps_wall"] < g["tps_star"] < g["ceiling"]
    assert 0.5 < g["attn_share"] < 1  # the cache's reads dominate the step at the wall


def test_chapter_12_weight_quantization(glued):
    g = glued(CH12)
    assert g["sw_fp8"] == pytest.approx(FP8W)
    assert g["sw_int4"] == pytest.approx(INT4)
    # 8,030,261,248 = 128 x 62,736,416: whole groups, one scale each
    assert g["gb_int4"] == pytest.approx((L3_PARAMS / 2 + 2 * L3_PARAMS / 128) / 1e9)
    assert g["bstar_fp8"] == pytest.approx(batch_to_ridge(R_H100, 14336, FP8W))  # 163.5
    assert g["bstar_int4"] == pytest.approx(batch_to_ridge(R_H100, 14336, INT4))  # 83.0
    int4_floor = (INT4 * (L3_PARAMS - L3_EMBED) + CTX * L3_KV) / H100_BW
    assert g["floor_ms_int4"] == pytest.approx(int4_floor * 1e3, rel=5e-3)  # 1.32 ms
    assert g["fits_int4"] == fits(H100_MEM, g["gb_int4"] * 1e9, L3_KV) == 126


def test_chapter_12_kv_cache_and_gqa(glued):
    g = glued(CH12)
    assert g["kv_fits_h100"] == fits(H100_MEM, 2 * L3_PARAMS, L3_KV // 2) == 208
    assert g["kv_fits_h200"] == fits(H200_MEM, 2 * L3_PARAMS, L3_KV // 2) == 412
    assert g["kv_ceiling"] == pytest.approx(2 * H100_BW / (CTX * L3_KV))
    assert g["kib_32"] == 2 * 32 * 32 * 128 * 2 / 1024 == 512
    assert g["kib_1"] == 2 * 32 * 1 * 128 * 2 / 1024 == 16
    # MQA: the K and V projections shrink to 128 columns each.
    mqa = (
        32 * (4096 * (4096 + 2 * 128) + 4096**2 + 3 * 4096 * 14336 + 2 * 4096)
        + 2 * 128256 * 4096
        + 4096
    )
    assert g["kv_heads_fits_1"] == fits(H100_MEM, 2 * mqa, 2 * 32 * 128 * 2) == 840


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
    assert g["mx_gb"] == pytest.approx(2 * total / 1e9)  # 93.4 GB: more than 72 GB usable on H100
    assert g["mx_h100"] == 0
    assert g["mx_h200"] == fits(H200_MEM, 2 * total, L3_KV) == 62
    assert g["mx_bstar"] == pytest.approx(8 / 2 * batch_to_ridge(R_H200, 14336, 2))


def test_chapter_12_speculative(glued):
    g = glued(CH12)
    assert g["per_step"] == pytest.approx((1 - 0.8**5) / (1 - 0.8))  # 3.3616
    assert g["verify_rows"] == 64 * 5
    assert g["verify_i"] == pytest.approx(up_intensity(320))
    assert 1 < g["gain_64"] < g["gain_1"] < g["per_step"]
    assert g["blocks"] == 32 and g["sms"] == 132


def test_chapter_12_answers(glued):
    g = glued(CH12)
    # 1. FP8 KV cache for Llama-2-7B: 262,144 bytes per token.
    assert g["ans_q1"] == fits(H100_MEM, 2 * L2_PARAMS, L2_KV // 2) == 54
    assert g["ans_q1h"] == fits(H200_MEM, 2 * L2_PARAMS, L2_KV // 2) == 105
    # 2. int4 weights for Llama-2-7B (6,738,415,616 / 128 groups exactly).
    int4_bytes = L2_PARAMS / 2 + 2 * L2_PARAMS / 128  # 3,474,495,552
    assert g["ans_q2"] == pytest.approx(batch_to_ridge(R_H100, 11008, INT4))  # 83.3
    assert g["ans_q2w"] == fits(H100_MEM, int4_bytes, L2_KV) == 31
    # 3. a = 0.7, g = 3: (1 - 0.7^4) / 0.3 tokens; 64 x 4 rows in the GEMMs.
    assert g["ans_q3"] == pytest.approx((1 - 0.7**4) / 0.3)  # 2.533
    assert g["ans_q3i"] == pytest.approx(up_intensity(256))
    assert g["ans_q3i"] < R_H100
