"""DeepSeek-V3 一章的示意图：MLA 吸收后所有 head 共用一行缓存，MoE 层的 dispatch 与 combine，
prefill 与 decode 的两种部署单元。

数都取自包：模型的形状（:class:`~roofline_book.llm.shape.ModelConfig`）、一层 decode 的
attention 代价（:func:`roofline_book.llm.inference.step_entries`）、每个元素的字节数
（:func:`roofline_book.dtypes.bytes_per_element`）、设备目录的 ridge point 与链路带宽、专家 GEMM
到 ridge point 的 batch 与一个 token 经网卡送出的份数。
"""

from __future__ import annotations

from typing import Any

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument
from ...devices.catalog import hardware, network
from ...dtypes import bytes_per_element
from ...llm.config import ModelConfig
from ...llm.inference import Precisions, kv_bytes_per_token, step_entries
from ...llm.inference import model as catalog_model
from . import _draw
from ._common import COLORS, key_row, rich

#: 节点之间的网卡（DeepSeek 的 H800 节点每块 GPU 一块 400 Gb/s 的 InfiniBand 网卡）。
NIC = "ib-ndr"


def _config(model: str | ModelConfig) -> ModelConfig:
    return model if isinstance(model, ModelConfig) else catalog_model(model)


def _intensity(config: ModelConfig, new: int, context: int, p: Precisions) -> float:
    """decode 一步（每条序列 ``new`` 个 query）一层 attention 的算术强度。"""
    rows = {e.key: e for e in step_entries(config, 1, new, context, p)}
    return rows["attention"].cost.intensity


def _heads(ax: Any, x: float, y: float, width: float, heads: int, groups: int) -> list[float]:
    """一排 ``heads`` 个 query head 的小格（宽 ``width``），每 ``heads / groups`` 个一组、组间留缝；
    返回各组中心的 x。每组画一个框，格与格之间的分隔线合成一组线画出（SVG 小一些）。"""
    gap = 0.06 if groups > 1 else 0.0
    per = heads // groups
    group_w = (width - gap * (groups - 1)) / groups
    cell = group_w / per
    centres, dividers = [], []
    for g in range(groups):
        x0 = x + g * (group_w + gap)
        _draw.box(ax, x0, y, group_w, 0.14, color=COLORS["a"], alpha=0.55, lw=0.4)
        dividers += [x0 + i * cell for i in range(1, per)]
        centres.append(x0 + group_w / 2)
    _strokes(ax, [(d, y, y + 0.14) for d in dividers], COLORS["a"], 0.25)
    return centres


def _strokes(ax: Any, segments: list[tuple[float, float, float]], color: str, lw: float) -> None:
    """竖直的短线 ``(x, y0, y1)``，合成一条带断点的线画出：SVG 里只占一个 path。"""
    xs: list[float] = []
    ys: list[float] = []
    for x, y0, y1 in segments:
        xs += [x, x, float("nan")]
        ys += [y0, y1, float("nan")]
    ax.plot(xs, ys, color=color, lw=lw)


