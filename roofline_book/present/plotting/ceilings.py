"""分层 roofline：一块设备的每一个上限，以及算子在它所用上限之下的位置。

设备的每种计算单元（某一精度的矩阵单元、向量单元）各有一条水平的 roof，每个有公开带宽的
存储层级（HBM；已知时还有 L2）各有一条斜线。:func:`ceilings` 画出它们；:func:`placed` 把每个算子
在每个存储层级放一次，横坐标是它主单元的 FLOPs 除以该层级的字节数，高度是它的时间下界允许该单元
达到的速率，与 Nsight Compute 的 hierarchical roofline 把一个 kernel 在每个层级各放一次相同。
特殊函数单元的上限按求值次数而不是 FLOPs 计，所以在 FLOP/s 轴上不是一条水平线：:func:`placed`
对每个算子把它换算成它允许该算子主单元达到的速率（一条短横线）。
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware
from ...ops import Cost
from ...roofline.roofs import TimeBound, main_unit, time_bound, unit_rates
from .style import PALETTE, _label, _scale, text

#: 每种资源的 roof 的颜色。
RESOURCE_COLORS = {
    "matrix": PALETTE["blue"],
    "vector": PALETTE["green"],
    "special": PALETTE["purple"],
    "compute": PALETTE["blue"],
    "hbm": PALETTE["black"],
    "l2": "#777777",
    "l3": PALETTE["orange"],
    "llc": PALETTE["orange"],
    "dram": PALETTE["vermillion"],
    "memory": PALETTE["vermillion"],
}


#: 上限按 FLOP/s 计、因而在 roofline 的 FLOP/s 轴上是水平线的那些单元。
FLOP_UNITS = ("matrix", "vector")


def _unit_ceilings(device: Hardware, dtype: str) -> dict[str, float]:
    if not device.vector_peaks:  # one peak for every unit
        return {"compute": device.peak_flops(dtype)}
    return {u: device.ceiling(u, dtype) for u in FLOP_UNITS}


def _slopes(device: Hardware) -> dict[str, float]:
    """每个有带宽的存储层级（byte/s），HBM 在前。"""
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
    """画出 ``device`` 的每一条 roof：每种按 FLOP/s 计的单元一条水平线，每个存储层级一条斜线。

    矩阵单元与向量单元的水平线用各自的颜色，从它们与最快的存储斜线相交处画起，右端下方标出
    名称和速率。每个有带宽的存储层级画一条斜线，直到最高的那条水平线：HBM 用实线，L2 用虚线
    （设备有 L2 带宽时）。特殊函数单元不画：它的上限按每秒求值次数计，由 :func:`placed`
    对每个算子换算。
    向量单元画两条水平线：厂商按 FMA 计的峰值（实线），以及一次加法或乘法的 lane 速率，即它的一半
    （点线，:meth:`~roofline_book.devices.device.Hardware.vector_op_rate`）。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.devices.device.Hardware
    dtype : str
        矩阵单元 roof 的精度（向量单元的 roof 取处理 ``dtype`` 数据的算子所能得到的值）。
    intensity_range : tuple of float
        画出的算术强度的最小值和最大值（FLOP/byte）。
    unit : str
        y 轴的单位，:data:`~roofline_book.present.plotting.style.UNITS` 的一个键。

    Returns
    -------
    list of matplotlib artists
        各条水平线及其名称，然后是每条斜线及其名称。
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise InvalidArgument("intensity_range", f"must be increasing, got {intensity_range!r}")
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
        above = word == "vector fma"  # the vector units' two flats lie only 2x apart
        drawn.append(
            ax.annotate(
                label,
                (hi, peak / scale),
                xytext=(-4, 3 if above else -4),
                textcoords="offset points",
                ha="right",
                va="bottom" if above else "top",
                fontsize=fontsize,
                color=RESOURCE_COLORS[name],
            )
        )
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    # every slope's label at one intensity, below the lowest knee: the labels stack up the
    # y axis by the ratio of the bandwidths instead of meeting where two knees lie close
    knees = [top / band for band in slopes.values() if lo < top / band < hi]
    at = float(np.sqrt(lo * min(knees))) if knees else lo
    for level, band in slopes.items():
        y = np.minimum(band * x, top) / scale
        style = "-" if level == "hbm" else "--"
        drawn += ax.loglog(
            x, y, color=RESOURCE_COLORS[level], linewidth=1.2, linestyle=style, zorder=3
        )
        knee = top / band
        if lo < knee < hi:
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
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("attainable axis", unit=unit))
    return drawn


def level_intensities(cost: Cost, time: TimeBound, device: Hardware) -> dict[str, float]:
    """算子在它被计入的每个存储层级上，主单元 FLOPs 与字节数之比（FLOP/byte）。

    一个层级的字节数是它在 ``time`` 中的时间乘以它的带宽，所以就是
    :func:`roofline_book.roofline.roofs.time_bound` 计入那里的字节数：HBM 上是必需字节数（以及装不进
    L2
    的重读），L2 上是每一个字节，含重读。FLOPs 是 :func:`roofline_book.roofline.roofs.main_unit`
    的，
    即画算子时所用速率的那个单元。

    Examples
    --------
    >>> from roofline_book.devices.catalog import EXAMPLE
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
    leaders: Iterable[str] = (),
):
    """把每个算子放在限制它的那些 roof 之下，每个存储层级放一次。

    算子画在它主单元（承担它大部分 FLOPs
    的单元，:func:`roofline_book.roofline.roofs.main_unit`）的速率
    处：该单元的 FLOPs 除以算子在 ``device`` 上的时间下界
    （:func:`roofline_book.roofline.roofs.time_bound`），永远不超过该单元的水平线。算子在它被计入的每个存
    储层级各放一次，横坐标是该层级的算术强度（:func:`level_intensities`）：HBM 处画实心点，设备有
    L2 带宽时在 L2 处画空心圆（有重读增加 L2 字节时更靠左），两者用点线相连，颜色都是决定这个下界的
    资源的颜色。于是每个点都落在它自己那个层级的斜线之下。``unit_ticks`` 中列出的算子还会在其他每种
    单元的时间所允许主单元达到的速率（``F_main / T_unit``）处画一条该单元颜色的短横线：这就是把特殊
    函数单元的上限换算成这个算子的 FLOP/s。``annotate=False`` 时名字不写在点旁，而是进入图例（每个算
    子一种标记）。``leaders`` 中列出的算子，名字与点之间画一条细线（几个点挤在一起时用）。

    Returns
    -------
    list of matplotlib artists
        每个算子依次是：它在 HBM 处的点，画出时它在 L2 处的圆和点线，它的短横线，以及
        ``annotate`` 时它的标签。
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
            drawn.append(_label(ax, name, (x, y), offsets, fontsize, name in set(leaders)))
    return drawn
