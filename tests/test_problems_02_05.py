"""Chapters 2-5: the problems' answers and key prose numbers, as the built book shows them,
recomputed by hand arithmetic (datasheet figures written out, not read from the package)."""

import math
import re

import pytest
from conftest import BUILD

pytestmark = pytest.mark.site  # reads the built book's glued values

# H100 SXM: NVIDIA's dense Tensor Core figures (whitepaper: BF16 989.4, FP8 1978.9 TFLOP/s,
# rated at 1830 MHz), as printed.
H100_BF16 = 989.4e12  # FLOP/s, dense
H100_FP8 = 1978.9e12  # FLOP/s, dense
H100_FP32 = 67e12  # FLOP/s, CUDA cores: no FP32 Tensor Core; an FMA counts 2 FLOP
H100_VEC_BF16 = 133.8e12  # FLOP/s, non-tensor BF16 as packed pairs (whitepaper)
H100_SPECIAL = 16 * 132 * 1.98e9  # evaluations/s: 16 per clock per SM
H100_L2 = 50 * 2**20  # byte
H100_BW = 3.35e12  # byte/s
H200_BW = 4.8e12  # byte/s, same compute as H100
A100_BF16 = 312e12  # FLOP/s, dense
A100_TF32 = 156e12  # FLOP/s, dense
A100_BW = 2.039e12  # byte/s
RIDGE_H100 = H100_BF16 / H100_BW  # about 295.3 FLOP/byte
RIDGE_A100 = A100_BF16 / A100_BW  # about 153.0 FLOP/byte

approx = pytest.approx


def square_intensity(n, s):
    return 2 * n**3 / (s * 3 * n * n)  # 2n / (3s)


def gemm_intensity(m, k, n, s):
    return 2 * m * k * n / (s * (m * k + k * n + m * n))


# --------------------------------------------------------------------------
# Chapter 2: memory traffic

PAGE_02 = "chapters/02-memory-traffic"


def test_chapter_2_prose_numbers(glued):
    g = glued(PAGE_02)
    assert (g["add_read_per_elem"], g["add_write_per_elem"], g["add_bytes_per_elem"]) == (4, 2, 6)
    numel = 4096 * 4096
    assert g["act_bytes_si"] == "100.7 MB"  # 6 * 16,777,216 = 100,663,296 bytes
    assert g["add_h100_tmem_us"] == approx(6 * numel / H100_BW * 1e6)  # about 30.05 us
    assert g["h100_vec_tflops"] == 133.8  # BF16 data: packed pairs
    # an add is one lane slot, not an FMA: half the packed peak, 66.9e12 adds per second
    adds = H100_VEC_BF16 / 2
    assert g["add_h100_tcomp_us"] == approx(numel / adds * 1e6)  # about 0.251 us
    assert g["add_h100_ratio"] == approx(6 * adds / H100_BW)  # 120
    # no overlap: the two times added, 30.05 + 0.25 us
    assert g["add_h100_sum_us"] == approx((6 * numel / H100_BW + numel / adds) * 1e6)
    # The 1 GB standardization, 7 eager kernels: mean, sub, mul, mean, + eps, sqrt, div.
    # 5 reads and 3 writes of a 1 GB tensor, plus 2 scalar kernels of 2 + 2 bytes each.
    assert g["std_kernels"] == 7
    assert (g["std_reads"], g["std_writes"]) == (5, 3)
    assert g["std_total_gb"] == approx((8e9 + 8) / 1e9)
    assert g["std_h100_ms"] == approx((8e9 + 8) / H100_BW * 1e3)  # about 2.39 ms
    assert g["h100_capacity_mib"] == 81559  # nvidia-smi's FB memory total
    assert g["h100_capacity_bin"] == "79.65 GiB"  # 81559 / 1024 = 79.647
    assert (g["h100_l2_mib"], g["h100_sms"]) == ("50 MiB", 132)
    # 256 KiB L1 and shared memory together, at most 228 KiB of it shared; 256 KiB registers.
    assert (g["h100_l1smem_kib"], g["h100_smem_kib"], g["h100_rf_kib"]) == (
        "256 KiB",
        "228 KiB",
        "256 KiB",
    )
    # What fits in the 50 MiB L2: a 4096 x 4096 BF16 activation, a 1024 GEMM's three matrices.
    assert g["act_mib"] == 4096 * 4096 * 2 / 2**20  # 32
    assert g["g1024_mib"] == 3 * 1024 * 1024 * 2 / 2**20  # 6


