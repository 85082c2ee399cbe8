"""示意图共用的画法：以英寸为坐标的画布、框、箭头、文字与格子，颜色取本书的配色。

画布的数据坐标就是英寸（``canvas(6, 3)`` 的 x 从 0 到 6，y 从 0 到 3，等比例），
所以字号与框的大小可以直接比较：8 pt 的一行字高约 0.11 英寸。
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..plotting.style import PALETTE

#: 线与文字的颜色（深色模式下页面的样式把整张图反色，黑色变成白色）。
INK = PALETTE["black"]
#: 填充的浅色：各颜色加透明度画出。
FILL_ALPHA = 0.22
#: 一行 ``size`` pt 的文字大约多高（英寸）。
POINTS_PER_INCH = 72.0


def canvas(width: float, height: float, ax: Any = None) -> tuple[Any, Any]:
    """一张 ``width`` x ``height`` 英寸的空白图，数据坐标即英寸；给了 ``ax`` 就在它上面画。

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> fig, ax = canvas(4, 2)
    >>> [float(v) for v in (*ax.get_xlim(), *ax.get_ylim())], ax.axison
    ([0.0, 4.0, 0.0, 2.0], False)
    """
    if width <= 0 or height <= 0:
        from ..._base.validate import InvalidArgument

        raise InvalidArgument(
            "width", f"and height must be positive inches; got {width} x {height}"
        )
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax.figure, ax


def box(
    ax: Any,
    x: float,
    y: float,
    w: float,
    h: float,
    *,
    color: str = INK,
    fill: bool = True,
    alpha: float = FILL_ALPHA,
    text: str | None = None,
    size: float = 8,
    lw: float = 0.8,
    hatch: str | None = None,
    dashed: bool = False,
) -> Any:
    """左下角在 ``(x, y)``、宽 ``w`` 高 ``h`` 的矩形（英寸），可在中心写 ``text``。

    Returns
    -------
    matplotlib.patches.Rectangle
    """
    from matplotlib.patches import Rectangle

    face = (*_rgb(color), alpha) if fill else "none"
    patch = Rectangle(
        (x, y),
        w,
        h,
        facecolor=face,
        edgecolor=color,
        linewidth=lw,
        hatch=hatch,
        linestyle="--" if dashed else "-",
    )
    ax.add_patch(patch)
    if text:
        label(ax, x + w / 2, y + h / 2, text, size=size)
    return patch


def grid(
    ax: Any,
    x: float,
    y: float,
    rows: int,
    cols: int,
    cell: float,
    *,
    color: str = INK,
    filled: Iterable[tuple[int, int]] = (),
    fill_color: str | None = None,
    lw: float = 0.5,
) -> list[Any]:
    """``rows`` x ``cols`` 个边长 ``cell`` 的格子，左下角在 ``(x, y)``；``filled`` 里的
    ``(行, 列)`` （行从上往下数）涂上 ``fill_color``。

    Returns
    -------
    list of matplotlib.patches.Rectangle
        涂色的格子。
    """
    from matplotlib.patches import Rectangle

    ax.add_patch(
        Rectangle(
            (x, y), cols * cell, rows * cell, facecolor="none", edgecolor=color, linewidth=lw * 1.6
        )
    )
    for i in range(1, rows):
        ax.plot([x, x + cols * cell], [y + i * cell] * 2, color=color, linewidth=lw)
    for j in range(1, cols):
        ax.plot([x + j * cell] * 2, [y, y + rows * cell], color=color, linewidth=lw)
    out = []
    for r, c in filled:
        patch = Rectangle(
            (x + c * cell, y + (rows - 1 - r) * cell),
            cell,
            cell,
            facecolor=(*_rgb(fill_color or color), 0.6),
            edgecolor="none",
        )
        ax.add_patch(patch)
        out.append(patch)
    return out


def arrow(
    ax: Any,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    color: str = INK,
    text: str | None = None,
    size: float = 7.5,
    both: bool = False,
    lw: float = 1.0,
    offset: tuple[float, float] = (0.0, 0.08),
) -> Any:
    """从 ``start`` 指向 ``end`` 的箭头（``both`` 时两头都有），``text`` 写在中点加 ``offset`` 处。

    Returns
    -------
    matplotlib.text.Annotation
    """
    ann = ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={
            "arrowstyle": "<->" if both else "->",
            "color": color,
            "lw": lw,
            "shrinkA": 0,
            "shrinkB": 0,
        },
    )
    if text:
        mid = ((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1])
        label(ax, *mid, text, size=size, color=color)
    return ann


def label(
    ax: Any,
    x: float,
    y: float,
    text: str,
    *,
    size: float = 8,
    color: str = INK,
    ha: str = "center",
    va: str = "center",
    weight: str = "normal",
) -> Any:
    """在 ``(x, y)`` 写一段文字（默认居中）。

    Returns
    -------
    matplotlib.text.Text
    """
    return ax.text(x, y, text, fontsize=size, color=color, ha=ha, va=va, fontweight=weight)


def line_height(size: float = 8) -> float:
    """``size`` pt 的一行字约占多少英寸（含行距）。

    >>> round(line_height(9), 3)
    0.15
    """
    return 1.2 * size / POINTS_PER_INCH


def _rgb(color: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(color)
