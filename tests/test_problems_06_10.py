"""The answers of chapters 6 to 9 and of the summary (chapter 13), as the built book shows
them, recomputed by hand.

Every expected value is written out as arithmetic on the catalog's figures and
the operators' definitions, not by calling the package functions the chapters
used, so a wrong formula in either place shows up here.
"""

import pytest

pytestmark = pytest.mark.site  # reads the built book's glued values

CH6 = "chapters/07-low-flop-operators"
CH7 = "chapters/08-transformer"
CH8 = "chapters/09-shape-precision"
CH9 = "chapters/10-achieved-performance"
CH13 = "chapters/18-summary"

# Catalog figures (dense peaks, FLOP/s; bandwidth, byte/s), H100 SXM: the whitepaper's dense
# BF16 989.4 and TF32 494.7 TFLOP/s (rated at 1830 MHz), the datasheet's FP32 67 and HBM3 3.35 TB/s.
H100_BF16, H100_FP32, H100_BW = 989.4e12, 67e12, 3.35e12
H100_TF32 = 494.7e12
# The vector peaks count an FMA as 2 FLOP; any other operation takes a lane slot of its own, at
# half the peak. BF16 data also runs as packed pairs: the whitepaper's non-tensor 133.8 TFLOP/s.
H100_VEC_BF16 = 133.8e12
H100_OPS_BF16, H100_OPS_FP32 = H100_VEC_BF16 / 2, H100_FP32 / 2
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

# H100 SXM special function units: 16 results per clock per SM x 132 SMs x 1.98 GHz =
# 4.18176e12 evaluations per second.
H100_SPECIAL = 16 * H100_SMS * 1.98e9
H100_L2 = 50 * 2**20  # 52,428,800 bytes


def test_chapter_6_answers(glued):
    g = glued(CH6)
    # GELU: 9 FLOPs over 2 bytes read + 2 written. BF16 vector ridge 133.8 / 3.35 = 39.9
    # FLOP/byte, so 160 FLOPs per 4 bytes; the special units pass HBM at 4 * 4.18 / 3.35 = 5.
    assert g["ans_q1_I"] == pytest.approx(9 / 4)
    assert g["ans_q1_flops_needed"] == pytest.approx(H100_VEC_BF16 / H100_BW * 4)  # 160
    assert g["ans_q1_ops_needed"] == pytest.approx(H100_OPS_BF16 / H100_BW * 4)  # 80 lane slots
    assert g["ans_q1_special_needed"] == pytest.approx(H100_SPECIAL / H100_BW * 4)  # 5.0
    # Master-weight AdamW per parameter (FP32 param and moments, BF16 grad, BF16 copy written):
    # fused (4 + 2 + 4 + 4) + (4 + 4 + 4 + 2) = 28; the loop's 8 passes 4*4 + 2*2 + 14*4 = 76,
    # and a cast kernel that reads the FP32 master and writes the BF16 copy, 4 + 2: 82.
    assert g["ans_q2_loop_ms"] == pytest.approx(82 * BLOCK_PARAMS / H100_BW * 1e3)
    assert g["ans_q2_fused_ms"] == pytest.approx(28 * BLOCK_PARAMS / H100_BW * 1e3)
    assert g["ans_q2_ratio"] == pytest.approx(82 / 28)
    # 32 blocks of 7 tensors (QKV, output, gate, up, down projections and the 2 norm weights):
    # 32 * 202,383,360 = 6,476,267,520 = 98,820 chunks of 65,536 at least; at most 320 chunks
    # per launch in a CUDA 12 build, so ceil(98,820 / 320) = 309 launches per pass, and 2240 in
    # a CUDA 13 build (MultiTensorApply.cuh, CUDART_VERSION >= 13000): ceil(98,820 / 2240) = 45.
    # The loop launches 8 kernels per tensor; foreach makes 8 passes, fused one.
    assert g["ans_q3_chunks"] == 98_820
    assert g["ans_q3_loop_kernels"] == 8 * 32 * 7  # 1792
    assert g["ans_q3_foreach_kernels"] == 8 * 309  # 2472
    assert g["ans_q3_fused_kernels"] == 309
    assert g["ans_q3_foreach_kernels_cuda13"] == 8 * 45 and g["ans_q3_fused_kernels_cuda13"] == 45
    assert g["ans_q3_fused_ms"] == pytest.approx(28 * 32 * BLOCK_PARAMS / H100_BW * 1e3)  # ~54 ms
    # The estimate: 28 bytes x 6,476,267,520 parameters = 181.3 GB, at 0.2985 ms per GB.
    assert g["ans_q3_gb"] == pytest.approx(28 * 32 * BLOCK_PARAMS / 1e9)
    assert g["ans_q3_gb"] == pytest.approx(181.34, rel=1e-4)
    # Scale, mask, softmax over 32 x 4096 x 4096 BF16 scores: 6 passes against 2.
    one_pass = 2 * HEADS * T * T
    assert g["ans_q4_three_ms"] == pytest.approx(6 * one_pass / H100_BW * 1e3)
    assert g["ans_q4_fused_ms"] == pytest.approx(2 * one_pass / H100_BW * 1e3)
    assert g["ans_q4_ratio"] == pytest.approx(3.0)
    # Eager (Hugging Face) attention per score beyond Q, K, V, O: S written (2), scale (2 + 2),
    # mask add (2 + 2, plus the mask read once for 32 heads: 2 / 32), the BF16 -> FP32 cast
    # (2 + 4; ATen SoftMax.cpp fuses it only for Half), softmax in FP32 (4 + 4), cast back
    # (4 + 2), P read by PV (2): 32 + 1/16 bytes, in 7 kernels. Materialized: 2 + 4 + 2.
    assert g["ans_q4_hf_bps"] == pytest.approx(32 + 2 / 32)
    assert g["ans_q4_hf_kernels"] == 7
    assert g["ans_q4_mat_bps"] == pytest.approx(8)
    # Measured on your GPU: a quick CUDA run steps AdamW over 2^24 FP32 parameters in 8 tensors.
    # fused 28 B/param: 28 * 2^24 / 3.35e12 = 0.1402 ms; loop and foreach 80 B/param: 0.4006 ms;
    # the loop launches 8 kernels per tensor: 64.
    assert (g["ans_q5_params_m"], g["ans_q5_tensors"], g["ans_q5_loop_kernels"]) == (16, 8, 64)
    assert g["ans_q5_fused_ms"] == pytest.approx(28 * 2**24 / H100_BW * 1e3)
    assert g["ans_q5_loop_ms"] == pytest.approx(80 * 2**24 / H100_BW * 1e3)
    assert g["ans_q5_foreach_ms"] == pytest.approx(g["ans_q5_loop_ms"])