def test_chapter_2_answers(glued):
    g = glued(PAGE_02)
    assert g["ans_q1_bytes"] == 2 + 2 + 2  # read x, read y, write x
    assert g["ans_q2_bytes_per_elem"] == 3 * 4
    assert g["ans_q2_mb"] == approx(12 * 4096 * 4096 / 1e6)  # 201.3 MB
    assert g["ans_q2_us"] == approx(12 * 4096 * 4096 / H100_BW * 1e6)  # about 60.1 us
    assert g["ans_q2_ratio"] == 2.0
    assert g["ans_q3_gb"] == 3.0  # read x twice, write y once: the floor the prose compares with
    assert g["ans_q3_ms"] == approx(3e9 / H100_BW * 1e3)  # about 0.896 ms
    assert g["ans_q3_ratio"] == approx((8e9 + 8) / 3e9)  # about 2.67
    assert g["ans_q3_kernels"] == 2
    # FP32 add against the CUDA-core roof: 12 bytes and 1 FLOP per element; the vector ridge
    # is 67 / 3.35 = 20 FLOP/byte, 240 times to the right of 1/12.
    assert g["ans_q4_i"] == approx(1 / 12)
    assert g["ans_q4_ridge"] == approx(H100_FP32 / H100_BW, rel=5e-3)  # 20.0
    assert g["h100_vec_fp32_tflops"] == approx(H100_FP32 / 1e12, rel=5e-3)  # the problem's input
    assert g["ans_q4_left"] == approx(12 * H100_FP32 / H100_BW, rel=5e-3)  # 240
    # 12 bytes x 20 FLOP/byte = 240 FLOP per element, 120 FMAs of 2 FLOP each
    assert g["ans_q4_flops"] == approx(12 * 20, rel=5e-3)
    assert round(g["ans_q4_slots"]) == 12 * 20 // 2 == 120
    # the estimate: 7e9 BF16 weights read once, 14 GB over 3.35 TB/s = 4.179 ms
    assert g["ans_q5_gb"] == 14.0
    assert g["ans_q5_ms"] == approx(14e9 / H100_BW * 1e3) and round(g["ans_q5_ms"], 2) == 4.18


# --------------------------------------------------------------------------
# Chapter 3: arithmetic intensity

PAGE_03 = "chapters/03-arithmetic-intensity"


def tiled_intensity(n, tile, s):
    return 2 * n * tile / (s * (2 * n + tile))


def test_chapter_3_prose_numbers(glued):
    g = glued(PAGE_03)
    assert g["i_add"] == approx(1 / 6)
    assert round(g["i_add"], 2) == 0.17
    assert round(g["i_gemm4096"], 1) == 1365.3
    assert g["i_gemm_over_add"] == approx(1365.333 * 6, rel=1e-5)
    # x + y: 2 reads, 1 write; 0.5 * z1 and relu: 1 + 1 each; 7 tensors of 2 bytes. Fused: 3.
    assert (g["fuse_sep_bpe"], g["fuse_fused_bpe"]) == (14, 6)
    assert g["fuse_sep_i"] == approx(3 / 14) and g["fuse_fused_i"] == approx(3 / 6)
    assert g["fuse_ratio"] == approx(14 / 6)
    # AdamW, FP32: loop moves 80 bytes per parameter in 8 kernels, fused 28; 14 FLOPs each.
    assert g["adamw_loop_i"] == approx(14 / 80) and g["adamw_fused_i"] == approx(14 / 28)
    assert g["adamw_ratio"] == approx(80 / 28) and g["adamw_loop_kernels"] == 8
    # Fused: 1e9 / 65,536 = 15,259 chunks, 320 per multi_tensor_apply launch: ceil(47.7) = 48.
    assert g["adamw_fused_kernels"] == 48
    # A CUDA 13 build carries 2240 blocks per launch (MultiTensorApply.cuh): ceil(15259 / 2240) = 7.
    assert (g["adamw_max_blocks"], g["adamw_max_blocks_cuda13"]) == (320, 2240)
    assert g["adamw_fused_kernels_cuda13"] == math.ceil(math.ceil(1e9 / 65536) / 2240) == 7
    # Each intermediate of the fusion example, 4096 x 4096 BF16, is 32 MiB: inside the 50 MiB L2.
    assert g["fuse_t_mib"] == 4096 * 4096 * 2 / 2**20 == 32
    assert g["l2_mib"] == H100_L2 / 2**20
    assert g["tile1_i"] == approx(tiled_intensity(4096, 1, 2))  # about 1/s
    assert g["tile128_i"] == approx(tiled_intensity(4096, 128, 2))  # about 63.0
    assert g["tilen_i"] == approx(square_intensity(4096, 2))
    assert g["tile128_a_reads"] == 4096 // 128
    assert g["acc128_kib"] == 128 * 128 * 4 / 1024
    assert (g["rf_kib"], g["l1smem_kib"], g["smem_kib"]) == (256, 256, 228)
    assert g["ridge_h100_bf16"] == approx(RIDGE_H100)


