"""推理的示意图：KV cache 随 decode 步增长，prefill 与 decode 读同一份权重。

数都取自 :mod:`roofline_book.llm.inference`：模型目录的形状
（:func:`~roofline_book.llm.inference.model`）、每个 token 的 KV cache 字节数
（:func:`~roofline_book.llm.inference.kv_bytes_per_token`）、一个 linear layer 的代价
（:func:`~roofline_book.llm.inference.linear`），以及设备目录的 ridge point。
"""

from __future__ import annotations

from typing import Any

from ...devices.catalog import hardware
from ...dtypes import bytes_per_element
from ...llm.inference import Precisions, kv_bytes_per_token, kv_cache_bytes, linear
from ...llm.inference import model as catalog_model
from ...units import si
from . import _draw
from ._common import COLORS, dims, key_row, rich, sizes


def nbytes(value: float) -> str:
    """字节数的写法：十进制前缀，三位有效数字，与正文的流量一样（``524 kB``、``90.2 MB``）。

    >>> nbytes(524288), nbytes(4096 * 11008 * 2)
    ('524 kB', '90.2 MB')
    """
    return si(value, "B", 3)


def kv_cache_steps(
    *, model: str = "llama-2-7b", prompt: int = 3, steps: int = 4, ax: Any = None
) -> Any:
    """KV cache 随 decode 一步步增长：每步写入一行新的 K、V，读入此前的所有行。

    每一列是一个时刻的 KV cache（一层；背后的影子表示每层各一份）：第一列是 prefill 写入的
    ``prompt`` 行，之后第 ``j`` 步读入已有的 ``prompt + j - 1`` 行（蓝）、写入一行（绿）。
    一行是一个 token 在一层中的 K 与 V。列下写出这一步读、写的字节数（所有层合计）；
    底下写出一个 token 在所有层的字节数 ``m_kv = 2 L h_kv d s``。

    数的来源：模型目录（:func:`roofline_book.llm.inference.model`）的层数、KV head 数与 head 宽度；
    ``m_kv`` 来自 :func:`~roofline_book.llm.inference.kv_bytes_per_token`，一步读入的字节来自
    :func:`~roofline_book.llm.inference.kv_cache_bytes` （KV cache 按默认精度 BF16）。
    字节按二进制前缀。

    Parameters
    ----------
    model : str
        模型目录中的键。
    prompt : int
        prompt 的 token 数（prefill 写入的行数）。
    steps : int
        画几个 decode 步。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    d = sizes(prompt=prompt, steps=steps)
    prompt, steps = d["prompt"], d["steps"]
    config = catalog_model(model)
    p = Precisions()
    m_kv = kv_bytes_per_token(config, p)
    per_layer = m_kv // config.layers

    cols, rows = steps + 1, prompt + steps
    col_w, row_h, cell = 1.25, 0.2, 0.36  # a column's pitch, a row's height, a K or V cell
    left = 0.85
    text_h = 0.62
    height = 0.45 + 0.2 + rows * row_h + text_h + 0.85
    width = max(6.2, left + cols * col_w + 0.1)
    fig, ax = _draw.canvas(width, height, ax)
    top = height - 0.55  # the first row's top edge

    # token labels, on the left
    for r in range(rows):
        _draw.label(ax, left - 0.1, top - (r + 0.5) * row_h, f"token {r}", size=7, ha="right")
    for c in range(cols):
        x = left + c * col_w + (col_w - 2 * cell) / 2
        n = prompt + max(c - 1, 0) + (1 if c else 0)  # rows after this column's write
        old = 0 if c == 0 else n - 1
        # one shadow per further layer: the same rows, in every layer
        for shift in (0.08, 0.04):
            _draw.box(
                ax, x + shift, top - n * row_h + shift, 2 * cell, n * row_h,
                color=COLORS["grey"], fill=False, lw=0.5,
            )  # fmt: skip
        # an opaque ground, so the layers behind show only at the edges
        _draw.box(ax, x, top - n * row_h, 2 * cell, n * row_h, color="white", alpha=1.0, lw=0)
        for r in range(n):
            color = COLORS["a"] if r < old else COLORS["c"]
            for h, name in enumerate(("K", "V")):
                _draw.box(
                    ax, x + h * cell, top - (r + 1) * row_h, cell, row_h, color=color,
                    alpha=0.55 if r >= old else 0.3, lw=0.5, text=name if r == 0 else None,
                    size=6.5,
                )  # fmt: skip
        # under the column: what this step read and wrote, all layers together
        y = top - rows * row_h - 0.2
        cx = left + c * col_w + col_w / 2
        if c == 0:
            lines = ["prefill", f"写 {prompt} 行 = {nbytes(prompt * m_kv)}"]
        else:
            read = kv_cache_bytes(config, old, p)
            lines = [f"第 {c} 步", f"读 {old} 行 = {nbytes(read)}", f"写 1 行 = {nbytes(m_kv)}"]
        for i, line in enumerate(lines):
            _draw.label(ax, cx, y - i * 0.19, line, size=7.5)

    # the key and the bytes of one row
    _draw.label(
        ax, left, height - 0.2, f"{config.name}：每个 decode 步读入所有旧行，写入一行新的",
        size=8.5, ha="left",
    )  # fmt: skip
    key_row(ax, width - 1.2, height - 0.2, COLORS["a"], "读", size=8)
    key_row(ax, width - 0.6, height - 0.2, COLORS["c"], "写", size=8)
    y = 0.5
    rich(
        ax, 0.15, y,
        ["一行是一个 token 在一层的 K 与 V：", "$2\\, h_{kv}\\, d\\, s$",
         f" = 2 × {config.kv_heads} × {config.d} × {bytes_per_element(p.kv)} B"
         f" = {nbytes(per_layer)}"],
        size=8, ha="left",
    )  # fmt: skip
    rich(
        ax, 0.15, y - 0.27,
        [f"每层各存一份（后面的框），共 {config.layers} 层；一个 token 在所有层：",
         "$m_{kv} = 2\\, L\\, h_{kv}\\, d\\, s$", f" = {nbytes(m_kv)}"],
        size=8, ha="left",
    )  # fmt: skip
    return fig


def prefill_decode(
    *, model: str = "llama-2-7b", prompt: int = 512, batch: int = 8, device: str = "h100-sxm",
    ax: Any = None,
) -> Any:  # fmt: skip
    """prefill 与 decode 读同一份权重 W：prefill 一次乘 ``prompt`` 行，decode 只乘 ``batch`` 行。

    上面是 MLP 的 up 投影 W（``d_model x d_ff``），下面两个 GEMM ``C = A W`` 用的都是它：
    prefill 的 A 是一条序列的 ``prompt`` 个 token（较高），decode 的 A 是 ``batch`` 条序列
    各一个新 token（很薄）。
    A、W、C 按同一比例画出（太薄的边画成最细可见的宽度）。右边写出各自的算术强度 ``I`` 与设备的
    ridge point ``I*`` 相比：``I > I*`` 为 compute-bound，否则 memory-bound。

    数的来源：形状来自模型目录（:func:`roofline_book.llm.inference.model` 的 ``hidden``、``ffn``）；
    ``I`` 来自 :func:`roofline_book.llm.inference.linear` 的 :class:`~roofline_book.ops.Cost`
    （默认精度：BF16 权重与激活）；W 的字节数是它读入的权重；``I*`` 是
    :meth:`roofline_book.Hardware.ridge_point` （矩阵单元对 HBM）。单位：FLOP/byte，
    字节按二进制前缀。

    Parameters
    ----------
    model : str
        模型目录中的键。
    prompt : int
        prefill 的 token 数（一条序列）。
    batch : int
        decode 的 batch：序列数，每条一个新 token。
    device : str
        设备目录中的键（ridge point 所用）。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    d = sizes(prompt=prompt, batch=batch)
    prompt, batch = d["prompt"], d["batch"]
    config = catalog_model(model)
    p = Precisions()
    k, n = config.hidden, config.ffn
    pre, dec = linear(prompt, k, n, p), linear(batch, k, n, p)
    ridge = hardware(device).ridge_point(p.activations)
    weights = p.weight_bytes(k * n)

    sc = 1.2 / k  # inches per element: d_model is 1.2 inches

    def side(v: int) -> float:
        return max(v * sc, 0.03)

    ka, nw = side(k), side(n)
    x_a, x_c = 0.2, 0.2 + ka + 0.2
    ma, md = side(prompt), side(batch)
    y_dec = 0.45
    y_pre = y_dec + md + 0.75
    y_w = y_pre + ma + 0.3
    height = y_w + ka + 0.35
    right = x_c + nw + 0.25
    fig, ax = _draw.canvas(right + 2.05, height, ax)

    _draw.box(ax, x_c, y_w, nw, ka, color=COLORS["w"], alpha=0.45)
    _draw.label(ax, x_c + nw / 2, y_w + ka / 2 + 0.12, "W：MLP 的 up 投影", size=8.5)
    _draw.label(ax, x_c + nw / 2, y_w + ka / 2 - 0.12, dims(k, n), size=8)
    _draw.label(ax, right, y_w + ka / 2 + 0.12, "两种情形读的是同一个 W", size=8, ha="left")
    _draw.label(ax, right, y_w + ka / 2 - 0.12, f"每次读 {nbytes(weights)}", size=8, ha="left")
    _draw.label(ax, x_a, y_w + ka - 0.1, "$C = A\\,W$", size=8.5, ha="left")
    _draw.label(ax, x_a, y_w + ka - 0.33, "同一个 W，两种 A", size=8.5, ha="left")
    for x in (x_c, x_c + nw):
        ax.plot([x, x], [y_dec, y_w], color=COLORS["w"], lw=0.5, ls=":")

    rows = (
        ("prefill", y_pre, ma, prompt, pre, f"一条序列的 {prompt} 个 token"),
        ("decode", y_dec, md, batch, dec, f"{batch} 条序列各 1 个新 token"),
    )
    for name, y, h, m, cost, who in rows:
        _draw.box(ax, x_a, y, ka, h, color=COLORS["a"], alpha=0.6, lw=0.6)
        _draw.box(ax, x_c, y, nw, h, color=COLORS["c"], alpha=0.45, lw=0.6)
        _draw.label(ax, x_a + ka / 2, y - 0.14, f"A：{dims(m, k)}", size=7.5)
        _draw.label(ax, x_c + nw / 2, y - 0.14, f"C：{dims(m, n)}", size=7.5)
        mid = y + h / 2
        _draw.label(ax, right, mid + 0.24, f"{name}：{who}", size=8, ha="left")
        bound = "compute-bound" if cost.intensity > ridge else "memory-bound"
        sign = ">" if cost.intensity > ridge else "<"
        shown = float(f"{cost.intensity:.3g}")  # three figures, no exponent: 1730, 7.98
        _draw.label(
            ax, right, mid, f"$I$ = {shown:g} {sign} $I^*$ = {ridge:.0f} FLOP/byte",
            size=8, ha="left",
        )  # fmt: skip
        _draw.label(ax, right, mid - 0.24, bound, size=8, ha="left")
    return fig