def test_chapter_6_prose_numbers(glued):
    g = glued(CH6)
    # the rule of thumb: 1e9 bytes / 3.35e12 byte/s = 0.2985 ms per GB
    assert g["ms_per_gb"] == pytest.approx(1e9 / H100_BW * 1e3)
    assert g["add_I"] == pytest.approx(1 / 6)
    assert g["relu_I"] == pytest.approx(1 / 4)
    assert g["ridge_bf16"] == pytest.approx(H100_BF16 / 3.35e12)  # 295.3
    assert g["ridge_vector"] == pytest.approx(133.8 / 3.35)  # 39.9, packed BF16
    # eager PyTorch computes in FP32: the datasheet's FP32 67 TFLOP/s, ridge 67 / 3.35 = 20
    assert g["vector_fp32_tflops"] == pytest.approx(67)
    assert g["ridge_vector_fp32"] == pytest.approx(67 / 3.35)
    assert g["special_tflops"] == pytest.approx(4.18176)
    # GELU's tanh: T*H / 4.18e12 = 4.0 us on the special units against 4*T*H / 3.35e12 = 20 us.
    assert g["gelu_special_us"] == pytest.approx(T * H / H100_SPECIAL * 1e6)
    assert g["gelu_mem_over_special"] == pytest.approx(4 * H100_SPECIAL / H100_BW)  # 5.0
    assert g["add_us"] == pytest.approx(6 * T * H / H100_BW * 1e6)  # about 30 us
    assert g["gemm_us"] == pytest.approx(
        2 * 4096**3 / H100_BF16 * 1e6
    )  # about 139 us, matrix units
    assert g["flops_ratio"] == 2 * 4096**3 / (T * H)  # 8192
    # RMSNorm, one kernel: read x, write y, read gamma once.
    rms_bytes = 2 * (2 * T * H + H)
    assert g["rms_I"] == pytest.approx((4 * T * H + 3 * T) / rms_bytes)
    # Eager RMSNorm with the FP32 upcast (n = T*H elements, R = T rows, 4-byte intermediates):
    # to(float32) 2n + 4n, pow 4n + 4n, mean 4n + 4R, + eps 4R + 4R, rsqrt 4R + 4R,
    # x * r 4(n + R) + 4n, to(bf16) 4n + 2n, weight * y 2(n + H) + 2n: 36n + 24R + 2H, 8 kernels.
    n = T * H
    assert g["rms_eager_kernels"] == 8
    assert g["rms_eager_ratio"] == pytest.approx((36 * n + 24 * T + 2 * H) / (4 * n + 2 * H))  # 9.0
    # All BF16 (upcast=False): 4n, 2n + 2R, 4R, 4R, 2(n + R) + 2n, 2(n + H) + 2n: 14n + 12R + 2H.
    assert g["rms_bf16_kernels"] == 6
    assert g["rms_bf16_ratio"] == pytest.approx((14 * n + 12 * T + 2 * H) / (4 * n + 2 * H))  # 3.5
    assert g["inter_mib"] == pytest.approx(64)  # 4 * 4096^2 bytes
    # Score softmax: 32 x 4096^2 elements, 4 bytes each through HBM. A minimal kernel: one exp
    # on the special units, four vector FLOPs (max, subtract, sum, multiply by the row's
    # reciprocal; one lane slot each, packed BF16). PyTorch's kernel (ATen SoftMax.cu): an exp
    # in SumExpFloat, another in the epilogue's `std::exp(input - max_input) / sum` and the
    # division's reciprocal, 3 evaluations: 385 us, still below HBM.
    scores = HEADS * T * T
    assert g["softmax_us"] == pytest.approx(4 * scores / H100_BW * 1e6)  # 641 us
    assert g["softmax_special_us"] == pytest.approx(scores / H100_SPECIAL * 1e6)  # 128 us
    assert g["softmax_aten_special_us"] == pytest.approx(3 * scores / H100_SPECIAL * 1e6)  # 385
    assert g["softmax_special_aten"] == 3
    assert g["softmax_vector_us"] == pytest.approx(4 * scores / H100_OPS_BF16 * 1e6)  # 32 us
    assert g["softmax_mem_over_special"] == pytest.approx(4 * H100_SPECIAL / H100_BW)  # 5.0
    assert g["softmax_vs_gemm"] == pytest.approx((4 * scores / H100_BW) / (2 * 4096**3 / H100_BF16))
    assert (g["adamw_fused_bpp"], g["adamw_loop_bpp"]) == (28, 80)
    assert (g["adamw_mixed_fused_bpp"], g["adamw_mixed_loop_bpp"]) == (28, 82)
    assert g["adamw_fused_I"] == pytest.approx(14 / 28)
    assert g["adamw_loop_I"] == pytest.approx(14 / 80)
    # 202,383,360 parameters = 3,089 chunks (the last one partial), ceil(3089 / 320) = 10
    # launches per pass for foreach and fused; the loop launches once per tensor per pass.
    assert (g["mt_chunk"], g["mt_blocks"]) == (65_536, 320)
    assert g["adamw_loop_kernels"] == 8 * 7
    assert g["adamw_foreach_kernels"] == 8 * 10
    assert g["adamw_fused_kernels"] == 10
    # a CUDA 13 build carries 2240 chunks a launch: ceil(3089 / 2240) = 2, foreach 8 x 2 = 16 < 56
    assert g["mt_blocks_cuda13"] == 2240
    assert (g["adamw_fused_kernels_cuda13"], g["adamw_foreach_kernels_cuda13"]) == (2, 16)
    assert g["adamw_fused_ms"] == pytest.approx(28 * BLOCK_PARAMS / H100_BW * 1e3)
    # Every non-GEMM operator of figure 6.2 is at least 5.0 times longer on HBM than on its
    # slowest unit: GELU (a tanh) and softmax (an exp), one special evaluation per 4 bytes each,
    # 4 * 4.18 / 3.35 = 5.0.
    assert g["min_mem_over_compute"] == pytest.approx(4 * H100_SPECIAL / H100_BW)
    assert (g["softmax_special_pe"], g["softmax_vector_pe"]) == (1, 4)
    assert (g["near_names"], g["near_special"]) == ("GELU 和 softmax", 1)
    assert g["near_ratio"] == pytest.approx(4 * H100_SPECIAL / H100_BW)
    # SwiGLU: silu (read, write) then the product (read 2, write 1) against one kernel (3 passes).
    assert g["fuse_saving"] == pytest.approx(1 - 3 / 5)