def test_chapter_3_answers(glued):
    g = glued(PAGE_03)
    assert g["ans_q1_add_fp32_bytes"] == 12 and g["ans_q1_add_fp32"] == approx(1 / 12)
    assert g["ans_q1_relu_bytes"] == 4 and g["ans_q1_relu_bf16"] == approx(1 / 4)
    # x*y and +z each read 2 and write 1 tensor, relu reads 1 and writes 1: 8 tensors.
    assert (g["ans_q2_sep_bpe"], g["ans_q2_fused_bpe"]) == (16, 8)
    assert g["ans_q2_sep_i"] == approx(3 / 16) and g["ans_q2_fused_i"] == approx(3 / 8)
    # 2nT / (s (2n + T)) >= ridge  <=>  T >= 2 n s R / (2n - s R), about 636.
    t_min = 2 * 4096 * 2 * RIDGE_H100 / (2 * 4096 - 2 * RIDGE_H100)
    assert 512 < t_min <= 1024
    assert g["ans_q3_tile"] == 1024
    assert g["ans_q3_i"] == approx(tiled_intensity(4096, 1024, 2))  # about 455
    assert g["ans_q3_acc_mib"] == 1024 * 1024 * 4 / 2**20
    # fused AdamW, FP32: read param, grad, m, v and write param, m, v: 7 x 4 = 28 bytes a
    # parameter; 1e9 parameters are 28 GB, over 3.35 TB/s 8.358 ms
    assert g["ans_q4_gb"] == 28.0
    assert g["ans_q4_ms"] == approx(28e9 / H100_BW * 1e3) and round(g["ans_q4_ms"], 2) == 8.36
    assert g["h100_bw_si"] == "3.35 TB/s"
    # BF16 add (6 bytes) and relu (4 bytes) over 2^24 elements at 3.35 TB/s: 30.05 and 20.03 us;
    # one FLOP each, so FLOP/s of the two at the same bandwidth stand as 6 / 4
    assert g["ans_q5_add_us"] == approx(6 * 2**24 / H100_BW * 1e6)
    assert g["ans_q5_relu_us"] == approx(4 * 2**24 / H100_BW * 1e6)
    assert g["ans_q5_i_ratio"] == approx(6 / 4)


# --------------------------------------------------------------------------
# Chapter 4: roofline

PAGE_04 = "chapters/04-roofline"


def test_chapter_4_prose_numbers(glued):
    g = glued(PAGE_04)
    assert g["ex_ridge"] == 100.0  # 100 TFLOP/s / 1 TB/s
    assert (g["ex_peak_si"], g["ex_bw_si"]) == ("100 TFLOP/s", "1 TB/s")
    assert g["add_att_tflops"] == approx(1e12 / 6 / 1e12)  # B * I = 1 TB/s * 1/6
    assert g["add_att_pct"] == approx(100 / 6 / 100)
    assert g["g256_i"] == approx(2 * 256 / 6) and g["g256_i"] < 100
    assert g["g1024_i"] == approx(2 * 1024 / 6) and g["g1024_i"] > 100
    assert g["adamw_flops_sci"] == "1.40 × 10¹⁰"  # 14 FLOPs x 1e9 parameters
    assert g["g1024_flops_sci"] == "2.15 × 10⁹"  # 2 * 1024**3
    assert g["adamw_loop_att"] == approx(14 / 80)
    assert g["bytes_per_flop_add"] == approx(6.0)
    assert g["bytes_per_flop_g4096"] == approx(3 / 4096)  # 3s / (2n) with s = 2


