"""The roofline model: attainable performance, the ridge point, bounds and achieved performance.

With peak compute ``P`` (FLOP/s), memory bandwidth ``B`` (byte/s) and
arithmetic intensity ``I`` (FLOP/byte), a kernel can run at most at

.. math:: P_{\\text{attainable}}(I) = \\min(P,\\; B I).

The two roofs meet at the ridge point ``I* = P / B``: a kernel left of it is
memory-bound, right of it compute-bound.

Examples
--------
>>> ridge_point(100e12, 1e12)
100.0
>>> attainable(1 / 6, 100e12, 1e12) / 1e12          # the BF16 add: 1/6 TFLOP/s
0.16666666666666666
>>> attainable(1365.0, 100e12, 1e12) / 1e12         # a 4096^3 BF16 GEMM hits the flat roof
100.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from . import _validate
from .dtypes import Precision, bytes_per_element
from .ops import Cost

Bound = Literal["memory", "compute"]


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity at which the two roofs meet, ``P / B`` (FLOP/byte).

    Parameters
    ----------
    peak_flops : float
        Peak compute (FLOP/s), > 0.
    bandwidth : float
        Memory bandwidth (byte/s), > 0.

    Examples
    --------
    100 TFLOP/s over 1 TB/s:

    >>> ridge_point(100e12, 1e12)
    100.0
    """
    return _validate.positive("peak_flops", peak_flops) / _validate.positive("bandwidth", bandwidth)


def attainable(intensity, peak_flops: float, bandwidth: float):
    """Attainable performance ``min(P, B * I)`` (FLOP/s).

    Parameters
    ----------
    intensity : float or array_like
        Arithmetic intensity (FLOP/byte), finite and >= 0.
    peak_flops, bandwidth : float
        Peak compute (FLOP/s) and memory bandwidth (byte/s).

    Returns
    -------
    float or numpy.ndarray
        A float for a scalar intensity, an array of the same shape otherwise.

    Examples
    --------
    >>> attainable([1, 10, 100, 1000], 100e12, 1e12) / 1e12
    array([  1.,  10., 100., 100.])
    """
    peak = _validate.positive("peak_flops", peak_flops)
    band = _validate.positive("bandwidth", bandwidth)
    values = _validate.non_negative_array("intensity", intensity)
    with np.errstate(over="ignore"):  # B * I past 1e308 is inf, and min(P, inf) = P
        result = np.minimum(peak, band * values)
    return float(result) if result.ndim == 0 else result


def bound(intensity: float, peak_flops: float, bandwidth: float) -> Bound:
    """Which roof limits a kernel of this intensity: ``"memory"`` or ``"compute"``.

    At exactly the ridge point both roofs give the same rate; this returns
    ``"compute"`` there.

    Examples
    --------
    >>> bound(1 / 6, 100e12, 1e12), bound(1365, 100e12, 1e12)
    ('memory', 'compute')
    """
    intensity = _validate.non_negative("intensity", intensity)
    return "memory" if intensity < ridge_point(peak_flops, bandwidth) else "compute"


@dataclass(frozen=True)
class TimeBound:
    """Lower bounds on a kernel's run time (second).

    Attributes
    ----------
    compute : float
        ``FLOPs / P``: the time if memory were free.
    memory : float
        ``bytes / B``: the time if arithmetic were free.
    """

    compute: float
    memory: float

    @property
    def seconds(self) -> float:
        """The larger of the two, which no kernel can beat (second)."""
        return max(self.compute, self.memory)

    @property
    def bound(self) -> Bound:
        """Which lower bound dominates."""
        return "memory" if self.memory > self.compute else "compute"


