"""roofline_book.book.gpu: the GPU chapter's figures, against the H100 whitepaper, the CUDA
programming guide's limits and the wave, occupancy and sector arithmetic worked out by hand."""

import pytest

from roofline_book import hardware
from roofline_book.book import gpu

H100 = hardware("h100-sxm")


def test_chip_figures_h100():
    f = gpu.chip_figures(H100)
    # whitepaper: 132 SMs, 4 sub-partitions, 128 FP32 cores per SM (32 per sub-partition),
    # 50 MB L2, 256 KB register file and 256 KB L1/shared per SM, up to 228 KB shared memory;
    # programming guide: warp 32, 64 resident warps, 1024 threads per block
    assert (f["sms"], f["warp"], f["parts"], f["max_warps"], f["block_max"]) == (
        132, 32, 4, 64, 1024,
    )  # fmt: skip
    assert (f["lanes"], f["lanes_part"]) == (128, 32)
    assert (f["l2"], f["regs_sm"], f["regs_part"], f["l1"], f["smem"]) == (
        "50 MiB", "256 KiB", "64 KiB", "256 KiB", "228 KiB",
    )  # fmt: skip
    # (256 + 256) KiB x 132 SMs = 67,584 KiB = 66 MiB on chip
    assert f["onchip"] == "66 MiB"
    assert f["hbm_over_onchip"] == pytest.approx(H100.memory_capacity / (66 * 2**20))
    assert f["hbm_bw"] == "3.35 TB/s" and f["link_bw"] == "450 GB/s"  # NVLink 900 GB/s both ways


def test_unit_peak_figures_h100():
    p = gpu.unit_peak_figures(H100)
    # whitepaper: dense BF16 989.4, FP8 1978.9 TFLOP/s; non-tensor BF16 133.8, FP32 67 (66.9)
    assert (p["bf16_tflops"], p["fp8_tflops"], p["vec_bf16"]) == pytest.approx(
        (989.4, 1978.9, 133.8)
    )
    assert p["vec_fp32"] == pytest.approx(67.0, abs=0.1)
    assert p["special_t"] == pytest.approx(16 * 132 * 1.98e9 / 1e12)  # 16 SFU results/SM/clock
    # 989.4e12 / (132 SMs x 1.83e9) = 4095.9 FLOP per SM and clock, 1024 per Tensor Core
    assert p["per_sm_matrix"] == pytest.approx(989.4e12 / (132 * 1.83e9))
    assert p["per_tc"] == pytest.approx(989.4e12 / (132 * 1.83e9) / 4)
    assert (p["matrix_mhz"], p["boost_mhz"]) == pytest.approx((1830.0, 1980.0))
    assert p["matrix_over_vector"] == pytest.approx(989.4 / 133.8)  # 7.39
    assert p["sparse_over_dense"] == pytest.approx(2, rel=1e-3)  # 1979 / 989.4 with sparsity
    assert p["fp8_over_bf16"] == pytest.approx(1978.9 / 989.4)


def test_grid_figures():
    g = gpu.grid_figures(H100, numel=2**24, threads_per_block=256)
    # 2^24 / 2^8 = 65,536 blocks over 132 SMs: 496.5 each
    assert (g["add_threads"], g["add_blocks"]) == (256, 65536)
    assert g["add_per_sm"] == pytest.approx(65536 / 132)


@pytest.mark.parametrize(
    ("registers", "blocks", "occ"),
    [
        (128, 2, 0.25),  # 128 x 256 = 32,768 of 65,536 registers: 2 blocks, 16 of 64 warps
        (64, 4, 0.5),  # 16,384 a block: 4 blocks, 32 warps
        (32, 8, 1.0),  # 8 blocks, all 64 warps
    ],
)
def test_occupancy_figures(registers, blocks, occ):
    f = gpu.occupancy_figures(H100, registers_per_thread=registers, threads_per_block=256)
    assert (f["occ_regs"], f["occ_threads"], f["occ_blocks"], f["occ"]) == (
        registers, 256, blocks, occ,
    )  # fmt: skip


def test_coalescing_figures():
    f = gpu.coalescing_figures(H100, element_bytes=4, stride=4096)
    # best practices guide: adjacent 4-byte words of one warp are 4 sectors of 32 bytes;
    # a stride past a sector gives each of 32 threads its own sector: 32 x 32 = 1024 bytes
    assert (f["sector"], f["fp32"], f["coal_useful"], f["coal_sectors"]) == (32, 4, 128, 4)
    assert (f["coal_bad"], f["coal_waste"]) == (1024, 8.0)


def test_wave_figures():
    f = gpu.wave_figures(H100, 4096, 4096, tile=(128, 128))
    # 32 x 32 = 1024 tiles; 7 x 132 = 924, so 8 waves with 100 tiles in the last
    assert (f["w_tiles"], f["w_waves"], f["w_last"]) == (1024, 8, 100)
    assert f["w_fill"] == pytest.approx(100 / 132)
    assert f["w_loss"] == pytest.approx(1 - 1024 / (8 * 132))  # 3.0 %


