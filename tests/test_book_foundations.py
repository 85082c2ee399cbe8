"""roofline_book.book.foundations: the numbers of the memory traffic, arithmetic intensity and
roofline chapters, against datasheet figures and the chapters' formulas worked out by hand."""

from __future__ import annotations

import pytest

from roofline_book import (
    EXAMPLE,
    Cost,
    adamw,
    add,
    cost_table,
    elementwise,
    gemm,
    hardware,
    relu,
)
from roofline_book.book import foundations as f

approx = pytest.approx

H100 = hardware("h100-sxm")
# H100 SXM datasheet / whitepaper figures, as printed
H100_BW = 3.35e12  # byte/s, HBM3
H100_BF16 = 989.4e12  # FLOP/s, dense Tensor Core BF16, rated at 1830 MHz
H100_VEC_BF16 = 133.8e12  # FLOP/s, non-tensor BF16 as packed pairs (an FMA counts 2 FLOP)
H100_VEC_FP32 = 67e12  # FLOP/s, non-tensor FP32
H100_SPECIAL = 16 * 132 * 1.98e9  # evaluations/s: 16 SFU results per clock per SM, 1980 MHz
A100_BF16, A100_BW = 312e12, 2.039e12  # A100 SXM datasheet
H200_BW = 4.8e12  # H200 SXM datasheet; same compute as the H100
N = 4096 * 4096  # a 4096 x 4096 activation


def tiled_intensity(n: int, t: int, s: int = 2) -> float:
    # I(t) = 2 n^3 / (s (2 n^3 / t + n^2)) = 2 n t / (s (2 n + t)), t dividing n
    return 2 * n * t / (s * (2 * n + t))


# --------------------------------------------------------------------------------------------
# Memory traffic


def test_elementwise_bounds_of_a_bf16_add_on_h100():
    b = f.elementwise_bounds(add(N), H100)
    assert b["h100_bw_si"] == "3.35 TB/s" and b["h100_vec_tflops"] == approx(133.8)
    t_mem = 6 * N / H100_BW  # 100,663,296 bytes / 3.35e12 = 30.05 us
    t_comp = N / (H100_VEC_BF16 / 2)  # one add a lane slot: half the FMA peak, 0.251 us
    assert b["add_h100_tmem_us"] == approx(t_mem * 1e6)
    assert b["add_h100_tcomp_us"] == approx(t_comp * 1e6)
    assert b["add_h100_ratio"] == approx(6 * 66.9e12 / H100_BW)  # 119.8
    assert b["add_h100_sum_us"] == approx((t_mem + t_comp) * 1e6)
    assert b["add_vector_frac"] == approx(0.5)


def test_memory_levels_of_h100():
    m = f.memory_levels(H100)
    # 85,520,809,984 bytes reported by the driver = 81,559 MiB = 79.65 GiB
    assert m["h100_capacity_mib"] == 81559.0
    assert m["h100_hbm_bin"] == m["h100_capacity_bin"] == "79.65 GiB"
    assert m["h100_l2_mib"] == "50 MiB" and m["h100_sms"] == 132
    # per SM: 256 KB L1 + shared memory, up to 228 KB of it shared; 64K 32-bit registers
    assert (m["h100_l1smem_kib"], m["h100_smem_kib"]) == ("256 KiB", "228 KiB")
    assert m["h100_rf_kib"] == f"{65536 * 4 // 1024} KiB"


def test_memory_levels_names_a_missing_field():
    with pytest.raises(ValueError, match="no memory_capacity"):
        f.memory_levels(EXAMPLE)


def test_two_pass_standardization_reads_twice_writes_once():
    numel = 10**9 // 2  # 1 GB of BF16
    c = f.two_pass_standardization(numel)
    assert (c.bytes_read, c.bytes_written, c.kernels) == (2 * 10**9, 10**9, 2)
    assert c.flops == 5 * numel  # sum x, sum x^2 (3); subtract, scale (2)


def test_standardization_traffic_eager_against_two_pass():
    numel = 10**9 // 2
    full = elementwise(numel, inputs=1)
    mean = elementwise(numel, inputs=1, outputs=0)
    scalar = elementwise(1)
    eager = mean + full + full + mean + scalar + scalar + full  # 7 kernels
    s = f.standardization_traffic(eager, numel, H100)
    # 5 reads and 3 writes of 1 GB, plus two scalar kernels of 2 + 2 bytes: 8e9 + 8 bytes
    assert (s["std_tensor_gb"], s["std_kernels"], s["std_reads"], s["std_writes"]) == (1, 7, 5, 3)
    assert s["std_total_gb"] == approx(8.000000008)
    assert s["std_h100_ms"] == approx((8e9 + 8) / H100_BW * 1e3)  # 2.39 ms
    assert (s["ans_q3_gb"], s["ans_q3_kernels"]) == (3.0, 2)
    assert s["ans_q3_ms"] == approx(3e9 / H100_BW * 1e3)  # 0.896 ms
    assert s["ans_q3_ratio"] == approx((8e9 + 8) / 3e9)


