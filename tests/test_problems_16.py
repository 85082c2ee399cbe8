"""Chapter 16's numbers and problem answers (DeepSeek-V3 on H800), as the built book glued them,
by hand.

Shapes from DeepSeek-V3's config.json: hidden 7168, 61 layers (the first 3 dense), 128 heads,
kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, 256 routed experts
of width 2048, top-8, 1 shared expert; quantization_config FP8 with 128 x 128 weight blocks (one
FP32 scale each). H800 SXM: 989.4 TFLOP/s dense BF16, 1978.9 FP8, 3.35 TB/s HBM, NVLink
400 GB/s both directions (200 each way); one 400 Gb/s InfiniBand NIC (50 GB/s) a GPU.
DeepSeek's units (open-infra-index, day 6): prefill EP 32, decode EP 144, 8 GPUs a node.
"""

from math import ceil, comb, prod

import pytest

pytestmark = pytest.mark.site  # reads the built book's glued values

CH16 = "chapters/17-deepseek-v3"
P16, P8, HBM, NIC, NVLINK = 989.4e12, 1978.9e12, 3.35e12, 50e9, 200e9
R16, R8 = P16 / HBM, P8 / HBM  # 295.3 and 590.7 FLOP/byte
H, L, HEADS, E, K, FF = 7168, 61, 128, 256, 8, 2048
D_K, D_V = 512 + 64, 512  # absorbed: latent and RoPE key; the value is the latent


def _bstar(ridge: float, w: float, a: float) -> float:
    """The experts' up GEMM (K = 7168, N = 2 x 2048) at the ridge: R w K N / (2 K N - R a (K + N)),
    times E / e = 32 (each expert gets b e / E rows)."""
    k, n = H, 2 * FF
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n)) * E / K


# FP8 weights: 1 byte each and one 4-byte scale per 128 x 128 block: 56 x 32 blocks of 7168 x 4096
W_FP8 = (H * 2 * FF + 4 * (H // 128) * (2 * FF // 128)) / (H * 2 * FF)


def test_mla_cache_and_intensity(glued):
    g = glued(CH16)
    # m_kv = L (d_c + d_r) s = 61 x 576 x 2; Llama-3-70B: 2 x 80 x 8 x 128 x 2
    assert g["kv_ds_kb"] == pytest.approx(70.272)
    assert g["kv_ratio"] == pytest.approx(327680 / 70272)
    # one head per key: 2 (576 + 512) + 5 (softmax) FLOPs; 4096 keys, one query, batch 1:
    # 128 x 4096 x 2181 FLOPs over 2 x 576 x (4096 + 128) B read (cache and q) + 128 x 512 x 2 B out
    assert g["mla_i1"] == pytest.approx(128 * 4096 * 2181 / (2 * 576 * 4224 + 128 * 1024))
    # two queries, causal: 4095 + 4096 pairs a head; q and out twice as large
    assert g["mla_i2"] == pytest.approx(128 * 8191 * 2181 / (2 * 576 * 4352 + 2 * 128 * 1024))
    assert g["mla_f1"] == pytest.approx(128 * 1088 / 576)
    assert g["ridge"] == pytest.approx(R16)
    assert g["mla_i1"] < g["ridge"] < g["mla_i2"]
    assert g["mla_ridge_hq"] == pytest.approx(R16 * 576 / 1088)
    # TP 8: 16 heads a GPU against the whole latent cache
    assert g["mla_tp"] == pytest.approx(16 * 4096 * 2181 / (2 * 576 * 4112 + 16 * 1024))


def test_experts_batch_to_the_ridge(glued):
    g = glued(CH16)
    assert g["e_over_k"] == 32
    # W8A8 at the FP8 ridge, a = 1 byte: 10662; BF16 at its own ridge: 10659; weight-only FP8
    # at the BF16 ridge (a = 2, w = 1): 5329
    assert g["b_star"] == pytest.approx(_bstar(R8, W_FP8, 1))
    assert g["b_star_bf16"] == pytest.approx(_bstar(R16, 2, 2))
    assert g["b_star_w8a16"] == pytest.approx(_bstar(R16, 1, 2))
    per_gpu = (g["b_star"] / 32, g["b_star"] / 144)
    assert (g["per_gpu_pre"], g["per_gpu_dec"]) == pytest.approx(per_gpu)
    assert g["per_gpu_node"] == pytest.approx(g["b_star"] / 8)
    # 32 tokens of 8 experts each: 256 (1 - (1 - 8/256)^32) experts touched
    assert g["e_mid"] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 32))
    assert g["fp8_gain"] == pytest.approx(P8 / P16)


