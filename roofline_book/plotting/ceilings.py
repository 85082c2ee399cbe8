"""The hierarchical roofline: every ceiling of a device, and operators under the ones they use.

A device has a flat roof per compute unit (matrix in a precision, vector)
and a slope per memory level with a published bandwidth (HBM; L2 where one
is known). :func:`ceilings` draws them; :func:`placed` puts each operator
once per memory level, at its main unit's FLOPs over that level's bytes and
at the rate its time lower bound allows that unit, as Nsight Compute's
hierarchical roofline places a kernel once per level. The special function
units' ceiling counts evaluations, not FLOPs, so it is no flat on a FLOP/s
axis: :func:`placed` converts it per operator into the rate it allows the
operator's main unit (a tick).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .. import _validate
from ..hardware import Hardware
from ..ops import Cost
from ..roofline import TimeBound, main_unit, time_bound, unit_rates
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


#: The units whose ceilings are FLOP/s, and so flats on a roofline's FLOP/s axis.
FLOP_UNITS = ("matrix", "vector")


def _unit_ceilings(device: Hardware, dtype: str) -> dict[str, float]:
    if not device.vector_peaks:  # one peak for every unit
        return {"compute": device.peak_flops(dtype)}
    return {u: device.ceiling(u, dtype) for u in FLOP_UNITS}


def _slopes(device: Hardware) -> dict[str, float]:
    """Each memory level with a bandwidth (byte/s), HBM first."""
    levels = {"hbm": device.memory_bandwidth}
    l2 = device.bandwidth("l2")
    if l2 is not None:
        levels["l2"] = l2
    return levels


def ceilings(
    ax,
    device: Hardware,
    dtype: str = "bf16",
    *,
    intensity_range: tuple[float, float] = (1e-2, 1e4),
    unit: str = "TFLOP/s",
    fontsize: float = 8,
):
    """Draw every roof of ``device``: a flat per FLOP/s unit, a slope per memory level.

    The matrix and vector units' flats are drawn in their colours from where
    they meet the fastest memory slope, each named below its right end with
    its rate. Each memory level with a bandwidth gets a slope up to the
    highest flat: HBM solid, L2 dashed (where the device has an L2
    bandwidth). The special function units are not drawn: their ceiling is
    in evaluations/s, which :func:`placed` converts per operator.
    The vector units get two flats: the vendor's FMA-counted peak (solid)
    and the lane rate of an add or multiply, half of it (dotted,
    :meth:`~roofline_book.hardware.Hardware.vector_op_rate`).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.hardware.Hardware
    dtype : str
        Precision of the matrix units' roof (the vector roof is the one an
        operator on ``dtype`` data gets).
    intensity_range : tuple of float
        Smallest and largest arithmetic intensity drawn (FLOP/byte).
    unit : str
        Unit of the y axis, a key of :data:`roofline_book.plotting.UNITS`.

    Returns
    -------
    list of matplotlib artists
        The flats and their names, then each slope and its name.
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise ValueError(f"intensity_range must be increasing, got {intensity_range!r}")
    scale = _scale(unit)
    flats = _unit_ceilings(device, dtype)
    slopes = _slopes(device)
    top, fastest = max(flats.values()), max(slopes.values())
    # (unit, word, rate, line): the vector units' FMA-counted peak and, dotted, an add's lane rate
    roofs = [(u, "vector fma" if u == "vector" else u, peak, "-") for u, peak in flats.items()]
    if "vector" in flats:
        roofs.append(("vector", "vector ops", device.vector_op_rate(dtype), ":"))
    drawn = []
    for name, word, peak, style in roofs:
        start = min(max(lo, peak / fastest), hi)
        drawn += ax.loglog([start, hi], [peak / scale] * 2, color=RESOURCE_COLORS[name],
                           linewidth=1.6, linestyle=style)  # fmt: skip
        label = f"{text(word)} {peak / scale:.4g} {unit}"
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
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
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