def test_traffic_answers_on_h100():
    a = f.traffic_answers(N, H100, wide="fp32", params=7 * 10**9)
    assert a["ans_q1_bytes"] == 6  # in place: read x, read y, write x
    assert (a["ans_q2_bytes_per_elem"], a["ans_q2_ratio"]) == (12, 2.0)
    assert a["ans_q2_mb"] == approx(12 * N / 1e6)  # 201.3 MB
    assert a["ans_q2_us"] == approx(12 * N / H100_BW * 1e6)  # 60.1 us
    ridge = H100_VEC_FP32 / H100_BW  # 20 FLOP/byte
    assert a["h100_vec_fp32_tflops"] == approx(67.0)
    assert (a["ans_q4_i"], a["ans_q4_ridge"]) == (approx(1 / 12), approx(ridge))
    assert a["ans_q4_left"] == approx(ridge * 12)  # 240
    assert (a["ans_q4_flops"], a["ans_q4_slots"]) == (approx(12 * ridge), approx(6 * ridge))
    assert a["ans_q5_gb"] == approx(14.0)  # 7e9 x 2 bytes
    assert a["ans_q5_ms"] == approx(14e9 / H100_BW * 1e3)  # 4.18 ms


# --------------------------------------------------------------------------------------------
# Arithmetic intensity


def test_intensity_gap_add_and_square_gemm():
    g = f.intensity_gap(add(N), gemm(4096, 4096, 4096))
    assert (g["i_add"], g["i_add_inv"]) == (approx(1 / 6), approx(6))
    assert g["i_gemm4096"] == approx(2 * 4096 / (3 * 2))  # 2n/(3s) = 1365.3
    assert g["i_gemm_over_add"] == approx(8192)


def test_fusion_figures_relu_of_a_scaled_sum():
    separate = elementwise(N, inputs=2) + elementwise(N) + relu(N)
    fused = elementwise(N, inputs=2, outputs=1, flops_per_element=3)
    r = f.fusion_figures(separate, fused, N, H100)
    # x + y: 6 bytes; 0.5 * z1: 4; relu: 4 -> 14 bytes; fused: read x, y, write v -> 6
    assert (r["fuse_sep_bpe"], r["fuse_fused_bpe"]) == (14, 6)
    assert (r["fuse_sep_i"], r["fuse_fused_i"]) == (approx(3 / 14), approx(3 / 6))
    assert r["fuse_ratio"] == approx(14 / 6)
    assert (r["fuse_t_mib"], r["l2_mib"]) == (32.0, 50.0)  # 2 x 2^24 bytes; 50 MiB L2


