"""第 1–4 章隐藏 cell 用到的计算：各计算单元的速率、按设备目录写出的句子、
与 FlashAttention-3 实测值的对照。

每个函数返回一个 dict，键就是章节粘贴（glue）时用的名字，所以一章只需写
``glue(**basics.unit_rates(h100))``。
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from ..devices.catalog import Hardware
from ..ops import Cost, attention, fa3_tile
from ..roofline.roofs import main_unit, time_bound
from .tables import bound_zh, resource_zh

FA3_PUBLISHED: dict[tuple[int, bool], float] = {
    (128, False): 648.0,  # arXiv v1, FP16 forward, head dim 128, 16k tokens
    (256, False): 840.0,  # the published version's best, BF16, head dim 256
    (256, True): 642.0,  # arXiv v1, causal, head dim 256, 16k tokens
}
"""FlashAttention-3 论文报告的前向实测吞吐（TFLOP/s，按论文的 FLOPs 口径），
键为 ``(head dim, causal)``；序列长 16k、hidden 2048（shah2024flashattention3）。"""

FA3_TOKENS = 16384
"""FlashAttention-3 论文这些实测点的序列长度（batch 乘序列长为 16k）。"""

FA3_HIDDEN = 2048
"""FlashAttention-3 论文实测时的 hidden size：head 数为它除以 head dim。"""


def unit_rates(device: Hardware, dtype: str = "bf16") -> dict[str, float]:
    """``device`` 上三种计算单元的速率，以及向量单元与特殊函数单元按元素运算和按指令的比值。

    Parameters
    ----------
    device : roofline_book.Hardware
        目录中的设备，需有特殊函数单元和每 SM 的 FP32 lane 数。
    dtype : str
        数据的精度（向量单元对 BF16 按两个一组打包计）。

    Returns
    -------
    dict
        ``p_vector_tflops``、``p_special_tflops`` （向量 TFLOP/s；特殊函数每秒
        10^12 次求值）、``matrix_over_vector``、``p_vector_ops`` 与 ``p_vector_instr``
        （每秒 10^12 次元素运算与指令）、``p_vector_fp32_tflops`` （向量单元的 FP32 峰值）、
        ``ops_over_special``、``instr_over_special``、``sfu_per_clock``、``lanes_per_sm``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> r = unit_rates(hardware("h100-sxm"))
    >>> r["p_vector_tflops"], round(r["p_special_tflops"], 2), round(r["instr_over_special"])
    (133.8, 4.18, 8)
    """
    matrix, vector = device.ceiling("matrix", dtype), device.ceiling("vector", dtype)
    special, ops = device.ceiling("special", dtype), device.vector_op_rate(dtype)
    return {
        "p_vector_tflops": vector / 1e12,
        "p_special_tflops": special / 1e12,
        "matrix_over_vector": matrix / vector,
        "p_vector_ops": ops / 1e12,
        "p_vector_instr": ops / 2 / 1e12,  # lane instructions: 2 BF16 results each
        "p_vector_fp32_tflops": device.ceiling("vector", "fp32") / 1e12,
        "ops_over_special": ops / special,
        "instr_over_special": ops / 2 / special,
        "sfu_per_clock": int(device.sfu_per_sm_per_clock or 0),
        "lanes_per_sm": int(device.fp32_lanes_per_sm or 0),
    }


def roof_sentences(device: Hardware) -> dict[str, str]:
    """第 4 章按目录写出的几句话：BF16 数据的向量 roof 取哪个速率、同一时钟下
    矩阵单元与特殊函数单元的比、L2 带宽有没有数据（以及分层 roofline 图怎样画）。

    Returns
    -------
    dict
        ``vec_bf16_sentence``、``per_clock_sentence``、``l2_sentence``、``fig_l2_caption``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> s = roof_sentences(hardware("h100-sxm"))
    >>> s["per_clock_sentence"]
    'H100 每个 SM 每个时钟能算 16 次 exp、4096 次稠密 BF16 矩阵 FLOP。'
    >>> "packed BF16 向量速率是 134 TFLOP/s，是 FP32 的 2 倍" in s["vec_bf16_sentence"]
    True
    """
    vec_bf16, vec_fp32 = device.ceiling("vector", "bf16"), device.ceiling("vector", "fp32")
    name, sfu = device.key.upper().split("-")[0], device.sfu_per_sm_per_clock  # "H100"
    # matrix FLOPs per SM in one clock of the special units: each rate over SMs x its rated clock
    per_clock = device.per_sm_clock("matrix", "bf16") / device.per_sm_clock("special") * (sfu or 0)
    l2 = device.bandwidth("l2")
    same_clock = per_clock > 0 and abs(math.log2(per_clock) - round(math.log2(per_clock))) < 1e-3
    return {
        "vec_bf16_sentence": (
            f"目录为 {device.key.upper().replace('-', ' ')} 记的 packed BF16 向量速率是 "
            f"{vec_bf16 / 1e12:.0f} TFLOP/s，"
            f"是 FP32 的 {vec_bf16 / vec_fp32:.0f} 倍，BF16 数据的向量 roof 就取它。"
            if vec_bf16 > vec_fp32
            else "目录项没有单独的 packed BF16 向量速率，BF16 数据的向量 roof 只能取 FP32 的 "
            f"{vec_fp32 / 1e12:.0f} TFLOP/s，这时融合 kernel 有可能比它快。"
        ),
        "per_clock_sentence": (
            f"{name} 每个 SM 每个时钟能算 {sfu} 次 exp、{per_clock:.0f} 次稠密 BF16 矩阵 FLOP。"
            if same_clock  # a power of 2 at one clock
            else f"{name} 每个 SM 每个时钟能算 {sfu} 次 exp；目录里矩阵单元与特殊函数单元的峰值"
            "不是按同一个时钟给出的，按两者之比折算，每个 SM 在一个时钟里做 "
            f"{per_clock:.0f} 次稠密 BF16 矩阵 FLOP，"
            "比值也随之偏离同一时钟下的结果。"
        ),
        "l2_sentence": (
            f"NVIDIA 没有公布 {name} 的 L2 带宽，本书的硬件目录里也没有别人测得的值，"
            "所以上图只有 HBM 一条斜线，"
            "每个算子只在 HBM 这一级放一个点。"
            if l2 is None
            else f"NVIDIA 没有公布 {name} 的 L2 带宽；硬件目录里的 {l2 / 1e12:.2f} TB/s "
            "是别人用 microbenchmark 测得的最高值（出处见硬件附录）。上图把它画成第二条（虚线）"
            "斜线，每个算子在 HBM 和 L2 两级各放一个点。"
        ),
        "fig_l2_caption": (
            "每个算子在 HBM 这一级放一个点，横坐标是做了最多 FLOPs 的单元的 FLOPs 除以必需流量。"
            if l2 is None
            else "虚线是 L2 带宽。每个算子放两个点：实心点在 HBM 这一级，"
            "横坐标是做了最多 FLOPs 的单元的 FLOPs 除以必需流量；空心圈在 L2 这一级，"
            "分母再加上重复读取，两点由点线相连。没有重复读取的算子两点重合。"
        ),
    }


def fa3_published_bounds(device: Hardware) -> dict[str, object]:
    """:data:`FA3_PUBLISHED` 的每个配置在 ``device`` 上的下界，按论文的 FLOPs 口径换算成 TFLOP/s。

    每个配置算两次：按本书的模型（装得进 L2 的 K、V 重读由 L2 供给），以及假定 L2 什么都留不住、
    每次重读都回到 HBM。论文口径是每条序列 ``4 l^2 d h`` FLOPs（不计 softmax，causal 时减半）。

    Returns
    -------
    dict
        ``fa3_resource`` 与 ``fa3_tflops`` （head dim 128）、``fa3_tflops_256``、
        ``fa3_tflops_256c``、``fa3_resource_256c``，``fa3_bounds_sentence``：三个配置的
        上限与所受限制写成一句（相同的上限只说一次），以及 ``fa3_all_hbm_sentence``：
        重读全算到 HBM 时的上限，和哪些实测值超过了它。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> b = fa3_published_bounds(hardware("h100-sxm"))
    >>> b["fa3_resource"], round(b["fa3_tflops"], 1), b["fa3_tflops_256"] > 840
    ('受矩阵单元限制', 989.4, True)
    >>> b["fa3_bounds_sentence"].split("，")[0]
    'head dim 128、256 与 256（causal）的配置都受矩阵单元限制'
    >>> b["fa3_bounds_sentence"].split("，")[1:]
    ['按论文口径上限都是 989 TFLOP/s', '即矩阵单元的峰值。']
    """
    no_l2 = dataclasses.replace(device, l2_cache=1.0)  # an L2 that holds nothing
    found: dict[tuple[int, bool], dict[str, tuple[float, str]]] = {}
    for d, causal in FA3_PUBLISHED:
        heads, n = FA3_HIDDEN // d, FA3_TOKENS
        cost = attention(1, heads, n, n, d, causal=causal, tile=fa3_tile(d, causal=causal))
        paper_flops = 4 * n**2 * d * heads / (2 if causal else 1)
        found[d, causal] = {}
        for key, dev in (("bound", device), ("all_hbm", no_l2)):
            t = time_bound(cost, dev)
            found[d, causal][key] = (paper_flops / t.seconds / 1e12, t.resource)
    names = {k: f"head dim {k[0]}{'（causal）' if k[1] else ''}" for k in found}
    beaten = [k for k in found if found[k]["all_hbm"][0] < FA3_PUBLISHED[k]]
    listed = "、".join(f"{names[k]} 为 {found[k]['all_hbm'][0]:.0f} TFLOP/s" for k in found)
    tail = (
        "、".join(f"{names[k]} 的实测值 {FA3_PUBLISHED[k]:.0f} TFLOP/s" for k in beaten)
        + " 会超过这样算出的“上限”，说明这些重复读取确实由 L2 供给；其余配置的实测值还在它之下。"
        if beaten
        else "都还在实测值之上，这几个实测点本身不能说明重复读取来自 L2。"
    )
    bounds = {k: found[k]["bound"] for k in found}
    dims = [f"{k[0]}{'（causal）' if k[1] else ''}" for k in found]  # "256（causal）"
    configs = "head dim " + "、".join(dims[:-1]) + f" 与 {dims[-1]}"
    top = max(b[0] for b in bounds.values())
    if len({b[1] for b in bounds.values()}) == 1 and all(top - b[0] < 0.5 for b in bounds.values()):
        resource = next(iter(bounds.values()))[1]
        peak = device.ceiling(resource, "bf16") / 1e12 if resource in ("matrix", "vector") else None
        said = f"，即{resource_zh(resource)}的峰值" if peak and abs(peak - top) < 0.5 else ""
        bounds_sentence = (
            f"{configs}的配置都{bound_zh(resource)}，按论文口径上限都是 {top:.0f} TFLOP/s{said}。"
        )
    else:
        bounds_sentence = (
            "按论文口径，上限依次是："
            + "；".join(
                f"{names[k]} {v:.0f} TFLOP/s（{bound_zh(r)}）" for k, (v, r) in bounds.items()
            )
            + "。"
        )
    return {
        "fa3_bounds_sentence": bounds_sentence,
        "fa3_resource": bound_zh(found[128, False]["bound"][1]),
        "fa3_tflops": found[128, False]["bound"][0],
        "fa3_tflops_256": found[256, False]["bound"][0],
        "fa3_tflops_256c": found[256, True]["bound"][0],
        "fa3_resource_256c": bound_zh(found[256, True]["bound"][1]),
        "fa3_all_hbm_sentence": f"如果把 K、V 的每次重复读取都算到 HBM 上，上限依次是：{listed}。"
        + tail,
    }


def hierarchical_legend(
    ax: Any,
    named: Iterable[tuple[str, Cost]],
    device: Hardware,
    dtype: str = "bf16",
    *,
    unit_ticks: Iterable[str] = (),
    fontsize: float = 7.0,
) -> Any:
    """第 4 章分层 roofline 图的中文图例：点的每种颜色代表哪种限制资源，以及实心点、空心圈、
    L2 虚线和短横线各表示什么（与 :func:`roofline_book.present.plotting.placed` 画出的一一对应）。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    named : iterable of (str, Cost)
        图上放的算子，与传给 ``placed`` 的相同。
    device : roofline_book.Hardware
    unit_ticks : iterable of str
        画了短横线的算子名（``placed`` 的 ``unit_ticks``）。

    Returns
    -------
    matplotlib.legend.Legend

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from roofline_book import add, gemm, hardware
    >>> ops = [("add", add(2**24)), ("GEMM", gemm(4096, 4096, 4096))]
    >>> legend = hierarchical_legend(Figure().add_subplot(), ops, hardware("h100-sxm"))
    >>> [t.get_text() for t in legend.get_texts()][:3]
    ['受 HBM 限制', '受矩阵单元限制', '实心点：按 HBM 流量放置']
    >>> [t.get_text() for t in legend.get_texts()][3:]
    ['空心圈：按 L2 流量（含重复读取）放置', '虚线：L2 带宽']
    """
    from matplotlib.lines import Line2D

    from ..present.plotting.ceilings import RESOURCE_COLORS

    gray, ticked = "#888888", set(unit_ticks)
    limits: list[str] = []
    bars: list[str] = []
    for name, cost in named:
        t = time_bound(cost, device, dtype)
        limits += [] if t.resource in limits else [t.resource]
        main = main_unit(cost, t)
        if name in ticked and main is not None:
            bars += [r for r in ("vector", "special") if r != main and t.by_resource.get(r)]

    def mark(label: str, color: str, marker: str = "o", line: Any = "", face: str | None = None):
        return Line2D([], [], color=color, marker=marker, linestyle=line, markersize=5,
                      markerfacecolor=face or color, markeredgewidth=1.5, label=label)  # fmt: skip

    handles = [mark(bound_zh(r), RESOURCE_COLORS[r]) for r in limits]
    handles.append(mark("实心点：按 HBM 流量放置", gray))
    if device.bandwidth("l2") is not None:
        handles.append(mark("空心圈：按 L2 流量（含重复读取）放置", gray, face="none"))
        handles.append(mark("虚线：L2 带宽", RESOURCE_COLORS["l2"], marker="", line="--"))
    for r in dict.fromkeys(bars):
        handles.append(mark(f"短横线：{resource_zh(r)}允许的上限", RESOURCE_COLORS[r], marker="_"))
    return ax.legend(handles=handles, loc="lower right", fontsize=fontsize)


def unit_bar_label(
    ax: Any,
    cost: Cost,
    device: Hardware,
    label: str,
    xytext: tuple[float, float],
    unit: str = "special",
    dtype: str = "bf16",
    *,
    fontsize: float = 7.0,
) -> Any:
    """给 :func:`roofline_book.present.plotting.placed` 画在点旁的一条短横线加上文字和箭头。

    短横线是 ``unit`` 单元允许的上限（按做了最多 FLOPs 的单元换算成 TFLOP/s）；它常与
    某条 roof 贴得很近，加上文字才看得出。横线画在顶层。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    cost : roofline_book.Cost
        画了短横线的算子。
    device : roofline_book.Hardware
    label : str
        文字，例如 ``"特殊函数单元的上限"``。
    xytext : tuple of float
        文字所在的数据坐标（FLOP/byte, TFLOP/s）；文字右端对齐到这一点。
    unit : str
        短横线所属的单元：``"special"`` 或 ``"vector"``。

    Returns
    -------
    matplotlib.text.Annotation

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from roofline_book import attention, fa3_tile, hardware
    >>> fa = attention(1, 32, 4096, 4096, 64, causal=True, tile=fa3_tile(64, causal=True))
    >>> ax = Figure().add_subplot()
    >>> note = unit_bar_label(ax, fa, hardware("h100-sxm"), "特殊函数单元的上限", (400, 5000))
    >>> round(note.xy[0]), round(note.xy[1])   # I = 1044 FLOP/byte; matrix FLOPs over exp time
    (1044, 1071)
    """
    from ..present.plotting.ceilings import RESOURCE_COLORS

    t = time_bound(cost, device, dtype)
    main = main_unit(cost, t)
    flops = ({"compute": cost.flops} | cost.flops_by_unit)[main or "compute"]
    at = (cost.intensity, flops / t.by_resource[unit] / 1e12)
    color = RESOURCE_COLORS[unit]
    ax.scatter([at[0]], [at[1]], marker="_", s=220, linewidths=2.4, color=color, zorder=9)
    arrow = {"arrowstyle": "->", "color": color, "linewidth": 0.8, "shrinkB": 4}
    return ax.annotate(label, at, xytext=xytext, textcoords="data", ha="right", va="center",
                       fontsize=fontsize, color=color, arrowprops=arrow, zorder=9)  # fmt: skip
