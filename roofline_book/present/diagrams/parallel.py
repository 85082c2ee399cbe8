"""多卡的示意图：ring reduce-scatter 与 all-gather 的每一步，一层 Transformer 的四种切分。

ring 的步数 ``k`` 与每块设备送出的份额 ``f`` 取自 alpha-beta 模型
（:func:`roofline_book.distributed.collectives.collective_time`），每一步送出 ``f/k`` 倍的消息；
切分图里的层数、专家数与每块设备的权重份额取自模型目录与
:func:`roofline_book.distributed.parallel.weight_bytes_per_device`。
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ..plotting.style import PALETTE
from ._draw import INK, box, canvas, label

#: ring 示意图画的两种集合通信。
RING_OPS = ("reduce_scatter", "all_gather")

#: 各块的颜色（块 c 取第 c 个，循环使用）。
_CHUNK_COLORS = ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")

#: 切分图的四种方式，依次画在 2 x 2 的四格里。
PARTITIONS = ("TP", "DP", "PP", "EP")


def ring_schedule(op: str, p: int) -> list[list[tuple[int, int, int]]]:
    """ring ``op`` 的每一步里，每块设备把哪一块送给谁：``[(送出者, 接收者, 块号), ...]``。

    消息切成 ``p`` 块。reduce-scatter 的第 ``s`` 步（从 0 数），设备 ``i`` 把块 ``(i - s) mod p``
    的部分和送给下一块设备 ``i + 1``，对方加上自己的那一份；走完 ``p - 1`` 步，设备 ``i`` 握有块
    ``(i + 1) mod p`` 的总和。all-gather 从这个状态出发，第 ``s`` 步设备 ``i`` 把块
    ``(i + 1 - s) mod p`` 的总和转给下一块设备。

    Parameters
    ----------
    op : {"reduce_scatter", "all_gather"}
    p : int
        设备数，>= 2。

    Returns
    -------
    list of list of (int, int, int)
        ``p - 1`` 步，每步 ``p`` 次传送。

    Examples
    --------
    >>> ring_schedule("reduce_scatter", 3)
    [[(0, 1, 0), (1, 2, 1), (2, 0, 2)], [(0, 1, 2), (1, 2, 0), (2, 0, 1)]]
    """
    op = _ring_op(op)
    p = _validate.count("p", p, minimum=2)
    start = 0 if op == "reduce_scatter" else 1
    return [[(i, (i + 1) % p, (i + start - s) % p) for i in range(p)] for s in range(p - 1)]


def ring_states(op: str, p: int) -> list[list[list[frozenset[int]]]]:
    """ring ``op`` 每一步之前（与最后）每块设备上每一块的内容：由哪些设备的数据加成。

    ``states[s][i][c]`` 是第 ``s`` 步之前设备 ``i`` 的块 ``c`` 里已经加进去的设备编号；
    空集表示这一块还没有到。共 ``p`` 个状态：``p - 1`` 步各一个，加上结果。

    Examples
    --------
    两块设备的 reduce-scatter 一步就完成，设备 0 握有块 1 的总和：

    >>> [[sorted(c) for c in d] for d in ring_states("reduce_scatter", 2)[-1]]
    [[[0], [0, 1]], [[0, 1], [1]]]
    """
    schedule = ring_schedule(op, p)
    everyone = frozenset(range(p))
    if _ring_op(op) == "reduce_scatter":
        state = [[frozenset({i}) for _ in range(p)] for i in range(p)]
    else:  # all-gather starts where reduce-scatter ends: device i holds the sum of chunk i + 1
        state = [
            [everyone if c == (i + 1) % p else frozenset() for c in range(p)] for i in range(p)
        ]
    states = [state]
    for step in schedule:
        new = [list(row) for row in state]
        for src, dst, c in step:
            new[dst][c] = state[dst][c] | state[src][c]
        state = new
        states.append(state)
    return states


def ring_step_share(op: str, p: int) -> tuple[int, Fraction, Fraction]:
    """(步数 k，每块设备每步送出的份额，一共送出的份额 f)，取自 alpha-beta 模型。

    Examples
    --------
    >>> ring_step_share("all_gather", 4)
    (3, Fraction(1, 4), Fraction(3, 4))
    """
    from ...distributed.collectives import collective_time

    unit = collective_time(_ring_op(op), 1, _validate.count("p", p, minimum=2), 1, 1)
    steps = round(unit.latency_s)
    total = Fraction(unit.bandwidth_s).limit_denominator(1024)
    return steps, total / steps, total


def _gpus(p: object) -> int:
    n = _validate.count("p", p, minimum=2)
    if n > 8:
        raise InvalidArgument("p", f"must be 2 to 8 GPUs for a readable picture; got {n}")
    return n


def _ring_op(op: object) -> str:
    if op not in RING_OPS:
        raise InvalidArgument("op", f"must be one of {', '.join(RING_OPS)}; got {op!r}")
    return str(op)


def _times_m(share: Fraction) -> str:
    num = "" if share.numerator == 1 else str(share.numerator)
    return f"{num}m" if share.denominator == 1 else f"{num}m/{share.denominator}"


def _ring(op: str, p: int, ax: Any) -> Any:
    steps, per_step, total = ring_step_share(op, p)
    states = ring_states(op, p)
    schedule = ring_schedule(op, p)
    cell = min(0.3, 4.6 / (p * p + 1.2 * (p - 1)))
    size = min(10.0, cell * 38)  # one character a cell: a digit or Σ, legible at page width
    block, gap = p * cell, max(1.2 * cell, 0.3)
    left, right_note = 0.8, 1.25
    row_h = cell + 0.42
    width = left + p * block + (p - 1) * gap + right_note
    height = 0.72 + p * row_h + 0.3
    fig, ax = canvas(width, height, ax)
    name = "reduce-scatter" if op == "reduce_scatter" else "all-gather"
    label(
        ax,
        width / 2,
        height - 0.2,
        f"ring {name}：{p} 块 GPU，消息 m 切成 {p} 块，{steps} 步",
        size=9,
    )
    top = height - 0.72
    for i in range(p):
        x0 = left + i * (block + gap)
        label(ax, x0 + block / 2, top + 0.3, f"GPU {i}", size=8)
    for r, state in enumerate(states):
        y = top - r * row_h - cell
        last = r == len(states) - 1
        label(ax, 0.08, y + cell / 2, "结果" if last else f"第 {r + 1} 步", size=8, ha="left")
        sent = {} if last else {src: c for src, _, c in schedule[r]}
        for i in range(p):
            x0 = left + i * (block + gap)
            for c in range(p):
                have = state[i][c]
                color = PALETTE[_CHUNK_COLORS[c % len(_CHUNK_COLORS)]]
                full = len(have) == p
                alpha = 0.0 if not have else (0.75 if full else 0.12 + 0.45 * len(have) / p)
                box(
                    ax,
                    x0 + c * cell,
                    y,
                    cell,
                    cell,
                    color=color,
                    alpha=alpha,
                    lw=1.8 if sent.get(i) == c else 0.6,
                )
                if have and cell >= 0.2:
                    text = "Σ" if full else str(len(have))
                    label(ax, x0 + (c + 0.5) * cell, y + cell / 2, text, size=size)
        note = f"共送出 {_times_m(total)}" if last else f"每卡送出 {_times_m(per_step)}"
        label(ax, width - right_note + 0.1, y + cell / 2, note, size=8, ha="left")
        if last:
            continue
        for src, dst, c in schedule[r]:
            xs = left + src * (block + gap) + (c + 0.5) * cell
            xd = left + dst * (block + gap) + (c + 0.5) * cell
            color = PALETTE[_CHUNK_COLORS[c % len(_CHUNK_COLORS)]]
            if dst > src:  # to the right neighbour, over the row
                ax.annotate(
                    "",
                    xy=(xd, y + cell),
                    xytext=(xs, y + cell),
                    arrowprops={
                        "arrowstyle": "->",
                        "color": color,
                        "lw": 1.0,
                        "shrinkA": 0,
                        "shrinkB": 0,
                        "connectionstyle": "arc3,rad=-0.28",
                    },
                )
            else:  # the ring closes: the last GPU to the first, under the row
                ax.annotate(
                    "",
                    xy=(xd, y),
                    xytext=(xs, y),
                    arrowprops={
                        "arrowstyle": "->",
                        "color": color,
                        "lw": 1.0,
                        "shrinkA": 0,
                        "shrinkB": 0,
                        "connectionstyle": "bar,fraction=-0.035",
                    },
                )
    if op == "all_gather":
        key = "Σ：全部 GPU 之和的那一块；空格：还没有收到；粗框：这一步转发的块"
    elif cell >= 0.2:
        key = "格中数字：已加进这一块的 GPU 个数；Σ：全部 GPU 的和；粗框：这一步送出的块"
    else:
        key = "颜色越深，加进这一块的 GPU 越多；粗框：这一步送出的块"
    label(ax, width / 2, 0.16, key, size=8)
    return fig


def ring_reduce_scatter(*, p: int = 4, ax: Any = None) -> Any:
    """ring reduce-scatter 的每一步：``p`` 块 GPU 排成环，消息切成 ``p`` 块。

    每一行是一步之前各 GPU 上的 ``p`` 块（格中数字是已经加进这一块的 GPU 个数，``Σ`` 是全部之和），
    粗框的那一块在这一步送给右边的邻居（最后一块 GPU 送回第一块，箭头在行下）。共 ``p - 1``
    步，每步每块 GPU 送出 ``m/p``，合计 ``(p-1)/p · m``：这两个数取自
    :func:`~roofline_book.distributed.collectives.collective_time`。

    Parameters
    ----------
    p : int
        GPU 数，2 到 8。
    ax : matplotlib.axes.Axes, optional
        画在它上面；不给就新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    return _ring("reduce_scatter", _gpus(p), ax)


