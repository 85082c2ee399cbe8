"""The GEMM chapter's helpers (roofline_book.book.gemm), checked against the chapter's formulas
worked out by hand: intensity 2MKN / (s (MK + KN + MN)), the square crossing n* = 3 s I* / 2 and
the token crossing M* = I* s K N / (2KN - I* s (K + N)), on the vendors' dense peaks (H100 SXM
whitepaper: BF16 989.4, FP8 1978.9, FP32 67 TFLOP/s, HBM3 3.35 TB/s, 50 MiB L2; A100 SXM
datasheet: BF16 312, TF32 156 TFLOP/s, 2.039 TB/s)."""

from __future__ import annotations

import pytest

from roofline_book import gemm, hardware
from roofline_book.book import gemm as bg
from roofline_book.measure.bench.suites import suite_spec

H100, A100 = hardware("h100-sxm"), hardware("a100-sxm")
RIDGE_H100 = 989.4e12 / 3.35e12  # 295.34 FLOP/byte, BF16 Tensor Core over HBM
RIDGE_A100 = 312e12 / 2.039e12  # 153.02 FLOP/byte
SIZES = [2**p for p in range(4, 15)]
TOKENS = [2**p for p in range(17)]


def test_square_gemm_figures_count_flops_bytes_and_intensity():
    f = bg.square_gemm_figures(4096, "bf16", small=1024)
    # 2 * 4096**3 = 137_438_953_472 FLOP over 3 * 2 * 4096**2 = 100_663_296 bytes
    assert f["g4096_i"] == pytest.approx(137_438_953_472 / 100_663_296)  # 4096 / 3 = 1365.3
    assert f["g4096_bytes_si"] == "100.7 MB"
    assert f["g4096_flops_sci"] == "1.37 × 10¹¹"
    assert f["g1024_mib"] == 6.0  # 3 * 2 * 1024**2 bytes = 6 MiB


def test_square_crossing_figures_follow_n_star_three_s_ridge_over_two():
    f = bg.square_crossing_figures(H100, ("fp8", "bf16", "fp32"), SIZES, compare=A100)
    assert f["ridge_h100_bf16"] == pytest.approx(RIDGE_H100)
    assert f["ridge_h100_fp32"] == pytest.approx(20.0)  # 67 / 3.35
    assert f["ridge_h100_fp8"] == pytest.approx(1978.9 / 3.35)  # 590.7
    assert f["ncross_bf16"] == pytest.approx(3 * 2 * RIDGE_H100 / 2)  # 886.0
    assert f["ncross_fp32"] == pytest.approx(3 * 4 * 20 / 2)  # 120
    assert f["ncross_fp8"] == pytest.approx(3 * 1 * 1978.9 / 3.35 / 2)  # 886.1
    # I = 2n / (3s): BF16 n = 512 gives 170.7 < 295.3 <= 341.3 at 1024; FP32 n = 128 gives
    # 21.3 >= 20 (64: 10.7); FP8 n = 512 gives 341.3 < 590.7 <= 682.7 at 1024
    assert (f["nfirst_bf16"], f["nfirst_fp32"], f["nfirst_fp8"]) == (1024, 128, 1024)
    # FP8 in, BF16 out: I = 2n^3 / ((1 + 1 + 2) n^2) = n / 2, so n* = 2 x 590.7 = 1181.4,
    # I(1024) = 512 and the first power of two is 2048
    assert f["ncross_fp8_bf16out"] == pytest.approx(2 * 1978.9 / 3.35)
    assert f["i_fp8_bf16out_first"] == 512.0
    assert f["nfirst_fp8_bf16out"] == 2048
    assert f["ridge_a100_bf16"] == pytest.approx(RIDGE_A100)
    assert f["ncross_a100_bf16"] == pytest.approx(3 * RIDGE_A100)  # 459.0
    assert f["nfirst_a100_bf16"] == 512  # 2 x 512 / 6 = 170.7 >= 153.0
    assert f["fp32_tflops"] == pytest.approx(67.0)
    assert f["bf16_over_fp32"] == pytest.approx(989.4 / 67)  # 14.77
    assert f["h100_l2_mib"] == 50.0