def mla_absorbed(
    model: str | ModelConfig = "deepseek-v3",
    *,
    gqa: str | ModelConfig = "llama-3-70b",
    context: int = 4096,
    device: str = "h800-sxm",
    ax: Any = None,
) -> Any:
    """GQA 与吸收后的 MLA：一行缓存被多少个 query head 共用，decode attention 的强度因此多高。

    上半是 GQA 模型 ``gqa`` 的一层：``h`` 个 query head 分成 ``h_kv`` 组，每组共用一个 KV head，
    一行缓存（一个 token 在一层）是 ``2 h_kv d s`` 字节。下半是 MLA 模型 ``model`` 吸收之后：全部
    ``h`` 个 query head 读同一行 latent 缓存（``d_c`` 宽的 latent 加 ``d_r`` 宽的 RoPE key），一行是
    ``(d_c + d_r) s`` 字节。右边写出 decode 一步（每条序列 1 个 query；MLA 另写 2 个，即 MTP）
    attention 的算术强度 ``I``，与设备的 BF16 ridge point ``I*`` 相比。

    数的来源：形状取自两个模型的配置；一行的字节数是
    :func:`~roofline_book.llm.inference.kv_bytes_per_token` 除以层数（BF16 缓存）；``I`` 是
    :func:`~roofline_book.llm.inference.step_entries` 的 ``attention`` 一行（batch 1，``context``
    个 key）；``I*`` 是 :meth:`roofline_book.Hardware.ridge_point`。

    Parameters
    ----------
    model : str or ModelConfig
        MLA 模型（模型目录中的键，或一个配置）。
    gqa : str or ModelConfig
        对照的 GQA 模型。
    context : int
        decode 这一步看到的 token 数。
    device : str
        设备目录中的键。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    mla, grouped = _config(model), _config(gqa)
    if not mla.mla or mla.kv_lora_rank is None:
        raise InvalidArgument("model", f"must be an MLA model; {mla.key} is not one")
    d_c = mla.kv_lora_rank
    if grouped.mla or grouped.kv_heads == grouped.heads:
        raise InvalidArgument("gqa", f"must be a GQA model; {grouped.key} is not one")
    context = _validate.size("context", context)
    p = Precisions()
    s = bytes_per_element(p.kv)
    ridge = hardware(device).ridge_point(p.activations)
    i_gqa = _intensity(grouped, 1, context, p)
    i_mla = {n: _intensity(mla, n, context, p) for n in (1, 2)}
    row_gqa = kv_bytes_per_token(grouped, p) // grouped.layers
    row_mla = kv_bytes_per_token(mla, p) // mla.layers
    g = grouped.heads // grouped.kv_heads

    width, height = 6.6, 3.5
    fig, ax = _draw.canvas(width, height, ax)
    x0, strip = 0.2, 3.0  # the query heads' row: left edge and width
    right = x0 + strip + 0.3

    def verdict(i: float) -> str:
        return f"{i:.0f} {'>' if i > ridge else '<'} $I^*$ = {ridge:.0f}"

    # GQA: h heads in h_kv groups, one KV head under each group
    top = height - 0.25
    _draw.label(ax, x0, top, f"GQA（{grouped.name}）", size=8.5, ha="left")
    y_q = top - 0.42
    centres = _heads(ax, x0, y_q, strip, grouped.heads, grouped.kv_heads)
    y_kv = y_q - 0.55
    kv_w = strip / grouped.kv_heads * 0.55
    for c in centres:
        ax.plot([c, c], [y_q, y_kv + 0.18], color=_draw.INK, lw=0.5)
        _draw.box(ax, c - kv_w / 2, y_kv, kv_w, 0.18, color=COLORS["c"], alpha=0.6, lw=0.5)
    _draw.label(
        ax, right, y_q + 0.07, f"{grouped.heads} 个 query head，每 {g} 个一组", size=8, ha="left"
    )
    _draw.label(
        ax,
        right,
        y_kv + 0.09,
        f"{grouped.kv_heads} 个 KV head，每行 {row_gqa} B",
        size=8,
        ha="left",
    )
    rich(ax, right, y_kv - 0.2, ["decode：", "$I$", f" = {verdict(i_gqa)}"], size=8, ha="left")

    # MLA, absorbed: every head reads one latent row
    top2 = y_kv - 0.55
    _draw.label(ax, x0, top2, f"MLA 吸收后（{mla.name}）", size=8.5, ha="left")
    y_q2 = top2 - 0.42
    _heads(ax, x0, y_q2, strip, mla.heads, 1)
    y_row = y_q2 - 0.55
    row_w = 1.8
    lat_w = row_w * d_c / mla.kv_elements
    rx = x0 + (strip - row_w) / 2
    for i in range(9):  # a fan: every head meets the same row
        xq = x0 + strip * (i + 0.5) / 9
        ax.plot([xq, rx + row_w / 2], [y_q2, y_row + 0.18], color=_draw.INK, lw=0.4)
    _draw.box(ax, rx, y_row, lat_w, 0.18, color=COLORS["c"], alpha=0.6, lw=0.5)
    _draw.box(ax, rx + lat_w, y_row, row_w - lat_w, 0.18, color=COLORS["w"], alpha=0.7, lw=0.5)
    _draw.label(ax, rx + lat_w / 2, y_row - 0.13, f"latent {mla.kv_lora_rank}", size=7)
    _draw.label(ax, rx + row_w, y_row - 0.13, f"RoPE {mla.rope_head_dim}", size=7, ha="left")
    _draw.label(ax, right, y_q2 + 0.07, f"{mla.heads} 个 query head，共用一行", size=8, ha="left")
    widths = f"({mla.kv_lora_rank} + {mla.rope_head_dim}) × {s} B"
    _draw.label(ax, right, y_row + 0.09, f"一行 {widths} = {row_mla} B", size=8, ha="left")
    rich(ax, right, y_row - 0.2, ["decode：", "$I$", f" = {verdict(i_mla[1])}"], size=8, ha="left")
    rich(ax, right, y_row - 0.44, ["MTP，", "$n_q = 2$", "：", "$I$", f" = {verdict(i_mla[2])}"],
         size=8, ha="left")  # fmt: skip
    return fig


def ep_dispatch(
    model: str | ModelConfig = "deepseek-v3",
    *,
    ep: int = 144,
    device: str = "h800-sxm",
    per_node: int = 8,
    ax: Any = None,
) -> Any:
    """一个 MoE 层在 ``ep`` 块 GPU 上：dispatch 把每个 token 送到它的专家，combine 把结果取回。

    左边一块 GPU 用数据并行的 attention 处理它自己的序列；它的每个 token 由 router 选出
    ``k`` 个路由专家，dispatch（all-to-all）把 token 的 hidden 向量送到存着这些专家的 GPU：同一节点
    之内走 NVLink，节点之外走网卡（RDMA）。右边每块 GPU 存 ``E / ep`` 个路由专家（不整除时取上整）
    和一个共享专家；combine 把专家的输出送回原来的 GPU，加权相加。底下写出一个 token 在
    dispatch（FP8）与 combine（BF16）中送出的字节数与两种链路每个方向的带宽。

    数的来源：``E``、``k`` 与 hidden 取自模型配置；FP8 与 BF16 每个元素的字节数取自
    :func:`roofline_book.dtypes.bytes_per_element`；NVLink 带宽取自设备目录
    （:attr:`roofline_book.Hardware.link_bandwidth`），网卡带宽取自网络目录（:data:`NIC`）。

    Parameters
    ----------
    model : str or ModelConfig
        MoE 模型（模型目录中的键，或一个配置）。
    ep : int
        专家分布在几块 GPU 上。
    device : str
        设备目录中的键。
    per_node : int
        每个节点的 GPU 数。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    c = _config(model)
    if c.experts == 1:
        raise InvalidArgument("model", f"must be a mixture-of-experts model; {c.key} is dense")
    ep = _validate.size("ep", ep)
    per_node = _validate.size("per_node", per_node)
    gpu = hardware(device)
    if gpu.link_bandwidth is None:
        raise InvalidArgument("device", f"({device}) has no GPU-to-GPU link in the catalog")
    link = gpu.link_bandwidth
    nic = network(NIC)
    k, h = c.experts_per_token, c.hidden
    per_gpu = -(-c.experts // ep)
    sent = k * h * bytes_per_element("fp8")
    back = k * h * bytes_per_element("bf16")
    nodes = -(-ep // per_node)

    width, height = 6.6, 3.3
    fig, ax = _draw.canvas(width, height, ax)
    # the source GPU: attention over its own sequences, then the router
    sx, sy, sw, sh = 0.2, 1.15, 1.45, 1.3
    _draw.box(ax, sx, sy, sw, sh, color=COLORS["grey"], alpha=0.12)
    _draw.label(ax, sx + sw / 2, sy + sh - 0.16, "一块 GPU", size=8)
    _draw.box(ax, sx + 0.1, sy + 0.62, sw - 0.2, 0.3, color=COLORS["a"], text="attention", size=7.5)
    _draw.label(ax, sx + sw / 2, sy + 0.5, "（自己的序列）", size=7)
    _draw.box(ax, sx + 0.1, sy + 0.08, sw - 0.2, 0.28, color=COLORS["hot"], text="路由", size=7.5)
    _draw.label(ax, sx + sw / 2, sy - 0.14, f"每个 token 选 {k} 个专家", size=7.5)

    # the expert GPUs: a few of them, two nodes
    gx, gw, gh = 3.35, 1.3, 0.34
    rows = (2.65, 2.2, 1.15, 0.7)
    for y in rows:
        _draw.box(ax, gx, y, gw, gh, color=COLORS["w"], alpha=0.3)
        _draw.label(ax, gx + gw / 2, y + gh / 2, f"{per_gpu} 个路由专家 + 共享", size=7)
    _draw.label(ax, gx + gw / 2, 1.82, "⋮", size=9)
    # the nodes: the GPU's own (NVLink) and the others (the NIC, RDMA)
    for y0, y1 in ((2.1, 3.09), (0.6, 1.59)):
        _draw.box(
            ax,
            gx - 0.1,
            y0,
            gw + 0.2,
            y1 - y0,
            color=COLORS["grey"],
            fill=False,
            lw=0.6,
            dashed=True,
        )
    tx = gx + gw + 0.2
    _draw.label(ax, tx, 2.72, "同一节点：NVLink", size=7.5, ha="left")
    _draw.label(ax, tx, 2.5, f"{link / 1e9:.0f} GB/s（每个方向）", size=7.5, ha="left")
    _draw.label(ax, tx, 1.22, "其他节点：网卡（RDMA）", size=7.5, ha="left")
    _draw.label(ax, tx, 1.0, f"{nic.bandwidth / 1e9:.0f} GB/s（每个方向）", size=7.5, ha="left")
    _draw.label(
        ax, gx + gw / 2, height - 0.12, f"EP {ep}：{ep} 块 GPU，{nodes} 个节点", size=8,
    )  # fmt: skip
    # dispatch out of the GPU's right edge (upper half), combine back in (lower half)
    for y in rows:
        _draw.arrow(ax, (sx + sw, sy + 0.95), (gx, y + gh * 0.7), color=COLORS["a"], lw=0.7)
        _draw.arrow(ax, (gx, y + gh * 0.3), (sx + sw, sy + 0.35), color=COLORS["c"], lw=0.7)
    key_row(ax, 1.9, 3.1, COLORS["a"], "dispatch（FP8）", size=7.5)
    key_row(ax, 1.9, 0.35, COLORS["c"], "combine（BF16）", size=7.5)
    _draw.label(
        ax, 0.2, 0.12,
        f"一个 token：dispatch 至多送出 {k} × {h} × 1 B = {sent / 1e3:.0f} kB，"
        f"combine 取回 {back / 1e3:.0f} kB",
        size=7.5, ha="left",
    )  # fmt: skip
    return fig


def deployment_units(
    model: str | ModelConfig = "deepseek-v3",
    *,
    prefill_ep: int = 32,
    decode_ep: int = 144,
    device: str = "h800-sxm",
    per_node: int = 8,
    ax: Any = None,
) -> Any:
    """prefill 与 decode 的两种部署单元：节点数、每块 GPU 的路由专家、专家 GEMM 到 ridge point 时
    每块 GPU 要带的 token，以及一个 token 经网卡送出的份数。

    每行是一个部署单元（EP 组），每个方框是一个节点，框里的小格是它的 GPU。下面写出：每块 GPU
    存 ``ceil(E / ep)`` 个路由专家（不计冗余专家）和一个共享专家；专家 GEMM 到 ridge point 时每块
    GPU 要带 ``b* / ep`` 个 token（decode 时即序列数）；一个 token 在一个 MoE 层经网卡送到几个其他
    节点（均匀路由）。

    数的来源：``E`` 取自模型配置；``b*`` 是
    :func:`~roofline_book.llm.inference.decode_batch_to_ridge` （精度取模型 checkpoint 的格式，
    没有时为 BF16）；份数是
    :func:`roofline_book.distributed.routing.dispatch_copies` 的第二项。

    Parameters
    ----------
    model : str or ModelConfig
        MoE 模型（模型目录中的键，或一个配置）。
    prefill_ep, decode_ep : int
        两种部署单元的 EP（GPU 数）。
    device : str
        设备目录中的键（ridge point 所用）。
    per_node : int
        每个节点的 GPU 数。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...distributed.parallel import dispatch_copies
    from ...llm.inference import decode_batch_to_ridge

    c = _config(model)
    if c.experts == 1:
        raise InvalidArgument("model", f"must be a mixture-of-experts model; {c.key} is dense")
    units = {"prefill": _validate.size("prefill_ep", prefill_ep)}
    units["decode"] = _validate.size("decode_ep", decode_ep)
    per_node = _validate.size("per_node", per_node)
    b_star = decode_batch_to_ridge(c, hardware(device), c.checkpoint or Precisions())
    nodes = {phase: -(-ep // per_node) for phase, ep in units.items()}
    cols = max(2, per_node // 2)  # a node's GPUs in two rows
    cell, gap = 0.05, 0.05
    node_w = cols * cell + 0.06
    width = max(6.6, 1.05 + max(nodes.values()) * (node_w + gap) + 0.1)
    height = 2.5
    fig, ax = _draw.canvas(width, height, ax)
    for row, (phase, ep) in enumerate(units.items()):
        top = height - 0.25 - row * 1.2
        _draw.label(ax, 0.1, top - 0.08, phase, size=8.5, ha="left")
        _draw.label(ax, 0.1, top - 0.3, f"EP {ep}", size=8, ha="left")
        left = 1.05
        dividers = []
        for n in range(nodes[phase]):
            x = left + n * (node_w + gap)
            _draw.box(ax, x, top - 0.36, node_w, 2 * cell + 0.08, color=COLORS["grey"], alpha=0.12)
            gpus = min(per_node, ep - n * per_node)
            rows = [min(cols, gpus), gpus - min(cols, gpus)]  # GPUs in the upper and lower row
            for r, k in enumerate(rows):
                if k:
                    y = top - 0.32 + (1 - r) * cell
                    _draw.box(ax, x + 0.03, y, k * cell, cell, color=COLORS["w"], alpha=0.7, lw=0.3)
                    dividers += [(x + 0.03 + i * cell, y) for i in range(1, k)]
        _strokes(ax, [(x, y, y + cell) for x, y in dividers], COLORS["w"], 0.3)
        across = dispatch_copies(c, ep, per_node)[1]
        held = -(-c.experts // ep)
        _draw.label(
            ax, left, top - 0.58,
            f"{nodes[phase]} 个节点；每块 GPU 存 {held} 个路由专家与共享专家；"
            f"一个 token 经网卡送 {across:.1f} 份",
            size=7.5, ha="left",
        )  # fmt: skip
        need = f"专家 GEMM 到 ridge point：每块 GPU 要 {b_star / ep:.0f} 个 token"
        _draw.label(ax, left, top - 0.8, need, size=7.5, ha="left")
    return fig
