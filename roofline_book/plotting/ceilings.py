"""The hierarchical roofline: every ceiling of a device, and operators under the ones they use.

A device has a flat roof per compute unit (matrix in a precision, vector,
special functions) and a slope per memory level with a published bandwidth
(HBM; L2 where one is known). :func:`ceilings` draws them; :func:`placed`
puts each operator at its arithmetic intensity (compulsory bytes, and with
re-reads where it has them) and at the rate its time lower bound allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .. import _validate
from ..hardware import Hardware
from ..ops import Cost
from ..roofline import time_bound
from .style import PALETTE, _label, _scale, text

#: Colour of each resource's roof.
RESOURCE_COLORS = {
    "matrix": PALETTE["blue"],
    "vector": PALETTE["green"],
    "special": PALETTE["purple"],
    "compute": PALETTE["blue"],
    "hbm": PALETTE["black"],
    "l2": "#777777",
}


def _unit_ceilings(device: Hardware, dtype: str) -> dict[str, float]:
    if not device.vector_peaks:  # one peak for every unit
        return {"compute": device.peak_flops(dtype)}
    return {u: device.ceiling(u, dtype) for u in ("matrix", "vector", "special")}


def ceilings(
    ax,
    device: Hardware,
    dtype: str = "bf16",
    *,
    intensity_range: tuple[float, float] = (1e-2, 1e4),
    unit: str = "TFLOP/s",
    fontsize: float = 8,
):
    """Draw every roof of ``device``: a flat per compute unit, a slope per memory level.

    Each unit's flat, ``min(P_unit, B_HBM I)``, is drawn in its colour and
    named below its right end with its rate; the HBM slope runs up to the
    highest flat, and an L2 slope is drawn (dashed) where the device has an
    L2 bandwidth.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.hardware.Hardware
    dtype : str
        Precision of the matrix units' roof (the vector and special roofs are
        those an operator on ``dtype`` data gets).
    intensity_range : tuple of float
        Smallest and largest arithmetic intensity drawn (FLOP/byte).
    unit : str
        Unit of the y axis, a key of :data:`roofline_book.plotting.UNITS`.

    Returns
    -------
    list of matplotlib artists
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise ValueError(f"intensity_range must be increasing, got {intensity_range!r}")
    scale = _scale(unit)
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    flats = _unit_ceilings(device, dtype)
    top = max(flats.values())
    drawn = []
    for name, peak in flats.items():
        drawn += ax.loglog(
            x,
            np.minimum(peak, device.memory_bandwidth * x) / scale,
            color=RESOURCE_COLORS[name],
            linewidth=1.6,
        )
        label = f"{text(name)} {peak / scale:.4g} {unit}"
        drawn.append(
            ax.annotate(
                label,
                (hi, peak / scale),
                xytext=(-4, -4),
                textcoords="offset points",
                ha="right",
                va="top",
                fontsize=fontsize,
                color=RESOURCE_COLORS[name],
            )
        )
    slopes = {"hbm": device.memory_bandwidth}
    if device.l2_bandwidth is not None:
        slopes["l2"] = device.l2_bandwidth
    for level, band in slopes.items():
        y = np.minimum(band * x, top) / scale
        style = "-" if level == "hbm" else "--"
        drawn += ax.loglog(
            x, y, color=RESOURCE_COLORS[level], linewidth=1.2, linestyle=style, zorder=3
        )
        knee = top / band
        if lo < knee < hi:
            at = float(np.sqrt(lo * knee))  # half way up the slope, on a log axis
            drawn.append(
                ax.annotate(
                    f"{text(level)} {band / 1e12:.3g} TB/s",
                    (at, band * at / scale),
                    xytext=(-6, 6),
                    textcoords="offset points",
                    ha="right",
                    fontsize=fontsize,
                    color=RESOURCE_COLORS[level],
                )
            )
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel(f"Attainable performance [{unit}]")
    return drawn


def placed(
    ax,
    named: Iterable[tuple[str, Cost]],
    device: Hardware,
    dtype: str = "bf16",
    *,
    unit: str = "TFLOP/s",
    offsets: Mapping[str, tuple[float, float]] | None = None,
    unit_ticks: Iterable[str] = (),
    annotate: bool = True,
    fontsize: float = 8,
):
    """Put each operator under the roof that binds it, at its arithmetic intensity.

    The dot sits at ``I = FLOPs / compulsory bytes`` and at ``FLOPs / T``,
    with ``T`` the operator's time lower bound on ``device``
    (:func:`roofline_book.roofline.time_bound`), in the colour of the
    resource that sets it. An operator with re-reads (FlashAttention's K
    and V) also gets a hollow dot at ``FLOPs / (compulsory + re-read
    bytes)``, its arithmetic intensity at the cache that serves them,
    joined to the first. The operators named in ``unit_ticks`` also get a
    short tick, in each unit's colour, at the rate that unit alone would
    allow (``FLOPs / T_unit``): the ceilings an operator on several units
    is held to. With ``annotate=False`` the names go to the legend (a
    marker per operator) instead of beside the dots.

    Returns
    -------
    list of matplotlib artists
    """
    scale = _scale(unit)
    ticked = set(unit_ticks)
    markers = "osD^vP*X"
    drawn = []
    for i, (name, cost) in enumerate(named):
        t = time_bound(cost, device, dtype)
        x, y = cost.intensity, cost.flops / t.seconds / scale
        color = RESOURCE_COLORS[t.resource]
        marker = "o" if annotate else markers[i % len(markers)]
        drawn.append(
            ax.scatter([x], [y], color=color, s=36, zorder=5, edgecolor="white", linewidth=0.5,
                       marker=marker, label=None if annotate else name)
        )  # fmt: skip
        if cost.reread_bytes:
            x_all = cost.flops / (cost.bytes + cost.reread_bytes)
            drawn += ax.plot([x_all, x], [y, y], color=color, linewidth=0.8, linestyle=":")
            drawn.append(
                ax.scatter([x_all], [y], facecolor="white", edgecolor=color, s=30, zorder=5)
            )
        units = [r for r in ("matrix", "vector", "special") if r in t.by_resource]
        if name in ticked:
            for r in units:
                rate = cost.flops / t.by_resource[r] / scale
                drawn.append(
                    ax.scatter([x], [rate], marker="_", s=120, color=RESOURCE_COLORS[r], zorder=4)
                )
        if annotate:
            drawn.append(_label(ax, name, (x, y), offsets, fontsize))
    return drawn