# --------------------------------------------------------------------------
# Chapter 7


# H100 SXM's L2, measured by others (NVIDIA publishes none): an L2-resident copy at 8428.6 GB/s.
H100_L2_BW = 8.4286e12


def _time(matrix=0, vector=0, special=0, nbytes=0, rereads=0, vector32=0):
    """(seconds, bound) of the lower bound: each unit's work over its rate, bytes over HBM and L2.

    ``vector`` is in lane slots (an FMA is one), BF16 data at the packed rate; ``vector32`` lane
    slots run in FP32 whatever the data (FlashAttention's softmax); every byte and every re-read
    (served by the L2) passes the L2.
    """
    times = {
        "matrix": matrix / H100_BF16,
        "vector": vector / H100_OPS_BF16 + vector32 / H100_OPS_FP32,
        "special": special / H100_SPECIAL,
        "memory": nbytes / H100_BW,
        "l2": (nbytes + rereads) / H100_L2_BW,
    }
    which = max(times, key=times.get)
    return times[which], ("memory" if which in ("memory", "l2") else "compute")


def _gemm(m, k, n, s=2):
    return {"matrix": 2 * m * k * n, "nbytes": s * (m * k + k * n + m * n)}


def _block(attention):
    """Each forward operator of the block by hand: FLOPs per unit and compulsory bytes."""
    # RMSNorm: 4 vector FLOPs per element in 3 lane slots (the square and the add into the sum
    # are one FMA), per row 2 vector and one rsqrt.
    rms = {"vector": 3 * T * H + 2 * T, "special": T, "nbytes": 2 * (2 * T * H + H)}
    add = {"vector": T * H, "nbytes": 3 * 2 * T * H}
    return [
        rms,
        _gemm(T, H, 3 * H),
        ROPE,
        attention,
        _gemm(T, H, H),
        add,
        rms,
        _gemm(T, H, F),
        _gemm(T, H, F),
        # SwiGLU: the exp and the division's reciprocal on the special units, 4 vector FLOPs
        {"vector": 4 * T * F, "special": 2 * T * F, "nbytes": 3 * 2 * T * F},
        _gemm(T, F, H),
        add,
    ]


# RoPE on Q and K (T x H each): x * cos + rotate_half(x) * sin, a multiply and an FMA, 2 lane
# slots per element; read Q, K and the T x D cos and sin tables, write Q and K, 2 bytes each.
ROPE = {"vector": 2 * 2 * T * H, "nbytes": 2 * (2 * T * H + 2 * T * D) + 2 * 2 * T * H}

# Causal FlashAttention keeps T(T+1)/2 pairs per head: 4D matrix FLOPs, one exp, and 4 vector
# FLOPs in FP32 (the scores stay in FP32 accumulators, FA2/FA3), at 67 / 2 = 33.5e12 slots/s.
# Compulsory bytes: Q, K, V read and O written once. The K/V re-reads (one head's K and V,
# 2 * 4096 * 128 * 2 = 2 MiB, fit in the 50 MiB L2) are not charged to HBM but to the L2.
# The bound takes FA3's 128-row tile with 2-block clusters (fewer re-reads than FA3's own
# causal schedule, no cluster): group g (of 16) reads keys up to 256 g, so
# 256 * (1 + ... + 16) - 4096 = 30,720 key rows again per head, 32 * 2 * 128 * 2 bytes each:
# 503,316,480 bytes, and (134,217,728 + 503,316,480) / 8.4286e12 = 75.6 us on the L2, below
# the matrix units' 32 * 8,390,656 * 512 / 989.4e12 = 138.9 us. FA3's own schedule re-reads
# 128 * (1 + ... + 32) - 4096 = 63,488 rows: 1,040,187,392 bytes, 139.3 us on the L2 (an
# estimate for that schedule, not a bound).
PAIRS = T * (T + 1) // 2
FLASH_UNITS = {
    "matrix": HEADS * PAIRS * 4 * D,
    "vector32": HEADS * PAIRS * 4,
    "special": HEADS * PAIRS,
    "nbytes": 2 * HEADS * 4 * T * D,
    "rereads": HEADS * 2 * D * 2 * (sum(256 * g for g in range(1, 17)) - T),
}
FA3_OWN_REREADS = HEADS * 2 * D * 2 * (sum(128 * m for m in range(1, 33)) - T)
# Materialized: all scores computed; S written, read; P written, read; Q, K, V read, O written.
# Its softmax, as a minimal kernel: one exp per score, max, subtract, sum and the multiply by
# the row sum's reciprocal on the vector units.
MATERIALIZED_UNITS = {
    "matrix": HEADS * 4 * T * T * D,
    "vector": HEADS * 4 * T * T,
    "special": HEADS * T * T,
    "nbytes": 2 * HEADS * (4 * T * D + 4 * T * T),
}


def _flops(op):
    return sum(op.get(unit, 0) for unit in ("matrix", "vector", "vector32", "special"))


# (FLOPs, compulsory bytes) of the two attention versions, as later chapters read them.
FLASH_CAUSAL = (_flops(FLASH_UNITS), FLASH_UNITS["nbytes"])
MATERIALIZED = (_flops(MATERIALIZED_UNITS), MATERIALIZED_UNITS["nbytes"])


def _memory_share(ops):
    times = [_time(**op) for op in ops]
    total = sum(t for t, _ in times)
    return sum(t for t, which in times if which == "memory") / total, total


