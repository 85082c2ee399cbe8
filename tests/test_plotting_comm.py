"""The collectives' figures draw the models' numbers (roofline_book.present.plotting.comm)."""

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book.present import plotting  # noqa: E402

ONE_VALUE: list = [(1.0,)]  # a quartile pair with one value


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_collective_times_draws_the_alpha_beta_time(ax):
    # ring all-reduce on 4 ranks, 100 GB/s, 10 us a step: 6 steps = 60 us, plus 1.5 x S / B
    line = plotting.collective_times(ax, "all_reduce", [1e3, 1e9], 4, 100e9, 10e-6)
    assert list(line.get_ydata()) == pytest.approx([60e-6 + 1.5e3 / 100e9, 60e-6 + 15e-3])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_collective_busbw_reaches_the_link(ax):
    # busbw = S / t x 1.5; at 1 TB: 1e12 x 1.5 / (60e-6 + 15 s) = 99.9996 GB/s, nearly the link
    line = plotting.collective_busbw(ax, "all_reduce", [1e3, 1e12], 4, 100e9, 10e-6)
    small, large = line.get_ydata()
    assert small == pytest.approx(1e3 / (60e-6 + 1.5e3 / 100e9) * 1.5 / 1e9)
    assert large == pytest.approx(1.5e12 / (60e-6 + 15) / 1e9)


def test_measured_sizes_spans_the_quartiles(ax):
    bars = plotting.measured_sizes(ax, [8, 64], [2e-4, 3e-4], [(1e-4, 5e-4), (3e-4, 3e-4)])
    segments = bars.lines[2][0].get_segments()
    assert [tuple(seg[:, 1]) for seg in segments] == [
        pytest.approx((1e-4, 5e-4)),
        pytest.approx((3e-4, 3e-4)),
    ]


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda ax: plotting.collective_times(ax, "all_reduce", [], 4, 1e9, 0), "at least one"),
        (lambda ax: plotting.collective_times(ax, "all_reduce", [0], 4, 1e9, 0), "sizes"),
        (lambda ax: plotting.measured_sizes(ax, [8, 16], [1.0]), "one entry per size"),
        (lambda ax: plotting.measured_sizes(ax, [8], [1.0], ONE_VALUE), "one .q1, q3. pair"),
    ],
)
def test_bad_input(ax, call, match):
    with pytest.raises(ValueError, match=match):
        call(ax)
