"""roofline_book.book.summary: the summary chapter's figures, recomputed by hand.

Expected values are arithmetic on datasheet figures the catalog holds (H100 SXM: 989.4 TFLOP/s
dense BF16, 3.35 TB/s HBM, NVLink 450 GB/s a direction; H200 SXM: the same peak, 4.8 TB/s;
A100 SXM: 19.5 TFLOP/s FP32, 156 TFLOP/s TF32, 2.039 TB/s; InfiniBand NDR 400 Gb/s) and on
the operators' byte and FLOP counts written out, not calls to the functions the module uses.
"""

from __future__ import annotations

import math

import pytest
from matplotlib import pyplot as plt

from roofline_book import EXAMPLE, adamw, add, cost_table, gemm, hardware, layernorm, rmsnorm
from roofline_book.book import summary
from roofline_book.measure.published import measurement

H100, H200, A100 = hardware("h100-sxm"), hardware("h200-sxm"), hardware("a100-sxm")
N = 4096 * 4096


def test_three_ridges():
    r = summary.ridge_points(H100, "ib-ndr")
    assert r["sum_ridge"] == pytest.approx(989.4e12 / 3.35e12)  # 295.3 FLOP/byte
    assert r["sum_i_nvlink"] == pytest.approx(989.4e12 / 450e9)  # 2198.7
    assert r["sum_i_ib"] == pytest.approx(989.4e12 / (400e9 / 8))  # 19788
    with pytest.raises(ValueError, match="link bandwidth"):  # the example device has no link
        summary.ridge_points(EXAMPLE, "ib-ndr")


def test_recap_contrasts_two_rows():
    # add: 1 FLOP for 6 bytes (two BF16 reads, one write); GEMM 4096^3 in BF16:
    # 2 x 4096^3 FLOPs over 3 x 4096^2 x 2 bytes = 4096 / 3
    rows = cost_table([("add", add(N, "bf16")), ("gemm", gemm(4096, 4096, 4096, "bf16"))], H100)
    v = summary.recap_figures(rows, gemm(64, 64, 64, "bf16"), eager="add", flash="gemm")
    assert v["eager_I"] == pytest.approx(1 / 6) and v["flash_I"] == pytest.approx(4096 / 3)
    assert v["span"] == pytest.approx(8192)  # (4096 / 3) / (1 / 6)
    assert v["span_orders"] == 4 and v["span_wan"] == pytest.approx(0.8192)
    assert (v["eager_res"], v["eager_bound"]) == ("HBM", "受 HBM 限制")
    assert (v["flash_res"], v["flash_bound"]) == ("矩阵单元", "受矩阵单元限制")
    t_add, t_gemm = 6 * N / 3.35e12, 2 * 4096**3 / 989.4e12
    assert v["eager_over_flash"] == pytest.approx(t_add / t_gemm)
    assert v["flash_causal_I"] == pytest.approx(64 / 3)  # 2 x 64^3 / (3 x 64^2 x 2)


def test_recap_figure_places_each_operator():
    named = [("add", add(N, "bf16")), ("gemm", gemm(4096, 4096, 4096, "bf16"))]
    fig = summary.recap_figure(named, H100, title="recap", callouts={"add": -30})
    ax = fig.axes[0]
    points = {
        a.get_label(): list(a.get_offsets()[0])
        for a in ax.collections
        if a.get_label() in ("add", "gemm")
    }
    # add at HBM: I = 1/6, rate = 3.35 TB/s x 1/6 = 0.558 TFLOP/s; the GEMM at the matrix peak
    assert points["add"] == pytest.approx([1 / 6, 3.35 / 6])
    assert points["gemm"] == pytest.approx([4096 / 3, 989.4])
    callout = [t for t in ax.texts if t.get_text() == "add"]
    assert len(callout) == 1 and list(callout[0].xy) == pytest.approx([1 / 6, 3.35 / 6])
    assert ax.get_title() == "recap" and ax.get_ylim() == pytest.approx((0.1, 3000))
    assert [t.get_text() for t in ax.get_legend().get_texts()][-2:] == ["add", "gemm"]
    plt.close(fig)


def test_levels_note_follows_the_catalog():
    assert summary.levels_note(H100).startswith("实心标记在 HBM 这一级")  # H100 has an L2 rate
    assert summary.levels_note(EXAMPLE).startswith("每个算子只在 HBM 这一级放一个点")