def test_chapter_7_answers(glued):
    g = glued(CH7)
    scores = 4 * 2 * HEADS * 8192**2  # S and P, each written and read once
    assert g["ans_q1_scores_gb"] == pytest.approx(scores / 1e9)  # 17.2 GB
    assert g["ans_q1_scores_ms"] == pytest.approx(scores / H100_BW * 1e3)
    assert g["ans_q1_scores_fraction"] == pytest.approx(8192 / (8192 + D))
    # Non-causal flash, 4096 tokens, H100's 228 KiB: Br = 233,472 / 2 / (4 * 128) = 228 rows,
    # ceil(4096 / 228) = 18 query blocks, so 17 re-reads of K and V; doubled, Br = 456 and
    # ceil(4096 / 456) = 9 blocks, 8 re-reads. Compulsory bytes stay Q, K, V, O once.
    kv = 2 * HEADS * 2 * T * D  # K and V of every head, bytes
    assert g["ans_q2_reread_before_gb"] == pytest.approx(17 * kv / 1e9)  # 1.14 GB
    assert g["ans_q2_reread_after_gb"] == pytest.approx(8 * kv / 1e9)  # 0.54 GB
    assert g["ans_q2_bytes_gb"] == pytest.approx(2 * HEADS * 4 * T * D / 1e9)
    matrix_us = HEADS * 4 * T * T * D / H100_BF16 * 1e6  # 277.8 us: the matrix units bind
    assert g["ans_q2_us_before"] == pytest.approx(matrix_us)
    assert g["ans_q2_us_after"] == pytest.approx(matrix_us)
    assert g["ans_q2_n_spill"] == H100_L2 // (2 * D * 2)  # 102,400 tokens
    assert g["ans_q2_rows"] == 228  # the problem's convention Br = Z / (4 d s)
    # Compulsory bytes and 17 re-reads on the L2: (134,217,728 + 1,140,850,688) / 8.4286e12
    # = 151.3 us, below the matrix units' 277.8 us
    l2_us = (2 * HEADS * 4 * T * D + 17 * kv) / H100_L2_BW * 1e6
    assert g["ans_q2_l2_us_before"] == pytest.approx(l2_us) and l2_us < matrix_us
    assert g["ans_q2_res"] == "受矩阵单元限制"
    # FA3's tile without a mask (128 rows, clusters of 2): 15 re-reads, (1 + 15) * kv + the
    # queries and outputs' 2 * kv over the L2: 1,140,850,688 / 8.4286e12 = 135.4 us
    assert g["attn_flash_l2_us"] == pytest.approx(17 * kv / H100_L2_BW * 1e6)
    assert g["attn_flash_matrix_us"] == pytest.approx(matrix_us)
    flash_share, _ = _memory_share(_block(FLASH_UNITS))
    mat_share, _ = _memory_share(_block(MATERIALIZED_UNITS))
    assert g["ans_q3_flash_mem_share"] == pytest.approx(flash_share)  # about 9 %
    assert g["ans_q3_mat_mem_share"] == pytest.approx(mat_share)  # about 47 %


def test_chapter_7_estimate_and_measure_problems(glued):
    g = glued(CH7)
    # Estimate: 2 Psi per token. The five projections' times on the matrix units:
    # 2 * 4096 * (4 * 4096^2 + 3 * 4096 * 11008) / 989.4e12 = 1675.6 us, against the pencil
    # estimate 2 * 2e8 * 4096 / 1e15 = 1.6 ms.
    projections = [_gemm(T, H, 3 * H), _gemm(T, H, H)] + [_gemm(T, H, F)] * 2 + [_gemm(T, F, H)]
    gemm_us = sum(_time(**p)[0] for p in projections) * 1e6
    assert g["ans_q4_gemm_us"] == pytest.approx(gemm_us)
    assert 1.5e3 < gemm_us < 1.8e3  # the pencil estimate holds within about 10 %
    # Measure: the CUDA quick suite's attention at batch 4, 16 heads, 4096 tokens, d = 128, no
    # mask. Materialized: 2 * 64 * (4 * 4096 * 128 + 4 * 4096^2) = 8,858,370,048 bytes over
    # 3.35 TB/s = 2.644 ms (HBM). Flash: 64 * 4096^2 * 4 * 128 = 549,755,813,888 matrix FLOPs
    # over 989.4e12 = 555.6 us (matrix units); 64 * 4096^2 * (4 * 128 + 5) FLOPs in all.
    shape = (g["ans_q5_batch"], g["ans_q5_heads"], g["ans_q5_seq"], g["ans_q5_d"])
    assert shape == (4, 16, 4096, 128)  # the CUDA quick suite's longest attention
    mat_bytes = 2 * 64 * (4 * 4096 * 128 + 4 * 4096**2)
    flash_s = 64 * 4096**2 * 4 * 128 / H100_BF16
    assert mat_bytes == 8_858_370_048
    assert g["ans_q5_mat_ms"] == pytest.approx(mat_bytes / H100_BW * 1e3)
    assert g["ans_q5_flash_us"] == pytest.approx(flash_s * 1e6)
    assert g["ans_q5_ratio"] == pytest.approx(mat_bytes / H100_BW / flash_s)  # 4.76
    assert g["ans_q5_gflop"] == pytest.approx(64 * 4096**2 * (4 * 128 + 5) / 1e9)
    assert g["ans_q5_mat_gb"] == pytest.approx(mat_bytes / 1e9)
    assert (g["ans_q5_mat_bound"], g["ans_q5_flash_bound"]) == ("受 HBM 限制", "受矩阵单元限制")
    # The bytes ratio the claims print: (4 * 128 + 4 * 4096) / (4 * 128) = 33
    assert g["attn_bytes_ratio"] == pytest.approx(33)