def ring_all_gather(*, p: int = 4, ax: Any = None) -> Any:
    """ring all-gather 的每一步，接着 :func:`ring_reduce_scatter` 的结果画。

    开始时 GPU ``i`` 握有块 ``i + 1`` 的总和；每一步每块 GPU 把上一步收到（或本来就有）的那一块
    转给右边的邻居，``p - 1`` 步后每块 GPU 都有全部 ``p`` 块。每步送出 ``m/p``，合计
    ``(p-1)/p · m``；与 reduce-scatter 相加就是 ring all-reduce 的 ``2(p-1)/p · m``。

    Parameters
    ----------
    p : int
        GPU 数，2 到 8。
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    return _ring("all_gather", _gpus(p), ax)


def partition_shares(
    *, p: int = 4, dense: str = "llama-3-8b", moe: str = "mixtral-8x7b"
) -> dict[str, float]:
    """四种切分下，权重最多的那块 GPU 存下的权重占整个模型的份额。

    TP、PP 取 ``dense`` 模型切成 ``p`` 份，DP 每块 GPU 一份完整的副本，EP 取 ``moe`` 模型的专家
    分在 ``p`` 块 GPU 上（attention 同时按 TP 切，见
    :class:`~roofline_book.distributed.split.Split`）。

    Examples
    --------
    >>> {k: round(v, 3) for k, v in partition_shares().items()}
    {'TP': 0.25, 'DP': 1.0, 'PP': 0.283, 'EP': 0.25}
    """
    from ...distributed.parallel import Split, weight_bytes_per_device
    from ...llm.inference import model, weight_bytes

    dense_m, moe_m = model(dense), model(moe)
    whole, whole_moe = weight_bytes(dense_m), weight_bytes(moe_m)
    return {
        "TP": weight_bytes_per_device(dense_m, Split(tp=p)) / whole,
        "DP": 1.0,
        "PP": weight_bytes_per_device(dense_m, Split(pp=p)) / whole,
        "EP": weight_bytes_per_device(moe_m, Split(tp=p, ep=p)) / whole_moe,
    }


_PANEL = {
    "TP": (
        "张量并行 TP：层内切权重",
        "W₁ 按列切，W₂ 按行切；激活每块都有",
        "每层 2 次 all-reduce（激活）",
    ),
    "DP": (
        "数据并行 DP：整个模型复制",
        "权重每块一份；batch 切成 {p} 份",
        "每步 1 次 all-reduce（梯度）",
    ),
    "PP": (
        "流水线并行 PP：按层切",
        "{layers} 层分成 {p} 段，每段 {per} 层",
        "段与段之间点对点传激活",
    ),
    "EP": (
        "专家并行 EP：专家分到各块",
        "{experts} 个专家，每块 GPU {per} 个；attention 按 TP 切",
        "每个 MoE 层 2 次 all-to-all",
    ),
}


def _panel(
    ax: Any, kind: str, x0: float, y0: float, w: float, p: int, info: dict[str, Any]
) -> None:
    blue, orange, green = PALETTE["blue"], PALETTE["orange"], PALETTE["green"]
    title, what, comm = _PANEL[kind]
    label(ax, x0 + w / 2, y0 + 2.28, title, size=8.5)
    gap = 0.1
    dw = (w - (p - 1) * gap) / p
    dh = 1.3
    base = y0 + 0.66
    for i in range(p):
        dx = x0 + i * (dw + gap)
        box(ax, dx, base, dw, dh, color=INK, fill=False, lw=0.8)
        label(ax, dx + dw / 2, base + dh + 0.1, f"GPU {i}", size=7)
        s = min(0.36, (dw - 0.12) / 2)
        wy = base + dh - s - 0.12
        ax_ = dx + (dw - 2 * s - 0.06) / 2
        if kind in ("TP", "DP", "EP"):
            # the layer's two weight matrices (attention for EP), and their split
            for j, cols in enumerate((True, False)):
                mx = ax_ + j * (s + 0.06)
                box(ax, mx, wy, s, s, color=blue, fill=kind == "DP", alpha=0.5)
                if kind != "EP":
                    label(ax, mx + s / 2, wy - 0.09, "W₁" if cols else "W₂", size=6.5)
                if kind in ("TP", "EP"):
                    part = s / p
                    if cols:
                        box(ax, mx + i * part, wy, part, s, color=blue, alpha=0.75, lw=0.4)
                    else:
                        box(
                            ax, mx, wy + s - (i + 1) * part, s, part, color=blue, alpha=0.75, lw=0.4
                        )
        if kind == "EP":
            experts = info["experts"]
            per = experts // p
            cols = min(experts, 4)
            rows = -(-experts // cols)
            es = min(0.14, (dw - 0.1) / cols - 0.02)
            ey = wy - 0.06 - rows * (es + 0.02)
            ex = dx + (dw - cols * (es + 0.02)) / 2
            for e in range(experts):
                r, c = divmod(e, cols)
                mine = i * per <= e < (i + 1) * per
                box(
                    ax,
                    ex + c * (es + 0.02),
                    ey + (rows - 1 - r) * (es + 0.02),
                    es,
                    es,
                    color=orange,
                    fill=mine,
                    alpha=0.8,
                    lw=0.5,
                )
        if kind == "PP":
            layers = info["layers"]
            per = layers // p
            lh = (dh - 0.55) / layers
            for k in range(layers):
                mine = i * per <= k < (i + 1) * per
                box(
                    ax,
                    dx + 0.12,
                    base + dh - 0.1 - (k + 1) * lh,
                    dw - 0.24,
                    lh * 0.8,
                    color=blue,
                    fill=mine,
                    alpha=0.75 if mine else 0.0,
                    lw=0.3,
                )
        # the batch of activations at the bottom: whole, or 1/p of it under DP
        bw, bh = dw - 0.16, 0.14
        bx, by = dx + 0.08, base + 0.1
        box(ax, bx, by, bw, bh, color=green, fill=kind != "DP", alpha=0.6, lw=0.6)
        if kind == "DP":
            box(ax, bx + i * bw / p, by, bw / p, bh, color=green, alpha=0.75, lw=0.4)
        label(ax, bx + bw / 2, by + bh + 0.08, "激活（batch）" if dw > 0.7 else "激活", size=6)
    fill = {"p": p, "layers": info["layers"], "per": info["per"], "experts": info["experts"]}
    label(ax, x0 + w / 2, y0 + 0.44, what.format(**fill), size=7)
    label(ax, x0 + w / 2, y0 + 0.24, comm, size=7)
    label(ax, x0 + w / 2, y0 + 0.04, f"每块 GPU 至多存权重的 {info['share']:.0%}", size=7)


def partitions(
    *, p: int = 4, dense: str = "llama-3-8b", moe: str = "mixtral-8x7b", ax: Any = None
) -> Any:
    """一层 Transformer 的四种切分，2 x 2 四格：TP、DP、PP、EP，各 ``p`` 块 GPU。

    每块 GPU 一个框：上面是一层的两块权重矩阵（蓝，深色是这块 GPU 存的部分），下面是一个 batch
    的激活（绿）。TP 把 W₁ 按列、W₂ 按行切开，激活每块都有；DP 每块一份完整的权重，batch 切开；
    PP 把 ``dense`` 模型的各层分段（每条横线一层）；EP 把 ``moe`` 模型的专家（橙）分开，attention
    仍按 TP 切。每格下面写出这块 GPU 存的权重份额（:func:`partition_shares`）与要做的通信。

    Parameters
    ----------
    p : int
        GPU 数，2 到 8；须整除模型的层数与专家数。
    dense, moe : str
        模型目录里的稠密模型与 MoE 模型。
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...llm.inference import model

    p = _gpus(p)
    dense_m, moe_m = model(dense), model(moe)
    if dense_m.layers % p:
        raise InvalidArgument("p", f"({p}) must divide {dense}'s {dense_m.layers} layers")
    if moe_m.experts % p:
        raise InvalidArgument("p", f"({p}) must divide {moe}'s {moe_m.experts} experts")
    shares = partition_shares(p=p, dense=dense, moe=moe)
    fig, ax = canvas(7.2, 5.5, ax)
    w = 3.3
    for n, kind in enumerate(PARTITIONS):
        row, col = divmod(n, 2)
        info = {
            "layers": dense_m.layers,
            "experts": moe_m.experts,
            "per": (dense_m.layers if kind == "PP" else moe_m.experts) // p,
            "share": shares[kind],
        }
        _panel(ax, kind, 0.15 + col * (w + 0.3), 2.85 - row * 2.8, w, p, info)
    return fig
