"""GEMM 与低 FLOP 算子两章的数据图，以及低 FLOP 算子中离计算上限最近的那几个。

每个函数只组合 :mod:`roofline_book.present.plotting` 的画法与模型的数：章节里隐藏的 cell
选好输入，调用这里，再粘贴结果。
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..devices.catalog import hardware
from ..dtypes import bytes_per_element
from ..ops import Cost
from ..present import plotting
from ..roofline.bounds import TimeBound
from ..roofline.roofs import gemm_tokens_to_ridge, square_gemm_size_to_ridge, time_bound

__all__ = [
    "Closest",
    "adamw_traffic_figure",
    "closest_to_compute",
    "square_gemm_figure",
    "time_bars_figure",
    "token_intensity_figure",
]

#: 两个比值相差不到这个比例时算作并列（浮点误差之内）。
TIE = 1e-3


def _short(device: str) -> str:
    """图上设备的简称：``"h100-sxm"`` -> ``"H100"``。"""
    return device.split("-")[0].upper()


def square_gemm_figure(
    sizes: Sequence[int],
    dtypes: Sequence[str] = ("fp8", "bf16", "fp32"),
    *,
    device: str = "h100-sxm",
    compare: str | None = "a100-sxm",
) -> Any:
    """方阵 GEMM 的理想算术强度 ``2n / (3s)`` 随边长 ``n`` 的变化，每种精度对照 ``device`` 上自己的
    ridge point（该精度的 GEMM 峰值除以 HBM 带宽，FLOP/byte），叉号标出交点 ``n*``。

    ``compare`` 的 BF16 ridge point 另画一条点线。ridge point 的文字写在远离交点的一侧：
    交点在横轴（对数）左半边时写在右边缘，否则写在左边缘，这样文字不会压在曲线上。

    Parameters
    ----------
    sizes : sequence of int
        扫描的边长 ``n``，从小到大（例如 2 的幂）。
    dtypes : sequence of str
        画出的精度。
    device, compare : str
        目录中的设备；``compare`` 为 None 时不画对照。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = square_gemm_figure([2**p for p in range(4, 15)])
    >>> sorted(t.get_text() for t in fig.axes[0].texts)[:2]
    ['A100 BF16 的 ridge（153）', 'H100 BF16 的 ridge（295）']
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    dev = hardware(device)
    middle = math.sqrt(sizes[0] * sizes[-1])
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    for d in dtypes:
        color, ridge = plotting.roof_color(device, d), dev.ridge_point(d)
        cross = square_gemm_size_to_ridge(ridge, d)
        plotting.gemm_intensity(ax, sizes, d, label=d.upper(), color=color)
        ax.scatter([cross], [ridge], color=color, marker="x", s=40, zorder=5)
        side = "right" if cross < middle else "left"
        text = f"{_short(device)} {d.upper()} 的 ridge（{ridge:.0f}）"
        plotting.ridge_line(ax, ridge, text, color=color, side=side)
    if compare is not None:
        ridge = hardware(compare).ridge_point("bf16")
        text = f"{_short(compare)} BF16 的 ridge（{ridge:.0f}）"
        plotting.ridge_line(
            ax, ridge, text, color=plotting.roof_color(compare, "bf16"), linestyle=":"
        )
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel=plotting.text("square gemm axis"),
        ylabel="算术强度 [FLOP/byte]",
        title="方阵 GEMM 的算术强度 2n/(3s)",
    )
    ax.legend(loc="upper left")
    return fig