def test_chapter_7_prose_numbers(glued):
    g = glued(CH7)
    assert FLASH_UNITS["nbytes"] == 134_217_728
    assert g["flash_attn_I"] == pytest.approx(FLASH_CAUSAL[0] / FLASH_CAUSAL[1])
    assert g["fa_matrix_us"] == pytest.approx(FLASH_UNITS["matrix"] / H100_BF16 * 1e6)
    assert g["fa_special_us"] == pytest.approx(FLASH_UNITS["special"] / H100_SPECIAL * 1e6)
    assert g["fa_hbm_us"] == pytest.approx(FLASH_UNITS["nbytes"] / H100_BW * 1e6)
    assert g["fa_bound"] == "受矩阵单元限制"  # 138.9 us against 75.6 us on the L2
    assert g["fa_l2_us"] == pytest.approx(
        (FLASH_UNITS["nbytes"] + FLASH_UNITS["rereads"]) / H100_L2_BW * 1e6
    )
    assert FLASH_UNITS["rereads"] == 503_316_480
    assert g["fa_reread_gb"] == pytest.approx(FLASH_UNITS["rereads"] / 1e9)
    # FA3's own causal schedule (no cluster): an L2 estimate of 139.3 us, above 138.9 us
    assert FA3_OWN_REREADS == 1_040_187_392 and g["fa3_own_c"] == 1
    assert g["fa3_own_reread_gb"] == pytest.approx(FA3_OWN_REREADS / 1e9)
    assert g["fa3_own_l2_us"] == pytest.approx(
        (FLASH_UNITS["nbytes"] + FA3_OWN_REREADS) / H100_L2_BW * 1e6
    )
    assert g["fa3_own_bound"] == "受 L2 限制"
    assert g["fa_kv_mib"] == pytest.approx(2)
    _, flash_total = _memory_share(_block(FLASH_UNITS))
    _, mat_total = _memory_share(_block(MATERIALIZED_UNITS))
    assert g["flash_total_us"] == pytest.approx(flash_total * 1e6)
    assert g["materialized_total_us"] == pytest.approx(mat_total * 1e6)
    projections = [_gemm(T, H, 3 * H), _gemm(T, H, H)] + [_gemm(T, H, F)] * 2 + [_gemm(T, F, H)]
    assert g["gemm_share"] == pytest.approx(sum(_time(**p)[0] for p in projections) / flash_total)
    # Of the small operators (norms, RoPE, adds, SwiGLU) the one closest to its compute is
    # SwiGLU: 6 bytes per exp and reciprocal on the special units, 6 * 4.18 / (2 * 3.35) = 3.7
    # (the flash attention row, matrix-bound at 138.9 us, is not among them)
    swiglu_hbm = 3 * 2 * T * F / H100_BW
    assert g["min_mem_ratio"] == pytest.approx(swiglu_hbm / (2 * T * F / H100_SPECIAL))  # 3.74
    assert g["attn_mat_I"] == pytest.approx((4 * D + 5) / (4 * 2 * (1 + D / T)))
    assert g["mat_I_limit"] == pytest.approx((4 * 128 + 5) / 8)
    # The main line's three implementations carry the causal mask, as the block table does:
    # materialized 4,429,185,024 bytes against flash's 134,217,728 (Q, K, V, O once) = 33 times;
    # flash counts the kept T(T+1)/2 pairs, I = 1034, matrix-bound like the table's row.
    assert g["attn_c_ratio"] == pytest.approx(MATERIALIZED[1] / FLASH_CAUSAL[1])  # 33
    assert g["attn_c_mat_I"] == pytest.approx(MATERIALIZED[0] / MATERIALIZED[1])
    assert g["attn_c_flash_I"] == pytest.approx(FLASH_CAUSAL[0] / FLASH_CAUSAL[1])
    assert g["attn_c_bound"] == "受矩阵单元限制"
    # The flash figure's FA3 tile without a mask (hopper/tile_size.h: kBlockN 176 at d = 128):
    # ceil(4096 / 176) = 24 K/V blocks stream past each query block
    assert (g["fa3_bn"], g["fa3_nk"]) == (176, 24)
    # FlashAttention-3's tile on H100 at d = 128, no mask (hopper/tile_size.h, tile_size_fwd_sm90:
    # kBlockM 128; clusters of 2 query blocks at kHeadDim >= 128), against 228 rows by the
    # on-chip memory rule, 233,472 / 2 / (4 * 128)
    assert (g["flash_rows_per_block"], g["fa3_c"], g["flash_sram_rows"]) == (128, 2, 228)
    # 4096 / 128 = 32 query blocks, 16 loads of every head's K and V, 15 of them re-reads
    assert g["attn_reread_gb"] == pytest.approx(15 * 2 * HEADS * 2 * T * D / 1e9)
    assert g["mat_bps"] == pytest.approx(8)
    # Eager BF16: ATen SoftMax.cpp fuses the FP32 cast into softmax only for Half, so a BF16 score
    # is cast by a kernel of its own: S (2), scale (2 + 2), cast (2 + 4), softmax (4 + 4), cast
    # back (4 + 2), P read (2) = 28 bytes in 6 kernels; the causal mask adds (2 + 2) and the mask
    # read once for 32 heads (2 / 32): 32.06 bytes in 7 kernels, 4.0 times the materialized 8.
    assert g["eager_nomask_bps"] == pytest.approx(28) and g["eager_nomask_kernels"] == 6
    assert g["eager_bps"] == pytest.approx(32 + 2 / 32) and g["eager_kernels"] == 7
    assert g["eager_vs_mat"] == pytest.approx((32 + 2 / 32) / 8)
    # Causal conventions: materialized counts all T^2 scores, flash the T(T+1)/2 it keeps.
    assert g["causal_flops_ratio"] == pytest.approx(MATERIALIZED[0] / FLASH_CAUSAL[0])
    # Master-weight AdamW on the block: the loop's 8 passes read the BF16 grad twice (76 bytes) and
    # a cast kernel reads the FP32 master and writes the BF16 copy (4 + 2): 82 against 28 bytes
    # per parameter. A training step is taken as 3 forward passes (backward about twice forward).
    assert g["opt_ratio"] == pytest.approx(82 / 28)
    assert g["opt_fused_ms"] == pytest.approx(28 * BLOCK_PARAMS / H100_BW * 1e3)
    assert g["step_forwards"] == 3
    assert g["opt_vs_step"] == pytest.approx(28 * BLOCK_PARAMS / H100_BW / (3 * flash_total))
    # Per parameter: BF16 grad 2 + FP32 master, m, v read 12; master, m, v written 12 and the
    # BF16 weight 2: 28. Megatron-LM's default reads an FP32 grad (4 + 12 read, 12 written)
    # and copies the master to BF16 in another kernel (read 4, write 2): 34.
    assert g["opt_fused_bpp"] == pytest.approx(28)
    assert g["opt_megatron_bpp"] == pytest.approx(34)
    # RoPE: 136,314,880 bytes over 3.35 TB/s = 40.7 us, its share of the block's bound.
    assert g["rope_mb"] == pytest.approx(ROPE["nbytes"] / 1e6) and ROPE["nbytes"] == 136_314_880
    assert g["rope_us"] == pytest.approx(ROPE["nbytes"] / H100_BW * 1e6)
    assert g["rope_share"] == pytest.approx(ROPE["nbytes"] / H100_BW / flash_total)
    small = [op for op in _block(FLASH_UNITS) if "matrix" not in op]  # norms, RoPE, adds, SwiGLU
    assert g["small_share"] == pytest.approx(sum(_time(**op)[0] for op in small) / flash_total)