def _table_rows(html: str, table_id: str) -> dict[str, list[str]]:
    """The body rows of one table of a built page, by their first cell."""
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    rows = {}
    for row in body.split("</tr>")[:-1]:
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in row.split("</td>")[:-1]]
        rows[cells[0]] = cells[1:]
    return rows


def test_chapter_4_table():
    page = BUILD / "html" / f"{PAGE_04}.html"
    if not page.exists():
        pytest.fail(f"{page} is missing: build the book first (make html)")
    rows = _table_rows(page.read_text("utf-8"), "tbl-04-ops")
    # columns: FLOPs, bytes, I, attainable TFLOP/s, the resource that binds (example device:
    # one peak for every unit, "计算", and one bandwidth, "HBM"; ridge 100)
    assert list(rows) == [
        "add",
        "RMSNorm",
        "AdamW (loop)",
        "AdamW (fused)",
        "GEMM 64",
        "GEMM 256",
        "GEMM 1024",
        "GEMM 4096",
    ]
    assert rows["add"][2:] == ["0.167", "0.167", "HBM"]  # 1/6, 1 TB/s * 1/6
    assert rows["AdamW (loop)"][2:] == ["0.175", "0.175", "HBM"]  # 14 / 80
    assert rows["AdamW (fused)"][2:] == ["0.5", "0.5", "HBM"]  # 14 / 28
    assert rows["GEMM 256"][2:] == ["85.3", "85.3", "HBM"]  # 512 / 6
    assert rows["GEMM 1024"][2:] == ["341", "100", "计算"]  # 2048 / 6
    assert rows["GEMM 4096"][2:] == ["1365", "100", "计算"]  # 8192 / 6
    assert rows["GEMM 4096"][0] == "137.4 GFLOP"  # 2 * 4096**3


def test_chapter_4_answers(glued):
    g = glued(PAGE_04)
    i512 = 2 * 512 / 6  # about 170.7
    assert g["ans_q1_i"] == approx(i512)
    assert g["ans_q1_ridge_a100"] == approx(RIDGE_A100)
    assert g["ans_q1_ridge_h100"] == approx(RIDGE_H100)
    assert g["ans_q1_bound_example"] == "compute"  # 170.7 > 100
    assert g["ans_q1_bound_a100"] == "compute"  # 170.7 > 153.0
    assert g["ans_q1_bound_h100"] == "memory"  # 170.7 < 319.6
    assert g["ans_q2_i_half"] == 50.0
    assert g["ans_q2_rms_pct"] == approx(1.0, abs=1e-3)  # I = (4 rd + 3 r) / (2 s rd + s d) ~ 1
    add_h100 = H100_BW / 6 / 1e12  # memory-bound: B * I
    add_h200 = H200_BW / 6 / 1e12
    assert g["ans_q3_add_h100"] == approx(add_h100)  # about 0.558 TFLOP/s
    assert g["ans_q3_add_h200"] == approx(add_h200)  # 0.8 TFLOP/s
    assert g["ans_q3_add_ratio"] == approx(4.8 / 3.35)
    assert g["ans_q3_gemm_ratio"] == 1.0
    assert g["h100_bf16_tflops"] == 989.4 and g["h100_bw_si"] == "3.35 TB/s"
    # the problems' inputs: A100 SXM dense BF16 312 TFLOP/s, 2.039 TB/s; H200 SXM 4.8 TB/s
    assert g["a100_bf16_tflops"] == A100_BF16 / 1e12 and g["a100_bw_si"] == "2.039 TB/s"
    assert g["h200_bw_si"] == "4.8 TB/s"
    # the estimate: n = 512 lies left of the ridge, 3.35e12 x 1024/6 = 571.7 TFLOP/s, 57.8 %
    assert g["ans_q4_tflops"] == approx(H100_BW * i512 / 1e12)
    assert g["ans_q4_pct"] == approx(H100_BW * i512 / H100_BF16 * 100)
    assert round(g["ans_q4_pct"], 1) == 57.8
    # the sweep: 256 is memory-bound at 3.35e12 x 512/6 = 285.9 TFLOP/s; from 1024 the peak;
    # the crossover of 2n/(3s) with the ridge is n* = 3 x 2 x 295.34 / 2 = 886
    assert g["ans_q5_att_256"] == approx(H100_BW * 2 * 256 / 6 / 1e12)
    assert g["ans_q5_att_1024"] == approx(H100_BF16 / 1e12)
    assert g["ans_q5_ncross"] == approx(3 * RIDGE_H100) and 512 < g["ans_q5_ncross"] < 1024


