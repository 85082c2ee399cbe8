"""The achieved-performance page's helpers (roofline_book.book.achieved), checked against hand
arithmetic: eta = (FLOPs / T) / min(P, B I) (Williams et al. 2009), the example device (100 TFLOP/s,
1 TB/s), the H100 SXM datasheet (BF16 989.4 TFLOP/s dense, vector 133.8 TFLOP/s counting an FMA as
two, so 66.9 T adds/s; HBM3 3.35 TB/s), the published rows (fast.cu's cuBLAS 795 TFLOP/s at
n = 8192; the Azure guide's STREAM copy 2.90 and triad 2.97 TB/s; FlashAttention-3's 648 TFLOP/s
at d = 128, l = 16384, FLOPs 4 l^2 d h with h = 2048 / d)."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import add, gemm, hardware  # noqa: E402
from roofline_book.book import achieved as ba  # noqa: E402
from roofline_book.measure.published import measurement  # noqa: E402
from roofline_book.present.plotting import PALETTE  # noqa: E402

H100 = hardware("h100-sxm")
GEMM_4096 = 2 * 4096**3  # 137_438_953_472 FLOP
ADD_16M = add(4096 * 4096, "bf16")  # 16_777_216 FLOP, 6 B each: 100_663_296 B
FA = measurement("fa3-bf16-d128", seqlen=16384)


pytestmark = pytest.mark.usefixtures("chinese_figures")


def _points(ax) -> list[tuple[float, ...]]:
    """Every single-point scatter drawn on ax, as (x, y)."""
    return [
        tuple(float(v) for v in c.get_offsets()[0])
        for c in ax.collections
        if hasattr(c, "get_offsets") and len(c.get_offsets()) == 1
    ]


def test_timing_figures_on_the_example_device():
    work = gemm(4096, 4096, 4096, "bf16")
    f = ba.timing_figures(work, GEMM_4096 / 40e12, 100e12, 1e12, prefix="ex")
    # I = 2 x 4096 / (3 x 2) = 1365.3 > ridge 100: the roof is the 100 TFLOP/s flat top
    assert f["ex_I"] == pytest.approx(4096 / 3) and f["ex_ridge"] == 100
    assert f["ex_roof_tf"] == 100 and f["ex_achieved_tf"] == pytest.approx(40)
    assert f["ex_fraction"] == pytest.approx(0.4)
    # 137.44 GFLOP at 40 TFLOP/s = 3.436 ms; at 100 TFLOP/s = 1.374 ms
    assert f["ex_elapsed_ms"] == pytest.approx(GEMM_4096 / 40e12 * 1e3)
    assert f["ex_bound_ms"] == pytest.approx(GEMM_4096 / 100e12 * 1e3)
    assert f["ex_gap_ms"] == pytest.approx(GEMM_4096 * (1 / 40e12 - 1 / 100e12) * 1e3)
    assert (f["ex_P_tf"], f["ex_B_tb"]) == (100, 1)


def test_gap_figure_draws_roof_and_achieved_points():
    work = gemm(4096, 4096, 4096, "bf16")
    half = ADD_16M.flops / (ADD_16M.bytes / 0.5e12)  # an add at half of 1 TB/s
    fig = ba.gap_figure(
        [("GEMM", work, 40e12), ("add", ADD_16M, half)],
        100e12,
        1e12,
        name="示例设备",
        right={"add"},
        achieved_label="实测（假设值）",
    )
    ax = fig.axes[0]
    points = _points(ax)
    # GEMM: roof 100, achieved 40 at I = 1365.3; add: I = 1/6, roof 1e12 / 6, achieved half of it
    assert (pytest.approx(4096 / 3), 100) in points and (pytest.approx(4096 / 3), 40) in points
    assert (pytest.approx(1 / 6), pytest.approx(1 / 6)) in points
    assert (pytest.approx(1 / 6), pytest.approx(1 / 12)) in points
    assert [t.get_text() for t in ax.texts] == ["GEMM：roof 的 40%", "add：roof 的 50%"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "示例设备的 roof（100 TFLOP/s，1 TB/s）",
        "算子所在算术强度处的 roof",
        "实测（假设值）",
    ]
    assert ax.get_ylim() == pytest.approx((1e-2, 400))


def test_roof_figures_h100():
    assert ba.roof_figures(H100, "h100") == pytest.approx(
        {"h100_peak_tf": 989.4, "h100_bw_tb": 3.35, "h100_ridge": 989.4 / 3.35}
    )


def test_published_figures_eta_against_the_datasheet():
    f = ba.published_figures(
        gemm=measurement("cublas-bf16-h100", n=8192),
        copy=measurement("stream-h100", kernel="copy"),
        triad=measurement("stream-h100", kernel="triad"),
        attention=FA,
    )
    # GEMM n = 8192: I = n / 3, compute-bound, eta = 795 / 989.4
    assert (f["pub_gemm_n"], f["pub_gemm_tf"]) == (8192, 795)
    assert f["pub_gemm_I"] == pytest.approx(8192 / 3)
    assert f["pub_gemm_eta"] == pytest.approx(795 / 989.4)
    # STREAM: memory-bound, eta = measured / datasheet bandwidth
    assert f["pub_copy_tb"] == 2.9 and f["pub_copy_eta"] == pytest.approx(2.9 / 3.35)
    assert f["pub_triad_tb"] == 2.97 and f["pub_triad_eta"] == pytest.approx(2.97 / 3.35)
    # FA3: the paper's 2^41 FLOP at 648 TFLOP/s; the book's model adds 5 vector/special ops a
    # score (2^34 + 2^32 = 21_474_836_480 FLOP), so I = (2^41 + that) / 2^28 B = 8272 and
    # eta = 648 / 989.4 x 8272 / 8192
    assert (f["pub_fa_tf"], f["pub_fa_d"], f["pub_fa_seq"]) == (648, 128, 16384)
    assert f["pub_fa_I"] == pytest.approx(8272)
    assert f["pub_fa_eta"] == pytest.approx(648 / 989.4 * 8272 / 8192)


def test_published_figure_points_and_measured_memory_roof():
    shown = [
        measurement("cublas-bf16-h100", n=8192),
        measurement("stream-h100", kernel="copy"),
        FA,
        measurement("stream-h100", kernel="triad"),
    ]
    fig = ba.published_figure(shown, "h100-sxm", "H100 SXM")
    ax = fig.axes[0]
    assert ax.get_title() == "H100 SXM：已发表的实测放在 BF16 roofline 上"
    points = _points(ax)
    assert (pytest.approx(8192 / 3), 795) in points
    # triad: 2 FLOP per 24 B, I = 1/12, at 2.97 TB/s = 0.2475 TFLOP/s
    assert (pytest.approx(1 / 12), pytest.approx(2.97 / 12)) in points
    # FA3: 648 TFLOP/s by the paper's FLOPs, 648 x 8272 / 8192 by the book's
    assert (pytest.approx(8272), pytest.approx(648 * 8272 / 8192)) in points
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "HBM 复制（实测 memory roof） 2.90 TB/s" in legend
    assert [t.get_text() for t in ax.texts] == ["GEMM 8192³", "FlashAttention-3 d=128", "HBM triad"]


def test_half_roof_elements_bf16_add():
    # 6 B an element: 5 us x 3.35e12 B/s / 6 B = 2_791_666.7 elements
    assert ba.half_roof_elements(H100, 5e-6) == pytest.approx(5e-6 * 3.35e12 / 6)
    assert ba.half_roof_elements(H100, 5e-6, "fp32") == pytest.approx(5e-6 * 3.35e12 / 12)


def test_overhead_figure_eta_with_a_fixed_cost():
    sizes = [add(2**20), add(2**24)]
    fig = ba.overhead_figure(
        {"add": (sizes, 66.9e12), "gemm": ([gemm(4096, 4096, 4096)], 989.4e12)},
        3.35e12,
        5e-6,
        name="H100 SXM",
    )
    ax = fig.axes[0]
    adds, gemms = ax.lines
    # add of 2^20: 6 MiB / 3.35 TB/s = 1.878 us > 2^20 / 66.9e12; eta = T / (5 us + T)
    t = [6 * 2**20 / 3.35e12, 6 * 2**24 / 3.35e12]
    assert list(adds.get_xdata()) == [6 * 2**20, 6 * 2**24]
    assert list(adds.get_ydata()) == pytest.approx([x / (5e-6 + x) for x in t])
    # GEMM 4096^3: 138.9 us of matrix time
    tg = GEMM_4096 / 989.4e12
    assert list(gemms.get_ydata()) == pytest.approx([tg / (5e-6 + tg)])
    assert (adds.get_marker(), gemms.get_marker()) == ("o", "s")
    assert (adds.get_color(), gemms.get_color()) == (PALETTE["blue"], PALETTE["orange"])
    assert ax.get_title() == "H100 SXM：roofline 时间加上每个 kernel 假设的 5 µs 开销"


def test_attention_paper_flops_fa_convention():
    # 4 l^2 d h: 4 x 2^28 x 2^7 x 2^4 = 2^41; causal mask halves it
    assert ba.attention_paper_flops(FA) == 2**41
    causal = measurement("fa3-bf16-d128-causal", seqlen=16384)
    assert ba.attention_paper_flops(causal) == 2**40


def test_exercise_answers_worked_by_hand():
    a = ba.exercise_answers(
        H100,
        gemm=(gemm(4096, 4096, 4096, "bf16"), 1e-3),
        addition=(ADD_16M, 50e-6),
        overhead=5e-6,
        attention=FA,
        probe=6144,
    )
    # q1: 137.44 GFLOP in 1 ms = 137.4 TFLOP/s of the 989.4 flat top
    assert a["ans_q1_tf"] == pytest.approx(137.438953472)
    assert a["ans_q1_fraction"] == pytest.approx(137.438953472 / 989.4)
    # q2: 16.78 MFLOP and 100.7 MB in 50 us; roof min(66.9e12, 3.35e12 / 6) = 558.3 GFLOP/s
    assert a["ans_q2_gflops"] == pytest.approx(335.54432)
    assert a["ans_q2_tbps"] == pytest.approx(2.01326592)
    assert a["ans_q2_fraction"] == pytest.approx(335.54432e9 / (3.35e12 / 6))
    assert a["ans_q2_vs_peak"] == pytest.approx(335.54432e9 / 66.9e12)
    assert (a["vec_tflops"], a["vec_ops_t"]) == pytest.approx((133.8, 66.9))
    # q3: 5 us x 3.35 TB/s / 6 B = 2.79 M; at 16.78 M elements T = 30.05 us, eta = T / (5 + T)
    assert a["ans_q3_elements_m"] == pytest.approx(2.7916667)
    t = 100_663_296 / 3.35e12
    assert a["ans_q3_eta_16m"] == pytest.approx(t / (5e-6 + t))
    # q4: 2^41 FLOP at 648 TFLOP/s; traffic 4 x 16384 x 128 x 16 x 2 B = 2^28 B
    assert a["ans_q4_paper_tflop"] == pytest.approx(2**41 / 1e12)
    assert a["ans_q4_ms"] == pytest.approx(2**41 / 648e12 * 1e3)
    assert a["ans_q4_I_matmul"] == 8192 and a["ans_q4_I"] == pytest.approx(8272)
    assert a["ans_q4_eta_est"] == pytest.approx(648 / 989.4)
    assert a["ans_q4_eta"] == pytest.approx(648 / 989.4 * 8272 / 8192)
    # q5: 2 x 6144^3 FLOP at 989.4 TFLOP/s = 0.4688 ms
    assert a["ans_q5_n"] == 6144
    assert a["ans_q5_peak_ms"] == pytest.approx(2 * 6144**3 / 989.4e12 * 1e3)