def level_intensities(cost: Cost, time: TimeBound, device: Hardware) -> dict[str, float]:
    """The operator's main-unit FLOPs per byte at each memory level it is charged to (FLOP/byte).

    A level's bytes are its time in ``time`` times its bandwidth, so they are
    the bytes :func:`roofline_book.roofline.time_bound` charged there: at HBM
    the compulsory bytes (and re-reads that do not fit in L2), at L2 every
    byte, re-reads included. The FLOPs are those of
    :func:`roofline_book.roofline.main_unit`, the
    unit whose rate the operator is drawn at.

    Examples
    --------
    >>> from roofline_book.hardware import EXAMPLE
    >>> from roofline_book.ops import add
    >>> a = add(2**20)
    >>> level_intensities(a, time_bound(a, EXAMPLE), EXAMPLE)      # 1 FLOP per 6 bytes
    {'hbm': 0.16666666666666666}
    """
    unit = main_unit(cost, time)
    flops = 0 if unit is None else ({"compute": cost.flops} | cost.flops_by_unit)[unit]
    out = {}
    for level, band in _slopes(device).items():
        seconds = time.by_resource.get(level)
        if seconds:
            out[level] = flops / (seconds * band)
    return out


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
    """Put each operator under the roofs that bind it, once per memory level.

    An operator is drawn at the rate of its main unit, the one doing most of
    its FLOPs (:func:`roofline_book.roofline.main_unit`): that unit's FLOPs
    over the operator's time lower bound on ``device``
    (:func:`roofline_book.roofline.time_bound`), which never exceeds the
    unit's flat. It is placed once per memory level it is charged to, at
    that level's intensity (:func:`level_intensities`): a filled dot at HBM
    and, where the device has an L2 bandwidth, a hollow ring at L2 (further
    left when re-reads add L2 bytes), joined by a dotted line, both in the
    colour of the resource that sets the bound. Each point then sits under
    its own level's slope. The operators named in ``unit_ticks`` also get a
    short tick, in each other unit's colour, at the rate that unit's time
    allows the main unit (``F_main / T_unit``): the special function units'
    ceiling converted to this operator's FLOP/s. With ``annotate=False``
    the names go to the legend (a marker per operator) instead of beside
    the dots.

    Returns
    -------
    list of matplotlib artists
        Per operator: its HBM dot, then its L2 ring and the dotted line
        where drawn, its ticks, and its label when ``annotate``.
    """
    scale = _scale(unit)
    ticked = set(unit_ticks)
    markers = "osD^vP*X"
    drawn = []
    for i, (name, cost) in enumerate(named):
        t = time_bound(cost, device, dtype)
        main = main_unit(cost, t)
        rate = 0.0 if main is None else unit_rates(cost, t)[main]
        y = rate / scale
        at = level_intensities(cost, t, device)
        x = at["hbm"]
        color = RESOURCE_COLORS[t.resource]
        marker = "o" if annotate else markers[i % len(markers)]
        drawn.append(
            ax.scatter([x], [y], color=color, s=36, zorder=5, edgecolor="white", linewidth=0.5,
                       marker=marker, label=None if annotate else name)
        )  # fmt: skip
        if "l2" in at:
            drawn.append(
                ax.scatter([at["l2"]], [y], facecolor="none", edgecolor=color, s=70, zorder=5,
                           linewidth=1.2, marker=marker)
            )  # fmt: skip
            if at["l2"] != x:
                drawn += ax.plot([at["l2"], x], [y, y], color=color, linewidth=0.8, linestyle=":")
        if name in ticked and main is not None:
            flops = ({"compute": cost.flops} | cost.flops_by_unit)[main]
            for r in ("matrix", "vector", "special"):
                if r != main and t.by_resource.get(r):
                    allowed = flops / t.by_resource[r] / scale
                    drawn.append(ax.scatter([x], [allowed], marker="_", s=220, linewidths=2,
                                            color=RESOURCE_COLORS[r], zorder=6))  # fmt: skip
        if annotate:
            drawn.append(_label(ax, name, (x, y), offsets, fontsize))
    return drawn
