"""roofline_book.book.flops: the FLOPs chapter's figures, against 2MKN worked out by hand, the
H100 datasheet (989.4 TFLOP/s dense BF16 at 1830 MHz, 16 SFU results per SM and clock at
1980 MHz) and the FlashAttention count of one exp per score."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import EXAMPLE, attention, gemm, hardware  # noqa: E402
from roofline_book.book import flops  # noqa: E402

H100 = hardware("h100-sxm")
H100_BF16 = 989.4e12  # dense Tensor Core BF16, whitepaper


def test_square_gemm_flops_figure():
    sizes = [2**p for p in range(6, 15)]
    fig = flops.square_gemm_flops_figure(sizes)
    try:
        ax = fig.axes[0]
        (line,) = ax.lines
        assert list(line.get_xdata()) == sizes
        assert list(line.get_ydata()) == [2 * n**3 for n in sizes]  # 2MKN with M = K = N = n
        assert ax.get_xscale() == ax.get_yscale() == "log"
        # every other size is a tick, written as a plain integer
        assert [t.get_text() for t in ax.get_xticklabels()] == [
            "64",
            "256",
            "1024",
            "4096",
            "16384",
        ]
        assert ax.get_title() == "方阵乘法的计算量随 n³ 增长"
        assert ax.get_ylabel() == "FLOPs = 2n³"
    finally:
        plt.close(fig)


def test_compute_time_figures():
    f = flops.compute_time_figures(gemm(4096, 4096, 4096, "bf16"), H100, EXAMPLE)
    assert f["gemm4096_flops_sci"] == "1.37 × 10¹¹"  # 2 x 4096^3 = 137,438,953,472
    assert f["gemm4096_gflops"] == pytest.approx(137.438953472)
    assert f["t_example_ms"] == pytest.approx(2 * 4096**3 / 100e12 * 1e3)  # 1.374 ms
    assert f["t_h100_ms"] == pytest.approx(2 * 4096**3 / H100_BF16 * 1e3)  # 0.139 ms
    assert f["h100_bf16_tflops"] == pytest.approx(989.4)
    assert f["h100_matrix_mhz"] == pytest.approx(1830)
    assert f["ms_per_tflop"] == pytest.approx(1e12 / H100_BF16 * 1e3)  # 1.01 ms
    assert (f["example_tflops"], f["example_tbps"]) == pytest.approx((100, 1))
    assert f["sparse_over_dense"] == pytest.approx(1979 / 989.4, rel=1e-3)  # "with sparsity"


def test_special_function_figures():
    d = 64
    fa = attention(4, 16, 4096, 4096, d, "bf16", sram_bytes=H100.shared_memory_per_sm)
    f = flops.special_function_figures(fa, H100, "bf16")
    # each score: 4d matrix FLOPs and one exp, so about 1 / (4d + 1) of the FLOPs are exps
    assert f["fa_exp_share"] == pytest.approx(1 / (4 * d + 1), rel=0.02)
    # 4 x 16 x 4096^2 = 2^30 exps at 16 x 132 x 1.98e9 a second: 256.8 us
    exps = 4 * 16 * 4096**2
    assert f["fa_exp_us"] == pytest.approx(exps / (16 * 132 * 1.98e9) * 1e6, rel=1e-3)
    # per SM and clock: 4096 BF16 matrix FLOPs against 16 exps, and 4d = 256 FLOPs an exp
    assert f["fa_exp_vs_matrix"] == pytest.approx((1 / 16) / (4 * d / 4096), rel=1e-3)
    # FlashAttention reads Q, K, V and writes O once at this size: 4 x 2^24 BF16 elements
    hbm_us = 4 * (4 * 16 * 4096 * d) * 2 / 3.35e12 * 1e6  # 40.1 us
    assert f["fa_exp_vs_hbm"] == pytest.approx(f["fa_exp_us"] / hbm_us)  # 6.4


def test_problem_answers():
    a = flops.problem_answers(
        H100, gemm(4096, 4096, 4096), square=8192,
        linear=(2048, 4096, 11008), large_linear=(16384, 8192, 8192),
    )  # fmt: skip
    assert a["ans_q1_flops_sci"] == "1.10 × 10¹²"  # 2 x 8192^3 = 1.0995e12
    assert a["ans_q1_ratio"] == 8.0  # 2^3
    fwd = 2 * 2048 * 4096 * 11008  # 1.847e11
    assert a["ans_q2_fwd_sci"] == "1.85 × 10¹¹"
    assert a["ans_q2_total_sci"] == "5.54 × 10¹¹"  # dA and dW: two more of the same
    assert a["ans_q2_ratio"] == 3.0
    assert a["ans_q3_us"] == pytest.approx(3 * fwd / H100_BF16 * 1e6)  # 560 us
    assert a["ans_q4_flops_sci"] == "2.20 × 10¹²"  # 2^41
    assert a["ans_q4_ms"] == pytest.approx(2**41 / H100_BF16 * 1e3)  # 2.22 ms