def test_problem_answers():
    a = gpu.problem_answers(
        H100, registers_per_thread=64, threads_per_block=256, square_gemm=8192,
        element_bytes=4, stride=2, numel=2**28, measured_sizes=(1024, 2048, 4096),
    )  # fmt: skip
    # whitepaper: 16,896 FP32 CUDA cores and 528 Tensor Cores on the H100 SXM5
    assert (a["ans_q1_lanes"], a["ans_q1_tc"]) == (16896, 528)
    # 256 KiB / 4 B = 65,536 registers; 64 x 256 a block: 4 blocks of 8 warps, 32 of 64
    assert (a["regs_count"], a["ans_q2_blocks"], a["ans_q2_warps"], a["ans_q2_occ"]) == (
        65536, 4, 32, 0.5,
    )  # fmt: skip
    # 64^2 = 4096 tiles; 31 x 132 = 4092, so 32 waves and 4 tiles in the last
    assert (a["ans_q3_tiles"], a["ans_q3_waves"], a["ans_q3_last"]) == (4096, 32, 4)
    assert a["ans_q3_fill"] == pytest.approx(4 / 132)
    assert a["ans_q3_eff"] == pytest.approx(4096 / (32 * 132))
    # a warp spans 32 x 2 x 4 = 256 bytes (8 sectors) and uses 128 of them
    assert (a["ans_q4_moved"], a["ans_q4_useful"]) == (256, 128)
    # 512 MiB useful, 1 GiB moved, at 3.35 TB/s
    assert a["ans_q4_t_useful_us"] == pytest.approx(2**29 / 3.35e12 * 1e6)  # 160 us
    assert a["ans_q4_t_moved_us"] == pytest.approx(2**30 / 3.35e12 * 1e6)  # 321 us
    assert a["ridge"] == pytest.approx(989.4e12 / 3.35e12)  # 295 FLOP/byte
    # BF16 square GEMM: 2n^3 / (3 n^2 x 2 B) = n/3
    assert a["ans_q5_i1024"] == pytest.approx(1024 / 3)
    # n = 1024: 8^2 = 64 tiles on 132 SMs; n = 2048: 256 tiles, 2 waves; n = 4096: 1024 in 8
    assert (a["ans_q5_t1024"], a["ans_q5_t2048"], a["ans_q5_w2048"]) == (64, 256, 2)
    assert a["ans_q5_fill1024"] == pytest.approx(64 / 132)
    assert a["ans_q5_eff2048"] == pytest.approx(256 / 264)
    assert a["ans_q5_eff4096"] == pytest.approx(1024 / 1056)


def test_problem_answers_name_their_keys_by_the_sizes():
    a = gpu.problem_answers(
        H100, registers_per_thread=64, threads_per_block=256, square_gemm=8192,
        element_bytes=4, stride=2, numel=2**28, measured_sizes=(512, 1024, 8192),
    )  # fmt: skip
    q5 = {k for k in a if k.startswith("ans_q5_")}
    assert q5 == {
        "ans_q5_i512", "ans_q5_t512", "ans_q5_fill512", "ans_q5_t1024", "ans_q5_w1024",
        "ans_q5_eff1024", "ans_q5_eff8192",
    }  # fmt: skip
    # BF16 square GEMM n = 512: 2n^3 / (3 n^2 x 2 B) = 512 / 3; 128 x 128 tiles: 4^2 = 16
    assert a["ans_q5_i512"] == pytest.approx(512 / 3)
    assert (a["ans_q5_t512"], a["ans_q5_fill512"]) == (16, pytest.approx(16 / 132))
    # n = 1024: 64 tiles in one wave of 132 SMs; n = 8192: 4096 tiles in 32 waves of 132
    assert (a["ans_q5_t1024"], a["ans_q5_w1024"]) == (64, 1)
    assert a["ans_q5_eff1024"] == pytest.approx(64 / 132)
    assert a["ans_q5_eff8192"] == pytest.approx(4096 / (32 * 132))


def test_grid_figures_launch_a_partial_last_block():
    # 2^24 + 1 elements at 256 a block: 65,536 full blocks and one with a single element
    g = gpu.grid_figures(H100, numel=2**24 + 1, threads_per_block=256)
    assert g["add_blocks"] == 65537 and g["add_per_sm"] == pytest.approx(65537 / 132)
    # 1000 elements: ceil(1000 / 256) = 4 blocks (the last holds 232)
    assert gpu.grid_figures(H100, numel=1000, threads_per_block=256)["add_blocks"] == 4


def test_chip_figures_name_the_figure_a_device_lacks():
    # the catalog's H20 has no published SM count: a clear error, not int x None
    assert hardware("h20").sms is None
    with pytest.raises(ValueError, match="'h20' has no sms"):
        gpu.chip_figures(hardware("h20"))
