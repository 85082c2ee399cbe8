"""The figure helpers: what they draw, where, and their errors."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import add, gemm, plotting  # noqa: E402


@pytest.fixture
def ax():
    plotting.use_style()
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_roofline_line_follows_the_model(ax):
    line, ridge_line, ridge_dot = plotting.roofline(ax, 100e12, 1e12, label="example")
    x, y = line.get_data()
    np.testing.assert_allclose(y, np.minimum(100, x))  # TFLOP/s: min(P, B * I) / 1e12
    assert 100.0 in x  # the ridge itself is a vertex of the line
    assert ridge_line.get_xdata()[0] == 100.0
    np.testing.assert_allclose(ridge_dot.get_offsets(), [[100.0, 100.0]])
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_roofline_units_and_range(ax):
    (line,) = plotting.roofline(ax, 2e11, 2e10, unit="GFLOP/s", intensity_range=(1e3, 1e4))
    assert np.all(line.get_ydata() == 200.0)  # all right of the ridge (10 FLOP/byte): flat roof
    with pytest.raises(ValueError, match="unit"):
        plotting.roofline(ax, 1e12, 1e12, unit="TB")
    with pytest.raises(ValueError, match="increasing"):
        plotting.roofline(ax, 1e12, 1e12, intensity_range=(10, 1))
    with pytest.raises(ValueError, match="intensity_range"):
        plotting.roofline(ax, 1e12, 1e12, intensity_range=(0, 1))


def test_points_sit_on_the_roof(ax):
    drawn = plotting.points(
        ax, [("add", add(2**20)), ("gemm", gemm(4096, 4096, 4096))], 100e12, 1e12, annotate=False
    )
    (add_xy,), (gemm_xy,) = (d.get_offsets() for d in drawn)
    np.testing.assert_allclose(add_xy, [1 / 6, 1 / 6])  # memory roof: B * I in TFLOP/s
    np.testing.assert_allclose(gemm_xy, [8192 / 6, 100.0])  # flat roof


def test_measured_and_gemm_intensity(ax):
    (dot,) = plotting.measured(ax, [("x", 2.0, 3e12)], annotate=False)
    np.testing.assert_allclose(dot.get_offsets(), [[2.0, 3.0]])
    (curve,) = plotting.gemm_intensity(ax, [64, 128], "fp32")
    np.testing.assert_allclose(curve.get_ydata(), [2 * 64 / 12, 2 * 128 / 12])
    (tokens,) = plotting.gemm_intensity(ax, [1, 2], "bf16", k=8, n=8)
    np.testing.assert_allclose(
        tokens.get_ydata(), [gemm(1, 8, 8).intensity, gemm(2, 8, 8).intensity]
    )
    with pytest.raises(TypeError, match="sizes"):
        plotting.gemm_intensity(ax, [64.0], "fp32")


def test_style_is_okabe_ito_on_white():
    plotting.use_style()
    colors = [c["color"].lower() for c in matplotlib.rcParams["axes.prop_cycle"]]
    assert colors[0] == plotting.PALETTE["blue"].lower()
    assert matplotlib.rcParams["savefig.facecolor"] == "white"
    assert matplotlib.rcParams["svg.hashsalt"] == "roofline-book"
