"""kernels 与 inference 两组示意图共用的小件：字节数的写法、图例行、尺寸的检查与缩放。"""

from __future__ import annotations

from typing import Any

from ..._base import validate as _validate
from ...units import binary
from ..plotting.style import PALETTE
from . import _draw

#: 示意图用到的颜色：读入的 A（蓝）、权重 W（橙）、输出 C（绿）、强调（朱红）、片上（天蓝）。
COLORS = {
    "a": PALETTE["blue"],
    "w": PALETTE["orange"],
    "c": PALETTE["green"],
    "hot": PALETTE["vermillion"],
    "chip": PALETTE["sky"],
    "grey": "#888888",
    "tile": PALETTE["black"],
}


def nbytes(value: float) -> str:
    """字节数的写法：二进制前缀，三位有效数字（``1 MiB``、``512 KiB``、``86 MiB``）。

    >>> nbytes(128 * 4096 * 2), nbytes(524288), nbytes(3 * 2**20 // 2)
    ('1 MiB', '512 KiB', '1.5 MiB')
    """
    return binary(value, "B", 3)


def dims(*values: int) -> str:
    """形状的写法：``4096 × 128``。

    >>> dims(4096, 128)
    '4096 × 128'
    """
    return " × ".join(str(v) for v in values)


def sizes(**named: object) -> dict[str, int]:
    """按名字检查一组正整数尺寸，原样返回（错了抛 ``InvalidArgument``）。"""
    return {name: _validate.size(name, value) for name, value in named.items()}


def key_row(
    ax: Any, x: float, y: float, color: str, text: str, *, size: float = 8, hatch: str | None = None
) -> Any:
    """图例的一行：一个小色块，右边一行字（左对齐，竖直居中在 ``y``）。返回文字。"""
    side = 0.8 * _draw.line_height(size)
    _draw.box(ax, x, y - side / 2, side, side, color=color, alpha=0.75, lw=0.6, hatch=hatch)
    return _draw.label(ax, x + side + 0.08, y, text, size=size, ha="left")


def _renderer(fig: Any) -> Any:
    """能量出文字大小的 renderer；图还没有时借一个 Agg 的，用完把原来的 canvas 还回去。"""
    canvas = fig.canvas
    if hasattr(canvas, "get_renderer"):
        return canvas.get_renderer()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.set_canvas(canvas)
    return renderer


def rich(
    ax: Any,
    x: float,
    y: float,
    parts: list[str],
    *,
    size: float = 8,
    ha: str = "center",
    color: str = _draw.INK,
) -> list[Any]:
    """把几段文字接成一行，竖直居中在 ``y``：汉字与公式（``$...$``）分段写。

    matplotlib 的 mathtext 用它自己的字体，同一段里的汉字没有字形，所以含公式的段只写公式与
    ASCII，汉字另起一段；各段按量出的宽度首尾相接，按 ``ha`` 对齐在 ``x``。段首段尾的空格
    （SVG 的阅读器会丢掉它们）改成段与段之间固定的一小段间距。

    Returns
    -------
    list of matplotlib.text.Text
    """
    fig = ax.figure
    renderer = _renderer(fig)
    baseline = y - 0.36 * size / _draw.POINTS_PER_INCH * _inch(ax)
    # an SVG viewer drops a text's leading and trailing spaces: each becomes a gap instead
    space = 0.4 * size / _draw.POINTS_PER_INCH * _inch(ax)
    texts = [
        ax.text(0, baseline, p.strip(), fontsize=size, color=color, ha="left", va="baseline")
        for p in parts
    ]
    per_px = 1.0 / (ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])
    widths = [t.get_window_extent(renderer).width * per_px for t in texts]
    gaps = [0.0] + [
        space if (a[-1:].isspace() or b[:1].isspace()) else 0.0
        for a, b in zip(parts, parts[1:], strict=False)
    ]
    total = sum(widths) + sum(gaps)
    start = {"left": x, "center": x - total / 2, "right": x - total}[ha]
    for t, w, g in zip(texts, widths, gaps, strict=True):
        start += g
        t.set_x(start)
        start += w
    return texts


def _inch(ax: Any) -> float:
    """``ax`` 的数据坐标里，一英寸有多长（在 :func:`_draw.canvas` 建的图上为 1）。"""
    fig = ax.figure
    px = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]
    return fig.dpi / px