def test_chapter_4_hierarchical_roofline(glued):
    g = glued(PAGE_04)
    vector, special = H100_VEC_BF16, H100_SPECIAL
    assert (g["h100_matrix"], g["h100_vector"]) == (approx(H100_BF16 / 1e12), 133.8)
    assert g["h100_special"] == approx(special / 1e12)  # 4.18 T/s
    assert g["h100_mat_over_vec"] == approx(H100_BF16 / vector)  # 7.4
    assert g["h100_vec_ridge"] == approx(vector / H100_BW)  # 39.9 FLOP/byte
    assert g["h100_l2_mib"] == 50
    # the score softmax: 4 bytes per BF16 score at 3.35 TB/s against one exp at 4.18 T/s (a
    # minimal kernel multiplies by the row sum's reciprocal)
    assert g["sm_hbm_over_special"] == approx(4 / H100_BW * special)  # 5.0
    # FlashAttention, d = 64: one exp per score against 4 * 64 matrix FLOPs per score. Per SM
    # and clock, both at one clock: 16 exp against 989.4e12 / (132 x 1.83e9) = 4096 dense BF16
    # FLOPs (NVIDIA rates the Tensor Cores at 1830 MHz), so the ratio is (1 / 16) / (256 / 4096)
    per_clock = g["h100_mat_per_clock"]
    assert per_clock == approx(H100_BF16 / (132 * 1.83e9)) == approx(4096, rel=1e-4)
    assert g["fa_special_over_matrix"] == approx(per_clock / (16 * 4 * 64))
    assert g["h100_mat_over_sfu"] == approx(per_clock / 16)
    assert g["fa_ratio_128"] == approx(per_clock / (16 * 4 * 128))
    assert g["fa_flops_per_score_64"] == 256
    # FA3's tile at d = 64, causal: 192 query rows, 128-key blocks (hopper/tile_size.h); 32 heads
    # of 4096 keys, K and V 2 * 4096 * 64 * 2 bytes = 1 MiB per head. Query block m (of 22) needs
    # min(4096, 192 m) keys, loaded in whole blocks of 128: sum over m of ceil(192 m / 128) * 128,
    # capped at 4096, minus the compulsory 4096.
    assert (g["fa3_bm_64"], g["fa3_bm_128"], g["fa3_bm_256"]) == (192, 128, 128)
    keys = sum(min(4096, math.ceil(192 * m / 128) * 128) for m in range(1, 23))
    assert g["fa_reread_gb"] == approx(32 * 2 * 64 * 2 * (keys - 4096) / 1e9)
    assert g["fa_kv_mib"] == 1
    assert g["fa_hbm_gb"] == approx(32 * 4 * 4096 * 64 * 2 / 1e9)
    # FlashAttention-3's shape (16k, d = 128, 16 heads): the matrix units bind, so in the
    # paper's 4 N^2 d h convention the bound allows the matrix peak, above its 648 (d = 128)
    # and its 740 and 840 (d = 256)
    assert g["fa3_resource"] == "受矩阵单元限制"
    assert g["fa3_tflops"] == approx(H100_BF16 / 1e12)
    assert g["fa3_tflops_256"] > 840 and g["fa3_tflops_256c"] > 642
    # all three configurations reach the matrix peak (989.4, H100 whitepaper): said once
    assert g["fa3_bounds_sentence"].endswith("上限都是 989 TFLOP/s，即矩阵单元的峰值。")
    # Every re-read from HBM, causal d = 256 at 16k (8 heads, FA3's 128 x 80 tile, no cluster):
    # the HBM bytes are 4 N d s per head plus the re-reads, over 3.35 TB/s, against half of
    # 4 N^2 d h FLOPs; that "bound" (about 417 TFLOP/s) is below the 642 measured
    n, d, h = 16384, 256, 8
    kv = sum(min(n, math.ceil(128 * m / 80) * 80) for m in range(1, 129))
    hbm = h * 2 * d * (4 * n + 2 * (kv - n))
    all_hbm = 4 * n * n * d * h / 2 / (hbm / H100_BW) / 1e12
    assert f"head dim 256（causal） 为 {all_hbm:.0f} TFLOP/s" in g["fa3_all_hbm_sentence"]
    assert "head dim 256（causal） 的实测值 642 TFLOP/s" in g["fa3_all_hbm_sentence"]


