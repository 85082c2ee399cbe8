"""The roofline model: attainable performance, the ridge point, bounds and achieved performance.

With peak compute ``P`` (FLOP/s), memory bandwidth ``B`` (byte/s) and
arithmetic intensity ``I`` (FLOP/byte), a kernel can run at most at

.. math:: P_{\\text{attainable}}(I) = \\min(P,\\; B I).

The two roofs meet at the ridge point ``I* = P / B``: a kernel left of it is
memory-bound, right of it compute-bound.

A real device has more than two roofs: a flat one per compute unit and
precision (matrix, vector, special functions) and a slope per memory level
(HBM, L2). :func:`time_bound` holds a :class:`~roofline_book.ops.Cost` to
every ceiling it uses, on a catalog device: its time lower bound is the
largest of the times each resource needs, and the bound names that resource.

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
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np

from . import _validate
from .dtypes import Precision, bytes_per_element
from .hardware import COMPUTE_UNITS, MEMORY_LEVELS, Hardware
from .ops import Cost

Bound = Literal["memory", "compute"]

COMPUTE_RESOURCES = ("compute", *COMPUTE_UNITS)
MEMORY_RESOURCES = ("memory", *MEMORY_LEVELS)


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
    """Lower bounds on a kernel's run time, one per resource it uses (second).

    Attributes
    ----------
    by_resource : mapping of str to float
        Seconds each resource needs: matrix FLOPs over the matrix peak,
        vector lane slots over the lane rate, special-function evaluations
        over their rate (``"matrix"``, ``"vector"``, ``"special"``;
        ``"compute"`` in the two-roof model), or bytes over a level's
        bandwidth (``"hbm"``, ``"l2"``; ``"memory"`` in the two-roof model).

    Examples
    --------
    >>> t = TimeBound({"matrix": 2e-3, "hbm": 1e-3})
    >>> t.seconds, t.resource, t.bound
    (0.002, 'matrix', 'compute')
    """

    by_resource: Mapping[str, float]

    def __post_init__(self) -> None:
        known = COMPUTE_RESOURCES + MEMORY_RESOURCES
        if not self.by_resource:
            raise ValueError("by_resource must name at least one resource")
        for name, seconds in self.by_resource.items():
            if name not in known:
                raise ValueError(f"resource must be one of {', '.join(known)}; got {name!r}")
            _validate.non_negative(f"by_resource[{name!r}]", seconds)
        object.__setattr__(self, "by_resource", MappingProxyType(dict(self.by_resource)))

    @property
    def seconds(self) -> float:
        """The largest of the times, which no kernel can beat (second)."""
        return max(self.by_resource.values())

    @property
    def resource(self) -> str:
        """The resource that sets the bound; compute wins a tie, as at the ridge point."""
        order = [r for r in COMPUTE_RESOURCES + MEMORY_RESOURCES if r in self.by_resource]
        return max(order, key=lambda r: (self.by_resource[r], -order.index(r)))

    @property
    def compute(self) -> float:
        """The largest compute time, the time if memory were free (second)."""
        return max((v for r, v in self.by_resource.items() if r in COMPUTE_RESOURCES), default=0.0)

    @property
    def memory(self) -> float:
        """The largest memory time, the time if arithmetic were free (second)."""
        return max((v for r, v in self.by_resource.items() if r in MEMORY_RESOURCES), default=0.0)

    @property
    def bound(self) -> Bound:
        """Whether a memory level or a compute unit sets the bound."""
        return "memory" if self.resource in MEMORY_RESOURCES else "compute"


def time_lower_bound(cost: Cost, peak_flops: float, bandwidth: float) -> TimeBound:
    """Lower bounds ``FLOPs / P`` and ``bytes / B`` on a kernel's time: the two-roof model.

    Every FLOP is held to one peak and every byte to one bandwidth, as in the
    reference chapter. For a catalog device, :func:`time_bound` holds each
    unit and memory level to its own ceiling.

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
    return TimeBound({"compute": cost.flops / peak, "memory": cost.bytes / band})