def test_chapter_7_standard_flop_formulas(glued):
    g = glued(CH7)
    # Kaplan et al. 2020, Table 1: 2 N FLOPs per token for the weights. N = 202,383,360;
    # 2 * N * 4096 = 1.6579e12. The projections hold all but the two norm weights (2 * 4096).
    projections = 2 * T * (4 * H * H + 3 * H * F)  # 1,657,857,376,256
    assert g["proj_tflop"] == pytest.approx(projections / 1e12)
    assert g["two_n_t_tflop"] == pytest.approx(2 * BLOCK_PARAMS * T / 1e12)
    assert g["proj_vs_2nt"] == pytest.approx(1 - 2 * H / BLOCK_PARAMS)  # 0.99996
    # Kaplan's attention term, 2 n_ctx d_attn per token (causal), times 4096 tokens: 2 * 4096^3
    # = 137,438,953,472; flash keeps 4096 * 4097 / 2 pairs per head, 4 * 128 FLOPs each.
    assert g["kaplan_attn_gflop"] == pytest.approx(2 * T * T * H / 1e9)
    assert g["flash_matrix_gflop"] == pytest.approx(FLASH_UNITS["matrix"] / 1e9)
    assert g["flash_vs_kaplan"] == pytest.approx((T + 1) / T)  # 1.00024
    # Chinchilla App. F: QK^T and softmax @ V, 2 * seq^2 * (key_size * heads) each, not halved:
    # 4 * 4096^2 * 4096 = 274,877,906,944, the materialized version's matrix FLOPs.
    assert g["chinchilla_attn_gflop"] == pytest.approx(4 * T * T * H / 1e9)
    assert g["mat_matrix_gflop"] == pytest.approx(MATERIALIZED_UNITS["matrix"] / 1e9)
    assert g["mat_softmax_part"] == pytest.approx(5 / (4 * D + 5))  # 1.0 %
    # Attention backward, no mask, per head: storing P does 8 T^2 D matrix FLOPs and 2 T^2 vector
    # and moves 7 T^2 scores (P read twice, dP written and read, dS written and read twice) plus
    # 8 T x D tensors (dO twice, K, V and Q read; dV, dQ, dK written), 2 bytes each. Recomputing
    # adds 2 T^2 D matrix FLOPs (S again), 1 vector FLOP and 1 exp per score, and moves only
    # Q, K, V, O, dO read and dQ, dK, dV written: 8 T x D tensors.
    stored = {
        "matrix": HEADS * 8 * T * T * D,
        "vector": HEADS * 2 * T * T,
        "nbytes": 2 * HEADS * (7 * T * T + 8 * T * D),
    }
    recompute = {
        "matrix": HEADS * 10 * T * T * D,
        "vector": HEADS * 3 * T * T,
        "special": HEADS * T * T,
        "nbytes": 2 * HEADS * 8 * T * D,
    }
    assert g["bwd_flops_ratio"] == pytest.approx(_flops(recompute) / _flops(stored))  # 1.25
    assert g["bwd_stored_ms"] == pytest.approx(_time(**stored)[0] * 1e3)
    assert g["bwd_recompute_ms"] == pytest.approx(_time(**recompute)[0] * 1e3)
    assert (g["bwd_stored_res"], g["bwd_recompute_res"]) == ("hbm", "matrix")


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
    assert g["ans_q3_roof_fp32"] == pytest.approx(H100_FP32 / 1e12)  # 67, a GEMM's FMAs
    assert g["ans_q3_roof_tf32"] == pytest.approx(H100_BW * i_cube / 1e12)  # 285.9
    assert g["ans_q3_gain"] == pytest.approx(H100_BW * i_cube / H100_FP32)
    assert g["ans_q3_peak_ratio"] == pytest.approx(H100_TF32 / H100_FP32)
    # the problem states what it needs: H100 SXM datasheet, FP32 67 and TF32 494.7 TFLOP/s
    # dense, HBM3 3.35 TB/s
    assert g["h100_fp32_tf"] == pytest.approx(67.0)
    assert g["h100_tf32_tf"] == pytest.approx(494.7)
    assert g["h100_bw_tb"] == pytest.approx(3.35)


def test_chapter_8_estimate_and_measure_problems(glued):
    g = glued(CH8)
    # Estimate: a decode batch of 8 tokens through 4096 x 4096 in BF16. Bytes 2 * (8 * 4096 +
    # 4096^2 + 8 * 4096) = 33,685,504, nearly all weights, so I = 2 * 8 * 4096^2 / 33,685,504
    # = 7.97, close to the pencil rule I ~ M; 33,685,504 / 3.35e12 = 10.06 us.
    nbytes = 2 * (8 * 4096 + 4096 * 4096 + 8 * 4096)
    i_dec = 2 * 8 * 4096 * 4096 / nbytes
    assert g["ans_q4_I"] == pytest.approx(i_dec) and 7.5 < i_dec < 8
    assert g["ans_q4_frac"] == pytest.approx(H100_BW * i_dec / H100_BF16)  # 2.7 %
    assert g["ans_q4_us"] == pytest.approx(nbytes / H100_BW * 1e6)
    # One row of 4096 / 128 = 32 output tiles for 132 SMs
    assert g["ans_q4_tiles"] == 32
    assert g["ans_q4_busy"] == pytest.approx(32 / H100_SMS)
    # Measure: at n = 4096 both precisions are compute-bound (I = 2 * 4096 / 12 = 683 against
    # a ridge of 20; 1365 against 295), so the times' ratio is the peaks': 989.4 / 67 = 14.8.
    assert g["ans_q5_n"] == 4096  # the CUDA quick suite's largest square GEMM
    assert g["ans_q5_I_fp32"] == pytest.approx(2 * 4096 / 12)
    assert g["ans_q5_I_bf16"] == pytest.approx(2 * 4096 / 6)
    assert g["ans_q5_bounds"] == "compute/compute"
    assert g["ans_q5_ratio"] == pytest.approx(H100_BF16 / H100_FP32)