def token_intensity_figure(
    tokens: Sequence[int],
    k: int,
    n: int,
    dtype: str = "bf16",
    *,
    devices: Sequence[str] = ("h100-sxm", "a100-sxm"),
) -> Any:
    """权重为 ``k x n`` 的 linear layer 的算术强度随 token 数 ``M`` 的变化。

    画出 ``M`` 很大时的极限 ``2KN / (s(K + N))`` （点划线），以及每台设备的 ridge point（虚线）与
    越过它所需的 token 数 ``M*`` （竖直点线，:func:`roofline_book.gemm_tokens_to_ridge`；
    无解时不画）。

    Parameters
    ----------
    tokens : sequence of int
        扫描的 token 数 ``M``，从小到大。
    k, n : int
        权重的形状 ``K x N``。
    dtype : str
        激活、权重与输出的精度。
    devices : sequence of str
        目录中的设备，各画一条 ridge point。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = token_intensity_figure([2**p for p in range(17)], 4096, 4096)
    >>> sorted(t.get_text() for t in fig.axes[0].texts)
    ['A100 的 ridge point（153）', 'H100 的 ridge point（295）', 'M* = 165', 'M* = 345', \
'极限 2KN/(s(K+N)) = 2048']
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    limit = 2 * k * n / (bytes_per_element(dtype) * (k + n))
    shape = f"K = N = {k}" if k == n else f"K = {k}, N = {n}"
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    plotting.gemm_intensity(
        ax,
        tokens,
        dtype,
        k=k,
        n=n,
        label=f"{dtype.upper()}, {shape}",
        color=plotting.PALETTE["black"],
    )
    plotting.reference_line(
        ax, limit, f"极限 2KN/(s(K+N)) = {limit:.0f}", color="#555555",
        linestyle="-.", linewidth=1.0, below=True,
    )  # fmt: skip
    for device in devices:
        color, ridge = plotting.roof_color(device, dtype), hardware(device).ridge_point(dtype)
        plotting.ridge_line(
            ax, ridge, f"{_short(device)} 的 ridge point（{ridge:.0f}）", color=color
        )
        m_star = gemm_tokens_to_ridge(ridge, k, n, dtype)
        if math.isfinite(m_star):
            plotting.reference_line(
                ax, m_star, f"M* = {m_star:.0f}", vertical=True, color=color,
                linestyle=":", linewidth=1.0,
            )  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel="token 数 M（激活矩阵的行数）",
        ylabel="算术强度 [FLOP/byte]",
        title=f"权重为 {k} × {n} 的 linear layer",
    )
    ax.legend(loc="lower right")
    return fig


def adamw_traffic_figure(groups: Mapping[str, Mapping[str, Cost]], params: int) -> Any:
    """AdamW 一步中每个参数读写的字节数：每组（例如一种精度组合）一幅，每种实现一根堆叠条。

    Parameters
    ----------
    groups : mapping of str to mapping of str to Cost
        ``{组的标题: {实现: Cost}}``，例如 ``{"全 FP32": {"loop": ..., "fused": ...}}``。
    params : int
        参数个数：字节数除以它。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from roofline_book import adamw
    >>> impls = {i: adamw(1000, i) for i in ("loop", "foreach", "fused")}
    >>> fig = adamw_traffic_figure({"全 FP32": impls}, 1000)
    >>> fig.get_suptitle()
    'AdamW 一步：各实现每个参数都是 14 次运算'
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    fig, axes = plt.subplots(
        1, len(groups), figsize=(5.6, 3.2), sharey=True, squeeze=False, layout="constrained"
    )
    bars: list[Any] = []
    for ax, (title, group) in zip(axes[0], groups.items(), strict=True):
        bars = plotting.traffic_bars(ax, list(group.items()), per=params)
        ax.set_title(title, fontsize=10)
    axes[0][0].set_ylabel("字节 / 参数")
    axes[0][-1].legend(bars[:2], ["读取", "写入"], loc="upper right")
    flops = {c.flops for group in groups.values() for c in group.values()}
    if len(flops) == 1:
        per = flops.pop() / params
        fig.suptitle(f"AdamW 一步：各实现每个参数都是 {per:.0f} 次运算", fontsize=11)
    return fig


