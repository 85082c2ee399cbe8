"""The answers of chapters 6 to 10, as the built book shows them, recomputed by hand.

Every expected value is written out as arithmetic on the catalog's figures and
the operators' definitions, not by calling the package functions the chapters
used, so a wrong formula in either place shows up here.
"""

import math

import pytest

CH6 = "chapters/06-low-flop-operators"
CH7 = "chapters/07-transformer"
CH8 = "chapters/08-shape-precision"
CH9 = "chapters/09-achieved-performance"
CH10 = "chapters/10-summary"

# Catalog figures (dense peaks, FLOP/s; bandwidth, byte/s).
H100_BF16, H100_FP32, H100_TF32, H100_BW = 989.5e12, 67e12, 494.5e12, 3.35e12
H200_BW = 4.8e12
A100_FP32, A100_TF32, A100_BW = 19.5e12, 156e12, 2.039e12
H100_SMS = 132

# The 7B-class block: hidden 4096, 32 heads of 128, MLP width 11008, seq 4096, batch 1.
T, H, F, HEADS, D = 4096, 4096, 11008, 32, 128
BLOCK_PARAMS = 4 * H * H + 3 * H * F + 2 * H  # 202,383,360


def test_block_parameter_count():
    assert BLOCK_PARAMS == 202_383_360


# --------------------------------------------------------------------------
# Chapter 6


def test_chapter_6_answers(glued):
    g = glued(CH6)
    # GELU: 9 FLOPs over 2 bytes read + 2 written.
    assert g["ans_q1_I"] == pytest.approx(9 / 4)
    assert g["ans_q1_flops_needed"] == pytest.approx(H100_BF16 / H100_BW * 4)  # about 1181
    # Mixed precision AdamW per parameter (FP32 param and moments, BF16 grad):
    # loop 4*4 + 2*2 + 14*4 = 76 bytes, fused 2*4 + 2 + 4*4 = 26.
    assert g["ans_q2_loop_ms"] == pytest.approx(76 * BLOCK_PARAMS / H100_BW * 1e3)
    assert g["ans_q2_fused_ms"] == pytest.approx(26 * BLOCK_PARAMS / H100_BW * 1e3)
    assert g["ans_q2_speedup"] == pytest.approx(76 / 26)
    # 32 blocks of 7 tensors; the loop launches 8 kernels per tensor.
    assert g["ans_q3_loop_kernels"] == 8 * 32 * 7  # 1792
    assert g["ans_q3_foreach_kernels"] == 8
    assert g["ans_q3_fused_kernels"] == 1
    assert g["ans_q3_fused_ms"] == pytest.approx(28 * 32 * BLOCK_PARAMS / H100_BW * 1e3)  # ~54 ms
    # Scale, mask, softmax over 32 x 4096 x 4096 BF16 scores: 6 passes against 2.
    one_pass = 2 * HEADS * T * T
    assert g["ans_q4_eager_ms"] == pytest.approx(6 * one_pass / H100_BW * 1e3)
    assert g["ans_q4_fused_ms"] == pytest.approx(2 * one_pass / H100_BW * 1e3)
    assert g["ans_q4_speedup"] == pytest.approx(3.0)


def test_chapter_6_prose_numbers(glued):
    g = glued(CH6)
    assert g["add_I"] == pytest.approx(1 / 6)
    assert g["relu_I"] == pytest.approx(1 / 4)
    assert g["ridge_bf16"] == pytest.approx(989.5 / 3.35)
    assert g["ridge_fp32"] == pytest.approx(67 / 3.35)
    assert g["add_us"] == pytest.approx(6 * T * H / H100_BW * 1e6)  # about 30 us
    assert g["flops_ratio"] == 2 * 4096**3 / (T * H)  # 8192
    # RMSNorm, one kernel: read x, write y, read gamma once.
    rms_bytes = 2 * (2 * T * H + H)
    assert g["rms_I"] == pytest.approx((4 * T * H + 3 * T) / rms_bytes)
    # Step by step: x read / written 7 times in all, 6 small per-row passes, gamma once.
    assert g["rms_eager_kernels"] == 6
    assert g["rms_eager_ratio"] == pytest.approx((7 * T * H + 6 * T + H) / (2 * T * H + H))
    assert g["softmax_us"] == pytest.approx(2 * 2 * HEADS * T * T / H100_BW * 1e6)
    assert (g["adamw_fused_bpp"], g["adamw_loop_bpp"]) == (28, 80)
    assert (g["adamw_mixed_fused_bpp"], g["adamw_mixed_loop_bpp"]) == (26, 76)
    assert g["adamw_fused_I"] == pytest.approx(14 / 28)
    assert g["adamw_loop_I"] == pytest.approx(14 / 80)
    assert (g["adamw_loop_kernels"], g["adamw_foreach_kernels"]) == (8 * 7, 8)
    # SwiGLU: silu (read, write) then the product (read 2, write 1) against one kernel (3 passes).
    assert g["fuse_saving"] == pytest.approx(1 - 3 / 5)