def test_all_to_all(glued):
    g = glued(CH16)
    assert g["i_nic"] == pytest.approx(P8 / NIC)
    assert g["i_nvl"] == pytest.approx(P8 / NVLINK)
    # group-limited routing (config.json n_group 8, topk_group 4): 4 of 8 groups of 32 chosen,
    # then 8 of their 128 experts. EP 32: 4 nodes of 64 experts, two whole groups each: a node
    # is hit when j of its groups are chosen, C(2,j) C(6,4-j) / C(8,4), and a pick lands in them
    pre = 3 * sum(
        comb(2, j) * comb(6, 4 - j) / comb(8, 4) * (1 - comb(128 - 32 * j, 8) / comb(128, 8))
        for j in (1, 2)
    )
    # EP 144: 18 nodes of 256 x 8 / 144 = 14.2 experts, inside one group: chosen with 1/2,
    # then missed by the 8 picks with prod (128 - 14.2 - i) / (128 - i)
    m = 256 * 8 / 144
    miss = prod((128 - m - i) / (128 - i) for i in range(8))
    dec = 17 * 0.5 * (1 - miss)
    assert (g["copies_pre"], g["copies_dec"]) == pytest.approx((pre, dec))
    # decode: ceil(b* / 144) = 75 sequences a GPU; FP8 dispatch and BF16 combine, 58 MoE layers,
    # over the NIC (inside the node 7 x 8/256 copies over 200 GB/s: less)
    assert g["per_gpu"] == ceil(g["b_star"] / 144) == 75
    nic_s = 75 * dec * H * (1 + 2) * 58 / NIC
    assert g["comm_ms_decode"] == pytest.approx(nic_s * 1e3)
    assert g["q4_pencil_ms"] == pytest.approx(nic_s * 1e3)


def test_problem_answers(glued):
    g = glued(CH16)
    # 1: 61 x 576 x 2 B; x 131072 tokens; MHA: 61 x 128 x (192 + 128) x 2 B
    assert g["q1_kv"] == 70272
    assert g["q1_seq_gb"] == pytest.approx(131072 * 70272 / 1e9)
    assert g["kv_mha_mb"] == pytest.approx(61 * 128 * 320 * 2 / 1e6)
    assert g["kv_mha_ratio"] == pytest.approx(61 * 128 * 320 * 2 / 70272)
    # 2: the formula's 241.8 over 8
    assert g["q2_tp_f"] == pytest.approx(128 * 1088 / 576 / 8)
    # 3: (E/k) R s_w / 2 at the FP8 ridge, s_w = 1
    assert g["q3_pencil"] == pytest.approx(32 * R8 / 2)
    # 5: the published H100 measurements: cuBLAS BF16 795 TFLOP/s, STREAM copy 2.9 TB/s
    ridge = 795e12 / 2.9e12
    assert g["q5_ridge"] == pytest.approx(ridge)
    assert g["q5_hq"] == pytest.approx(ridge * 576 / 1088)
    assert g["q5_bstar"] == pytest.approx(_bstar(ridge, 2, 2))


def test_published_numbers_under_the_bounds(glued):
    g = glued(CH16)
    # FlashMLA, 128 heads, 2 queries, 16384 keys, batch 128: 2176 matrix FLOPs a pair at
    # 989.4 TFLOP/s bound the time (the cache's 2.49 GB at 3.35 TB/s take less); FlashMLA counts
    # the same 2176 (no softmax), so the rate allowed is the peak
    assert g["flash_eta"] == pytest.approx(660e12 / P16)
    assert g["flash_bw_eta"] == pytest.approx(3000e9 / HBM)
    for name in ("flash_eta", "flash_bw_eta", "gemm_eta", "pre_eta", "dec_eta"):
        assert 0 < g[name] < 1, name
    assert g["cache_hit"] == pytest.approx(0.563)