def test_chapter_8_prose_numbers(glued):
    g = glued(CH8)
    assert g["small_I"] == pytest.approx(2 * 32 * 128 * 128 / (2 * 24576))
    assert g["small_frac"] == pytest.approx(H100_BW * g["small_I"] / H100_BF16)  # about 7 %
    assert g["big_I"] == pytest.approx(8192 / 6)
    assert (g["small_tiles"], g["big_tiles"], g["sms"]) == (1, 1024, H100_SMS)
    assert g["small_tile_use"] == pytest.approx(32 / 128)
    # wave quantization: 1024 tiles on 132 SMs, one tile per SM at a time, are 7.76 waves;
    # 8 waves, the last holding 1024 - 7 * 132 = 100 tiles (76 % of the SMs); 1024 / 1056 = 97 %
    assert g["big_waves"] == pytest.approx(1024 / 132) and round(g["big_waves"], 2) == 7.76
    assert (g["big_waves_ceil"], g["big_last_tiles"]) == (8, 100)
    assert g["big_last_fill"] == pytest.approx(100 / 132) and round(g["big_last_fill"], 2) == 0.76
    assert g["big_wave_eff"] == pytest.approx(1024 / (8 * 132))
    # just over one wave: 1536^2 in 128 x 128 tiles is 12 * 12 = 144 tiles on 132 SMs, so 2
    # waves, the second holding 144 - 132 = 12 tiles; 144 / (2 * 132) = 54.5 %
    assert (g["odd_n"], g["odd_tiles"], g["odd_waves"], g["odd_last"]) == (1536, 144, 2, 12)
    assert g["odd_wave_eff"] == pytest.approx(144 / 264) and round(g["odd_wave_eff"], 2) == 0.55
    # H100 datasheet: BF16 1,979 TFLOP/s with 2:4 sparsity, 989.5 dense
    # the whitepaper's sparse and dense figures: 1978.9 / 989.4
    assert (
        g["sparse_over_dense"] == pytest.approx(1978.9 / 989.4)
        and round(g["sparse_over_dense"]) == 2
    )
    assert g["h100_peak_ratio"] == pytest.approx(H100_BF16 / H100_FP32)  # 16.0
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
    # The add runs on the vector units: the BF16 vector peak (packed pairs) is 133.8 TFLOP/s
    # counting an FMA as 2 FLOP, and an add is one FLOP in one lane slot, so at most half of
    # it, 66.9e12 adds per second: 335.5 GFLOP/s of that is about 0.50 %.
    assert g["vec_tflops"] == pytest.approx(H100_VEC_BF16 / 1e12)
    assert g["vec_ops_t"] == pytest.approx(H100_OPS_BF16 / 1e12)
    assert g["ans_q2_vs_peak"] == pytest.approx(n / 50e-6 / H100_OPS_BF16)
    t0 = 5e-6
    assert g["t0_us"] == pytest.approx(5.0)
    assert g["ans_q3_elements_m"] == pytest.approx(t0 * H100_BW / 6 / 1e6)  # 2.79 M
    t_add = 6 * n / H100_BW
    assert g["ans_q3_eta_16m"] == pytest.approx(t_add / (t0 + t_add))
    # Q4 (estimate first): FlashAttention-3, d = 128, l = 16384, one sequence, 16 heads, no
    # mask, 648 TFLOP/s (Shah et al. 2024, Fig. 5). The paper's FLOPs 4 l^2 d h = 2^41; time
    # 2^41 / 648e12 = 3.39 ms; matrix-only eta 648 / 989.4 = 0.655. The package adds softmax:
    # SOFTMAX_FLOPS_PER_ELEMENT = 5 vector operations per score on top of 4 d = 512, over
    # the same 4 l d h * 2 bytes, so I = l / 2 * (512 + 5) / 512 = 8272 and eta = 0.655 * 517/512.
    paper = 4 * 16384**2 * 128 * 16
    assert paper == 2**41
    assert g["ans_q4_paper_tflop"] == pytest.approx(paper / 1e12)
    # the problem's convention, matrix products only: 2^41 FLOPs over 4 l d h s = 2^28 bytes
    # (Q, K, V read, O written, BF16) is l / s = 8192
    assert g["ans_q4_I_matmul"] == pytest.approx(2**41 / 2**28) and 2**41 / 2**28 == 8192
    assert g["ans_q4_ms"] == pytest.approx(paper / 648e12 * 1e3)
    assert g["ans_q4_I"] == pytest.approx(16384 / 2 * 517 / 512)
    assert g["ans_q4_eta_est"] == pytest.approx(648e12 / H100_BF16)
    assert g["ans_q4_eta"] == pytest.approx(648e12 / H100_BF16 * 517 / 512)
    # Q5 (measure on your GPU): the CUDA quick suite's peak GEMM, n = 6144 (suites.py),
    # at the dense BF16 peak: 2 * 6144^3 / 989.4e12 = 0.469 ms
    assert g["ans_q5_n"] == 6144
    assert g["ans_q5_peak_ms"] == pytest.approx(2 * 6144**3 / H100_BF16 * 1e3)


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


def test_chapter_9_published_h100_measurements(glued):
    g = glued(CH9)
    # cuBLAS BF16, n = 8192: 795 TFLOP/s (fast.cu README); square GEMM I = n / 3 (s = 2)
    assert (g["pub_gemm_n"], g["pub_gemm_tf"]) == (8192, pytest.approx(795))
    assert g["pub_gemm_I"] == pytest.approx(8192 / 3)
    assert g["pub_gemm_eta"] == pytest.approx(795e12 / H100_BF16)  # 0.80
    # STREAM on H100 (Azure AI benchmarking guide): copy 2.90 TB/s, triad 2.97 TB/s
    assert g["pub_copy_tb"] == pytest.approx(2.90)
    assert g["pub_copy_eta"] == pytest.approx(2.90e12 / H100_BW)  # 0.87
    assert g["pub_triad_eta"] == pytest.approx(2.97e12 / H100_BW)
    # FlashAttention-3 d = 128, l = 16384: 648 TFLOP/s; eta with the package's softmax FLOPs
    assert (g["pub_fa_d"], g["pub_fa_seq"], g["pub_fa_tf"]) == (128, 16384, pytest.approx(648))
    assert g["pub_fa_eta"] == pytest.approx(648e12 / H100_BF16 * 517 / 512)
    assert g["h100_ridge"] == pytest.approx(H100_BF16 / H100_BW)  # 295.3


