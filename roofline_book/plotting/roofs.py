"""Roofline charts: roofs, operators placed on them, measured points, intensity curves."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from .. import _validate
from ..dtypes import bytes_per_element
from ..hardware import Hardware
from ..ops import Cost, attention, gemm
from ..roofline import attainable, ridge_point
from .style import PALETTE, _label, _scale, roof_color, text


def roofline(
    ax,
    peak_flops: float,
    bandwidth: float,
    *,
    label: str | None = None,
    color: str = PALETTE["blue"],
    intensity_range: tuple[float, float] = (1e-2, 1e4),
    unit: str = "TFLOP/s",
    ridge: bool = True,
    linestyle: str = "-",
    linewidth: float | None = None,
):
    """Draw ``min(P, B * I)`` on log-log axes, with the ridge point marked.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    peak_flops, bandwidth : float
        FLOP/s and byte/s.
    label : str, optional
        Legend label of the roof.
    intensity_range : tuple of float
        Smallest and largest intensity drawn (FLOP/byte).
    unit : str
        Unit of the y axis, a key of :data:`UNITS`.
    ridge : bool
        Mark the ridge point with a dot and a dotted vertical line.
    linewidth : float, optional
        Width of the roof, points; the style's by default.

    Returns
    -------
    list of matplotlib artists
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise ValueError(f"intensity_range must be increasing, got {intensity_range!r}")
    scale = _scale(unit)
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    ridge_x = ridge_point(peak_flops, bandwidth)
    x = np.unique(np.append(x, ridge_x if lo < ridge_x < hi else []))
    drawn = ax.loglog(
        x,
        attainable(x, peak_flops, bandwidth) / scale,
        color=color,
        label=label,
        linestyle=linestyle,
        linewidth=linewidth,
    )
    if ridge and lo < ridge_x < hi:
        drawn.append(ax.axvline(ridge_x, color=color, linestyle=":", linewidth=1.0))
        drawn.append(ax.scatter([ridge_x], [peak_flops / scale], color=color, s=30, zorder=4))
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("attainable axis", unit=unit))
    return drawn


def points(
    ax,
    named: Iterable[tuple[str, Cost]],
    peak_flops: float,
    bandwidth: float,
    *,
    unit: str = "TFLOP/s",
    colors: Sequence[str] | None = None,
    annotate: bool = True,
    offsets: Mapping[str, tuple[float, float]] | None = None,
    fontsize: float = 8,
    rings: Collection[str] = (),
):
    """Place operators on the roof: x is the intensity, y the attainable rate there.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        ``(label, Cost)`` of each operator.
    peak_flops, bandwidth : float
        FLOP/s and byte/s of the roof they sit on.
    unit : str
        Unit of the y axis, a key of :data:`UNITS`.
    colors : sequence of str, optional
        One colour per operator, cycled; the palette by default.
    annotate : bool
        Write each label beside its point.
    offsets : mapping, optional
        Where a label sits relative to its point, in points (x right, y up), by
        label; labels not named sit at ``(5, -12)``, below and to the right.
        Keep these beside the figure's inputs, as data.
    fontsize : float
        Size of the labels, points.
    rings : list of str
        Operators drawn as larger hollow rings, so that one sitting on another's
        dot (an AdamW loop beside an add, say) stays visible.

    Returns
    -------
    list of matplotlib artists
        For each operator its dot, then its label when ``annotate``.
    """
    scale = _scale(unit)
    palette = list(
        colors or [PALETTE[k] for k in ("vermillion", "green", "purple", "orange", "sky", "black")]
    )
    drawn = []
    for i, (name, cost) in enumerate(named):
        x = cost.intensity
        y = attainable(x, peak_flops, bandwidth) / scale
        color = palette[i % len(palette)]
        ring = name in rings
        drawn.append(
            ax.scatter(
                [x],
                [y],
                s=110 if ring else 36,
                zorder=4 if ring else 5,
                label=name,
                facecolors="none" if ring else color,
                edgecolors=color if ring else "white",
                linewidths=1.6 if ring else 0.5,
            )
        )
        if annotate:
            drawn.append(_label(ax, name, (x, y), offsets, fontsize))
    return drawn


