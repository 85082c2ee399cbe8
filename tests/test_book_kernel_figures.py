"""The GEMM and low-FLOP chapters' figures (roofline_book.book.kernel_figures), checked against
datasheet arithmetic: H100 SXM dense BF16 989.4, FP8 1978.9, FP32 67 TFLOP/s, HBM3 3.35 TB/s;
A100 SXM BF16 312 TFLOP/s, 2.039 TB/s; H100's special function units 16 per clock per SM x
132 SMs x 1.98 GHz = 4.18176e12 evaluations/s."""

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import adamw, add, gelu, gemm, relu, softmax  # noqa: E402
from roofline_book.book import kernel_figures as kf  # noqa: E402

H100_BW, A100_BW = 3.35e12, 2.039e12
RIDGES = {"FP8": 1978.9e12 / H100_BW, "BF16": 989.4e12 / H100_BW, "FP32": 67e12 / H100_BW}


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _texts(fig):
    return {t.get_text(): t for t in fig.axes[0].texts}


def test_square_gemm_figure_marks_each_precisions_crossing():
    fig = kf.square_gemm_figure([2**p for p in range(4, 15)])
    texts = _texts(fig)
    # 591, 295 and 20 FLOP/byte on H100 SXM; 312 / 2.039 = 153 on A100 SXM
    for name, ridge in RIDGES.items():
        assert f"H100 {name} 的 ridge（{ridge:.0f}）" in texts
    assert f"A100 BF16 的 ridge（{312e12 / A100_BW:.0f}）" in texts
    # the crosses sit at n* = 3 s I* / 2: FP8 886.1, BF16 886.0, FP32 120
    crosses = sorted(
        tuple(c.get_offsets()[0]) for c in fig.axes[0].collections if len(c.get_offsets()) == 1
    )
    expected = sorted(
        (3 * s * RIDGES[d] / 2, RIDGES[d]) for d, s in (("FP8", 1), ("BF16", 2), ("FP32", 4))
    )
    assert [v for xy in crosses for v in xy] == pytest.approx([v for xy in expected for v in xy])
    # FP32 crosses at n = 120, left of the axis' middle (sqrt(16 * 16384) = 512): its words go
    # to the right edge, away from the curves; BF16 crosses right of it, its words at the left.
    assert texts["H100 FP32 的 ridge（20）"].xy[0] > 0.5 > texts["H100 BF16 的 ridge（295）"].xy[0]


def test_token_intensity_figure_draws_m_star_only_where_there_is_one():
    fig = kf.token_intensity_figure([2**p for p in range(17)], 4096, 4096)
    texts = set(_texts(fig))
    # M* = 4096 R / (4096 - 2R): 345.1 on H100 (R = 295.3), 165.4 on A100 (R = 153.0)
    r_h, r_a = RIDGES["BF16"], 312e12 / A100_BW
    assert f"M* = {4096 * r_h / (4096 - 2 * r_h):.0f}" == "M* = 345" and "M* = 345" in texts
    assert f"M* = {4096 * r_a / (4096 - 2 * r_a):.0f}" == "M* = 165" and "M* = 165" in texts
    assert "极限 2KN/(s(K+N)) = 2048" in texts  # 2 * 4096^2 / (2 * 8192)
    # a 256 x 256 BF16 weight tops out at 2 * 256^2 / (2 * 512) = 128 FLOP/byte, below both
    # ridges: no M* line at all
    small = set(_texts(kf.token_intensity_figure([2**p for p in range(12)], 256, 256)))
    assert not any(t.startswith("M*") for t in small)
    assert "极限 2KN/(s(K+N)) = 128" in small


def test_adamw_traffic_figure_bars_are_bytes_per_parameter():
    params = 7 * 1024
    fp32 = {i: adamw(params, i, tensors=7) for i in ("loop", "foreach", "fused")}
    fig = kf.adamw_traffic_figure({"全 FP32": fp32}, params)
    # fused reads theta, grad, m, v and writes theta, m, v: 7 x 4 = 28 bytes; the loop 80
    totals = [t.get_text() for t in fig.axes[0].texts]
    assert totals == ["80", "80", "28"]
    assert fig.get_suptitle() == "AdamW 一步：各实现每个参数都是 14 次运算"


def test_time_bars_figure_returns_each_bound():
    fig, bounds = kf.time_bars_figure([("add", add(2**24)), ("gemm", gemm(4096, 4096, 4096))])
    assert fig.axes[0].get_xlabel() == "H100 SXM 上的时间下界 [µs]"
    (_, t_add), (_, t_gemm) = bounds
    assert t_add.resource == "hbm" and t_add.seconds == pytest.approx(6 * 2**24 / H100_BW)
    assert t_gemm.resource == "matrix" and t_gemm.seconds == pytest.approx(2 * 4096**3 / 989.4e12)


def test_closest_to_compute_names_the_ties_and_their_unit():
    special = 16 * 132 * 1.98e9
    named = [("relu", relu(2**24)), ("GELU", gelu(2**24)), ("softmax", softmax(4096, 4096))]
    closest = kf.closest_to_compute(named)
    # one tanh (GELU) or exp (softmax) per 2 bytes read + 2 written: HBM takes 4 * 4.18 / 3.35
    # = 4.99 times as long as the special function units
    assert closest.names == ("GELU", "softmax")
    assert closest.ratio == pytest.approx(4 * special / H100_BW)
    assert (closest.resource, closest.special_per_byte) == ("special", 0.25)
    with pytest.raises(ValueError, match="no compute"):
        kf.closest_to_compute([("copy", add(16) * 0)])
