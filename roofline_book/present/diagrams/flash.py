"""FlashAttention 的示意图：Q 的一块留在片上，K、V 一块一块流过 SRAM，online softmax 逐块更新。

图中的字节数取自 :func:`~roofline_book.ops.attention` （flash 与 materialized 两种实现），
分块取自 :class:`~roofline_book.ops.FlashTile`，所以模型变了，图也跟着变。
"""

from __future__ import annotations

from typing import Any

from ...dtypes import Precision, bytes_per_element
from . import _draw
from ._common import COLORS, dims, nbytes, rich, sizes

#: 一条张量至多画这么多格（更多的块合并成一格）。
MAX_GRID = 8


def _bar(
    ax: Any, x: float, y: float, w: float, h: float, blocks: int, color: str, marked: int
) -> float:
    """一条竖着的张量（行从上往下），按块画格线（至多 :data:`MAX_GRID` 格），把第 ``marked``
    块涂上 ``color``。返回那一块中心的 y。"""
    _draw.box(ax, x, y, w, h, color=color, alpha=0.08)
    step = -(-blocks // MAX_GRID)
    for b in range(step, blocks, step):
        ax.plot([x, x + w], [y + h - b * h / blocks] * 2, color=color, lw=0.4)
    bh = max(h / blocks, 0.04)
    top = y + h - marked * h / blocks
    _draw.box(ax, x, top - bh, w, bh, color=color, alpha=0.85, lw=0.5)
    return top - bh / 2


def flash_blocks(
    *, seq: int = 4096, head_dim: int = 128, block_q: int = 128, block_k: int = 128,
    cluster: int = 1, dtype: Precision = "bf16", ax: Any = None,
) -> Any:  # fmt: skip
    """FlashAttention 的循环：一个 Q 块留在片上，K、V 一块一块流过，得分块 S 从不写回 HBM。

    左边是 HBM 里的 Q、K、V、O（``seq x head_dim``，行按块画格线），涂色的是一个 Q 块
    ``Q_i`` （``block_q`` 行）与这一步流入的 ``K_j``、``V_j`` （``block_k`` 行）；中间是片上 SRAM：
    ``S_ij = Q_i K_j^T`` （``block_q x block_k``）、online softmax 每行到目前为止的最大值 ``m``
    （running max）与指数和 ``rho`` （running sum，不记作 ``l``：``ℓ`` 是序列长）、输出的累加器
    ``O_i``，以及每个 K/V 块之后的更新式（``m_old`` 是更新前、``m_new`` 是更新后的最大值）；
    右边是不融合的实现写进 HBM 的整个 ``S`` （``seq x seq``），``S_ij`` 只是它的一小块。

    数的来源：:func:`roofline_book.ops.attention` （一个 head）。``impl="flash"``、
    ``tile=FlashTile(block_q, block_k, cluster)`` 的 ``bytes`` 是 Q、K、V 各读一次、O 写一次，
    ``reread_bytes`` 是每个 Q 块（或每个 cluster 的一组 Q 块）再读一遍 K、V 的部分；
    ``impl="materialized"`` 的 ``bytes`` 多出 ``S`` 与 ``softmax(S)`` 各写一次、读一次。
    ``S`` 的大小为 ``seq * seq * s``。字节按二进制前缀。

    Parameters
    ----------
    seq : int
        序列长度（query 与 key 个数相同，不加 mask）。
    head_dim : int
        一个 head 的宽度 ``d``。
    block_q, block_k : int
        一个 Q 块、一个 K/V 块的行数。
    cluster : int
        以 multicast 共享每次 K/V 读入的相邻 Q 块个数（FlashAttention-3 的 cluster）。
    dtype : str or torch.dtype
        Q、K、V、O（与写出的得分）的精度。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...ops import FlashTile, attention

    d = sizes(seq=seq, head_dim=head_dim, block_q=block_q, block_k=block_k, cluster=cluster)
    seq, head_dim, block_q, block_k = d["seq"], d["head_dim"], d["block_q"], d["block_k"]
    block_q, block_k = min(block_q, seq), min(block_k, seq)
    tile = FlashTile(block_q, block_k, d["cluster"])
    flash = attention(1, 1, seq, seq, head_dim, dtype, tile=tile)
    mat = attention(1, 1, seq, seq, head_dim, dtype, impl="materialized")
    s = bytes_per_element(dtype)
    nq, nk = -(-seq // block_q), -(-seq // block_k)
    i, j = nq // 3, nk // 2  # the Q block shown, and the K/V block streaming in now

    fig, ax = _draw.canvas(7.0, 4.7, ax)
    y0, h = 1.35, 2.6
    # HBM: Q, K, V, O, one column each
    _draw.box(ax, 0.15, y0 - 0.3, 1.95, h + 0.85, color=COLORS["grey"], alpha=0.06, dashed=True)
    _draw.label(ax, 1.12, y0 + h + 0.38, "HBM（一个 head）", size=8.5)
    bars = [("Q", COLORS["hot"], i, nq), ("K", COLORS["a"], j, nk)]
    bars += [("V", COLORS["w"], j, nk), ("O", COLORS["c"], i, nq)]
    for n, (name, color, marked, blocks) in enumerate(bars):
        x = 0.3 + n * 0.45
        _bar(ax, x, y0, 0.25, h, blocks, color, marked)
        _draw.label(ax, x + 0.125, y0 + h + 0.13, name, size=8.5)
    _draw.label(ax, 1.12, y0 - 0.15, f"各 {dims(seq, head_dim)}", size=7.5)

    # on chip: the working set of one Q block
    sx, sw = 2.7, 2.5  # wide enough for the rho update on one line
    _draw.box(ax, sx, y0 - 0.3, sw, h + 0.85, color=COLORS["chip"], alpha=0.1)
    _draw.label(ax, sx + sw / 2, y0 + h + 0.38, "片上 SRAM（shared memory）", size=8.5)
    q = 0.42
    top = y0 + h - 0.05
    on_chip = (("Q_i", "hot", block_q), ("K_j", "a", block_k), ("V_j", "w", block_k))
    for n, (name, color, rows) in enumerate(on_chip):
        bx = sx + 0.15 + n * 0.62
        _draw.box(ax, bx, top - q, q, q, color=COLORS[color], alpha=0.5)
        _draw.label(ax, bx + q / 2, top - q / 2, f"${name}$", size=8.5)
        _draw.label(ax, bx + q / 2, top - q - 0.1, dims(rows, head_dim), size=6.5)
    sq = 0.62
    ys = top - q - 0.3 - sq
    _draw.box(ax, sx + 0.15, ys, sq, sq, color=COLORS["hot"], alpha=0.25)
    _draw.label(ax, sx + 0.15 + sq / 2, ys + sq / 2 + 0.1, "$S_{ij}$", size=8.5)
    _draw.label(ax, sx + 0.15 + sq / 2, ys + sq / 2 - 0.12, dims(block_q, block_k), size=6.5)
    for n, name in enumerate(("m", "\\rho")):
        _draw.box(ax, sx + 0.9 + n * 0.22, ys, 0.12, sq, color=COLORS["grey"], alpha=0.3)
        _draw.label(ax, sx + 0.96 + n * 0.22, ys - 0.11, f"${name}$", size=8)
    _draw.box(ax, sx + 1.5, ys, 0.5, sq, color=COLORS["c"], alpha=0.35)
    _draw.label(ax, sx + 1.75, ys + sq / 2, "$O_i$", size=8.5)
    _draw.label(ax, sx + sw / 2, ys - 0.33, "每流入一个 K/V 块更新一次：", size=7.5)
    new, old = r"_{\mathrm{new}}", r"_{\mathrm{old}}"  # no prime: m' would read as a power
    scale = rf"e^{{m{old} - m{new}}}\,"
    updates = (
        rf"$m{new} = \max(m{old},\ \mathrm{{rowmax}}\ S_{{ij}})$",
        rf"$\rho{new} = {scale} \rho{old} + \mathrm{{rowsum}}\ e^{{S_{{ij}} - m{new}}}$",
        rf"$O_i \leftarrow {scale} O_i + e^{{S_{{ij}} - m{new}}}\, V_j$",
    )
    for n, text in enumerate(updates):
        _draw.label(ax, sx + 0.12, ys - 0.6 - n * 0.24, text, size=7.5, ha="left")

    # between them: Q_i once, K_j and V_j in a loop, O_i once back
    _draw.arrow(ax, (2.12, 3.45), (sx - 0.03, 3.45), color=COLORS["a"], lw=1.2)
    _draw.label(ax, 2.41, 3.62, "读", size=7.5)
    _draw.arrow(ax, (sx - 0.03, 1.6), (2.12, 1.6), color=COLORS["c"], lw=1.2)
    _draw.label(ax, 2.41, 1.77, "写", size=7.5)
    _draw.label(ax, 2.41, 2.55, f"无 mask\n对 j\n循环\n{nk} 次", size=7.5)

    # the materialised S, for comparison
    rx, side = 5.42, 1.45
    ry = y0 + h + 0.45 - 0.5 - side
    _draw.box(ax, rx, ry, side, side, color=COLORS["hot"], alpha=0.05, dashed=True)
    step_q, step_k = -(-nq // MAX_GRID), -(-nk // MAX_GRID)
    for b in range(step_q, nq, step_q):
        ax.plot([rx, rx + side], [ry + side - b * side / nq] * 2, color=COLORS["grey"], lw=0.3)
    for b in range(step_k, nk, step_k):
        ax.plot([rx + b * side / nk] * 2, [ry, ry + side], color=COLORS["grey"], lw=0.3)
    bw, bh = max(side / nk, 0.04), max(side / nq, 0.04)
    _draw.box(
        ax, rx + j * side / nk, ry + side - i * side / nq - bh, bw, bh, color=COLORS["hot"],
        alpha=0.9, lw=0.4,
    )  # fmt: skip
    rich(ax, rx + side / 2, ry + side + 0.35, ["整个 ", "$S$", f"：{dims(seq, seq)}"], size=8)
    _draw.label(ax, rx + side / 2, ry + side + 0.14, nbytes(s * seq * seq), size=8)
    _draw.label(ax, rx + side / 2, ry - 0.17, "不融合时写进 HBM", size=7.5)
    rich(ax, rx + side / 2, ry - 0.38, ["flash 只在片上算 ", "$S_{ij}$"], size=7.5)

    # HBM traffic, at the bottom
    grouped = tile.cluster_m > 1 and nq % tile.cluster_m == 0  # as attention() groups them
    who = f"每 {tile.cluster_m} 个 Q 块（一个 cluster）" if grouped else "每个 Q 块"
    lines = (
        [f"flash：Q、K、V 各读一次，O 写一次，共 {nbytes(flash.bytes)}；"
         f"K、V {who}再读一遍，多 {nbytes(flash.reread_bytes)}，多由 L2 供给"],
        [f"不融合：再加上得分 S 与 softmax(S) 各写一次、读一次，共 {nbytes(mat.bytes)}"],
    )  # fmt: skip
    for n, parts in enumerate(lines):
        rich(ax, 0.15, 0.62 - n * 0.25, parts, size=7.5, ha="left")
    return fig
