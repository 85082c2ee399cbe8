"""通信的 roofline：横轴是每送出一个字节做的 FLOPs，斜线是链路带宽，平顶是矩阵单元的峰值。"""

from __future__ import annotations

from collections.abc import Mapping

from ..._base import validate as _validate
from ...devices.catalog import Hardware
from ...roofline.roofs import attainable
from .roofs import roofline
from .style import PALETTE, _scale, text


def comm_roofline(
    ax,
    device: Hardware,
    links: Mapping[str, float],
    strategies: Mapping[str, float] | None = None,
    *,
    dtype: str = "bf16",
    colors: Mapping[str, str] | None = None,
    intensity_range: tuple[float, float] = (10.0, 1e6),
    unit: str = "TFLOP/s",
):
    """每条链路一条 roof ``min(P, B x I)``，``I`` 为每送出一个字节的 FLOPs；在每条 roof 上用方块标出
    各并行方式的 ``I`` （圆点是 ridge point）。名字标在最后一条链路上；其他链路上的点与它不重合时
    也标。

    计算与通信完全重叠时，一块设备能达到的算力不超过这条 roof：``I`` 在 ridge point
    （:func:`roofline_book.distributed.comm.critical_intensity`）左侧时，通信决定时间。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    device : roofline_book.devices.device.Hardware
        设备，取它 ``dtype`` 的矩阵单元峰值。
    links : mapping of str to float
        图例标签 -> 每个方向的链路带宽（byte/s）。
    strategies : mapping of str to float, optional
        标签 -> 每送出一个字节的 FLOPs
        （:func:`roofline_book.distributed.comm.strategy_intensities`），
        画在每条 roof 上。
    colors : mapping of str to str, optional
        链路标签 -> 颜色。

    Returns
    -------
    list of matplotlib artists
    """
    peak = device.peak_flops(dtype)
    palette = [PALETTE["blue"], PALETTE["vermillion"], PALETTE["green"], PALETTE["purple"]]
    drawn = []
    for i, (label, bandwidth) in enumerate(links.items()):
        _validate.positive(f"links[{label!r}]", bandwidth)
        color = (colors or {}).get(label, palette[i % len(palette)])
        drawn += roofline(
            ax,
            peak,
            bandwidth,
            label=label,
            color=color,
            intensity_range=intensity_range,
            unit=unit,
        )
        ranked = sorted((strategies or {}).items(), key=lambda item: item[1])
        last = list(links.values())[-1]
        for j, (name, intensity) in enumerate(ranked):
            y = attainable(intensity, peak, bandwidth) / _scale(unit)
            # squares, so that a strategy is not read as a ridge point (a circle)
            drawn.append(ax.scatter([intensity], [y], color=color, marker="s", s=20, zorder=5))
            hidden = y == attainable(intensity, peak, last) / _scale(unit)  # under the last link's
            if i == len(links) - 1 or not hidden:  # labels alternate below and above the roof
                below = j % 2 == 0 or i < len(links) - 1
                drawn.append(
                    ax.annotate(
                        name,
                        (intensity, y),
                        xytext=(3, -11 if below else 5),
                        textcoords="offset points",
                        fontsize=8,
                        color=PALETTE["black"],
                    )
                )
    ax.set_xlabel(text("comm intensity axis"))
    ax.set_ylabel(text("attainable axis", unit=unit))
    return drawn
