"""roof 旁边的标记：参考线与 ridge point 线、时间条形图与流量条形图。"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware
from ...ops import Cost
from ...roofline.roofs import TimeBound
from ...units import binary, si
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
    avoid: bool = False,
):
    """横贯坐标轴的一条水平或竖直线（ridge point、某个极限、某个交点），文字写在边缘。

    水平线位于 ``y = value``，``text`` 写在坐标轴左边缘（``side="right"`` 时为右边缘）、线的上方
    （``below`` 时在下方）；``avoid`` 时，那里若压住已画出的文字或数据点（位置由实测数据决定的图，
    换一台机器就可能这样），依次改试另一边、线的另一侧，取第一个不压住的位置（这要把图先画一遍，
    所以图的字体须已设好）；竖直线位于 ``x = value``，
    ``text`` 竖排在线旁，从底边开始。位置以离线若干 point 计，所以在任何刻度下都成立。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    value : float
        线的位置，用它所在坐标轴的数据单位（例如 FLOP/byte）。
    text : str, optional
        写在图上线旁的文字。
    vertical : bool
        画 ``x = value`` 而不是 ``y = value``。
    label : str, optional
        这条线在图例中的条目。
    below : bool
        把 ``text`` 放在水平线下方（竖直线的左侧）。
    fontsize : float
        ``text`` 的字号（point）。
    side : {"left", "right"}
        水平线的文字从哪一边开始（竖直线忽略此项）。
    avoid : bool
        水平线的文字避开已画出的文字与数据点（见上）。

    Returns
    -------
    list of matplotlib artists
        先是线，给了文字时再是文字。
    """
    if side not in ("left", "right"):
        raise InvalidArgument("side", f"must be 'left' or 'right'; got {side!r}")
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
        note = ax.annotate(
            text,
            where,
            xycoords=transform,
            xytext=offset,
            textcoords="offset points",
            fontsize=fontsize,
            color=color,
            **align,
        )
        drawn.append(note)
        if avoid and not vertical:
            _clear_of_others(note, value, side, below)
    return drawn


def _clear_of_others(note, value: float, side: str, below: bool) -> None:
    """把水平线的文字挪到四个位置（两边、线的上下）中第一个不压住别的文字或数据点的地方。"""
    from .layout import overlaps

    name = repr(str(note.get_text()))
    other = "right" if side == "left" else "left"
    for s, b in ((side, below), (other, below), (side, not below), (other, not below)):
        x, ha = (0.02, "left") if s == "left" else (0.98, "right")
        note.xy = (x, value)
        note.set_position((0, -3 if b else 3))
        note.set_horizontalalignment(ha)
        note.set_verticalalignment("top" if b else "bottom")
        if not any(name in pair for pair in overlaps(note.figure)):
            return
    x, ha = (0.02, "left") if side == "left" else (0.98, "right")  # none is clear: the first
    note.xy = (x, value)
    note.set_position((0, -3 if below else 3))
    note.set_horizontalalignment(ha)
    note.set_verticalalignment("top" if below else "bottom")


def ridge_line(ax, ridge: float, text: str | None = None, **style):
    """把 ridge point ``I* = P / B`` （FLOP/byte）画成算术强度坐标轴上的一条水平线。

    即 ``y = ridge`` 处的 :func:`reference_line`：用在 y 轴为算术强度的图上，显示哪些算子越过了
    ridge point。

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
    """每个算子的两个时间下界，画成一对水平条，对数刻度。

    每个算子从上到下：``T_compute = FLOPs / P`` （橙色，上面的条）和 ``T_memory = bytes / B``
    （蓝色，下面的条）；较长的那个就是下界。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        每个算子的 ``(label, TimeBound)``，从上到下排列，来自
        :func:`roofline_book.roofline.roofs.time_lower_bound`。
    unit : {"s", "ms", "us", "ns"}
        x 轴的单位。
    xlabel : str, optional
        x 轴的标签；默认为 ``text("time bound axis", unit=unit)``。

    Returns
    -------
    list of matplotlib artists
        先是计算时间的条，再是内存时间的条。
    """
    scales = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
    if unit not in scales:
        raise InvalidArgument("unit", f"must be one of {', '.join(scales)}; got {unit!r}")
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
    ax.set_xlabel(xlabel or text("time bound axis", unit={"us": "µs"}.get(unit, unit)))
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    return [compute, memory]


def traffic_bars(ax, named: Sequence[tuple[str, Cost]], *, per: float = 1.0):
    """每个算子读写的字节数，画成堆叠条形图，顶上写出总数。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        每个条的 ``(label, Cost)``，从左到右排列。
    per : float
        每个字节数都除以它（例如参数个数，得到每个参数的字节数）；写出的总数取整。

    Returns
    -------
    list of matplotlib artists
        先是读的条，再是写的条，然后是每个总数的文字。
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
    """把 ``axis`` （``"x"`` 或 ``"y"``）设为以 2 为底的对数刻度；给了 ``ticks`` 时，恰好在这些
    刻度处用普通整数标注（``1, 4, 16``，而不是 ``2^0``），并去掉次刻度。
    """
    if axis not in ("x", "y"):
        raise InvalidArgument("axis", f"must be 'x' or 'y'; got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log", base=2)
    if ticks is not None:
        ticks = [_validate.size("ticks", t) for t in ticks]
        getattr(ax, f"set_{axis}ticks")(ticks, [str(t) for t in ticks])
        getattr(ax, f"{axis}axis").set_minor_locator(_null_locator())


def _null_locator():
    from matplotlib.ticker import NullLocator

    return NullLocator()


def memory_hierarchy(ax, device: Hardware):
    """数据在 ``device`` 上经过的路径：最下面是 HBM，然后是 L2、每个 SM 的 L1 与 shared memory、
    它的寄存器，最上面是计算单元，每个层级一个框。

    每个框写出层级的名字和目录给出的容量（HBM 还写出带宽）；HBM 与 L2 之间的虚线标出一条边界，
    本书把穿过它的字节算作 memory traffic。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.devices.device.Hardware
        目录条目含有每个层级的设备：主存容量与带宽、L2、每个 SM 的 L1 与 shared memory、每个 SM 的
        寄存器、SM 个数。

    Returns
    -------
    tuple
        各框的标签文字（matplotlib ``Text``），从下（HBM）往上，以及那条边界
        （matplotlib ``Line2D``）。

    Raises
    ------
    ValueError
        ``device`` 缺少上面某个数字时。
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
        raise InvalidArgument(
            "device",
            f"{device.key!r} has no {', '.join(missing)}; memory_hierarchy needs "
            "a catalog device with every memory level",
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