# --------------------------------------------------------------------------
# Chapter 5: GEMM

PAGE_05 = "chapters/06-gemm"


def m_star(ridge, k, n, s):
    """Solve 2MKN = R s (MK + KN + MN) for M."""
    return ridge * s * k * n / (2 * k * n - ridge * s * (k + n))


def test_chapter_5_prose_numbers(glued):
    g = glued(PAGE_05)
    assert round(g["g4096_i"], 1) == 1365.3  # 8192 / 6
    assert g["g4096_flops_sci"] == "1.37 × 10¹¹"
    assert g["g4096_bytes_si"] == "100.7 MB"  # 2 * 3 * 4096**2
    # Each precision against its own ridge: FP8 1978.9 / 3.35 = 590.7, BF16 989.4 / 3.35 = 295.3,
    # FP32 (CUDA cores) 67 / 3.35 = 20.0 FLOP/byte; n* = 3 s ridge / 2.
    for dtype, s, peak, first in (
        ("fp8", 1, H100_FP8, 1024),
        ("bf16", 2, H100_BF16, 1024),
        ("fp32", 4, H100_FP32, 128),
    ):
        ridge = peak / H100_BW
        assert g[f"ridge_h100_{dtype}"] == approx(ridge)
        n_cross = 3 * s * ridge / 2
        assert g[f"ncross_{dtype}"] == approx(n_cross)
        assert first / 2 < n_cross <= first
        assert g[f"nfirst_{dtype}"] == first
    assert round(g["ncross_bf16"]) == round(g["ncross_fp8"]) == 886  # 3 * 2 * 295.34 / 2
    assert g["ncross_fp32"] == approx(120.0)  # 3 * 4 * 20 / 2
    assert g["ridge_h100_bf16"] == approx(RIDGE_H100)
    assert g["ridge_a100_bf16"] == approx(RIDGE_A100)
    assert g["ncross_a100_bf16"] == approx(3 * 2 * RIDGE_A100 / 2)  # about 459
    # first power of two past A100's BF16 ridge (153.0): 512 / 3 = 170.7, while 256 / 3 = 85.3
    assert square_intensity(256, 2) < RIDGE_A100 <= square_intensity(512, 2)
    assert g["nfirst_a100_bf16"] == 512
    assert g["fp32_tflops"] == approx(67.0)
    assert g["bf16_over_fp32"] == approx(H100_BF16 / H100_FP32)  # about 14.8
    assert g["g1024_mib"] == approx(6.0)  # 3 * 1024**2 * 2 bytes
    assert g["h100_l2_mib"] == approx(H100_L2 / 2**20)  # 50 MiB
    # FP8 A and B with a BF16 C: I = 2n^3 / (n^2 (1 + 1 + 2)) = n / 2, so n* = 2 * 590.7 = 1181
    # and 1024 gives only 512 FLOP/byte; the first power of two past the FP8 ridge is 2048.
    ridge_fp8 = H100_FP8 / H100_BW
    assert g["ncross_fp8_bf16out"] == approx(2 * ridge_fp8)
    assert g["i_fp8_bf16out_first"] == approx(1024 / 2) and 1024 / 2 < ridge_fp8
    assert 2048 / 2 >= ridge_fp8 and g["nfirst_fp8_bf16out"] == 2048


