"""Chapter 5 (the GPU): the problems' answers and the prose's numbers, as the built book shows
them, recomputed by hand from the vendors' figures (written out here, not read from the package).

NVIDIA H100 whitepaper / "Hopper Architecture In-Depth": H100 SXM5 has 132 SMs, 128 FP32 CUDA
cores and 4 Tensor Cores per SM (16896 and 528 per GPU), 50 MB L2, 256 KB register file and
256 KB combined L1/shared memory per SM, up to 228 KB of it shared memory. CUDA C++ Programming
Guide (compute capability 9.0): 4 warp schedulers per SM, warp size 32, 1024 threads per block.
Hopper tuning guide: 64 resident warps per SM, 64K 32-bit registers per SM. Best Practices Guide
10.2.1: a warp's accesses coalesce into 32-byte transactions. Datasheet: 3.35 TB/s HBM3.
"""

import pytest

pytestmark = pytest.mark.site  # reads the built book's glued values

PAGE = "chapters/05-gpu"
SMS = 132
H100_BF16 = 989.4e12  # FLOP/s, dense, whitepaper
H100_FP8 = 1978.9e12  # FLOP/s, dense
H100_VEC_BF16 = 133.8e12  # FLOP/s, non-tensor
H100_VEC_FP32 = 67e12  # FLOP/s, datasheet
H100_BW = 3.35e12  # byte/s
approx = pytest.approx


def test_chapter_5_hardware_figures(glued):
    g = glued(PAGE)
    assert (g["sms"], g["warp"], g["parts"], g["max_warps"], g["block_max"]) == (
        132,
        32,
        4,
        64,
        1024,
    )
    assert (g["lanes"], g["lanes_part"]) == (128, 32)  # 128 per SM over 4 sub-partitions
    assert (g["l2"], g["hbm_bw"], g["link_bw"]) == ("50 MiB", "3.35 TB/s", "450 GB/s")
    assert g["hbm_cap"] == "79.6 GiB"  # 81559 MiB, the driver's total
    assert (g["regs_sm"], g["regs_part"], g["l1"], g["smem"]) == (
        "256 KiB",
        "64 KiB",
        "256 KiB",
        "228 KiB",
    )
    # (256 + 256) KiB x 132 = 67584 KiB = 66 MiB on chip; 81559 MiB / 66 MiB = 1235.7
    assert g["onchip"] == "66 MiB"
    assert g["hbm_over_onchip"] == approx(81559 / 66)


def test_chapter_5_unit_peaks(glued):
    g = glued(PAGE)
    assert g["bf16_tflops"] == approx(989.4)
    assert (g["vec_bf16"], g["vec_fp32"]) == (
        approx(H100_VEC_BF16 / 1e12),
        approx(H100_VEC_FP32 / 1e12),
    )
    assert g["special_t"] == approx(16 * SMS * 1.98e9 / 1e12)  # 4.18 T evaluations/s
    assert g["matrix_over_vector"] == approx(H100_BF16 / H100_VEC_BF16)  # about 7.4
    assert round(g["matrix_over_vector"]) == 7
    # 989.4e12 / (132 x 1.83e9) = 4095.9 FLOP per clock per SM, 1024 per Tensor Core
    assert g["per_sm_matrix"] == approx(H100_BF16 / (SMS * 1.83e9))
    assert round(g["per_tc"]) == 1024
    assert (g["matrix_mhz"], g["boost_mhz"]) == (1830, 1980)
    assert round(g["sparse_over_dense"]) == 2 and round(g["fp8_over_bf16"]) == 2


def test_chapter_5_prose_examples(glued):
    g = glued(PAGE)
    # 2^24 elements / 256 threads per block = 65536 blocks, 496.5 per SM
    assert (g["add_threads"], g["add_blocks"]) == (256, 65536)
    assert g["add_per_sm"] == approx(2**24 / 256 / SMS)
    # 65536 registers / (128 x 256) = 2 blocks = 16 warps of 64: 25%
    assert (g["occ_regs"], g["occ_threads"], g["occ_blocks"], g["occ"]) == (128, 256, 2, 0.25)
    # 32 threads x 4 bytes = 128 bytes = 4 transactions; one each when far apart: 1024, 1/8 used
    assert (g["sector"], g["coal_useful"], g["coal_sectors"], g["coal_bad"]) == (32, 128, 4, 1024)
    assert g["coal_waste"] == 8
    # 4096/128 = 32, 32^2 = 1024 tiles = 7 x 132 + 100: 8 waves, the last 100/132 busy
    assert (g["w_tiles"], g["w_waves"], g["w_last"]) == (1024, 8, 100)
    assert g["w_fill"] == approx(100 / 132)
    assert g["w_loss"] == approx(1 - 1024 / (8 * 132))  # about 3%


def test_chapter_5_answers(glued):
    g = glued(PAGE)
    # Q1: 132 x 128 = 16896 FP32 lanes, 132 x 4 = 528 Tensor Cores (whitepaper's unit list)
    assert (g["ans_q1_lanes"], g["ans_q1_tc"]) == (16896, 528)
    # Q2: 65536 / (64 x 256) = 4 blocks x 8 warps = 32 warps of 64: 50%
    assert (g["regs_count"], g["ans_q2_blocks"], g["ans_q2_warps"]) == (65536, 4, 32)
    assert g["ans_q2_occ"] == 0.5
    # Q3: (8192/128)^2 = 4096 tiles = 31 x 132 + 4: 32 waves, 4/132 busy in the last
    assert (g["ans_q3_tiles"], g["ans_q3_waves"], g["ans_q3_last"]) == (4096, 32, 4)
    assert g["ans_q3_fill"] == approx(4 / 132)
    assert g["ans_q3_eff"] == approx(4096 / (32 * 132))  # 96.97%
    # Q4: stride 2 over FP32: 32 threads span 256 bytes = 8 transactions, 128 bytes used;
    # 512 MiB used by the computation and 1 GiB moved at 3.35 TB/s: 160.3 and 320.5 us
    assert (g["ans_q4_moved"], g["ans_q4_useful"]) == (256, 128)
    assert g["ans_q4_t_useful_us"] == approx(2**29 / H100_BW * 1e6)
    assert g["ans_q4_t_moved_us"] == approx(2**30 / H100_BW * 1e6)
    # Q5: a square BF16 GEMM does 2n^3 FLOPs over 3 x 2n^2 bytes: I = n/3 = 341.3 at n = 1024,
    # above the ridge 989.4 / 3.35 = 295.3; 64 tiles at n = 1024 (64/132 = 48% of the SMs);
    # 256 tiles at n = 2048 = 132 + 124: 2 waves, 256/264 = 97%; n = 4096: 1024/1056 = 97%
    assert g["ans_q5_i1024"] == approx(1024 / 3)
    assert g["ridge"] == approx(H100_BF16 / H100_BW)
    assert (g["ans_q5_t1024"], g["ans_q5_t2048"], g["ans_q5_w2048"]) == (64, 256, 2)
    assert g["ans_q5_fill1024"] == approx(64 / 132)
    assert g["ans_q5_eff2048"] == approx(256 / 264)
    assert g["ans_q5_eff4096"] == approx(1024 / 1056)
    assert g["fp8_tflops"] == approx(H100_FP8 / 1e12)