def time_bars_figure(
    named: Sequence[tuple[str, Cost]], device: str = "h100-sxm"
) -> tuple[Any, list[tuple[str, TimeBound]]]:
    """每个算子的计算时间与访存时间（:func:`roofline_book.time_bound` 在 ``device`` 上），画成一对
    水平条（对数坐标），返回图和各算子的下界。

    Parameters
    ----------
    named : sequence of (str, Cost)
        从上到下的算子。
    device : str
        目录中的设备。

    Returns
    -------
    (matplotlib.figure.Figure, list of (str, TimeBound))

    Examples
    --------
    >>> from roofline_book import add
    >>> fig, bounds = time_bars_figure([("add", add(2**20))])
    >>> bounds[0][1].resource
    'hbm'
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    dev = hardware(device)
    bounds = [(name, time_bound(c, dev)) for name, c in named]
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    xlabel = f"{device.upper().replace('-', ' ')} 上的时间下界 [µs]"
    bars = plotting.time_bars(ax, bounds, xlabel=xlabel)
    ax.legend(
        bars, ["计算时间：最慢的计算单元", "访存时间：HBM"], loc="lower center",
        bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False,
    )  # fmt: skip
    return fig, bounds


@dataclass(frozen=True)
class Closest:
    """访存时间与计算时间之比最小的那几个算子（并列的都在内）。

    Attributes
    ----------
    names : tuple of str
        这些算子的名字，按给出的顺序。
    ratio : float
        它们的 ``T_memory / T_compute``。
    resource : str
        决定它们计算时间的单元（``"matrix"``、``"vector"`` 或 ``"special"``），它们都相同。
    special_per_byte : float
        每读写一个字节的特殊函数求值次数，它们都相同。
    """

    names: tuple[str, ...]
    ratio: float
    resource: str
    special_per_byte: float


def closest_to_compute(named: Sequence[tuple[str, Cost]], device: str = "h100-sxm") -> Closest:
    """受带宽限制的算子中，离计算上限最近的：``T_memory / T_compute`` 最小的那几个。

    并列（相差不到 :data:`TIE`）的都算上；它们的计算时间须由同一个单元决定、每字节的特殊函数
    求值次数须相同，否则没有一个共同的原因可说，抛出 ``ValueError``。

    Parameters
    ----------
    named : sequence of (str, Cost)
        算子，每个都要有计算（FLOPs 大于 0）。
    device : str
        目录中的设备。

    Returns
    -------
    Closest

    Examples
    --------
    GELU 的 tanh 与 softmax 的 exp 各是每 4 字节一次特殊函数求值（BF16，读一写一），
    H100 SXM 上 4 x 4.18e12 / 3.35e12 = 5.0：

    >>> from roofline_book import gelu, relu, softmax
    >>> c = closest_to_compute([("relu", relu(2**24)), ("GELU", gelu(2**24)),
    ...                         ("softmax", softmax(4096, 4096))])
    >>> c.names, round(c.ratio, 2), c.resource, c.special_per_byte
    (('GELU', 'softmax'), 4.99, 'special', 0.25)
    """
    dev = hardware(device)
    ratios = []
    for name, cost in named:
        t = time_bound(cost, dev)
        if t.compute <= 0:
            raise ValueError(f"{name!r} does no compute: its T_memory / T_compute is undefined")
        ratios.append((t.memory / t.compute, name, cost, t))
    least = min(r for r, *_ in ratios)
    near = [x for x in ratios if x[0] <= least * (1 + TIE)]
    resources = {next(r for r, v in t.by_resource.items() if v == t.compute) for *_, t in near}
    per_byte = {c.special_flops / c.bytes for _, _, c, _ in near}
    if len(resources) != 1 or len(per_byte) != 1:
        names = [name for _, name, _, _ in near]
        raise ValueError(f"the closest operators {names} have no common compute unit or rate")
    return Closest(
        names=tuple(name for _, name, _, _ in near),
        ratio=near[0][0],
        resource=resources.pop(),
        special_per_byte=per_byte.pop(),
    )
