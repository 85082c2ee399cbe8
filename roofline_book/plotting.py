"""The book's figures: one style, one palette, roofline charts and intensity curves.

Plot helpers take a matplotlib ``Axes`` and return what they drew, so they
compose with any figure. Axis labels are English; no CJK font is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from . import _validate
from .ops import Cost, gemm
from .roofline import TimeBound, attainable, ridge_point

#: Okabe-Ito colours, safe for colour-blind readers.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}

#: Scale and label of each unit the y axis can be drawn in.
UNITS = {"PFLOP/s": 1e15, "TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6, "FLOP/s": 1.0}


def use_style() -> None:
    """Apply the house style (``roofline_book/data/roofline.mplstyle``) to matplotlib."""
    from importlib import resources

    from matplotlib import pyplot as plt

    with resources.as_file(resources.files(__package__) / "data" / "roofline.mplstyle") as path:
        plt.style.use(str(path))


def setup_notebook() -> None:
    """House style plus deterministic inline SVG output (no date, fixed hash salt).

    Call it from a notebook or IPython kernel; outside one it only applies the style.
    """
    use_style()
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    # The inline backend re-reads these when the formats change, so set kwargs first.
    shell.run_line_magic(
        "config",
        "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Date': None}}",
    )
    shell.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")


def _scale(unit: str) -> float:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    return UNITS[unit]


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
    )
    if ridge and lo < ridge_x < hi:
        drawn.append(ax.axvline(ridge_x, color=color, linestyle=":", linewidth=1.0))
        drawn.append(ax.scatter([ridge_x], [peak_flops / scale], color=color, s=30, zorder=4))
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel(f"Attainable performance [{unit}]")
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
        drawn.append(
            ax.scatter(
                [x],
                [y],
                color=palette[i % len(palette)],
                s=36,
                zorder=5,
                label=name,
                edgecolor="white",
                linewidth=0.5,
            )
        )
        if annotate:
            drawn.append(
                ax.annotate(
                    name,
                    (x, y),
                    xytext=(offsets or {}).get(name, (5, -12)),
                    textcoords="offset points",
                    fontsize=fontsize,
                    color="#222222",
                )
            )
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
    ax.set_ylabel("Arithmetic intensity [FLOP/byte]")
    return drawn


def reference_line(
    ax,
    value: float,
    text: str | None = None,
    *,
    vertical: bool = False,
    color: str = PALETTE["vermillion"],
    linestyle: str = "--",
    linewidth: float = 1.2,
    label: str | None = None,
    below: bool = False,
    fontsize: float = 8,
):
    """A level across the axes (a ridge point, a limit, a crossing), with its text at the edge.

    A horizontal line sits at ``y = value`` with ``text`` at the axes' left edge,
    just above the line (``below`` puts it under); a vertical line sits at
    ``x = value`` with ``text`` turned upright beside it, from the bottom edge.
    Placement is in points from the line, so it holds on any scale.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    value : float
        Where the line is, in the data units of its axis (e.g. FLOP/byte).
    text : str, optional
        Written on the plot beside the line.
    vertical : bool
        Draw ``x = value`` instead of ``y = value``.
    label : str, optional
        Legend entry of the line.
    below : bool
        Put ``text`` under a horizontal line (left of a vertical one).
    fontsize : float
        Size of ``text``, points.

    Returns
    -------
    list of matplotlib artists
        The line, then the text when given.
    """
    style = {"color": color, "linestyle": linestyle, "linewidth": linewidth, "label": label}
    drawn = [ax.axvline(value, **style) if vertical else ax.axhline(value, **style)]
    if text is not None:
        gap = -3 if below else 3
        if vertical:
            where, offset, align = (value, 0.03), (gap, 0), {"rotation": 90, "va": "bottom"}
            align["ha"] = "right" if below else "left"
            transform = ax.get_xaxis_transform()
        else:
            where, offset, align = (0.02, value), (0, gap), {"va": "top" if below else "bottom"}
            transform = ax.get_yaxis_transform()
        drawn.append(
            ax.annotate(
                text,
                where,
                xycoords=transform,
                xytext=offset,
                textcoords="offset points",
                fontsize=fontsize,
                color=color,
                **align,
            )
        )
    return drawn


def ridge_line(ax, ridge: float, text: str | None = None, **style):
    """The ridge point ``I* = P / B`` (FLOP/byte) as a level on an intensity axis.

    :func:`reference_line` at ``y = ridge``: use it on plots whose y axis is
    arithmetic intensity, to show which operators clear the ridge.

    Returns
    -------
    list of matplotlib artists
    """
    return reference_line(ax, _validate.positive("ridge", ridge), text, **style)


def time_bars(
    ax,
    named: Sequence[tuple[str, TimeBound]],
    *,
    unit: str = "us",
    xlabel: str | None = None,
):
    """Both time lower bounds of each operator as a pair of horizontal bars, log scale.

    Per operator, from the top: ``T_compute = FLOPs / P`` (orange, upper bar) and
    ``T_memory = bytes / B`` (blue, lower bar); the longer one is the bound.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        ``(label, TimeBound)`` of each operator, top first, from
        :func:`roofline_book.roofline.time_lower_bound`.
    unit : {"s", "ms", "us", "ns"}
        Unit of the x axis.
    xlabel : str, optional
        Label of the x axis; ``"Time lower bound [<unit>]"`` by default.

    Returns
    -------
    list of matplotlib artists
        The compute bars, then the memory bars.
    """
    scales = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
    if unit not in scales:
        raise ValueError(f"unit must be one of {', '.join(scales)}; got {unit!r}")
    y = np.arange(len(named))[::-1]
    compute = ax.barh(
        y + 0.2,
        [t.compute * scales[unit] for _, t in named],
        height=0.38,
        color=PALETTE["orange"],
        label="T_compute = FLOPs / P",
    )
    memory = ax.barh(
        y - 0.2,
        [t.memory * scales[unit] for _, t in named],
        height=0.38,
        color=PALETTE["blue"],
        label="T_memory = bytes / B",
    )
    ax.set_yticks(y, [name for name, _ in named])
    ax.set_xscale("log")
    ax.set_xlabel(xlabel or f"Time lower bound [{unit}]")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    return [compute, memory]


def traffic_bars(ax, named: Sequence[tuple[str, Cost]], *, per: float = 1.0):
    """Bytes read and written by each operator as stacked bars, the total written on top.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        ``(label, Cost)`` of each bar, left to right.
    per : float
        Divide every byte count by this (e.g. the parameter count, for bytes per
        parameter); totals are written rounded to whole numbers.

    Returns
    -------
    list of matplotlib artists
        The read bars, the written bars, then one text per total.
    """
    per = _validate.positive("per", per)
    names = [name for name, _ in named]
    read = [c.bytes_read / per for _, c in named]
    written = [c.bytes_written / per for _, c in named]
    drawn = [
        ax.bar(names, read, color=PALETTE["blue"], label="read"),
        ax.bar(names, written, bottom=read, color=PALETTE["orange"], label="written"),
    ]
    for i, (_, c) in enumerate(named):
        drawn.append(
            ax.annotate(
                f"{c.bytes / per:.0f}",
                (i, c.bytes / per),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
        )
    ax.grid(axis="x", visible=False)
    return drawn
