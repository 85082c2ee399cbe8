"""The shape-and-precision page's helpers (roofline_book.book.precision), checked against hand
arithmetic of the GEMM roofline: FLOPs 2MKN, ideal traffic s(MK + KN + MN) bytes, the datasheet
dense peaks the catalog holds (H100 SXM: BF16 989.4, TF32 494.7, FP32 67 TFLOP/s, HBM3 3.35 TB/s,
132 SMs; A100 SXM 80GB: BF16 312, FP32 19.5 TFLOP/s, 2039 GB/s; H200: 4.8 TB/s) and 128 x 128
output tiles."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import hardware  # noqa: E402
from roofline_book.book import precision as bp  # noqa: E402

H100, A100 = hardware("h100-sxm"), hardware("a100-sxm")
BF16, TF32, FP32, HBM = 989.4e12, 494.7e12, 67e12, 3.35e12


pytestmark = pytest.mark.usefixtures("chinese_figures")


def test_gemm_on_small_bf16_gemm():
    g = bp.gemm_on(H100, 32, 128, 128)
    # 2 x 32 x 128 x 128 = 1_048_576 FLOP; 2 B x (4096 + 16384 + 4096) = 49_152 B
    assert (g.cost.flops, g.cost.bytes) == (1_048_576, 49_152)
    assert g.intensity == pytest.approx(64 / 3)
    assert g.roof == pytest.approx(64 / 3 * HBM)  # below the ridge 989.4 / 3.35 = 295
    assert g.fraction == pytest.approx(64 / 3 * HBM / BF16)
    assert g.time.bound == "memory"
    assert g.time.seconds == pytest.approx(49_152 / HBM)  # 14.67 ns
    assert g.waves.tiles == 1 and g.busy == pytest.approx(1 / 132)


def test_gemm_on_fp32_data_computed_in_tf32():
    g = bp.gemm_on(H100, 512, 512, 512, "fp32", compute="tf32")
    # 4 B a value: I = 2 x 512 / (3 x 4) = 85.33, below TF32's ridge 494.7 / 3.35 = 147.7
    assert g.intensity == pytest.approx(256 / 3)
    assert g.peak == pytest.approx(TF32)
    assert g.roof == pytest.approx(256 / 3 * HBM)
    assert g.time.bound == "memory"
    assert g.waves.tiles == 16 and g.busy == pytest.approx(16 / 132)  # 4 x 4 tiles


def test_peak_ratio_and_device_figures():
    assert bp.peak_ratio(A100) == pytest.approx(312 / 19.5)  # = 16
    assert bp.peak_ratio(H100) == pytest.approx(BF16 / FP32)
    f = bp.device_figures(H100, "h100")
    assert f == pytest.approx(
        {
            "h100_peak_ratio": 989.4 / 67,
            "ridge_h100_bf16": 989.4 / 3.35,
            "ridge_h100_fp32": 67 / 3.35,  # = 20
            "h100_tf32_tf": 494.7,
            "h100_fp32_tf": 67,
            "h100_bw_tb": 3.35,
        }
    )


def test_shape_contrast_small_and_large():
    f = bp.shape_contrast(H100, (32, 128, 128), (4096, 4096, 4096))
    # large: I = 2 x 4096 / (3 x 2) = 1365.3, far right of the ridge: the full peak
    assert f["small_I"] == pytest.approx(64 / 3) and f["big_I"] == pytest.approx(4096 / 3)
    assert f["small_frac"] == pytest.approx(64 / 3 * 3.35 / 989.4)  # 7.2 %
    assert f["big_frac"] == 1.0
    assert f["small_ns"] == pytest.approx(49_152 / HBM * 1e9)
    # large: 2 x 4096**3 FLOP / 989.4e12 = 138.9 us
    assert f["big_vs_small_time"] == pytest.approx(2 * 4096**3 / BF16 / (49_152 / HBM))


def test_tile_figures_waves_on_132_sms():
    f = bp.tile_figures(H100, (32, 128), (4096, 4096), 1536, tile=(128, 128))
    assert f["sms"] == 132
    # 32 x 128: one tile, a quarter of it real output (4096 of 16384 cells)
    assert (f["small_tiles"], f["small_tile_use"]) == (1, 0.25)
    assert f["small_busy"] == pytest.approx(1 / 132)
    # 4096^2: 32 x 32 = 1024 tiles = 7 x 132 + 100: 8 waves, 1024 / (8 x 132)
    assert (f["big_tiles"], f["big_waves_ceil"], f["big_last_tiles"]) == (1024, 8, 100)
    assert f["big_waves"] == pytest.approx(1024 / 132)
    assert f["big_last_fill"] == pytest.approx(100 / 132)
    assert f["big_wave_eff"] == pytest.approx(1024 / 1056)
    # 1536^2: 12 x 12 = 144 tiles = 132 + 12: 2 waves, 144 / 264
    assert (f["odd_n"], f["odd_tiles"], f["odd_waves"], f["odd_last"]) == (1536, 144, 2, 12)
    assert f["odd_wave_eff"] == pytest.approx(144 / 264)


def test_precision_switch_moves_a_mid_gemm_across_the_ridge():
    f = bp.precision_switch(H100, (256, 256, 256))
    # FP32: I = 2 x 256 / 12 = 42.7 > 20: the FP32 peak; BF16: I = 85.3 < 295: on the slope
    assert f["mid_I_fp32"] == pytest.approx(128 / 3) and f["mid_I_bf16"] == pytest.approx(256 / 3)
    assert f["mid_roof_fp32_tf"] == pytest.approx(67)
    assert f["mid_roof_bf16_tf"] == pytest.approx(256 / 3 * 3.35)  # 285.9 TFLOP/s
    assert f["mid_frac_bf16"] == pytest.approx(256 / 3 * 3.35 / 989.4)  # 28.9 %


def test_exercise_answers_worked_by_hand():
    a = bp.exercise_answers(
        H100,
        small=(32, 128, 128),
        linear=(256, 4096, 4096),
        cube=(512, 512, 512),
        decode=(8, 4096, 4096),
        largest=4096,
    )
    # q1, FP32: I = 2 x 32 x 128 x 128 / (4 x 24576) = 10.67 < 20; roof 10.67 x 3.35 = 35.7
    assert a["ans_q1_I"] == pytest.approx(32 / 3) and a["ans_q1_bound"] == "memory"
    assert a["ans_q1_roof_tf"] == pytest.approx(32 / 3 * 3.35)
    assert a["ans_q1_frac"] == pytest.approx(32 / 3 * 3.35 / 67)
    assert a["ans_q1_roof_bf16_tf"] == pytest.approx(64 / 3 * 3.35)  # half the bytes
    # q2: 2 x 256 x 4096^2 FLOP / (2 x (2 x 256 x 4096 + 4096^2)) B = 227.6 < 295
    i2 = 2 * 256 * 4096**2 / (2 * (2 * 256 * 4096 + 4096**2))
    assert a["ans_q2_I"] == pytest.approx(i2) and a["ans_q2_bound"] == "memory"
    assert a["ans_q2_roof_frac"] == pytest.approx(i2 * 3.35 / 989.4)
    assert a["ans_q2_tiles"] == 64 and a["ans_q2_busy"] == pytest.approx(64 / 132)  # 2 x 32
    # q3: I = 85.3 both ways; FP32 compute-bound at 67, TF32 memory-bound at 85.3 x 3.35
    assert a["ans_q3_I"] == pytest.approx(256 / 3)
    assert (a["ans_q3_bound_fp32"], a["ans_q3_bound_tf32"]) == ("compute", "memory")
    assert a["ans_q3_roof_fp32"] == pytest.approx(67)
    assert a["ans_q3_roof_tf32"] == pytest.approx(256 / 3 * 3.35)
    assert a["ans_q3_gain"] == pytest.approx(256 / 3 * 3.35 / 67)  # 4.27, not 7.38
    assert a["ans_q3_peak_ratio"] == pytest.approx(494.7 / 67)
    # q4: 2 x 8 x 4096^2 FLOP over 2 x (2 x 8 x 4096 + 4096^2) = 33_685_504 B
    assert a["ans_q4_I"] == pytest.approx(2 * 8 * 4096**2 / 33_685_504)  # 7.97
    assert a["ans_q4_frac"] == pytest.approx(2 * 8 * 4096**2 / 33_685_504 * 3.35 / 989.4)
    assert a["ans_q4_us"] == pytest.approx(33_685_504 / HBM * 1e6)  # 10.06 us
    assert a["ans_q4_tiles"] == 32 and a["ans_q4_busy"] == pytest.approx(32 / 132)
    # q5: both compute-bound (682.7 > 20, 1365.3 > 295): the time ratio is the peak ratio
    assert a["ans_q5_n"] == 4096 and a["ans_q5_bounds"] == "compute/compute"
    assert a["ans_q5_ratio"] == pytest.approx(989.4 / 67)
    assert a["ans_q5_I_fp32"] == pytest.approx(4096 / 6)
    assert a["ans_q5_I_bf16"] == pytest.approx(4096 / 3)


def test_device_rooflines_figure_draws_each_flat_top_and_ridge():
    fig = bp.device_rooflines_figure(
        [(H100, "H100 SXM"), (A100, "A100 SXM")], {"bf16": "-", "fp32": "--"}, title="两代 GPU"
    )
    ax = fig.axes[0]
    roofs = [line for line in ax.lines if not line.get_label().startswith("_")]
    assert [r.get_label() for r in roofs] == [
        "H100 SXM BF16",
        "H100 SXM FP32",
        "A100 SXM BF16",
        "A100 SXM FP32",
    ]
    assert [r.get_linestyle() for r in roofs] == ["-", "--", "-", "--"]
    # flat tops in TFLOP/s: the dense peaks
    assert [max(r.get_ydata()) for r in roofs] == pytest.approx([989.4, 67, 312, 19.5])
    # the dotted ridge markers at P / B: 295.3, 20, 312 / 2.039 = 153.0, 19.5 / 2.039 = 9.56
    ridges = [line.get_xdata()[0] for line in ax.lines if line.get_label().startswith("_")]
    assert ridges == pytest.approx([989.4 / 3.35, 20, 312 / 2.039, 19.5 / 2.039])
    assert ax.get_ylim() == (1, 2000) and ax.get_title() == "两代 GPU"
    assert ax.get_xlabel() == "算术强度 [FLOP/byte]"


def test_square_fraction_figure_curves():
    fig = bp.square_fraction_figure(H100, [16, 8192], ("fp32", "bf16"), title="方阵")
    fp32, bf16 = fig.axes[0].lines
    # n = 16: I = 2 x 16 / (3 s); FP32 (s = 4) 2.67 x 3.35 / 67, BF16 (s = 2) 5.33 x 3.35 / 989.4
    assert list(fp32.get_ydata()) == pytest.approx([8 / 3 * 3.35 / 67, 1.0])
    assert list(bf16.get_ydata()) == pytest.approx([16 / 3 * 3.35 / 989.4, 1.0])
    assert list(fp32.get_xdata()) == [16, 8192]
    assert fp32.get_label() == "FP32，ridge point 为 20 FLOP/byte"
    assert fig.axes[0].get_ylabel() == "可达性能 / 该精度峰值"
