"""The roofline model itself."""

import numpy as np
import pytest

from roofline_book import achieved, attainable, bound, gemm, ridge_point, time_lower_bound
from roofline_book.roofline import fraction_of_roof

P, B = 100e12, 1e12  # the reference chapter's example device


def test_ridge_point_example():
    assert ridge_point(P, B) == 100.0


def test_attainable_scalar_and_array():
    assert attainable(50, P, B) == 50e12
    assert attainable(500, P, B) == P
    assert isinstance(attainable(1, P, B), float)
    grid = np.logspace(-2, 4, 7)
    out = attainable(grid, P, B)
    assert out.shape == grid.shape
    np.testing.assert_allclose(out, np.minimum(P, B * grid))
    assert attainable([[1, 2], [3, 4]], P, B).shape == (2, 2)


def test_attainable_is_monotone_and_capped():
    grid = np.logspace(-3, 5, 200)
    out = attainable(grid, P, B)
    assert np.all(np.diff(out) >= 0) and out.max() == P


def test_bounds_of_reference_operators():
    assert bound(1 / 6, P, B) == "memory"
    assert bound(gemm(4096, 4096, 4096).intensity, P, B) == "compute"
    assert bound(100, P, B) == "compute"  # at the ridge, both roofs agree
    assert bound(99.999, P, B) == "memory"


def test_time_lower_bound():
    c = gemm(4096, 4096, 4096)
    t = time_lower_bound(c, P, B)
    assert t.compute == pytest.approx(137_438_953_472 / 100e12)
    assert t.memory == pytest.approx(3 * 2 * 4096**2 / 1e12)
    assert t.seconds == t.compute and t.bound == "compute"
    with pytest.raises(TypeError, match="Cost"):
        time_lower_bound(5, P, B)


def test_achieved_forty_of_a_hundred():
    assert achieved(40e12, 1.0) == 40e12
    assert fraction_of_roof(40e12, 1.0, 1365, P, B) == pytest.approx(0.4)
    # memory-bound case: the roof at I = 1/6 is 1/6 TFLOP/s
    assert fraction_of_roof(1e11, 1.0, 1 / 6, P, B) == pytest.approx(0.6)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_intensity(bad):
    with pytest.raises(ValueError, match="intensity"):
        attainable(bad, P, B)
    with pytest.raises(ValueError, match="intensity"):
        attainable([1.0, bad], P, B)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"peak_flops": 0}, "peak_flops"),
        ({"bandwidth": -1}, "bandwidth"),
        ({"peak_flops": float("nan")}, "peak_flops"),
    ],
)
def test_bad_device_figures(kwargs, match):
    args = {"intensity": 1.0, "peak_flops": P, "bandwidth": B} | kwargs
    with pytest.raises(ValueError, match=match):
        attainable(**args)


def test_type_errors():
    with pytest.raises(TypeError, match="intensity"):
        attainable("10", P, B)
    with pytest.raises(TypeError, match="intensity"):
        attainable(True, P, B)
    with pytest.raises(TypeError, match="peak_flops"):
        ridge_point(True, B)
    with pytest.raises(TypeError, match="intensity"):
        attainable(np.array([True, False]), P, B)