def test_token_crossing_figures_solve_for_m_star():
    f = bg.token_crossing_figures(H100, A100, TOKENS, k=4096, n=4096, dtype="bf16")
    # K = N = 4096, s = 2: I(M) = 2 M 4096^2 / (2 (2 M 4096 + 4096^2)) = 4096 M / (2M + 4096),
    # so M* = 4096 I* / (4096 - 2 I*)
    assert f["mstar_h100"] == pytest.approx(4096 * RIDGE_H100 / (4096 - 2 * RIDGE_H100))  # 345.1
    assert f["mstar_h100_int"] == 346
    assert f["mstar_a100"] == pytest.approx(4096 * RIDGE_A100 / (4096 - 2 * RIDGE_A100))  # 165.4
    assert f["rect_limit"] == 2048.0  # 2 * 4096**2 / (2 * 8192)
    # I(256) = 4096 * 256 / 4608 = 227.6 < 295.3 <= I(512) = 4096 * 512 / 5120 = 409.6
    assert (f["mfirst_h100"], f["mhalf"]) == (512, 256)
    assert f["mhalf_i"] == pytest.approx(4096 * 256 / 4608)
    assert f["mfirst_i"] == pytest.approx(409.6)
    assert f["mfirst_a100"] == 256  # I(128) = 4096 * 128 / 4352 = 120.5 < 153.0
    assert f["m1_i"] == pytest.approx(4096 / 4098)  # 2M/s = 1, less the bytes of A and C


def test_tf32_figures_cancel_twice_the_bytes_against_half_the_peak():
    f = bg.tf32_figures(A100, "q_")
    assert f["q_ridge_tf32"] == pytest.approx(156 / 2.039)  # 76.5 FLOP/byte
    assert f["q_n_tf32"] == pytest.approx(3 * 4 * 156 / 2.039 / 2)  # s = 4: 459.0
    assert f["q_n_bf16"] == pytest.approx(3 * 2 * 312 / 2.039 / 2)  # s = 2: also 459.0
    assert f["a100_bf16_over_tf32"] == 2.0  # 312 / 156


def test_attainable_figures_on_a_decode_gemm():
    f = bg.attainable_figures(gemm(1, 4096, 4096, "bf16"), H100, "q_")
    # M = 1: 2 * 4096^2 FLOP over 2 (4096 + 4096^2 + 4096) bytes = 4096 / 4098 FLOP/byte
    i = 4096 / 4098
    assert f["q_i"] == pytest.approx(i)
    assert f["q_tflops"] == pytest.approx(i * 3.35)  # on the HBM slope: 3.348 TFLOP/s
    assert f["q_pct"] == pytest.approx(i * 3.35 / 989.4 * 100)  # 0.338 %


def test_tokens_to_ridge_figures_for_a_llama_up_projection():
    f = bg.tokens_to_ridge_figures(H100, 4096, 11008, TOKENS, "q_")
    # s = 2: M* = I* K N / (K N - I* (K + N)) = 295.34 * 45_088_768 / (45_088_768 - 295.34 * 15104)
    kn = 4096 * 11008
    assert f["q_mstar"] == pytest.approx(RIDGE_H100 * kn / (kn - RIDGE_H100 * 15104))  # 327.8
    assert f["q_pow2"] == 512


def test_bench_square_figures_put_the_suite_sizes_on_the_slope():
    sizes = suite_spec("cuda", "quick").gemm_sizes
    f = bg.bench_square_figures(H100, "q_", suite="quick")
    n0, n1 = sizes[:2]
    assert (f["q_n0"], f["q_n1"], f["q_nmax"]) == (n0, n1, sizes[-1])
    # BF16 squares: I = n / 3; both small sizes sit on the slope, I x 3.35 TB/s
    assert f["q_att0"] == pytest.approx(n0 / 3 * 3.35)
    assert f["q_att1"] == pytest.approx(n1 / 3 * 3.35)
    assert f["q_pct0"] == pytest.approx(100 * n0 / 3 * 3.35 / 989.4)
    assert f["q_us0"] == pytest.approx(2 * n0**3 / (n0 / 3 * 3.35e12) * 1e6)
    assert f["bf16_tflops"] == pytest.approx(989.4)