def time_lower_bound(cost: Cost, peak_flops: float, bandwidth: float) -> TimeBound:
    """Lower bounds ``FLOPs / P`` and ``bytes / B`` on a kernel's time.

    Examples
    --------
    The 4096^3 BF16 GEMM on the example device: 1.37e11 FLOP at 100 TFLOP/s
    is 1.37 ms; its 100 MB of traffic at 1 TB/s is 0.1 ms.

    >>> from roofline_book.ops import gemm
    >>> t = time_lower_bound(gemm(4096, 4096, 4096), 100e12, 1e12)
    >>> round(t.compute * 1e3, 2), round(t.memory * 1e3, 3), t.bound
    (1.37, 0.101, 'compute')
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"cost must be a roofline_book.Cost, got {type(cost).__name__}")
    peak = _validate.positive("peak_flops", peak_flops)
    band = _validate.positive("bandwidth", bandwidth)
    return TimeBound(compute=cost.flops / peak, memory=cost.bytes / band)


def achieved(flops: float, seconds: float) -> float:
    """Achieved performance ``FLOPs / elapsed time`` (FLOP/s).

    Examples
    --------
    >>> achieved(4e13, 1.0) / 1e12
    40.0
    """
    return _validate.non_negative("flops", flops) / _validate.positive("seconds", seconds)


def fraction_of_roof(
    flops: float, seconds: float, intensity: float, peak_flops: float, bandwidth: float
) -> float:
    """Achieved performance as a fraction of the roof at that intensity.

    Examples
    --------
    The reference chapter's case: a roof of 100 TFLOP/s, 40 TFLOP/s achieved.

    >>> fraction_of_roof(40e12, 1.0, 1365.0, 100e12, 1e12)
    0.4
    """
    return achieved(flops, seconds) / attainable(intensity, peak_flops, bandwidth)


def overhead_fraction(cost: Cost, peak_flops: float, bandwidth: float, overhead: float) -> float:
    """Fraction of the roof a kernel can reach when each launch also costs ``overhead`` seconds.

    With the time lower bound ``T`` (:func:`time_lower_bound`), the kernel takes
    at least ``overhead + T``, so it reaches at most ``T / (overhead + T)`` of
    the roof: close to 0 for tiny kernels, close to 1 once ``T`` dwarfs the
    fixed cost.

    Examples
    --------
    A BF16 add of 2^20 elements moves 6 MiB: 6.29 us at 1 TB/s, against 5 us
    of overhead, so 6.29 / 11.29 of the roof:

    >>> from roofline_book.ops import add
    >>> round(overhead_fraction(add(2**20), 100e12, 1e12, 5e-6), 3)
    0.557
    """
    seconds = time_lower_bound(cost, peak_flops, bandwidth).seconds
    return seconds / (_validate.non_negative("overhead", overhead) + seconds)


# --------------------------------------------------------------------------
# Where a GEMM reaches a ridge point


def gemm_tokens_to_ridge(ridge: float, k: int, n: int, dtype: Precision = "bf16") -> float:
    """Tokens ``M`` at which a linear layer, ``(M x k) @ (k x n)``, reaches intensity ``ridge``.

    With each operand moved once (:func:`roofline_book.ops.gemm`) the layer's
    intensity is ``I(M) = 2MKN / (s (MK + KN + MN))`` (FLOP/byte). It rises
    with ``M`` toward ``2KN / (s (K + N))``; setting ``I(M) = I*`` gives

    .. math:: M^{*} = \\frac{I^{*} s K N}{2KN - I^{*} s (K + N)} .

    Parameters
    ----------
    ridge : float
        Target intensity ``I*`` (FLOP/byte), > 0; usually a device's ridge
        point (:meth:`roofline_book.hardware.Hardware.ridge_point`).
    k, n : int
        Input and output features of the layer (the weight is ``k x n``), each >= 1.
    dtype : str or torch.dtype
        Precision of activations, weight and output (``s`` bytes per element).

    Returns
    -------
    float
        ``M*`` (tokens) as a real number; the fewest whole tokens that reach
        ``ridge`` are ``math.ceil(M*)``. ``math.inf`` when the limit
        ``2KN / (s (K + N))`` is not above ``ridge``: no token count gets there.

    Examples
    --------
    A 4096 x 4096 BF16 weight on the example device (ridge 100 FLOP/byte):
    ``M* = 100 * 2 * 4096**2 / (2 * 4096**2 - 100 * 2 * 8192) = 409600 / 3896``.

    >>> m_star = gemm_tokens_to_ridge(100.0, 4096, 4096, "bf16")
    >>> round(m_star, 2)
    105.13
    >>> from roofline_book.ops import gemm
    >>> gemm(105, 4096, 4096).intensity < 100 <= gemm(106, 4096, 4096).intensity
    True

    The limit here is ``2 * 4096**2 / (2 * 8192) = 2048`` FLOP/byte; a ridge
    at or above it is never reached:

    >>> gemm_tokens_to_ridge(2048.0, 4096, 4096, "bf16")
    inf
    """
    ridge = _validate.positive("ridge", ridge)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    s = bytes_per_element(dtype)
    denominator = 2 * k * n - ridge * s * (k + n)
    return ridge * s * k * n / denominator if denominator > 0 else math.inf


def square_gemm_size_to_ridge(ridge: float, dtype: Precision = "bf16") -> float:
    """Edge ``n`` at which a square GEMM, ``M = K = N = n``, reaches intensity ``ridge``.

    A square GEMM's intensity is ``2n / (3s)`` (FLOP/byte), so

    .. math:: n^{*} = \\frac{3 s I^{*}}{2} .

    Parameters
    ----------
    ridge : float
        Target intensity ``I*`` (FLOP/byte), > 0; usually a device's ridge point.
    dtype : str or torch.dtype
        Precision of the three matrices (``s`` bytes per element).

    Returns
    -------
    float
        ``n*`` (elements) as a real number; the smallest whole size that
        reaches ``ridge`` is ``math.ceil(n*)``.

    Examples
    --------
    The example device's ridge, 100 FLOP/byte, in BF16: ``3 * 2 * 100 / 2 = 300``.

    >>> square_gemm_size_to_ridge(100.0, "bf16")
    300.0
    >>> from roofline_book.ops import gemm
    >>> gemm(300, 300, 300, "bf16").intensity
    100.0

    Halving ``s`` halves ``n*``:

    >>> square_gemm_size_to_ridge(100.0, "fp8")
    150.0
    """
    ridge = _validate.positive("ridge", ridge)
    return 3 * bytes_per_element(dtype) * ridge / 2
