"""Serving 一章的示意图：调度的时间线、吞吐与延迟的 Pareto 曲线、roofline 上的 prefill 块、
prefill/decode 分离。

数都取自 :mod:`roofline_book.serving`：时间线是 :func:`~roofline_book.serving.simulate.simulate`
记下的每一步（:class:`~roofline_book.serving.engine.StepRecord`），Pareto 曲线是
:func:`~roofline_book.serving.search.sweep` 的结果，一步的时间是
:class:`~roofline_book.serving.steps.StepModel` 的下界；KV cache 的字节来自
:func:`~roofline_book.llm.inference.kv_bytes_per_token`，链路带宽来自
:meth:`~roofline_book.serving.simulate.Deployment.link_bandwidth`。

一步的算术强度按它的下界读出：``StepTime`` 给出计算项 ``compute_s`` （FLOPs 除以峰值）与内存项
``memory_s`` （字节除以带宽），所以 ``I = I* x compute_s / memory_s``，可达速率是
``P x compute_s / seconds``。
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...devices.catalog import Hardware, hardware
from ...llm.config import model as catalog_model
from ...llm.inference import Precisions, decode_batch_to_ridge, kv_bytes_per_token
from ...serving.search import Slo
from ...serving.simulate import Deployment, ServeResult, simulate
from ...serving.steps import StepModel, StepTime
from ...serving.workload import Request
from ...units import si
from ..plotting.style import PALETTE
from . import _draw
from ._common import COLORS, key_row, rich

#: 图中调度的名字。
NAMES = {
    "static": "静态批处理",
    "continuous": "连续批处理",
    "chunked": "分段 prefill",
    "disaggregated": "prefill 与 decode 分离",
}

#: 时间线默认的几个请求：（到达时刻 s，prompt token 数，输出 token 数）。
REQUESTS = (
    Request(0.0, 300, 6),
    Request(0.002, 200, 3),
    Request(0.01, 250, 5),
    Request(0.02, 150, 4),
)

INK = _draw.INK

#: Pareto 图下面一幅的 batch：1 到 1024。
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

_COLORS = {
    "prefill": COLORS["w"],
    "decode": COLORS["a"],
    "padding": COLORS["grey"],
    "static": PALETTE["black"],
    "continuous": PALETTE["blue"],
    "chunked": PALETTE["vermillion"],
    "disaggregated": PALETTE["green"],
}


def timeline_runs(
    requests: Sequence[Request] = REQUESTS,
    *,
    model: str = "llama-3-8b",
    device: str = "h100-sxm",
    chunk: int = 256,
    schedulers: Sequence[str] = ("static", "continuous", "chunked"),
) -> dict[str, ServeResult]:
    """同一组请求在几种调度下的模拟，每一步都记下（``simulate(..., timeline=...)``）。

    ``chunk`` 是 chunked prefill 一步的 token 预算。

    Examples
    --------
    >>> runs = timeline_runs()
    >>> {s: (r.steps, len(r.timeline)) for s, r in runs.items()}
    {'static': (11, 11), 'continuous': (9, 9), 'chunked': (9, 9)}
    """
    config, hw = catalog_model(model), hardware(device)
    steps = sum(r.prompt + r.output for r in requests)  # more than any schedule takes
    return {
        s: simulate(
            Deployment(config, hw, scheduler=s, chunk=chunk), list(requests), timeline=steps
        )
        for s in schedulers
    }


def _tick_step(span: float, count: int = 6) -> float:
    """刻度的间隔：1、2、5 乘 10 的幂中，使刻度不多于 ``count`` 个的最小者。"""
    step = 1e-6
    while True:
        for f in (1, 2, 5):
            if span / (f * step) <= count:
                return f * step
        step *= 10


def timeline(runs: Mapping[str, ServeResult], *, ax: Any = None) -> Any:
    """每种调度一栏：横轴是时间，每个请求一行；每一步一个格（顶上的细条），格里是这一步
    各请求的 prefill token（橙，写出个数）或 decode 的一个 token（蓝）；静态 batching 中已结束、
    仍陪着整批空转的序列画成灰色斜线（padding）。点线是请求到达之后等待的时间。

    ``runs`` 来自 :func:`timeline_runs`：每一步是一条
    :class:`~roofline_book.serving.engine.StepRecord`。
    图元的 ``gid``：每步的格为 ``"step"``，请求 ``i`` 的格为 ``"prefill i"``、``"decode i"`` 或
    ``"padding i"``。

    Returns
    -------
    matplotlib.figure.Figure
    """
    left, plot_w, lane, strip = 1.45, 5.0, 0.2, 0.1
    counts = {s: len(r.ttft_each) for s, r in runs.items()}
    heights = {s: 0.3 + strip + 0.05 + counts[s] * lane for s in runs}
    height = 0.4 + sum(heights.values()) + 0.15 * (len(runs) - 1) + 0.55
    fig, ax = _draw.canvas(left + plot_w + 0.15, height, ax)
    t_max = max(rec.end for r in runs.values() for rec in r.timeline)
    scale = plot_w / t_max

    y_key = height - 0.2
    for i, (kind, text) in enumerate(
        (("prefill", "prefill 的 token（个数）"), ("decode", "decode 的一个 token"),
         ("padding", "已结束，陪整批空转"))
    ):  # fmt: skip
        key_row(ax, left + i * 1.75, y_key, _COLORS[kind], text, size=7.5,
                hatch="////" if kind == "padding" else None)  # fmt: skip

    top = height - 0.45
    for s, run in runs.items():
        end = max(rec.end for rec in run.timeline)
        _draw.label(
            ax, left, top - 0.12,
            f"{NAMES[s]}：{len(run.timeline)} 步，{end * 1e3:.1f} ms 全部完成",
            size=8, ha="left",
        )  # fmt: skip
        y_strip = top - 0.3 - strip
        _draw.label(ax, left - 0.08, y_strip + strip / 2, "步", size=7, ha="right")
        arrival = [f - e for f, e in zip(run.finish_each, run.e2e_each, strict=True)]
        first: dict[int, float] = {}
        for rec in run.timeline:
            x, w = left + rec.start * scale, (rec.end - rec.start) * scale
            patch = _draw.box(ax, x, y_strip, w, strip, color=COLORS["grey"], alpha=0.3, lw=0.5)
            patch.set_gid("step")
            for idx, kind, n in rec.items:
                first.setdefault(idx, rec.start)
                y = y_strip - 0.05 - (idx + 1) * lane
                if kind == "decode" and rec.start >= run.finish_each[idx]:
                    kind = "padding"
                patch = _draw.box(
                    ax, x, y + 0.02, w, lane - 0.04, color=_COLORS[kind],
                    alpha=0.3 if kind == "padding" else 0.6, lw=0.4,
                    hatch="////" if kind == "padding" else None,
                )  # fmt: skip
                patch.set_gid(f"{kind} {idx}")
                if kind == "prefill" and w > 0.08 + 0.055 * len(str(n)):
                    _draw.label(ax, x + w / 2, y + lane / 2, str(n), size=6.5)
        for idx in range(counts[s]):
            y = y_strip - 0.05 - (idx + 0.5) * lane
            _draw.label(ax, left - 0.08, y, f"请求 {idx}", size=7, ha="right")
            x0 = left + arrival[idx] * scale
            ax.plot([x0, x0], [y - lane / 3, y + lane / 3], color=_draw.INK, lw=0.8)
            x1 = left + first[idx] * scale
            if x1 - x0 > 0.02:
                ax.plot([x0, x1], [y, y], color=_draw.INK, lw=0.8, ls=":")
        top -= heights[s] + 0.15

    # the time axis
    y_axis = top + 0.1
    ax.plot([left, left + plot_w], [y_axis, y_axis], color=_draw.INK, lw=0.6)
    step = _tick_step(t_max)
    k = 0
    while k * step <= t_max * (1 + 1e-9):
        x = left + k * step * scale
        ax.plot([x, x], [y_axis, y_axis - 0.05], color=_draw.INK, lw=0.6)
        _draw.label(ax, x, y_axis - 0.14, f"{k * step * 1e3:g}", size=7)
        k += 1
    _draw.label(ax, left - 0.08, y_axis - 0.14, "时间（ms）", size=7, ha="right")
    return fig


def _point(st: StepTime, hw: Hardware, dtype: str) -> tuple[float, float]:
    """一步在 roofline 上的位置：(算术强度 FLOP/byte, 可达速率 FLOP/s)。"""
    return (
        hw.ridge_point(dtype) * st.compute_s / st.memory_s,
        hw.peak_flops(dtype) * st.compute_s / st.seconds,
    )


def free_chunk(steps: StepModel, decodes: int, context_sum: int) -> int:
    """一个 decode 步（``decodes`` 条序列，上下文之和 ``context_sum``）里还能免费捎带的 prefill：
    加上一个这么多 token 的 prefill 块（一条新 prompt 的头一块）后，这一步仍受内存限制的
    最大 token 数。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> s = StepModel(model("llama-3-8b"), hardware("h100-sxm"))
    >>> n = free_chunk(s, 32, 32 * 1100)
    >>> [s.time(decodes=32, context_sum=35200, chunks=[(c, c, False)]).bound for c in (n, n + 1)]
    ['memory', 'compute']
    """

    def bound(n: int) -> str:
        return steps.time(decodes=decodes, context_sum=context_sum, chunks=[(n, n, False)]).bound

    lo, hi = 0, 1
    while bound(hi) == "memory":
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bound(mid) == "memory" else (lo, mid)
    return lo


def _plain_log(ax: Any) -> None:
    """对数的 y 轴，刻度写成普通的数（1、2、5 乘 10 的幂中落在范围内的）。"""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    ax.set_yscale("log")
    lo, hi = ax.dataLim.y0, ax.dataLim.y1
    ticks = [f * 10.0**k for k in range(-3, 7) for f in (1, 2, 5) if lo <= f * 10.0**k <= hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.set_yticklabels([f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())


def pareto(
    curves: Mapping[str, Sequence[tuple[float, ServeResult]]],
    *,
    model: str = "llama-3-8b",
    device: str = "h100-sxm",
    context: int = 1100,
    slo: Slo | None = None,
    batches: Sequence[int] = BATCHES,
) -> Any:
    """上面两幅：每种调度一条线，横轴是输出 token 的吞吐，纵轴是 TTFT 与 TPOT 的第 90 百分位
    （``curves`` 来自 :func:`~roofline_book.serving.search.sweep`）；给了 ``slo`` 就画出它的
    两条上限。
    右上的虚线是只有 decode、上下文都为 ``context`` 的一步：batch 为 b 时吞吐 ``b / T(b)``、
    TPOT 为 ``T(b)``。下面一幅是这一步的下界 ``T(b)`` 对 batch：上下文为 ``context`` 与为 1
    （几乎只读权重）两条，竖线是权重 GEMM 到达 ridge point 的 ``b*``
    （:func:`~roofline_book.llm.inference.decode_batch_to_ridge`）。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    from ..plotting.marks import log2_axis

    config, hw = catalog_model(model), hardware(device)
    sm = StepModel(config, hw)
    fig = Figure(figsize=(6.4, 5.4), layout="constrained")
    grid = fig.add_gridspec(2, 2)
    ttft_ax, tpot_ax, step_ax = (
        fig.add_subplot(grid[0, 0]),
        fig.add_subplot(grid[0, 1]),
        fig.add_subplot(grid[1, :]),
    )
    for s, curve in curves.items():
        x = [r.output_tokens_per_s for _, r in curve]
        style: dict[str, Any] = {"color": _COLORS[s], "marker": "o", "ms": 3.5, "lw": 1.2}
        style["label"] = NAMES[s]
        ttft_ax.plot(x, [r.ttft_s.p90 * 1e3 for _, r in curve], **style)
        tpot_ax.plot(x, [r.tpot_s.p90 * 1e3 for _, r in curve if r.tpot_s], **style)
    decode = [sm.time(decodes=b, context_sum=b * context) for b in batches]
    reach = 1.3 * max(r.output_tokens_per_s for c in curves.values() for _, r in c)
    shown = [(b / st.seconds, st.seconds * 1e3) for b, st in zip(batches, decode, strict=True)]
    shown = [xy for xy in shown if xy[0] <= reach]
    tpot_ax.plot(
        [x for x, _ in shown], [y for _, y in shown],
        color=_draw.INK, ls="--", lw=0.9, label="只有 decode 的一步（下界）",
    )  # fmt: skip
    if slo is not None:
        for axis, limit in ((ttft_ax, slo.ttft), (tpot_ax, slo.tpot)):
            if limit is not None:
                axis.axhline(limit * 1e3, color=COLORS["grey"], ls=":", lw=1.0, label="服务目标")
    ttft_ax.set_title("首 token 时间（第 90 百分位）", fontsize=8.5)
    tpot_ax.set_title("输出 token 的间隔（第 90 百分位）", fontsize=8.5)
    for axis in (ttft_ax, tpot_ax):
        axis.set_xlabel("输出 token 的吞吐（token/s）")
        axis.set_ylabel("ms")
        _plain_log(axis)
    handles, labels = tpot_ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=3, fontsize=7.5)

    short = [sm.time(decodes=b, context_sum=b) for b in batches]
    step_ax.plot(batches, [st.seconds * 1e3 for st in decode], color=_COLORS["continuous"],
                 lw=1.4, label=f"上下文 {context} 个 token")  # fmt: skip
    step_ax.plot(batches, [st.seconds * 1e3 for st in short], color=_COLORS["chunked"],
                 lw=1.4, ls="--", label="上下文 1 个 token（几乎只读权重）")  # fmt: skip
    b_star = decode_batch_to_ridge(config, hw)
    step_ax.axvline(b_star, color=_draw.INK, ls=":", lw=1.0, label=f"$b^*$ = {b_star:.0f}")
    step_ax.set_xscale("log")
    log2_axis(step_ax, list(batches))
    _plain_log(step_ax)
    step_ax.set_xlabel("batch（一步中的序列数）")
    step_ax.set_ylabel("一个 decode 步的下界（ms）")
    step_ax.legend(fontsize=7, loc="upper left")
    return fig