def test_adamw_launch_figures_one_billion_fp32_parameters():
    r = f.adamw_launch_figures(adamw(10**9, "loop"), adamw(10**9, "fused"), 10**9)
    # loop, 4 bytes a value: param 8, lerp 12, mul 8, addcmul 12, sqrt 8, div 8, add 8,
    # addcdiv 16 = 80 bytes and 14 FLOPs a parameter; fused: read 4 values, write 3 = 28 bytes
    assert (r["adamw_loop_i"], r["adamw_fused_i"]) == (approx(14 / 80), approx(14 / 28))
    assert r["adamw_ratio"] == approx(80 / 28) and r["adamw_loop_kernels"] == 8
    # PyTorch MultiTensorApply.cuh: chunks of 65536; 320 blocks a launch (2240 under CUDA 13)
    chunks = -(-(10**9) // 65536)  # 15,259
    assert (r["adamw_max_blocks"], r["adamw_max_blocks_cuda13"]) == (320, 2240)
    assert r["adamw_fused_kernels"] == -(-chunks // 320) == 48
    assert r["adamw_fused_kernels_cuda13"] == -(-chunks // 2240) == 7


def test_tiling_figures_square_4096():
    tiled = {t: tiled_intensity(4096, t) for t in (1, 128, 4096)}
    r = f.tiling_figures(tiled, 4096, H100)
    assert r["tile1_i"] == approx(8192 / (2 * 8193))  # 0.49994
    assert r["tile128_i"] == approx(1048576 / 16640)  # 63.0
    assert r["tilen_i"] == approx(8192 / 6)  # t = n: the compulsory 2n/(3s)
    assert r["tile_span"] == approx(2731)  # (2n + 1) / 3
    assert r["tile128_a_reads"] == 32 and r["acc128_kib"] == 64.0  # 128^2 x 4 bytes
    assert r["ridge_h100_bf16"] == approx(H100_BF16 / H100_BW)  # 295.3
    assert (r["smem_kib"], r["rf_kib"], r["l1smem_kib"]) == (228.0, 256.0, 256.0)


def test_tiling_figure_draws_the_curve_and_both_lines():
    from matplotlib import pyplot as plt

    tiles = [2**p for p in range(13)]
    fig = f.tiling_figure({t: tiled_intensity(4096, t) for t in tiles}, 4096, H100)
    ax = fig.axes[0]
    curve, ref, ridge = ax.get_lines()[:3]
    assert list(curve.get_xdata()) == tiles
    assert list(curve.get_ydata()) == approx([tiled_intensity(4096, t) for t in tiles])
    assert ref.get_ydata()[0] == approx(8192 / 6)  # 2n/(3s)
    assert ridge.get_ydata()[0] == approx(H100_BF16 / H100_BW)
    assert ax.get_legend_handles_labels()[1] == [
        "分块：每个分块各自重读条带",
        "必需流量：每个输入只读一次，2n/(3s)",
        "H100 SXM 矩阵单元 BF16 的 ridge point",
    ]
    assert ax.get_xlabel() == "分块边长 t（n = 4096，BF16）"
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(t) for t in tiles[::2]]
    plt.close(fig)


def test_intensity_answers_on_h100():
    separate = elementwise(N, inputs=2) + elementwise(N, inputs=2) + relu(N)
    fused = elementwise(N, inputs=3, outputs=1, flops_per_element=3)
    tiled = {t: tiled_intensity(4096, t) for t in (2**p for p in range(13))}
    a = f.intensity_answers(separate, fused, N, tiled, adamw(10**9), H100, bench_numel=2**24)
    assert (a["ans_q1_add_fp32_bytes"], a["ans_q1_add_fp32"]) == (12, approx(1 / 12))
    assert (a["ans_q1_relu_bytes"], a["ans_q1_relu_bf16"]) == (4, 0.25)
    # x*y: 6, +z: 6, relu: 4 -> 16 bytes; fused reads x, y, z and writes v -> 8
    assert (a["ans_q2_sep_bpe"], a["ans_q2_fused_bpe"]) == (16, 8)
    assert (a["ans_q2_sep_i"], a["ans_q2_fused_i"]) == (3 / 16, 3 / 8)
    # I(512) = 4194304 / 17408 = 241 < 295.3 <= I(1024) = 8388608 / 18432 = 455
    assert (a["ans_q3_tile"], a["ans_q3_acc_mib"]) == (1024, 4.0)
    assert a["ans_q3_i"] == approx(8388608 / 18432)
    assert a["ans_q4_gb"] == approx(28.0) and a["ans_q4_ms"] == approx(28e9 / H100_BW * 1e3)
    assert a["h100_bw_si"] == "3.35 TB/s"
    assert a["ans_q5_add_us"] == approx(6 * 2**24 / H100_BW * 1e6)  # 30.0 us
    assert a["ans_q5_relu_us"] == approx(4 * 2**24 / H100_BW * 1e6)  # 20.0 us
    assert a["ans_q5_i_ratio"] == approx(1.5)  # 1/4 over 1/6


# --------------------------------------------------------------------------------------------
# The roofline


def test_ridge_figures_example_device():
    assert f.ridge_figures(100e12, 1e12) == {
        "ex_peak_si": "100 TFLOP/s",
        "ex_bw_si": "1 TB/s",
        "ex_ridge": 100.0,
    }


def test_placement_figures_on_the_example_device():
    ops = [("add", add(N)), ("AdamW (loop)", adamw(10**9, "loop"))]
    ops += [(f"GEMM {n}", gemm(n, n, n)) for n in (256, 1024, 4096)]
    p = f.placement_figures(cost_table(ops, EXAMPLE, "bf16"), 100e12)
    # 1 TB/s x 1/6 FLOP/byte: 0.167 TFLOP/s, 0.167 % of 100 TFLOP/s
    assert (p["add_att_tflops"], p["add_att_pct"]) == (approx(1 / 6), approx(1 / 6))
    assert (p["g256_i"], p["g1024_i"]) == (approx(512 / 6), approx(2048 / 6))
    assert p["adamw_flops_sci"] == "1.40 × 10¹⁰"  # 14 FLOPs x 1e9 parameters
    assert p["g1024_flops_sci"] == "2.15 × 10⁹"  # 2 x 1024^3
    assert p["adamw_loop_att"] == approx(14 / 80)  # 1 TB/s x 14/80
    assert (p["bytes_per_flop_add"], p["bytes_per_flop_g4096"]) == (approx(6), approx(6 / 8192))


def test_unit_roofs_h100():
    r = f.unit_roofs(H100)
    assert (r["h100_matrix"], r["h100_vector"]) == (approx(989.4), approx(133.8))
    assert r["h100_special"] == approx(H100_SPECIAL / 1e12)  # 4.18
    assert r["h100_mat_over_vec"] == approx(H100_BF16 / H100_VEC_BF16)  # 7.39
    assert r["h100_sfu"] == 16 and isinstance(r["h100_sfu"], int)
    assert r["h100_l2_mib"] == 50.0
    assert r["h100_vec_ridge"] == approx(H100_VEC_BF16 / H100_BW)  # 39.9
    assert r["p_vector_ops"] == approx(66.9) and "per_clock_sentence" in r


def test_exp_limit_figures_h100():
    scores = 32 * 4096 * 4096
    softmax_like = Cost(scores, 2 * scores, 2 * scores, special_flops=scores)  # one exp each
    flash = Cost(4 * 64 * scores + scores, 0, 0, special_flops=scores)  # 4d matrix FLOPs + exp
    r = f.exp_limit_figures(softmax_like, flash, H100, head_dim=64, compare_head_dim=128)
    assert r["sm_hbm_over_special"] == approx(4 * H100_SPECIAL / H100_BW)  # 4.99
    per_clock = H100_BF16 / (132 * 1.83e9)  # 4096 matrix FLOPs per SM per clock
    assert r["h100_mat_per_clock"] == approx(per_clock)
    assert r["h100_mat_over_sfu"] == approx(per_clock / 16)  # 256
    assert r["fa_special_over_matrix"] == approx((1 / 16) / (4 * 64 / per_clock))  # 1.00
    assert r["fa_flops_per_score_64"] == 256
    assert r["fa_ratio_128"] == approx(per_clock / 16 / 512)  # FA3 section 3.1: about 50 %


def test_flash_reread_figures():
    flash = Cost(1, 67108864, 0, reread_bytes=369098752, reread_footprint=2**20)
    r = f.flash_reread_figures(flash)
    assert (r["fa_kv_mib"], r["fa_reread_gb"], r["fa_hbm_gb"]) == (1.0, 0.369098752, 0.067108864)
    # FlashAttention-3 hopper/tile_size.h, BF16 forward without mask: 192, 128, 128 rows
    assert (r["fa3_bm_64"], r["fa3_bm_128"], r["fa3_bm_256"]) == (192, 128, 128)


def test_roofline_answers():
    unit = Cost(10**9, 10**9, 0, vector_flops=10**9)  # 1 FLOP/byte, named RMSNorm
    ops = [("add", add(N)), ("RMSNorm", unit), ("GEMM 4096", gemm(4096, 4096, 4096))]
    rows = cost_table(ops, EXAMPLE, "bf16")
    a100, h200 = hardware("a100-sxm"), hardware("h200-sxm")
    a = f.roofline_answers(rows, EXAMPLE, H100, a100, h200, n=512, sizes=(256, 1024))
    i512 = 2 * 512 / 6  # 170.7 FLOP/byte
    assert a["ans_q1_i"] == approx(i512)
    assert a["ans_q1_ridge_a100"] == approx(A100_BF16 / A100_BW)  # 153.0
    assert a["ans_q1_ridge_h100"] == approx(H100_BF16 / H100_BW)  # 295.3
    # ridge 100 and 153 lie below 170.7, 295.3 above it
    assert (a["ans_q1_bound_example"], a["ans_q1_bound_a100"]) == ("compute", "compute")
    assert a["ans_q1_bound_h100"] == "memory"
    assert (a["a100_bf16_tflops"], a["a100_bw_si"], a["h200_bw_si"]) == (
        approx(312.0),
        "2.039 TB/s",
        "4.8 TB/s",
    )
    assert a["ans_q2_i_half"] == 50.0 and a["ans_q2_rms_pct"] == approx(1.0)  # 1 TB/s x 1
    assert a["ans_q3_add_h100"] == approx(H100_BW / 6 / 1e12)  # 0.558, below the vector roof
    assert a["ans_q3_add_h200"] == approx(H200_BW / 6 / 1e12)  # 0.8
    assert a["ans_q3_add_ratio"] == approx(H200_BW / H100_BW) and a["ans_q3_gemm_ratio"] == 1.0
    assert (a["h100_bf16_tflops"], a["h100_bw_si"]) == (approx(989.4), "3.35 TB/s")
    assert a["ans_q4_tflops"] == approx(H100_BW * i512 / 1e12)  # 571.7
    assert a["ans_q4_pct"] == approx(H100_BW * i512 / H100_BF16 * 100)  # 57.8
    assert a["ans_q5_att_256"] == approx(H100_BW * 512 / 6 / 1e12)  # 285.9
    assert a["ans_q5_att_1024"] == approx(989.4)  # 341.3 x 3.35 > 989.4: the compute roof
    assert a["ans_q5_ncross"] == approx(3 * 2 * (H100_BF16 / H100_BW) / 2)  # 886
