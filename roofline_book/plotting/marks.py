"""Marks beside the roofs: reference and ridge lines, time and traffic bars."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _validate
from ..hardware import Hardware
from ..ops import Cost
from ..roofline import TimeBound
from ..units import binary, si
from .style import PALETTE, text


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
    side: str = "left",
):
    """A level across the axes (a ridge point, a limit, a crossing), with its text at the edge.

    A horizontal line sits at ``y = value`` with ``text`` at the axes' left edge
    (``side="right"``: the right edge), just above the line (``below`` puts it
    under); a vertical line sits at
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
    side : {"left", "right"}
        Which edge a horizontal line's text starts from (ignored for vertical lines).

    Returns
    -------
    list of matplotlib artists
        The line, then the text when given.
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right'; got {side!r}")
    style = {"color": color, "linestyle": linestyle, "linewidth": linewidth, "label": label}
    drawn = [ax.axvline(value, **style) if vertical else ax.axhline(value, **style)]
    if text is not None:
        gap = -3 if below else 3
        if vertical:
            where, offset, align = (value, 0.03), (gap, 0), {"rotation": 90, "va": "bottom"}
            align["ha"] = "right" if below else "left"
            transform = ax.get_xaxis_transform()
        else:
            x, ha = (0.02, "left") if side == "left" else (0.98, "right")
            where, offset = (x, value), (0, gap)
            align = {"va": "top" if below else "bottom", "ha": ha}
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
        ax.bar(names, read, color=PALETTE["blue"], label=text("read")),
        ax.bar(names, written, bottom=read, color=PALETTE["orange"], label=text("written")),
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


def log2_axis(ax, ticks: Sequence[int] | None = None, *, axis: str = "x") -> None:
    """Put ``axis`` (``"x"`` or ``"y"``) on a base-2 log scale; with ``ticks``, label exactly
    those ticks with plain integers (``1, 4, 16``, not ``2^0``) and drop the minor ticks."""
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y'; got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log", base=2)
    if ticks is not None:
        ticks = [_validate.size("ticks", t) for t in ticks]
        getattr(ax, f"set_{axis}ticks")(ticks, [str(t) for t in ticks])
        getattr(ax, f"{axis}axis").set_minor_locator(_null_locator())


def _null_locator():
    from matplotlib.ticker import NullLocator

    return NullLocator()


def memory_hierarchy(ax, device: Hardware):
    """The path data takes on ``device``: HBM at the bottom, then L2, each SM's L1 and
    shared memory and its registers, the compute units on top, one box per level.

    Each box names its level and its capacity as the catalog gives it (HBM also
    its bandwidth); a dashed line between HBM and L2 marks the boundary whose
    bytes the book counts as memory traffic.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.hardware.Hardware
        A device whose catalog entry has every level: memory capacity and
        bandwidth, L2, L1 and shared memory per SM, registers per SM, SM count.

    Returns
    -------
    tuple
        The boxes' label texts (matplotlib ``Text``) from the bottom (HBM) up, and the
        boundary (a matplotlib ``Line2D``).

    Raises
    ------
    ValueError
        When ``device`` lacks one of the figures above.
    """
    from matplotlib.patches import FancyBboxPatch

    needed = (
        "memory_capacity",
        "l2_cache",
        "l1_shared_per_sm",
        "shared_memory_per_sm",
        "register_file_per_sm",
        "sms",
    )
    figures = {name: getattr(device, name) for name in needed}
    missing = [name for name, value in figures.items() if value is None]
    if missing:
        raise ValueError(
            f"device {device.key!r} has no {', '.join(missing)}; memory_hierarchy needs "
            "a catalog device with every memory level"
        )

    def kib(size: float) -> str:
        return f"{size / 2**10:.0f} KiB"

    per_sm = text("sms", sms=figures["sms"])
    levels = [
        (
            text(
                "hbm level",
                size=binary(figures["memory_capacity"]),
                bandwidth=si(device.memory_bandwidth, "B/s"),
            ),
            text("shared"),
            PALETTE["vermillion"],
        ),
        (
            text("l2 level", size=f"{figures['l2_cache'] / 2**20:.0f} MiB"),
            text("shared"),
            PALETTE["orange"],
        ),
        (
            text(
                "l1 level",
                size=kib(figures["l1_shared_per_sm"]),
                shared=kib(figures["shared_memory_per_sm"]),
            ),
            per_sm,
            PALETTE["sky"],
        ),
        (
            text("register level", size=kib(figures["register_file_per_sm"])),
            per_sm,
            PALETTE["blue"],
        ),
        (text("compute units"), "", PALETTE["green"]),
    ]
    height, gap = 0.8, 0.55
    labels = []
    for i, (name, scope, color) in enumerate(levels):
        y = i * (height + gap)
        ax.add_patch(
            FancyBboxPatch(
                (0.0, y),
                1.0,
                height,
                boxstyle="round,pad=0.02",
                facecolor=color,
                alpha=0.25,
                edgecolor=color,
            )
        )
        labels.append(ax.text(0.5, y + height / 2, name, ha="center", va="center", fontsize=8.5))
        if scope:
            ax.text(
                1.06, y + height / 2, scope, ha="left", va="center", fontsize=7.5, color="#555555"
            )
        if i:
            ax.annotate(
                "",
                xy=(0.5, y - 0.02),
                xytext=(0.5, y - gap + 0.02),
                arrowprops={"arrowstyle": "<->", "color": "#555555", "lw": 1.0},
            )
    y_line = height + gap / 2
    (boundary,) = ax.plot(
        [-0.05, 1.05], [y_line, y_line], linestyle="--", color=PALETTE["black"], linewidth=1.0
    )
    ax.text(-0.07, y_line, text("traffic boundary"), ha="right", va="center", fontsize=7.5)
    top = len(levels) * (height + gap) - gap
    ax.set(xlim=(-0.75, 1.75), ylim=(-0.1, top + 0.1))
    ax.set_axis_off()
    return labels, boundary