def chunk_roofline(
    *,
    model: str = "llama-3-8b",
    device: str = "h100-sxm",
    batch: int = 32,
    context: int = 1100,
    chunks: Sequence[int] = (256, 2048),
) -> Any:
    """一个 decode 步（``batch`` 条序列，上下文都为 ``context``）在 roofline 上的位置，以及同一步
    再加一个 prefill 块（``chunks`` 中的每个 token 数，再加 :func:`free_chunk` 的那一个）之后的
    位置；
    每个点旁写出这一步的下界。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    from ..plotting import roofline

    config, hw = catalog_model(model), hardware(device)
    dtype = Precisions().activations
    sm = StepModel(config, hw)
    total = batch * context
    free = free_chunk(sm, batch, total)
    sizes = sorted({*chunks, free})
    steps = [(0, sm.time(decodes=batch, context_sum=total))]
    steps += [(n, sm.time(decodes=batch, context_sum=total, chunks=[(n, n, False)])) for n in sizes]
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    peak = hw.peak_flops(dtype)
    roofline(ax, peak, hw.memory_bandwidth, intensity_range=(1, 1e4), color=_COLORS["continuous"])
    ax.set_xlabel("一步的算术强度（FLOP/byte）")
    ax.set_ylabel("可达速率（TFLOP/s）")
    ridge = hw.ridge_point(dtype)
    ax.text(ridge * 1.1, peak / 1e12 * 0.01, f"ridge point {ridge:.0f}", fontsize=7.5)
    for i, (n, st) in enumerate(steps):
        x, y = _point(st, hw, dtype)
        color = PALETTE["vermillion"] if n == 0 else PALETTE["green"] if n == free else INK
        ax.scatter([x], [y / 1e12], s=30, color=color, zorder=5)
        what = f"decode {batch} 条" if n == 0 else f"+ prefill {n} token"
        # below-right of its point; the second above-left, clear of the first's; the last
        # (on the flat roof) above
        dx, dy, ha = (6, -11, "left")
        if i == 1:
            dx, dy, ha = -6, 6, "right"
        elif i == len(steps) - 1:
            dx, dy, ha = 0, 8, "center"
        ax.annotate(
            f"{what}：{st.seconds * 1e3:.2f} ms", (x, y / 1e12), xytext=(dx, dy),
            textcoords="offset points", fontsize=7.5, ha=ha,
        )  # fmt: skip
    ax.set_ylim(top=peak / 1e12 * 2.5)
    return fig


def disaggregation(
    *,
    model: str = "llama-3-8b",
    device: str = "h100-sxm",
    prompt: int = 1000,
    batch: int = 64,
    context: int = 1100,
) -> Any:
    """两块设备分工：左边只做 prefill（一条 ``prompt`` 个 token 的 prompt 一步），右边只做 decode
    （``batch`` 条序列，上下文都为 ``context``），中间的箭头是 prefill 写出的 KV cache 经链路
    传给 decode 的那一份：``prompt x m_kv`` 字节，时间是它除以
    :meth:`~roofline_book.serving.simulate.Deployment.link_bandwidth`。两边各写出一步的算术强度
    （``I* x compute_s / memory_s``）与设备的 ridge point。

    Returns
    -------
    matplotlib.figure.Figure
    """
    config, hw = catalog_model(model), hardware(device)
    p = Precisions()
    sm = StepModel(config, hw)
    ridge = hw.ridge_point(p.activations)
    pre = sm.time(chunks=[(prompt, prompt, True)])
    dec = sm.time(decodes=batch, context_sum=batch * context)
    m_kv = kv_bytes_per_token(config, p)
    sent = prompt * m_kv
    link = Deployment(config, hw, scheduler="disaggregated", replicas=2).link_bandwidth()

    fig, ax = _draw.canvas(6.6, 2.05)
    box_w, box_h, y0 = 2.25, 1.55, 0.35
    sides = (
        (0.1, "prefill 的 GPU", pre, f"一步：一个请求的 {prompt} 个输入 token", COLORS["w"]),
        (6.6 - 0.1 - box_w, "decode 的 GPU", dec, f"一步：{batch} 条序列各 1 个 token",
         COLORS["a"]),
    )  # fmt: skip
    for x, title, st, what, color in sides:
        _draw.box(ax, x, y0, box_w, box_h, color=color, alpha=0.18)
        cx = x + box_w / 2
        _draw.label(ax, cx, y0 + box_h - 0.2, title, size=8.5)
        _draw.label(ax, cx, y0 + box_h - 0.5, what, size=7.5)
        intensity = ridge * st.compute_s / st.memory_s
        sign = ">" if intensity > ridge else "<"
        _draw.label(
            ax, cx, y0 + box_h - 0.8, f"$I$ = {intensity:.0f} {sign} $I^*$ = {ridge:.0f}", size=8
        )
        _draw.label(ax, cx, y0 + box_h - 1.08, f"{st.bound}-bound", size=7.5)
        _draw.label(ax, cx, y0 + 0.17, f"下界 {st.seconds * 1e3:.2f} ms", size=7.5)
    start, end = 0.1 + box_w + 0.08, 6.6 - 0.1 - box_w - 0.08
    mid = (start + end) / 2
    _draw.arrow(ax, (start, y0 + box_h / 2), (end, y0 + box_h / 2), lw=1.2)
    _draw.label(ax, mid, y0 + box_h / 2 + 0.5, "KV cache", size=8)
    rich(ax, mid, y0 + box_h / 2 + 0.25,
         [f"{prompt} × ", "$m_{kv}$", f" = {si(sent, 'B', 3)}"], size=7.5)  # fmt: skip
    _draw.label(ax, mid, y0 + box_h / 2 - 0.22, f"链路 {si(link, 'B/s', 3)}", size=7.5)
    _draw.label(ax, mid, y0 + box_h / 2 - 0.45, f"传输 {sent / link * 1e3:.2f} ms", size=7.5)
    return fig


__all__ = [
    "NAMES",
    "REQUESTS",
    "chunk_roofline",
    "disaggregation",
    "free_chunk",
    "pareto",
    "timeline",
    "timeline_runs",
]