# --------------------------------------------------------------------------
# Chapter 7


def _time(flops, nbytes, peak=H100_BF16, bw=H100_BW):
    """(seconds, bound) of the roofline lower bound."""
    compute, memory = flops / peak, nbytes / bw
    return max(compute, memory), ("memory" if memory > compute else "compute")


def _gemm(m, k, n, s=2):
    return 2 * m * k * n, s * (m * k + k * n + m * n)


def _block(attention):
    """Flops and bytes of each forward operator of the block, by hand."""
    rms = (4 * T * H + 3 * T, 2 * (2 * T * H + H))
    add = (T * H, 3 * 2 * T * H)
    return [
        rms,
        _gemm(T, H, 3 * H),
        attention,
        _gemm(T, H, H),
        add,
        rms,
        _gemm(T, H, F),
        _gemm(T, H, F),
        (6 * T * F, 3 * 2 * T * F),  # SwiGLU
        _gemm(T, F, H),
        add,
    ]


# Causal FlashAttention: Br = 192 KiB / 2 bytes / (4 * 128) = 192 query rows per block,
# 22 blocks; block j reads keys up to min(4096, 192 j): 192 * (1 + ... + 21) + 4096 = 48,448.
FLASH_CAUSAL = (
    HEADS * (T * (T + 1) // 2) * (4 * D + 5),
    2 * HEADS * D * (T + 2 * 48_448) + 2 * HEADS * D * T,
)
# Materialized: all scores computed; S written, read; P written, read; Q, K, V read, O written.
MATERIALIZED = (
    HEADS * (4 * T * T * D + 5 * T * T),
    2 * HEADS * (4 * T * D + 4 * T * T),
)


def _memory_share(ops):
    times = [_time(f, b) for f, b in ops]
    total = sum(t for t, _ in times)
    return sum(t for t, which in times if which == "memory") / total, total


def test_chapter_7_answers(glued):
    g = glued(CH7)
    scores = 4 * 2 * HEADS * 8192**2  # S and P, each written and read once
    assert g["ans_q1_scores_gb"] == pytest.approx(scores / 1e9)  # 17.2 GB
    assert g["ans_q1_scores_ms"] == pytest.approx(scores / H100_BW * 1e3)
    assert g["ans_q1_scores_fraction"] == pytest.approx(8192 / (8192 + D))
    # Non-causal flash, 4096 tokens: 22 query blocks of 192 rows, then 11 blocks of 384.
    before = 2 * HEADS * D * (2 * T + 2 * T * math.ceil(T / 192))
    after = 2 * HEADS * D * (2 * T + 2 * T * math.ceil(T / 384))
    assert (before, after) == (1_543_503_872, 805_306_368)
    assert g["ans_q2_bytes_before_gb"] == pytest.approx(before / 1e9)
    assert g["ans_q2_bytes_after_gb"] == pytest.approx(after / 1e9)
    flops = HEADS * (4 * T * T * D + 5 * T * T)
    assert g["ans_q2_I_after"] == pytest.approx(flops / after)  # about 345 > 295
    assert g["ans_q2_bound_after"] == "compute-bound"
    flash_share, _ = _memory_share(_block(FLASH_CAUSAL))
    mat_share, _ = _memory_share(_block(MATERIALIZED))
    assert g["ans_q3_flash_mem_share"] == pytest.approx(flash_share)  # about 21 %
    assert g["ans_q3_mat_mem_share"] == pytest.approx(mat_share)  # about 47 %


def test_chapter_7_prose_numbers(glued):
    g = glued(CH7)
    assert FLASH_CAUSAL[1] == 860_880_896
    assert g["flash_attn_I"] == pytest.approx(FLASH_CAUSAL[0] / FLASH_CAUSAL[1])
    _, flash_total = _memory_share(_block(FLASH_CAUSAL))
    _, mat_total = _memory_share(_block(MATERIALIZED))
    assert g["flash_total_us"] == pytest.approx(flash_total * 1e6)
    assert g["mat_total_us"] == pytest.approx(mat_total * 1e6)
    projections = [_gemm(T, H, 3 * H), _gemm(T, H, H)] + [_gemm(T, H, F)] * 2 + [_gemm(T, F, H)]
    assert g["gemm_share"] == pytest.approx(sum(_time(*p)[0] for p in projections) / flash_total)
    assert g["attn_mat_I"] == pytest.approx((4 * D + 5) / (4 * 2 * (1 + D / T)))
    assert g["mat_I_limit"] == pytest.approx((4 * 128 + 5) / 8)
    assert g["flash_rows_per_block"] == 192
    # Mixed precision AdamW on the block: 76 against 26 bytes per parameter.
    assert g["opt_ratio"] == pytest.approx(76 / 26)
    assert g["opt_fused_ms"] == pytest.approx(26 * BLOCK_PARAMS / H100_BW * 1e3)


# --------------------------------------------------------------------------
# Chapter 8


def test_chapter_8_answers(glued):
    g = glued(CH8)
    i_small32 = 2 * 32 * 128 * 128 / (4 * (32 * 128 + 128 * 128 + 32 * 128))  # 10.67
    assert g["ans_q1_I"] == pytest.approx(i_small32)
    assert g["ans_q1_bound"] == "memory"  # FP32 ridge is 20
    assert g["ans_q1_roof_tf"] == pytest.approx(H100_BW * i_small32 / 1e12)
    assert g["ans_q1_frac"] == pytest.approx(H100_BW * i_small32 / H100_FP32)
    assert g["ans_q1_roof_bf16_tf"] == pytest.approx(H100_BW * 2 * i_small32 / 1e12)
    # 256 x 4096 x 4096 in BF16.
    i_lin = 2 * 256 * 4096 * 4096 / (2 * (256 * 4096 + 4096 * 4096 + 256 * 4096))  # 227.6
    assert g["ans_q2_I"] == pytest.approx(i_lin)
    assert g["ans_q2_bound"] == "memory"
    assert g["ans_q2_roof_frac"] == pytest.approx(H100_BW * i_lin / H100_BF16)
    assert g["ans_q2_tiles"] == (256 // 128) * (4096 // 128)  # 64
    assert g["ans_q2_busy"] == pytest.approx(64 / H100_SMS)
    # 512^3 stored in FP32: I = 2 * 512 / (3 * 4).
    i_cube = 2 * 512 / 12
    assert g["ans_q3_I"] == pytest.approx(i_cube)
    assert (g["ans_q3_bound_fp32"], g["ans_q3_bound_tf32"]) == ("compute", "memory")
    assert g["ans_q3_roof_fp32"] == pytest.approx(67.0)
    assert g["ans_q3_roof_tf32"] == pytest.approx(H100_BW * i_cube / 1e12)  # 285.9
    assert g["ans_q3_gain"] == pytest.approx(H100_BW * i_cube / H100_FP32)
    assert g["ans_q3_peak_ratio"] == pytest.approx(H100_TF32 / H100_FP32)


def test_chapter_8_prose_numbers(glued):
    g = glued(CH8)
    assert g["small_I"] == pytest.approx(2 * 32 * 128 * 128 / (2 * 24576))
    assert g["small_frac"] == pytest.approx(H100_BW * g["small_I"] / H100_BF16)  # about 7 %
    assert g["big_I"] == pytest.approx(8192 / 6)
    assert (g["small_tiles"], g["big_tiles"], g["sms"]) == (1, 1024, H100_SMS)
    assert g["small_tile_use"] == pytest.approx(32 / 128)
    assert g["h100_peak_ratio"] == pytest.approx(989.5 / 67)
    assert g["a100_peak_ratio"] == pytest.approx(16.0)
    assert g["ridge_h200_bf16"] == pytest.approx(H100_BF16 / H200_BW)
    assert g["mid_I_fp32"] == pytest.approx(2 * 256 / 12)
    assert g["mid_roof_bf16_tf"] == pytest.approx(H100_BW * 2 * 256 / 6 / 1e12)


# --------------------------------------------------------------------------
# Chapter 9


def test_chapter_9_answers(glued):
    g = glued(CH9)
    gemm_flops = 2 * 4096**3
    assert g["ans_q1_tf"] == pytest.approx(gemm_flops / 1e-3 / 1e12)  # 137.4
    assert g["ans_q1_fraction"] == pytest.approx(gemm_flops / 1e-3 / H100_BF16)
    n = 4096 * 4096
    assert g["ans_q2_gflops"] == pytest.approx(n / 50e-6 / 1e9)  # 335.5
    assert g["ans_q2_tbps"] == pytest.approx(6 * n / 50e-6 / 1e12)  # 2.01
    assert g["ans_q2_fraction"] == pytest.approx(6 * n / 50e-6 / H100_BW)
    # The add runs on the vector units: 335.5 GFLOP/s of 67 TFLOP/s is about 0.50 %.
    assert g["vec_tflops"] == pytest.approx(H100_FP32 / 1e12)
    assert g["ans_q2_vs_peak"] == pytest.approx(n / 50e-6 / H100_FP32)
    t0 = 5e-6
    assert g["t0_us"] == pytest.approx(5.0)
    assert g["ans_q3_elements_m"] == pytest.approx(t0 * H100_BW / 6 / 1e6)  # 2.79 M
    t_add = 6 * n / H100_BW
    assert g["ans_q3_eta_16m"] == pytest.approx(t_add / (t0 + t_add))


def test_chapter_9_prose_numbers(glued):
    g = glued(CH9)
    assert g["ex_roof_tf"] == pytest.approx(100.0)
    assert g["ex_achieved_tf"] == pytest.approx(40.0)
    assert g["ex_fraction"] == pytest.approx(0.4)
    assert g["ex_bound_ms"] == pytest.approx(2 * 4096**3 / 100e12 * 1e3)
    assert g["ex_elapsed_ms"] == pytest.approx(2 * 4096**3 / 40e12 * 1e3)
    assert g["add_vs_roof"] == pytest.approx(0.5)
    assert g["add_vs_peak"] == pytest.approx(0.5 * 1e12 / 6 / 100e12)
    assert (g["ex_P_tf"], g["ex_B_tb"]) == (pytest.approx(100.0), pytest.approx(1.0))


# --------------------------------------------------------------------------
# Chapter 10


def test_chapter_10_answers(glued):
    g = glued(CH10)
    ln_flops = 7 * 4096 * 4096 + 4 * 4096
    ln_bytes = 2 * (2 * 4096 * 4096 + 2 * 4096)
    assert g["ans_q1_I"] == pytest.approx(ln_flops / ln_bytes)  # 1.75
    assert (g["ans_q1_bound_h100"], g["ans_q1_bound_example"]) == ("HBM", "HBM")
    assert g["ans_q1_us"] == pytest.approx(ln_bytes / H100_BW * 1e6)
    assert g["ans_q2_I"] == pytest.approx(2 * 4096 / 12)  # 682.7
    assert g["ans_q2_ridge_fp32"] == pytest.approx(A100_FP32 / A100_BW)
    assert g["ans_q2_ridge_tf32"] == pytest.approx(A100_TF32 / A100_BW)
    assert g["ans_q2_ms_fp32"] == pytest.approx(2 * 4096**3 / A100_FP32 * 1e3)  # 7.05 ms
    assert g["ans_q2_ms_tf32"] == pytest.approx(2 * 4096**3 / A100_TF32 * 1e3)  # 0.88 ms
    assert (g["ans_q2_bound_fp32"], g["ans_q2_bound_tf32"]) == ("compute", "compute")
    assert g["ans_q3_adamw_speedup"] == pytest.approx(H200_BW / H100_BW)
    assert g["ans_q3_gemm_speedup"] == pytest.approx(1.0)


def test_chapter_10_prose_numbers(glued):
    g = glued(CH10)
    # no mask, so all three count every score: N = 32 * 4096^2 scores, 4 d + 5 FLOPs each
    scores = HEADS * T * T
    flops = scores * (4 * D + 5)
    flash_bytes = 2 * HEADS * 4 * T * D  # Q, K, V read once, O written once
    # eager: Q, K, V, O as above; per score S written (2), scaled (2 + 2), softmax read in
    # BF16 and written in FP32 (2 + 4), cast back (4 + 2), read by P V (2): 20 bytes
    eager_bytes = flash_bytes + 20 * scores
    assert g["flash_I"] == pytest.approx(flops / flash_bytes)  # 2068
    # eager scales the scores in a kernel of its own: one more FLOP per score
    assert g["eager_I"] == pytest.approx((flops + scores) / eager_bytes)  # 25.6
    assert (g["flash_res"], g["eager_res"]) == ("矩阵单元", "HBM")
    flash_t = scores * 4 * D / H100_BF16  # the matrix units bind
    assert g["eager_over_flash"] == pytest.approx(eager_bytes / H100_BW / flash_t)
    assert g["span"] == pytest.approx((flops / flash_bytes) / (1 / 6))
