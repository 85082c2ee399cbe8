"""roofline 图：roof、放在 roof 上的算子、实测点、算术强度曲线。"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware
from ...dtypes import bytes_per_element
from ...ops import Cost, attention, gemm
from ...roofline.roofs import attainable, ridge_point
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
    """在 log-log 坐标上画 ``min(P, B * I)``，并标出 ridge point。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    peak_flops : float
        峰值算力（FLOP/s）。
    bandwidth : float
        内存带宽（byte/s）。
    label : str, optional
        这条 roof 在图例中的标签。
    intensity_range : tuple of float
        画出的算术强度的最小值和最大值（FLOP/byte）。
    unit : str
        y 轴的单位，:data:`~roofline_book.present.plotting.style.UNITS` 的一个键。
    ridge : bool
        用一个点和一条竖直点线标出 ridge point。
    linewidth : float, optional
        roof 的线宽（point）；默认用样式中的线宽。

    Returns
    -------
    list of matplotlib artists
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise InvalidArgument("intensity_range", f"must be increasing, got {intensity_range!r}")
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
    """把算子放在 roof 上：横坐标是算术强度，纵坐标是该处的可达速率。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : sequence of tuple
        每个算子的 ``(label, Cost)``。
    peak_flops : float
        它们所在 roof 的峰值算力（FLOP/s）。
    bandwidth : float
        它们所在 roof 的内存带宽（byte/s）。
    unit : str
        y 轴的单位，:data:`~roofline_book.present.plotting.style.UNITS` 的一个键。
    colors : sequence of str, optional
        每个算子一种颜色，循环使用；默认用调色板。
    annotate : bool
        把每个标签写在它的点旁边。
    offsets : mapping, optional
        标签相对于点的位置，单位 point（x 向右，y 向上），按标签索引；没有列出的标签放在
        ``(5, -12)``，即右下方。把它们作为数据放在图的输入旁边。
    fontsize : float
        标签的字号（point）。
    rings : list of str
        画成较大空心圆环的算子，这样一个点落在另一个点上（比如 AdamW loop 挨着 add）时仍看得见。

    Returns
    -------
    list of matplotlib artists
        每个算子先是它的点，``annotate`` 时再是标签。
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
    hollow: bool = False,
    label: str | None = None,
    annotate: bool = True,
    size: float = 30,
):
    """把实测的点画成一个 collection：``(名称, 算术强度 FLOP/byte, 实测 FLOP/s)``。

    实测 roofline 上的点都由它画（一组一次调用：一个 collection，SVG 小）。

    Parameters
    ----------
    hollow : bool
        空心标记（例如工作集小到可以由 cache 供给的点）。
    label : str, optional
        这一组在图例中的名称。
    annotate : bool
        在每个点旁写出它的名称。

    Returns
    -------
    list of matplotlib artists
        collection，然后是各个注释。
    """
    points = list(named)
    scale = _scale(unit)
    xs, ys = [x for _, x, _ in points], [y / scale for _, _, y in points]
    drawn = [
        ax.scatter(
            xs,
            ys,
            marker=marker,
            s=size,
            zorder=5,
            label=label,
            edgecolors=color,
            linewidths=1.2 if hollow else 0.5,
            facecolors="none" if hollow else color,
        )
    ]
    if annotate:
        for (name, _, _), x, y in zip(points, xs, ys, strict=True):
            drawn.append(
                ax.annotate(
                    name,
                    (x, y),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=7,
                    color="#222222",
                )  # fmt: skip
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
    """扫描一个尺寸、固定其余尺寸时 GEMM 的算术强度（``None`` 表示取被扫描的尺寸）。

    ``m = k = n = None`` 时扫描的是方阵，``n x n x n``。

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
    """随 ``n`` 增大，方阵 GEMM 所处的 roof 占峰值的比例，每种精度一条曲线。

    对每种精度（``colors`` 的键，值是曲线的颜色），曲线是 ``gemm(n, n, n)`` 在 ``device`` 的
    dense 峰值与带宽下的 ``attainable(I(n)) / P``，标签写出该精度的 ridge point。

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
    """随序列变长，self-attention 的 HBM 流量（左）和算术强度（右）。

    每种实现一条曲线（``colors`` 的键：``"materialized"``、``"flash"``），batch 为 1，
    ``seq_q = seq_k = N``，不加 mask，由 :func:`roofline_book.ops.attention` 算出；流量坐标上
    还画出 Q、K、V 各读一次、O 写一次的下限（``4 heads N d s`` 字节）。

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
    """每个算子的实测速率画在其算术强度处的 roof 之下，二者用虚线相连。

    Parameters
    ----------
    named : sequence of tuple
        每个算子的 ``(name, Cost, achieved FLOP/s)``。
    peak_flops : float
        roof 的峰值算力（FLOP/s）。
    bandwidth : float
        roof 的内存带宽（byte/s）。
    unit : str
        y 轴的单位，:data:`~roofline_book.present.plotting.style.UNITS` 的一个键。
    labels : tuple of str, optional
        roof 上的点和实测点在图例中的标签；默认用图的语言中 "roof" 与 "achieved" 对应的词。
    right : sequence of str
        "roof 的 x%" 标签放在点右边的算子名（其余放在左边）。

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
    """标出 roofline 的各部分：memory roof、compute roof、ridge point，以及 ridge point 两侧的
    memory-bound 区与 compute-bound 区。

    Parameters
    ----------
    memory : tuple of float
        memory roof 标签的起点，数据坐标（算术强度，以 ``unit`` 计的速率）；
        作为数据放在图的输入旁边。
    compute : tuple of float
        compute roof 标签的起点，数据坐标，同上。
    ridge : tuple of float
        ridge point 标签的起点，数据坐标，同上。
    regions_y : float
        两侧区域标签的高度，它们紧挨在 ridge point 的左右两边。

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
    """在一个坐标系中画几块设备的 roofline，每种精度一种线型。

    Parameters
    ----------
    devices : sequence of tuple
        每块设备的 ``(Hardware, label, colour)``；colour 为 ``None`` 时，每种精度的颜色取自
        ``roof_color``，与同一张图上已画的 roof 同色时换成
        调色板中下一个没用过的颜色。每块设备画得比前一块细，所以与前面设备重合的
        roof（峰值相同）两条都看得见。
    dtypes : mapping of str to str
        精度到线型的映射，例如 ``{"bf16": "-", "fp32": "--"}``；每块设备在该精度下的 dense
        峰值就是它的 roof。

    Returns
    -------
    list of matplotlib artists
    """
    drawn = []
    steps = np.linspace(3.0, 1.2, len(devices)) if len(devices) > 1 else [None]
    widths = [None if w is None else float(w) for w in steps]
    used: set[str] = set()
    for (device, label, color), width in zip(devices, widths, strict=True):
        for dtype, linestyle in dtypes.items():
            colour = color or _unused(roof_color(device.key, dtype), used)
            used.add(colour)
            drawn += roofline(ax, device.peak_flops(dtype), device.memory_bandwidth,
                              color=colour, linewidth=width,
                              linestyle=linestyle, label=f"{label} {dtype.upper()}",
                              intensity_range=intensity_range, unit=unit)  # fmt: skip
    return drawn


def _unused(colour: str, used: set[str]) -> str:
    """``colour``，或它已画在这张图上时 ``PALETTE`` 中下一个还没用过的颜色。"""
    if colour not in used:
        return colour
    palette = list(PALETTE.values())
    start = palette.index(colour) if colour in palette else 0
    rest = palette[start + 1 :] + palette[: start + 1]
    return next((c for c in rest if c not in used), colour)