def measured(
    ax,
    named: Iterable[tuple[str, float, float]],
    *,
    unit: str = "TFLOP/s",
    color: str = PALETTE["vermillion"],
    marker: str = "o",
    annotate: bool = True,
):
    """Measured operators as dots: ``(label, intensity FLOP/byte, achieved FLOP/s)``.

    Returns
    -------
    list of matplotlib artists
    """
    scale = _scale(unit)
    drawn = []
    for label, x, y in named:
        drawn.append(
            ax.scatter(
                [x],
                [y / scale],
                color=color,
                marker=marker,
                s=30,
                zorder=5,
                edgecolor="white",
                linewidth=0.5,
            )
        )
        if annotate:
            drawn.append(
                ax.annotate(
                    label,
                    (x, y / scale),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=7,
                    color="#222222",
                )
            )
    return drawn


def gemm_intensity(
    ax,
    sizes: Sequence[int],
    dtype: str = "bf16",
    *,
    m: int | None = None,
    k: int | None = None,
    n: int | None = None,
    label: str | None = None,
    color: str | None = None,
):
    """Intensity of GEMMs as one size is swept, the others fixed (``None`` = the swept size).

    With ``m = k = n = None`` the sweep is square, ``n x n x n``.

    Returns
    -------
    list of matplotlib artists
    """
    sizes = [_validate.size("sizes", s) for s in sizes]
    ys = [gemm(m or s, k or s, n or s, dtype).intensity for s in sizes]
    drawn = ax.loglog(
        sizes, ys, marker="o", markersize=3, label=label or dtype, color=color, base=10
    )
    ax.set_ylabel(text("intensity axis"))
    return drawn


def square_gemm_fraction(ax, device: Hardware, sizes: Sequence[int], colors: Mapping[str, str]):
    """The roof a square GEMM reaches as a fraction of the peak, per precision, as ``n`` grows.

    For each precision (key of ``colors``, the line's colour its value) the
    curve is ``attainable(I(n)) / P`` of ``gemm(n, n, n)`` on ``device``'s
    dense peak and bandwidth, labelled with that precision's ridge point.

    Returns
    -------
    list of matplotlib artists
    """
    sizes = [_validate.size("sizes", s) for s in sizes]
    drawn = []
    for dtype, color in colors.items():
        peak, band = device.peak_flops(dtype), device.memory_bandwidth
        frac = [float(attainable(gemm(n, n, n, dtype).intensity, peak, band)) / peak for n in sizes]
        label = text("precision ridge", precision=dtype.upper(), ridge=device.ridge_point(dtype))
        drawn += ax.semilogx(sizes, frac, marker="o", markersize=3, base=2, color=color,
                             label=label)  # fmt: skip
    return drawn


def attention_sweep(
    traffic_ax,
    intensity_ax,
    seqs: Sequence[int],
    heads: int,
    head_dim: int,
    colors: Mapping[str, str],
    dtype: str = "bf16",
):
    """Self-attention's HBM traffic (left) and intensity (right) as the sequence grows.

    One curve per implementation (a key of ``colors``: ``"materialized"``,
    ``"flash"``), for batch 1, ``seq_q = seq_k = N`` and no mask, from
    :func:`roofline_book.ops.attention`; the traffic axes also gets the floor
    of reading Q, K, V and writing O once (``4 heads N d s`` bytes).

    Returns
    -------
    list of matplotlib artists
    """
    seqs = [_validate.size("seqs", n) for n in seqs]
    drawn = []
    for impl, color in colors.items():
        cs = [attention(1, heads, n, n, head_dim, dtype, impl=impl) for n in seqs]
        drawn += traffic_ax.plot(
            seqs, [c.bytes for c in cs], marker="o", markersize=3, color=color, label=impl
        )
        drawn += intensity_ax.semilogx(
            seqs,
            [c.intensity for c in cs],
            marker="o",
            markersize=3,
            base=2,
            color=color,
            label=impl,
        )
    once = [4 * heads * n * head_dim * bytes_per_element(dtype) for n in seqs]
    drawn += traffic_ax.plot(
        seqs, once, color="#555555", linestyle="--", linewidth=1.2, label=text("qkvo once")
    )
    traffic_ax.set_xscale("log", base=2)
    traffic_ax.set(yscale="log", xlabel=text("sequence axis"), ylabel=text("traffic axis"))
    intensity_ax.set(xlabel=text("sequence axis"), ylabel=text("intensity axis"))
    return drawn  # fmt: skip