def test_chapter_5_token_crossover(glued):
    g = glued(PAGE_05)
    # K = N = 4096, BF16: I(M) = 4096 M / (2M + 4096), so M* = 4096 R / (4096 - 2R).
    exact = 4096 * RIDGE_H100 / (4096 - 2 * RIDGE_H100)
    # 4096 x 295.34 / (4096 - 590.69) = 345.1
    assert g["mstar_h100"] == approx(exact)
    assert g["mstar_h100_int"] == math.ceil(exact) == 346
    assert gemm_intensity(346, 4096, 4096, 2) >= RIDGE_H100 > gemm_intensity(345, 4096, 4096, 2)
    assert g["mfirst_h100"] == 512
    assert g["mhalf"] == 256 and g["mhalf_i"] == approx(4096 * 256 / (512 + 4096))
    # the tiles figure's M = 256: the whole GEMM's 227.6 FLOP/byte is below the ridge 295.3
    assert g["mhalf_i"] < RIDGE_H100
    assert g["mfirst_i"] == approx(4096 * 512 / (1024 + 4096))  # 409.6
    exact_a100 = 4096 * RIDGE_A100 / (4096 - 2 * RIDGE_A100)
    assert g["mstar_a100"] == approx(exact_a100)  # about 165.4
    assert g["mfirst_a100"] == 256
    assert g["rect_limit"] == 2048.0  # 2KN / (s (K + N))
    assert g["m1_i"] == approx(2 * 4096**2 / (2 * (2 * 4096 + 4096**2)))


def test_chapter_5_answers(glued):
    g = glued(PAGE_05)
    assert g["ans_q1_fp32"] == approx(square_intensity(4096, 4))  # 682.7
    assert g["ans_q1_fp8"] == approx(square_intensity(4096, 1))  # 2730.7
    ridge_tf32 = A100_TF32 / A100_BW  # about 76.5 FLOP/byte
    assert g["a100_bf16_over_tf32"] == 2.0
    assert g["ans_q2_ridge_tf32"] == approx(ridge_tf32)
    assert g["ans_q2_n_tf32"] == approx(3 * 4 * ridge_tf32 / 2)  # FP32 storage, s = 4
    assert g["ans_q2_n_bf16"] == approx(3 * 2 * RIDGE_A100 / 2)  # about 459
    assert g["ans_q2_n_tf32"] == approx(g["ans_q2_n_bf16"])
    i_decode = gemm_intensity(1, 4096, 4096, 2)  # about 1.0
    assert g["ans_q3_i"] == approx(i_decode)
    assert g["ans_q3_tflops"] == approx(H100_BW * i_decode / 1e12)  # about 3.35
    assert g["ans_q3_pct"] == approx(H100_BW * i_decode / H100_BF16 * 100)  # about 0.31 %
    q4 = m_star(RIDGE_H100, 4096, 11008, 2)
    assert g["ans_q4_mstar"] == approx(q4)  # about 358.9
    assert 256 < q4 <= 512
    assert g["ans_q4_pow2"] == 512
    # The estimate (I ~ 2M/s = M in BF16, so M* ~ the ridge) undershoots: I(M) < 2M/s always.
    assert RIDGE_H100 < q4


def test_chapter_5_measure_on_your_gpu(glued):
    g = glued(PAGE_05)
    # A quick CUDA run times square BF16 GEMMs n = 256 ... 4096. Attainable on H100 SXM:
    # min(989.4, 3.35 * n / 3) TFLOP/s: 256 -> 285.9 (28.9 %), 512 -> 571.7 (57.8 %).
    assert (g["ans_q5_n0"], g["ans_q5_n1"], g["ans_q5_nmax"]) == (256, 512, 4096)
    assert g["bf16_tflops"] == approx(989.4)
    for i, n in enumerate((256, 512)):
        att = H100_BW * square_intensity(n, 2)
        assert att < H100_BF16
        assert g[f"ans_q5_att{i}"] == approx(att / 1e12)
        assert g[f"ans_q5_pct{i}"] == approx(100 * att / H100_BF16)
    assert g["ans_q5_att0"] == approx(285.87, rel=1e-4)
    # 2 * 256**3 FLOP at 285.87 TFLOP/s = 6 * 256**2 / 3.35e12 s = 0.117 us
    assert g["ans_q5_us0"] == approx(6 * 256**2 / H100_BW * 1e6)