def test_estimate_answer_layernorm():
    v = summary.estimate_answer(layernorm(4096, 4096, "bf16"), H100, EXAMPLE, rough_bytes=4 * N)
    # 7 FLOPs an element and 4 a row (two divisions by d, + eps, rsqrt) over 2 + 2 bytes an
    # element, plus the weight and bias (2 x 4096 x 2 bytes)
    moved = 4 * N + 4 * 4096
    assert v["ans_q1_I"] == pytest.approx((7 * N + 4 * 4096) / moved)  # 1.750
    assert v["ans_q1_us"] == pytest.approx(moved / 3.35e12 * 1e6)  # 20.04 us
    assert v["ans_q1_est_us"] == pytest.approx(4 * N / 3.35e12 * 1e6)  # 20.03 us
    assert v["ans_q1_bound_h100"] == v["ans_q1_bound_example"] == "HBM"  # 1.75 < 100 < 295
    assert v["ans_q1_phrase_example"] == "受 HBM 限制"
    assert v["ans_q1_ridge"] == pytest.approx(295.343, abs=1e-3) and v["ans_q1_hbm_tb"] == 3.35


def test_precision_answer_fp32_gemm_on_a100():
    v = summary.precision_answer(gemm(4096, 4096, 4096, "fp32"), A100, ("fp32", "tf32"))
    assert v["ans_q2_I"] == pytest.approx(4096 / 6)  # 2 n^3 / (3 n^2 x 4 bytes)
    assert v["ans_q2_bw_tb"] == pytest.approx(2.039)
    assert v["ans_q2_ridge_fp32"] == pytest.approx(19.5 / 2.039)  # 9.56 < 682.7
    assert v["ans_q2_ridge_tf32"] == pytest.approx(156 / 2.039)  # 76.5 < 682.7
    assert v["ans_q2_ms_fp32"] == pytest.approx(2 * 4096**3 / 19.5e12 * 1e3)  # 7.05 ms
    assert v["ans_q2_ms_tf32"] == pytest.approx(2 * 4096**3 / 156e12 * 1e3)  # 0.881 ms
    assert v["ans_q2_bound_fp32"] == v["ans_q2_bound_tf32"] == "compute"


def test_upgrade_speedups_follow_the_bound():
    opt = adamw(7_000_000_000, "fused", tensors=7)
    big = gemm(4096, 4096, 4096, "bf16")
    v = summary.upgrade_speedups(H100, H200, adamw=(opt, "fp32"), gemm=(big, "bf16"))
    assert v["ans_q3_adamw_speedup"] == pytest.approx(4.8 / 3.35)  # memory-bound: bandwidths
    assert v["ans_q3_gemm_speedup"] == pytest.approx(1.0)  # same 989.4 TFLOP/s peak


def test_measured_check_answer():
    v = summary.measured_check_answer(
        rmsnorm(4096, 4096, "bf16"), gemm(4096, 4096, 4096, "bf16"), H100,
        copy=measurement("stream-h100", kernel="copy"),
        gemm=measurement("cublas-bf16-h100", n=8192),
    )  # fmt: skip
    # RMSNorm reads and writes 2 bytes an element plus a 4096-element BF16 weight
    assert v["ans_q4_rms_us"] == pytest.approx((4 * N + 2 * 4096) / 3.35e12 * 1e6)  # 20.03 us
    assert v["ans_q4_gemm_ms"] == pytest.approx(2 * 4096**3 / 989.4e12 * 1e3)  # 0.139 ms
    assert v["ans_q4_rms_bound"] == "受 HBM 限制" and v["ans_q4_gemm_bound"] == "受矩阵单元限制"
    # STREAM copy 2.90 of 3.35 TB/s; cuBLAS 795 of 989.4 TFLOP/s at n = 8192
    assert v["ans_q4_copy_eta"] == pytest.approx(2.90 / 3.35)
    assert v["ans_q4_gemm_eta"] == pytest.approx(795 / 989.4)
    assert math.isclose(v["ans_q4_gemm_eta"], 0.8035, abs_tol=1e-4)


def test_recap_figure_places_the_points_at_its_precision():
    # FP8: add reads two 1-byte inputs and writes one, I = 1/3, rate 3.35 TB/s / 3 = 1.117
    # TFLOP/s; the GEMM, I = 2 x 4096^3 / (3 x 4096^2 x 1 B) = 2731, sits at the FP8 peak
    # 1978.9 TFLOP/s, the roof drawn at FP8 (the BF16 bound would put it at 989.4)
    named = [("add", add(N, "fp8")), ("gemm", gemm(4096, 4096, 4096, "fp8"))]
    fig = summary.recap_figure(named, H100, title="fp8", precision="fp8")
    points = {
        a.get_label(): list(a.get_offsets()[0])
        for a in fig.axes[0].collections
        if a.get_label() in ("add", "gemm")
    }
    assert points["add"] == pytest.approx([1 / 3, 3.35 / 3])
    assert points["gemm"] == pytest.approx([2 * 4096 / 3, 1978.9])
    plt.close(fig)