def achieved_gap(
    ax,
    named: Sequence[tuple[str, Cost, float]],
    peak_flops: float,
    bandwidth: float,
    *,
    unit: str = "TFLOP/s",
    labels: tuple[str, str] | None = None,
    right: Collection[str] = (),
):
    """Each operator's achieved rate below the roof at its intensity, joined by a dashed line.

    Parameters
    ----------
    named : sequence of tuple
        ``(name, Cost, achieved FLOP/s)`` of each operator.
    peak_flops, bandwidth : float
        The roof, FLOP/s and byte/s.
    unit : str
        Unit of the y axis, a key of :data:`UNITS`.
    labels : tuple of str, optional
        Legend labels of the roof points and of the achieved points; the
        words for "roof" and "achieved" in the figure language by default.
    right : sequence of str
        Names whose "x% of roof" label goes right of the point (the others go left).

    Returns
    -------
    list of matplotlib artists
    """
    scale = _scale(unit)
    labels = labels or (text("roof"), text("achieved"))
    drawn = []
    for i, (name, cost, got) in enumerate(named):
        x, roof = cost.intensity, float(attainable(cost.intensity, peak_flops, bandwidth))
        on_right = name in right
        drawn += [
            ax.vlines(x, got / scale, roof / scale, color="#555555", linestyle="--", linewidth=1),
            ax.scatter([x], [roof / scale], color=PALETTE["black"], s=30, zorder=5,
                       label=labels[0] if i == 0 else None),
            ax.scatter([x], [got / scale], color=PALETTE["vermillion"], s=30, zorder=5,
                       label=labels[1] if i == 0 else None),
            ax.annotate(text("of roof", name=name, fraction=got / roof), (x, got / scale),
                        xytext=(8 if on_right else -8, -4), textcoords="offset points",
                        ha="left" if on_right else "right", va="top", fontsize=8),
        ]  # fmt: skip
    return drawn


def roof_labels(
    ax,
    peak_flops: float,
    bandwidth: float,
    *,
    memory: tuple[float, float],
    compute: tuple[float, float],
    ridge: tuple[float, float],
    regions_y: float,
    unit: str = "TFLOP/s",
    fontsize: float = 8,
):
    """Name the parts of a roofline: the memory roof, the compute roof, the ridge point,
    and the memory-bound and compute-bound sides of the ridge.

    Parameters
    ----------
    memory, compute, ridge : tuple of float
        Where each label starts, in data coordinates (intensity, rate in ``unit``);
        keep them beside the figure's inputs, as data.
    regions_y : float
        Height of the two side labels, which sit just left and right of the ridge.

    Returns
    -------
    list of matplotlib artists
    """
    _scale(unit)
    blue, grey = PALETTE["blue"], "#555555"
    ridge_x = ridge_point(peak_flops, bandwidth)
    return [
        ax.text(*memory, text("memory roof"), fontsize=fontsize, color=blue),
        ax.text(*compute, text("compute roof"), fontsize=fontsize, color=blue),
        ax.text(*ridge, f"{text('ridge point')}\nI* = {ridge_x:.0f} FLOP/byte",
                fontsize=fontsize, color=blue),
        ax.text(ridge_x / 1.3, regions_y, text("memory-bound"), fontsize=fontsize, color=grey,
                ha="right"),
        ax.text(ridge_x * 1.3, regions_y, text("compute-bound"), fontsize=fontsize, color=grey,
                ha="left"),
    ]  # fmt: skip


def device_rooflines(
    ax,
    devices: Sequence[tuple[Hardware, str, str]],
    dtypes: Mapping[str, str],
    *,
    intensity_range: tuple[float, float] = (1, 3000),
    unit: str = "TFLOP/s",
):
    """Several devices' rooflines on one axes, one line style per precision.

    Parameters
    ----------
    devices : sequence of tuple
        ``(Hardware, label, colour)`` of each device; a colour of ``None``
        takes each precision's from :data:`roofline_book.plotting.ROOF_COLORS`.
        Each device is drawn thinner than the one before, so a roof that
        coincides with an earlier device's (same peak) still shows both.
    dtypes : mapping of str to str
        Precision to line style, e.g. ``{"bf16": "-", "fp32": "--"}``; each
        device's dense peak in that precision is its roof.

    Returns
    -------
    list of matplotlib artists
    """
    drawn = []
    steps = np.linspace(3.0, 1.2, len(devices)) if len(devices) > 1 else [None]
    widths = [None if w is None else float(w) for w in steps]
    for (device, label, color), width in zip(devices, widths, strict=True):
        for dtype, linestyle in dtypes.items():
            drawn += roofline(ax, device.peak_flops(dtype), device.memory_bandwidth,
                              color=color or roof_color(device.key, dtype), linewidth=width,
                              linestyle=linestyle, label=f"{label} {dtype.upper()}",
                              intensity_range=intensity_range, unit=unit)  # fmt: skip
    return drawn