def time_bound(cost: Cost, device: Hardware, dtype: Precision = "bf16") -> TimeBound:
    """The time each of ``device``'s resources needs for ``cost``; the largest is the bound.

    Compute: the matrix FLOPs over the matrix peak for ``dtype``; the vector
    work in lane slots
    (:attr:`Cost.vector_slots <roofline_book.ops.Cost.vector_slots>`: an FMA or
    any other operation takes one) over the lane rate, half the vendor's
    FMA-counted vector peak
    (:meth:`Hardware.vector_op_rate <roofline_book.hardware.Hardware.vector_op_rate>`,
    which takes packed 16-bit math where published); the special-function
    evaluations over their rate. All are at the device's one clock. Memory: the
    compulsory bytes over the HBM bandwidth, assuming a cold L2 (inputs come
    from HBM, outputs go there). Re-reads (``Cost.reread_bytes``) are
    charged to HBM only when their footprint does not fit in the L2; every
    byte, re-read or not, passes the L2, which is charged where the device
    has an L2 bandwidth. Units and levels work at the same time, so the
    kernel needs at least the largest of these times. A device with one peak
    for everything (:func:`roofline_book.hardware.adhoc` without ``vector``)
    has one compute resource, ``"compute"``, that all FLOPs share.

    Examples
    --------
    A BF16 add on H100 SXM runs on the vector units, not the Tensor Cores.
    An add is one lane slot, not an FMA: 1 FLOP at half the packed BF16x2
    peak, 133.8 / 2 = 66.9 T adds/s, against 6 bytes at 3.35 TB/s: the memory
    time is 6 / 3.35 x 66.9 = 120 times longer. In FP32 both halve: 12 bytes
    against 1 FLOP at 67 / 2 = 33.5 T/s, 120 times again:

    >>> from roofline_book import add, attention, gemm, hardware
    >>> h100 = hardware("h100-sxm")
    >>> t = time_bound(add(2**20), h100)
    >>> t.resource, round(t.by_resource["hbm"] / t.by_resource["vector"])
    ('hbm', 120)
    >>> t32 = time_bound(add(2**20, "fp32"), h100, "fp32")
    >>> round(t32.by_resource["hbm"] / t32.by_resource["vector"])
    120

    A large GEMM is held to the matrix units:

    >>> time_bound(gemm(8192, 8192, 8192), h100).resource
    'matrix'

    FlashAttention at head dim 128 re-reads K and V from L2, not HBM (every
    byte is charged to the L2 roof H100 has, measured by others), and its
    exponentials need the special function units:

    >>> fa = time_bound(attention(4, 16, 4096, 4096, 128, sram_bytes=228 * 1024), h100)
    >>> fa.resource, sorted(fa.by_resource)
    ('matrix', ['hbm', 'l2', 'matrix', 'special', 'vector'])
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"cost must be a roofline_book.Cost, got {type(cost).__name__}")
    if not isinstance(device, Hardware):
        raise TypeError(f"device must be a roofline_book.Hardware, got {type(device).__name__}")
    if device.vector_peaks:
        times = {}
        if cost.matrix_flops:
            times["matrix"] = cost.matrix_flops / device.ceiling("matrix", dtype)
        if cost.vector_flops:
            times["vector"] = cost.vector_slots / device.vector_op_rate(dtype)
        if cost.special_flops:
            times["special"] = cost.special_flops / device.ceiling("special", dtype)
    else:  # one peak for every unit (an ad-hoc device): the FLOPs queue on it together
        times = {"compute": cost.flops / device.peak_flops(dtype)}
    cached = device.l2_cache is None or cost.reread_footprint <= device.l2_cache
    hbm_bytes = cost.bytes + (0 if cached else cost.reread_bytes)
    times["hbm"] = hbm_bytes / device.memory_bandwidth
    if device.l2_bandwidth is not None:
        times["l2"] = (cost.bytes + cost.reread_bytes) / device.l2_bandwidth
    return TimeBound(times)


def unit_rates(cost: Cost, time: TimeBound) -> dict[str, float]:
    """Each compute unit's FLOPs over the operator's time lower bound, by unit.

    ``F_u / T`` is the rate unit ``u`` runs at when the operator takes its
    lower bound ``T``; since ``T >= F_u / P_u`` it never exceeds the unit's
    peak ``P_u``. Units with no FLOPs are left out. For ``"special"`` the
    rate is in evaluations/s (one exp is one special FLOP). A device with
    one peak for every unit (its ``time`` has a ``"compute"`` resource) gets
    one rate, ``"compute"``, for all FLOPs.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> from roofline_book.ops import Cost
    >>> h100 = hardware("h100-sxm")
    >>> c = Cost(flops=10**12, bytes_read=10**6, bytes_written=0, vector_flops=10**9)
    >>> rates = unit_rates(c, time_bound(c, h100))          # the matrix units bind
    >>> rates["matrix"] == h100.peak_flops("bf16"), rates["vector"] < h100.ceiling("vector")
    (True, True)
    """
    seconds = time.seconds
    if "compute" in time.by_resource:  # one peak for every unit
        return {"compute": cost.flops / seconds} if cost.flops and seconds else {}
    return {u: f / seconds for u, f in cost.flops_by_unit.items() if f and seconds}


def main_unit(cost: Cost, time: TimeBound) -> str | None:
    """The compute unit that does most of the operator's FLOPs; None when it does none.

    The attainable rate of a table row is reported on this unit
    (:attr:`roofline_book.tables.Row.attainable`):
    the matrix units for a GEMM or FlashAttention, the vector units for an add.
    A tie goes to the first of matrix, vector, special.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> from roofline_book.ops import attention, softmax
    >>> h100 = hardware("h100-sxm")
    >>> [main_unit(c, time_bound(c, h100)) for c in (attention(1, 1, 512, 512, 64), softmax(8, 8))]
    ['matrix', 'vector']
    """
    rates = unit_rates(cost, time)
    if not rates:
        return None
    flops = {"compute": cost.flops, **cost.flops_by_unit}
    order = list(rates)
    return max(order, key=lambda u: (flops[u], -order.index(u)))


def attainable_on(
    intensity,
    device: Hardware,
    dtype: Precision = "bf16",
    *,
    unit: str = "matrix",
    level: str = "hbm",
):
    """Attainable performance under one unit's flat roof and one level's slope (FLOP/s).

    The defaults, matrix units over HBM, give the roofline of a GEMM.

    Examples
    --------
    >>> from roofline_book import hardware
    >>> h100 = hardware("h100-sxm")
    >>> round(attainable_on(1000, h100) / 1e12, 1), attainable_on(1000, h100, unit="vector") / 1e12
    (1070.5, 133.8)
    """
    band = device.bandwidth(level)
    if band is None:
        raise ValueError(f"{device.key} has no published {level} bandwidth")
    return attainable(intensity, device.ceiling(unit, dtype), band)


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


def square_gemm_size_to_ridge(
    ridge: float, dtype: Precision = "bf16", *, out_dtype: Precision | None = None
) -> float:
    """Edge ``n`` at which a square GEMM, ``M = K = N = n``, reaches intensity ``ridge``.

    A square GEMM's intensity is ``2n / (3s)`` (FLOP/byte), so

    .. math:: n^{*} = \\frac{3 s I^{*}}{2} .

    With ``C`` stored in another precision (``s_out`` bytes, e.g. an FP8 GEMM
    writing BF16, as cuBLASLt and Transformer Engine do), the intensity is
    ``2n / (2s + s_out)`` and ``n* = (2s + s_out) I* / 2``.

    Parameters
    ----------
    ridge : float
        Target intensity ``I*`` (FLOP/byte), > 0; usually a device's ridge point.
    dtype : str or torch.dtype
        Precision of the three matrices (``s`` bytes per element).
    out_dtype : str or torch.dtype, optional
        Precision of ``C`` when it differs from ``dtype``, as in :func:`~roofline_book.ops.gemm`.

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

    FP8 inputs with a BF16 output: ``(2 * 1 + 2) * 100 / 2 = 200``.

    >>> square_gemm_size_to_ridge(100.0, "fp8", out_dtype="bf16")
    200.0
    >>> gemm(200, 200, 200, "fp8", out_dtype="bf16").intensity
    100.0
    """
    ridge = _validate.positive("ridge", ridge)
    s = bytes_per_element(dtype)
    s_out = s if out_dtype is None else bytes_per_element(out_dtype)
    return (2 * s + s_out) * ridge / 2
