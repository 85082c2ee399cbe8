"""The roofline model itself."""

import math

import numpy as np  # intensity grids for attainable()
import pytest

from roofline_book import (
    achieved,
    attainable,
    bound,
    gemm,
    gemm_tokens_to_ridge,
    ridge_point,
    square_gemm_size_to_ridge,
    time_lower_bound,
)
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


# --------------------------------------------------------------------------
# Where a GEMM reaches a ridge point

H100_RIDGE = 989.5e12 / 3.35e12  # BF16 dense peak over bandwidth, about 295.4 FLOP/byte


def test_gemm_tokens_to_ridge_example_device():
    # K = N = 4096, s = 2, ridge 100: 100 * 2 * 4096^2 / (2 * 4096^2 - 100 * 2 * 8192)
    m_star = gemm_tokens_to_ridge(100.0, 4096, 4096, "bf16")
    assert m_star == pytest.approx(409_600 / 3_896)  # about 105.13
    assert gemm(105, 4096, 4096).intensity < 100 <= gemm(106, 4096, 4096).intensity


@pytest.mark.parametrize(
    "ridge,k,n,dtype,s",
    [
        (H100_RIDGE, 4096, 4096, "bf16", 2),  # about 345.2 tokens
        (H100_RIDGE, 4096, 11008, "bf16", 2),  # about 327.8
        (H100_RIDGE, 4096, 4096, "fp32", 4),
        (50.0, 1024, 256, "fp8", 1),
    ],
)
def test_gemm_tokens_to_ridge_solves_the_intensity(ridge, k, n, dtype, s):
    m_star = gemm_tokens_to_ridge(ridge, k, n, dtype)
    assert m_star == pytest.approx(ridge * s * k * n / (2 * k * n - ridge * s * (k + n)))
    first = math.ceil(m_star)
    assert gemm(first, k, n, dtype).intensity >= ridge
    assert gemm(first - 1, k, n, dtype).intensity < ridge


def test_gemm_tokens_to_ridge_h100_values():
    # 4096 R / (4096 - 2R) with R about 295.4: 345.15 tokens, so 346 whole tokens
    assert gemm_tokens_to_ridge(H100_RIDGE, 4096, 4096) == pytest.approx(345.1529, rel=1e-6)
    assert math.ceil(gemm_tokens_to_ridge(H100_RIDGE, 4096, 4096)) == 346


def test_gemm_tokens_to_ridge_unreachable_is_inf():
    # the limit 2KN / (s (K + N)) is 2 * 4096^2 / (2 * 8192) = 2048 FLOP/byte in BF16
    assert gemm_tokens_to_ridge(2047.0, 4096, 4096) > 1e6
    assert gemm_tokens_to_ridge(2048.0, 4096, 4096) == math.inf
    assert gemm_tokens_to_ridge(5000.0, 4096, 4096) == math.inf
    # a narrow FP32 layer, limit 2 * 64 * 64 / (4 * 128) = 16 FLOP/byte
    assert gemm_tokens_to_ridge(16.0, 64, 64, "fp32") == math.inf
    # half the limit: 8 * 4 * 64^2 / (2 * 64^2 - 8 * 4 * 128) = 131_072 / 4_096
    assert gemm_tokens_to_ridge(8.0, 64, 64, "fp32") == pytest.approx(32.0)


@pytest.mark.parametrize(
    "dtype,s,first",
    [("fp8", 1, 444), ("bf16", 2, 887), ("fp32", 4, 1773)],
)
def test_square_gemm_size_to_ridge(dtype, s, first):
    n_star = square_gemm_size_to_ridge(H100_RIDGE, dtype)
    assert n_star == pytest.approx(3 * s * H100_RIDGE / 2)  # 443.1, 886.1, 1772.2
    assert math.ceil(n_star) == first
    assert gemm(first, first, first, dtype).intensity >= H100_RIDGE
    assert gemm(first - 1, first - 1, first - 1, dtype).intensity < H100_RIDGE


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: gemm_tokens_to_ridge(0, 64, 64), ValueError, "^ridge must be"),
        (lambda: gemm_tokens_to_ridge(float("inf"), 64, 64), ValueError, "^ridge must be"),
        (lambda: gemm_tokens_to_ridge("100", 64, 64), TypeError, "^ridge must be"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: gemm_tokens_to_ridge(100, 0, 64), ValueError, "^k must be an integer >= 1"),
        (lambda: gemm_tokens_to_ridge(100, 64, 6.4), TypeError, "^n must be an integer >= 1"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: gemm_tokens_to_ridge(100, 64, 64, "bf17"), ValueError, "dtype 'bf17'"),
        (lambda: square_gemm_size_to_ridge(-1.0), ValueError, "^ridge must be"),
        (lambda: square_gemm_size_to_ridge(True), TypeError, "^ridge must be"),
        (lambda: square_gemm_size_to_ridge(100, "bf17"), ValueError, "dtype 'bf17'"),
    ],
)
def test_ridge_solvers_reject(call, error, match):
    with pytest.raises(error, match=match):
        call()
