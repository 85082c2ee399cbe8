"""集合通信的图：alpha-beta 模型给出的时间与 busbw 随消息大小的曲线，以及实测的点。

横轴是 nccl-tests 的 size（每个 rank 的 buffer，byte），双对数坐标：小消息处时间是平的（延迟项
``k alpha``），大消息处随 size 线性上升（带宽项 ``f S / B``）。
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ...distributed.collectives import algorithm_bandwidth, bus_bandwidth, collective_time
from .style import PALETTE, text


def _sizes(sizes: Sequence[float]) -> list[float]:
    values = [_validate.positive("sizes", s) for s in sizes]
    if not values:
        raise InvalidArgument("sizes", "must hold at least one size")
    return values


def comm_axes(ax, *, busbw: bool = False) -> None:
    """双对数坐标，横轴为每个 rank 的消息大小，纵轴为时间（``busbw`` 时为 busbw，GB/s）。"""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(text("message size axis"))
    ax.set_ylabel(text("busbw axis" if busbw else "comm time axis"))


def collective_times(
    ax,
    op: str,
    sizes: Sequence[float],
    devices: int,
    bandwidth: float,
    latency: float,
    *,
    algorithm: str = "ring",
    label: str | None = None,
    color: str = PALETTE["blue"],
    linestyle: str = "-",
    linewidth: float = 1.4,
):
    """:func:`~roofline_book.distributed.collectives.collective_time` 在 ``sizes``
    上的时间，画成一条线。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    op, devices, bandwidth, latency, algorithm
        同 :func:`~roofline_book.distributed.collectives.collective_time` （byte/s 与 s）。
    sizes : sequence of float
        每个 rank 的 buffer，byte，> 0。

    Returns
    -------
    matplotlib.lines.Line2D
    """
    xs = _sizes(sizes)
    ys = [
        collective_time(op, s, devices, bandwidth, latency, algorithm=algorithm).seconds for s in xs
    ]
    (line,) = ax.plot(xs, ys, color=color, linestyle=linestyle, linewidth=linewidth, label=label)
    comm_axes(ax)
    return line


def collective_busbw(
    ax,
    op: str,
    sizes: Sequence[float],
    devices: int,
    bandwidth: float,
    latency: float,
    *,
    algorithm: str = "ring",
    label: str | None = None,
    color: str = PALETTE["blue"],
    linestyle: str = "-",
    linewidth: float = 1.4,
):
    """模型给出的 busbw（GB/s）随 size 的变化：大消息时趋于 ``bandwidth``，小消息时受延迟压低。

    参数同 :func:`collective_times`。

    Returns
    -------
    matplotlib.lines.Line2D
    """
    xs = _sizes(sizes)
    ys = []
    for s in xs:
        seconds = collective_time(op, s, devices, bandwidth, latency, algorithm=algorithm).seconds
        ys.append(bus_bandwidth(op, algorithm_bandwidth(s, seconds), devices) / 1e9)
    (line,) = ax.plot(xs, ys, color=color, linestyle=linestyle, linewidth=linewidth, label=label)
    comm_axes(ax, busbw=True)
    return line


def measured_sizes(
    ax,
    sizes: Sequence[float],
    values: Sequence[float],
    quartiles: Sequence[tuple[float, float]] | None = None,
    *,
    label: str | None = None,
    color: str = PALETTE["vermillion"],
    marker: str = "o",
):
    """实测的点：每个 size 一个值（时间 s，或 busbw GB/s），竖线从第一到第三四分位数。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    sizes : sequence of float
        每个 rank 的 buffer，byte，> 0。
    values : sequence of float
        每个 size 的中位数（与纵轴同单位），>= 0。
    quartiles : sequence of tuple, optional
        每个 size 的第一与第三四分位数；不给时不画竖线。

    Returns
    -------
    matplotlib.container.ErrorbarContainer
    """
    xs = _sizes(sizes)
    ys = [_validate.non_negative("values", v) for v in values]
    if len(ys) != len(xs):
        raise InvalidArgument("values", f"must have one entry per size ({len(xs)}), got {len(ys)}")
    yerr = None
    if quartiles is not None:
        spans = [tuple(_validate.non_negative("quartiles", q) for q in pair) for pair in quartiles]
        if len(spans) != len(xs) or any(len(pair) != 2 for pair in spans):
            raise InvalidArgument("quartiles", f"must hold one (q1, q3) pair per size ({len(xs)})")
        yerr = [
            [max(0.0, y - q1) for y, (q1, _) in zip(ys, spans, strict=True)],
            [max(0.0, q3 - y) for y, (_, q3) in zip(ys, spans, strict=True)],
        ]
    return ax.errorbar(
        xs,
        ys,
        yerr=yerr,
        fmt=marker,
        color=color,
        markersize=4,
        markeredgecolor="white",
        markeredgewidth=0.5,
        elinewidth=0.8,
        capsize=0,
        label=label,
        zorder=5,
    )
