"""分层 roofline：一块设备的每一个上限，以及算子在它所用上限之下的位置。

设备的每种计算单元（某一精度的矩阵单元、向量单元、特殊函数单元）各有一条
水平的 roof，每个有公开带宽的存储层级（HBM；已知时还有 L2）各有一条斜线。
:func:`ceilings` 画出它们；:func:`placed` 把每个算子放在它的算术强度处
（按必需流量，有重读时也按含重读的流量），高度是它的时间下界所允许的速率。
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .. import _validate
from ..hardware import Hardware
from ..ops import Cost
from ..roofline import time_bound
from .style import PALETTE, _label, _scale, text

#: 每种资源的 roof 的颜色。
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
    """画出 ``device`` 的每一条 roof：每种计算单元一条水平线，每个存储层级一条斜线。

    每种单元的 roof ``min(P_unit, B_HBM I)`` 用它自己的颜色画，右端下方标出
    名称和速率；HBM 的斜线一直画到最高的那条水平线；设备有 L2 带宽时，
    再用虚线画出 L2 的斜线。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.hardware.Hardware
    dtype : str
        矩阵单元 roof 的精度（向量单元和特殊函数单元的 roof 取处理 ``dtype``
        数据的算子所能得到的值）。
    intensity_range : tuple of float
        画出的算术强度的最小值和最大值（FLOP/byte）。
    unit : str
        y 轴的单位，:data:`roofline_book.plotting.UNITS` 的一个键。

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
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("attainable axis", unit=unit))
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
    """把每个算子放在限制它的那条 roof 之下，横坐标是它的算术强度。

    点的横坐标是 ``I = FLOPs / 必需字节数``，纵坐标是 ``FLOPs / T``，其中
    ``T`` 是算子在 ``device`` 上的时间下界（:func:`roofline_book.roofline.time_bound`），
    颜色是决定这个下界的资源的颜色。有重读的算子（FlashAttention 的 K 和 V）
    还在 ``FLOPs / (必需字节数 + 重读字节数)`` 处画一个空心点，即在供给重读的
    cache 处的算术强度，并与实心点相连。``unit_ticks`` 中列出的算子还会在
    每种单元单独所允许的速率（``FLOPs / T_unit``）处画一条该单元颜色的短横线：
    这是用到多种单元的算子要受的各个上限。``annotate=False`` 时名字不写在点旁，
    而是进入图例（每个算子一种标记）。

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