# --------------------------------------------------------------------------
# Chapter 13 (the summary)


def test_chapter_13_answers(glued):
    g = glued(CH13)
    ln_flops = 7 * 4096 * 4096 + 4 * 4096
    ln_bytes = 2 * (2 * 4096 * 4096 + 2 * 4096)
    assert g["ans_q1_I"] == pytest.approx(ln_flops / ln_bytes)  # 1.75
    assert (g["ans_q1_bound_h100"], g["ans_q1_bound_example"]) == ("HBM", "HBM")
    assert g["ans_q1_phrase_h100"] == g["ans_q1_phrase_example"] == "受 HBM 限制"
    assert g["ans_q1_us"] == pytest.approx(ln_bytes / H100_BW * 1e6)
    assert g["ans_q2_I"] == pytest.approx(2 * 4096 / 12)  # 682.7
    # the problem states A100's datasheet peaks and bandwidth
    assert g["ans_q2_peak_fp32"] == pytest.approx(19.5)  # TFLOP/s, CUDA cores
    assert g["ans_q2_peak_tf32"] == pytest.approx(156)  # TFLOP/s, Tensor Cores, dense
    assert g["ans_q2_bw_tb"] == pytest.approx(A100_BW / 1e12)
    assert g["ans_q2_ridge_fp32"] == pytest.approx(A100_FP32 / A100_BW)
    assert g["ans_q2_ridge_tf32"] == pytest.approx(A100_TF32 / A100_BW)
    assert g["ans_q2_ms_fp32"] == pytest.approx(2 * 4096**3 / A100_FP32 * 1e3)  # 7.05 ms
    assert g["ans_q2_ms_tf32"] == pytest.approx(2 * 4096**3 / A100_TF32 * 1e3)  # 0.88 ms
    assert (g["ans_q2_bound_fp32"], g["ans_q2_bound_tf32"]) == ("compute", "compute")
    assert g["ans_q3_adamw_speedup"] == pytest.approx(H200_BW / H100_BW)
    assert g["ans_q3_gemm_speedup"] == pytest.approx(1.0)


def test_chapter_13_prose_numbers(glued):
    g = glued(CH13)
    # no mask, so all three count every score: N = 32 * 4096^2 scores, 4 d + 5 FLOPs each
    scores = HEADS * T * T
    flops = scores * (4 * D + 5)
    flash_bytes = 2 * HEADS * 4 * T * D  # Q, K, V read once, O written once
    # eager: Q, K, V, O as above; per score S written (2), scaled (2 + 2), cast from BF16 to FP32
    # in a kernel of its own (2 + 4; ATen fuses it into softmax only for Half), softmax in FP32
    # (4 + 4), cast back (4 + 2), read by P V (2): 28 bytes
    eager_bytes = flash_bytes + 28 * scores
    assert g["flash_I"] == pytest.approx(flops / flash_bytes)  # 2068
    # eager scales the scores in a kernel of its own: one more FLOP per score
    assert g["eager_I"] == pytest.approx((flops + scores) / eager_bytes)  # 18.3
    assert (g["flash_res"], g["eager_res"]) == ("矩阵单元", "HBM")
    flash_t = scores * 4 * D / H100_BF16  # the matrix units bind
    assert g["eager_over_flash"] == pytest.approx(eager_bytes / H100_BW / flash_t)
    assert g["span"] == pytest.approx((flops / flash_bytes) / (1 / 6))
    # 2068 / (1/6) = 12,408: about four orders of magnitude, 1.2 ten-thousands
    assert g["span_orders"] == 4
    assert g["span_wan"] == pytest.approx((flops / flash_bytes) * 6 / 1e4)
    assert (g["flash_bound"], g["eager_bound"]) == ("受矩阵单元限制", "受 HBM 限制")


def test_chapter_13_three_resources_and_the_new_problems(glued):
    g = glued(CH13)
    # the three ridge points of H100 BF16: 989.4e12 over HBM 3.35e12, NVLink 450e9 a direction
    # and InfiniBand NDR 50e9 a direction
    assert g["sum_ridge"] == pytest.approx(H100_BF16 / H100_BW)  # 295.3
    assert g["sum_i_nvlink"] == pytest.approx(H100_BF16 / 450e9)  # 2198.7
    assert g["sum_i_ib"] == pytest.approx(H100_BF16 / 50e9)  # 19788
    # problem 1's pencil estimate: 2 bytes in and 2 out per element, 4 x 4096^2 / 3.35e12 = 20.0 us
    assert g["ans_q1_est_us"] == pytest.approx(4 * 4096**2 / H100_BW * 1e6)
    assert g["ans_q1_est_us"] == pytest.approx(g["ans_q1_us"], rel=1e-3)
    assert g["ans_q1_ridge"] == pytest.approx(H100_BF16 / H100_BW)
    assert g["ans_q1_hbm_tb"] == pytest.approx(3.35)
    # problem 4's hypotheses: RMSNorm 4096 x 4096 BF16 reads and writes 2 x 2 x 4096^2 bytes
    # plus its 4096 weights; the 4096^3 GEMM's 2 x 4096^3 FLOPs at 989.4 TFLOP/s = 0.139 ms
    assert g["ans_q4_rms_us"] == pytest.approx((4 * 4096**2 + 2 * 4096) / H100_BW * 1e6)
    assert g["ans_q4_gemm_ms"] == pytest.approx(2 * 4096**3 / H100_BF16 * 1e3)
    assert (g["ans_q4_rms_bound"], g["ans_q4_gemm_bound"]) == ("受 HBM 限制", "受矩阵单元限制")
    # published H100 measurements: STREAM copy 2.90 of 3.35 TB/s; cuBLAS 795 of 989.4 TFLOP/s
    assert g["ans_q4_copy_eta"] == pytest.approx(2.90 / 3.35)
    assert g["ans_q4_gemm_eta"] == pytest.approx(795 / 989.4)
