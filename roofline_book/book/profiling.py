"""profiling 一章的表格、图和粘贴的值，都来自一次 profile 过的训练步。"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base.validate import InvalidArgument
from ..devices.catalog import hardware
from ..llm.inference import model, weight_bytes
from ..measure.judge.ceilings import of_run
from ..measure.profile import profiling, trainstep
from ..measure.published.rows import Measurement, row
from ..measure.runs.records import Run
from ..ops import gemm
from ..present.plotting import PALETTE
from ..present.words import VERDICTS
from ..roofline.bounds import CACHE_MARGIN, Ceilings, bound
from ..roofline.roofs import time_bound
from ..units import binary, si
from .measured import run_figures
from .notebook import glue, glue_figure
from .tables import markdown_table, resource_zh

#: 检验要留出余量才算成立：占比须在任一方向越过界线 MARGIN，排第一的算子的 self time 须是
#: 第二名的 RANK_MARGIN 倍；否则无法判定。
MARGIN, RANK_MARGIN = 0.1, 1.5
VERDICT_ZH = VERDICTS["zh"]
SCALING_ZH = {
    "overhead": "与 batch 无关的时间主导",
    "work": "随工作量成比例增长",
    "mixed": "介于两者之间",
}
_MATRIX = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def _resource(name: str | None) -> str:
    return "—" if name is None else resource_zh(name)


def _of_roof(row: profiling.OpRow) -> str:
    """占 roof 的比例；比时间下界还快的行（下界或归属有错）不写比例。

    Examples
    --------
    >>> import dataclasses
    >>> from roofline_book.roofline.bounds import TimeBound
    >>> from roofline_book.ops import Cost
    >>> row = profiling.OpRow("aten::mm", (), (), 1, 1e-3, 1.0, Cost(0, 0, 0), "fp32",
    ...                       TimeBound({"matrix": 2.08e-3}), None)
    >>> _of_roof(row), _of_roof(dataclasses.replace(row, self_time_s=4e-3))
    ('快于下界', '52%')
    """
    if row.fraction_of_roof is None:
        return "—"
    return "快于下界" if row.beats_bound else f"{row.fraction_of_roof:.0%}"


def shapes_text(shapes: Sequence[Sequence[int]]) -> str:
    """一行的输入形状，短到放得进表格的一格：相邻的相同形状合成一项，标量不写。

    Examples
    --------
    >>> shapes_text([(512, 512), (512, 1408)])
    '512×512，512×1408'
    >>> shapes_text([(2, 8, 256, 64)] * 5 + [(2, 8, 256), (), ()])
    '5 个 2×8×256×64，2×8×256'
    """
    parts: list[list[Any]] = []
    for shape in (s for s in shapes if s):
        text = "×".join(map(str, shape))
        if parts and parts[-1][0] == text:
            parts[-1][1] += 1
        else:
            parts.append([text, 1])
    return "，".join(text if n == 1 else f"{n} 个 {text}" for text, n in parts)


def attribution_frame(attribution: profiling.Attribution, limit: int = 10) -> Any:
    """self time 最多的各行，中文表头（一个 pandas DataFrame）。"""
    import pandas as pd

    rows = attribution.rows[:limit]

    def fig(value: float | None, unit: str) -> str:
        return "—" if value is None else si(value, unit).replace(" ", "\u00a0")

    return pd.DataFrame(
        {
            "算子": [r.name for r in rows],
            "输入形状": [shapes_text(r.shapes) for r in rows],
            "调用次数": [r.calls for r in rows],
            "self time 占比": [f"{r.share:.1%}" for r in rows],
            "FLOPs（模型）": [fig(r.flops, "FLOP") for r in rows],
            "字节（模型）": [fig(r.bytes, "B") for r in rows],
            "算术强度": ["—" if r.intensity is None else f"{r.intensity:.3g}" for r in rows],
            "占 roof 的比例": [_of_roof(r) for r in rows],
            "受限于": [_resource(r.bound) for r in rows],
        }
    )


def _judge(value: float, line: float) -> str:
    if value >= line + MARGIN:
        return "pass"
    return "fail" if value <= line - MARGIN else "inconclusive"


def _by_name(attribution: profiling.Attribution) -> list[tuple[str, float]]:
    shares: dict[str, float] = {}
    for r in attribution.rows:
        shares[r.name] = shares.get(r.name, 0.0) + r.share
    return sorted(shares.items(), key=lambda kv: -kv[1])


def step_figures(attribution: profiling.Attribution, shape: trainstep.BlockShape) -> dict:
    """这一章关于 profile 过的训练步所说的内容：计数、FLOPs，以及对各占比的检验。"""
    mm = [r for r in attribution.rows if r.name in _MATRIX]
    proj = sum(i * o for i, o in shape.linears.values())
    model_mm = sum(r.flops or 0 for r in mm)
    (top, top_share), (second, second_share) = _by_name(attribution)[:2]
    mm_share = sum(r.share for r in mm)
    sdpa = [r for r in attribution.rows if "scaled_dot_product" in r.name and r.cost is not None]
    fused = next(r for r in sdpa if not r.name.endswith("backward"))
    rank = (
        "pass"
        if top in _MATRIX and top_share >= RANK_MARGIN * second_share
        else ("inconclusive" if top in _MATRIX or second in _MATRIX else "fail")
    )
    return {
        "hidden": shape.hidden,
        "heads": shape.heads,
        "ffn": shape.ffn,
        "batch": shape.batch,
        "seq": shape.seq,
        "n_linears": len(shape.linears),
        "mm_calls": sum(r.calls for r in mm),
        "mm_shapes": len(mm),
        "mm_flops_g": model_mm / 1e9,
        "six_t_p_g": 6 * shape.tokens * proj / 1e9,
        "mm_flops_match": "相等" if model_mm == 6 * shape.tokens * proj else "不相等",
        "profiler_agrees": "全部一致"
        if all(r.profiler_flops == r.flops for r in mm)
        else "有不一致之处",
        "sdpa_name": fused.name,
        "sdpa_profiler_flops": fused.profiler_flops or 0,
        "sdpa_model_flops_m": (fused.flops or 0) / 1e6,
        "tokens": shape.tokens,
        "proj_params_m": proj / 1e6,
        "rows": len(attribution.rows),
        "mm_share_verdict": VERDICT_ZH[_judge(mm_share, 0.5)],
        "mm_rank_verdict": VERDICT_ZH[rank],
        "explained_verdict": VERDICT_ZH[_judge(attribution.explained, 0.5)],
        "margin_pct": 100 * MARGIN,
        "rank_margin": RANK_MARGIN,
        "top_op": top,
    }


def roofline_figure(attribution: profiling.Attribution) -> Any:
    """训练步中有模型的算子画在实测 roofline 上（一个 matplotlib Figure）。"""
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.9))
    profiling.plot(ax, attribution, labelled=0)
    ax.set_ylabel("实测性能 [GFLOP/s]")
    ax.set_title("训练一步中的各算子：实测性能与 roof")
    ax.legend(loc="lower right", fontsize=7)
    profiling.label_operators(ax, attribution, 2)  # after the legend, which the names avoid
    return fig


def _lane(name: str) -> str:
    if name in _MATRIX:
        return "矩阵乘法"
    if "scaled_dot_product" in name:
        return "attention"
    return "其他 aten 算子"


def timeline_figure(trace_path: str, kernels: Sequence[str]) -> Any:
    """由导出的 Chrome trace 画出训练步的时间线：每类 kernel 一条泳道（``kernels``：带模型的名字），
    上方标出各阶段。
    """
    from matplotlib import pyplot as plt

    with open(trace_path, encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    start = min(e["ts"] for e in events)
    lanes = ["矩阵乘法", "attention", "其他 aten 算子"]
    colors = {"矩阵乘法": PALETTE["blue"], "attention": PALETTE["purple"],
              "其他 aten 算子": PALETTE["green"]}  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.4, 2.4))
    keep = set(kernels)
    spans: dict[str, list[tuple[float, float]]] = {lane: [] for lane in lanes}
    for e in events:
        if e["name"] in keep:
            spans[_lane(e["name"])].append(((e["ts"] - start) / 1e3, e["dur"] / 1e3))
    for i, lane in enumerate(lanes):  # one call per lane: a step records hundreds of kernels
        ax.broken_barh(spans[lane], (i + 0.6, 0.8), color=colors[lane], linewidth=0)
    backward = [e for e in events if e["name"].startswith("autograd::engine::evaluate_function")]
    step = [e for e in events if e["name"].startswith("Optimizer.step")]
    if backward and step:
        b0 = min(e["ts"] for e in backward)
        b1 = max(e["ts"] + e["dur"] for e in backward)
        s0, s1 = step[0]["ts"], step[0]["ts"] + step[0]["dur"]
        for (t0, t1), label, color in (((start, b0), "前向", PALETTE["sky"]),
                                       ((b0, b1), "反向", PALETTE["orange"]),
                                       ((s0, s1), "AdamW", PALETTE["vermillion"])):  # fmt: skip
            ax.broken_barh([((t0 - start) / 1e3, (t1 - t0) / 1e3)], (0.6 + len(lanes), 0.8),
                           color=color, alpha=0.5, linewidth=0)  # fmt: skip
            ax.text((t0 + t1) / 2e3 - start / 1e3, 1 + len(lanes), label, ha="center",
                    va="center", fontsize=7)  # fmt: skip
        lanes.append("阶段")
    ax.set_yticks(range(1, len(lanes) + 1), lanes)
    ax.set_xlabel("时间 [ms]")
    ax.set_title("一步训练的时间线（从导出的 trace 读出）")
    return fig


def scaling_figure(sweep: Sequence[tuple[int, float]]) -> Any:
    """每步时间随 token 数的变化，并画出时间与 token 数成正比时应走的线。"""
    from matplotlib import pyplot as plt

    tokens, seconds = zip(*sweep, strict=True)
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    ax.loglog(tokens, [s * 1e3 for s in seconds], "o-", color=PALETTE["blue"], label="实测")
    ax.loglog(tokens, [seconds[-1] * 1e3 * t / tokens[-1] for t in tokens], ":",
              color=PALETTE["black"], label="与 token 数成正比")  # fmt: skip
    ax.set(xlabel="每步的 token 数", ylabel="每步时间 [ms]", title="一步训练的时间与 token 数")
    ax.legend(loc="upper left")
    return fig


def scaling_figures(sweep: Sequence[tuple[int, float]]) -> dict:
    """扫描的小端与大端各自的增长，以及相应的判定。"""
    small, large = trainstep.growth(sweep[0], sweep[1]), trainstep.growth(sweep[-2], sweep[-1])
    return {
        "sweep_first": sweep[0][0],
        "sweep_second": sweep[1][0],
        "sweep_before_last": sweep[-2][0],
        "sweep_last": sweep[-1][0],
        "growth_small": small,
        "growth_large": large,
        "verdict_small": SCALING_ZH[trainstep.scaling_verdict(small)],
        "verdict_large": SCALING_ZH[trainstep.scaling_verdict(large)],
        "growth_low": trainstep.GROWTH_LOW,
        "growth_high": trainstep.GROWTH_HIGH,
    }


def problems(shape: trainstep.BlockShape, optimizer: profiling.Attribution) -> dict:
    """这一章习题的答案。"""
    h100 = hardware("h100-sxm")
    h, t = shape.hidden, shape.tokens
    qkv = gemm(t, h, 3 * h, "bf16")
    bound = time_bound(qkv, h100, "bf16")
    total = optimizer.total()
    return {
        "ans_q1_calls": 3 * len(shape.linears),
        "ans_q1_gflop": 6 * t * sum(i * o for i, o in shape.linears.values()) / 1e9,
        "ans_q2_params_m": shape.params / 1e6,
        "ans_q2_bytes_per_param": total.bytes / shape.params,
        "ans_q2_flops_per_param": total.flops / shape.params,
        "ans_q2_mb": total.bytes / 1e6,
        "ans_q3_I": qkv.intensity,
        "ans_q3_ridge": h100.ridge_point("bf16"),
        "ans_q3_bound": _resource(bound.resource),
        "ans_q3_us": bound.seconds * 1e6,
    }


def levels_zh(ceilings: Ceilings) -> str:
    """各存储层级及其实测 roof 的中文列举，由内向外。

    Examples
    --------
    >>> from roofline_book.roofline.bounds import Ceilings, Level
    >>> levels = (Level("l1", None, 48 * 2**10), Level("l2", 1.2e11, 2**20), Level("dram", 4e10))
    >>> c = Ceilings("cpu", {("matrix", "fp32"): 1e11}, levels)
    >>> levels_zh(c)
    'L1（48 KiB，没有实测 roof）、L2（1 MiB，120 GB/s）、DRAM（40 GB/s）'
    """
    parts = []
    for lv in ceilings.levels:
        rate = "没有实测 roof" if lv.bandwidth is None else si(lv.bandwidth, "B/s")
        size = "" if lv is ceilings.memory or lv.capacity is None else f"{binary(lv.capacity)}，"
        parts.append(f"{resource_zh(lv.name)}（{size}{rate}）")
    return "、".join(parts)


def roof_figures(attribution: profiling.Attribution) -> dict:
    """run file 的各层级，以及有多少有模型的行会比冷启动（数据都从主存来）的下界更快
    （``cold_beaten``）。
    """
    c = attribution.ceilings
    if c is None:
        return {}
    beaten = 0
    for r in attribution.modelled():  # each has a cost
        if r.precision is None or r.self_time_s <= 0:
            continue
        try:
            cold = bound(r.cost, c, r.precision)  # type: ignore[arg-type]
        except ValueError:  # a precision the run did not measure
            continue
        beaten += cold is not None and cold.seconds > r.self_time_s
    return {
        "levels_zh": levels_zh(c),
        "memory_level": resource_zh(c.memory.name),
        "cold_beaten": beaten,
        "cache_margin": CACHE_MARGIN,
    }


def run_roof_figures(run: Run) -> dict[str, float]:
    """profile 所用的 run file 里，这一章引用的几项上限（与实测性能一章读同一次 run）。

    Returns
    -------
    dict
        ``l2_model_g`` （L2 之内的 cache roof，按模型字节数，GB/s）、``wa_copy`` （copy 计入
        write-allocate 的带宽是按模型字节数的几倍）、``cpu_gemm_g`` （CPU 的“矩阵单元”：实测的
        FP32 GEMM 峰值，GFLOP/s）。
    """
    figures = run_figures(run)
    gemm_peak = of_run(run).rate("matrix", "fp32")
    if gemm_peak is None or not {"l2_g", "copy_g", "copy_wa_g"} <= figures.keys():
        raise InvalidArgument(
            "run",
            f"{run.device.name!r} needs an L2 cache roof, the STREAM probes and an FP32 GEMM peak",
        )
    return dict(
        l2_model_g=figures["l2_g"],
        wa_copy=figures["copy_wa_g"] / figures["copy_g"],
        cpu_gemm_g=gemm_peak / 1e9,
    )


def published_measurement(id: str) -> Measurement:
    """按 :attr:`Measurement.id <roofline_book.measure.published.rows.Measurement.id>` 的写法
    （行的 id，扫描字段的取值附在方括号里）取一个已发表的数字。

    Examples
    --------
    >>> published_measurement("stream-h100[kernel=copy]").value   # STREAM copy on an H100, TB/s
    2.9
    >>> published_measurement("stream-h100[kernel=nope]")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: id 'stream-h100[kernel=nope]' is not among stream-h100's values
    """
    base = id.split("[", 1)[0]
    found = [m for m in row(base).measurements() if m.id == id]
    if not found:
        raise InvalidArgument("id", f"{id!r} is not among {base}'s values")
    return found[0]


def published_figures(
    *,
    gemm: str,
    gemm_4k: str,
    copy: str,
    attention: str,
    decode: str,
    decode_copy: str,
    estimate_params: float,
) -> dict[str, Any]:
    """已发表的测量达到的 roof 比例 :math:`\\eta`，以及一整步 decode 与同一种 GPU 上的 STREAM copy
    相比。每个参数是一个 :func:`published_measurement` 的 id。

    Parameters
    ----------
    gemm, copy, attention : str
        一个大 GEMM、STREAM copy 与 FlashAttention 的前向。
    gemm_4k : str
        习题用的 :math:`n = 4096` 方阵 GEMM。
    decode : str
        一个模型单条序列的 decode（token/s）；每个 token 读一遍全部权重。
    decode_copy : str
        ``decode`` 所用的 GPU 上的 STREAM copy（TB/s）。
    estimate_params : float
        习题里估算所取的参数量：BF16 每个参数 2 字节，乘以每秒的 token 数就是有效带宽。

    Returns
    -------
    dict
        ``pub_gemm_eta``、``pub_copy_eta``、``pub_fa_eta``；``gf_tok`` （token/s）、``gf_tb`` 与
        ``ans_q4_tb`` （按模型字节数的有效带宽，TB/s）、``gf_eta`` 与 ``ans_q4_eta``、
        ``a100_copy_tb``、``gf_of_copy``、``a100_bw_tb`` （``decode`` 所用设备的带宽）、
        ``ans_q4_params_b`` （模型的参数量，10^9）、``ans_q4_est_tb`` （估算的有效带宽）；
        ``ans_q5_eta4k``、``ans_q5_tf4k`` （发表的 TFLOP/s）、``ans_q5_us4k``
        （它在矩阵单元峰值下的时间，µs）。

    Examples
    --------
    >>> f = published_figures(gemm="cublas-bf16-h100[n=8192]", gemm_4k="cublas-bf16-h100[n=4096]",
    ...     copy="stream-h100[kernel=copy]", attention="fa3-bf16-d128[seqlen=16384]",
    ...     decode="gptfast-llama2-7b[weights=bf16]", decode_copy="stream-a100[kernel=copy]",
    ...     estimate_params=7e9)
    >>> round(f["pub_gemm_eta"], 3), round(f["pub_copy_eta"], 3)   # 795 / 989.4; 2.90 / 3.35
    (0.804, 0.866)
    """
    big, small, stream, flash, step, step_copy = (
        published_measurement(i) for i in (gemm, gemm_4k, copy, attention, decode, decode_copy)
    )
    point, small_point = step.point(), small.point()
    if point is None or small_point is None:
        raise InvalidArgument(
            "decode", "decode and gemm_4k need a roofline point (a kind in POINT_KINDS)"
        )
    return dict(
        pub_gemm_eta=big.eta(),
        pub_copy_eta=stream.eta(),
        pub_fa_eta=flash.eta(),
        gf_tok=step.value,
        gf_tb=point.bytes_per_s / 1e12,
        gf_eta=step.eta(),
        a100_copy_tb=step_copy.value,
        gf_of_copy=point.bytes_per_s / step_copy.si,
        a100_bw_tb=step.device.memory_bandwidth / 1e12,
        ans_q4_params_b=weight_bytes(model(step.config["model"])) / 2 / 1e9,
        ans_q4_tb=point.bytes_per_s / 1e12,
        ans_q4_eta=step.eta(),
        ans_q5_eta4k=small.eta(),
        ans_q5_tf4k=small.value,
        ans_q5_us4k=small_point.cost.flops / small.device.peak_flops(small_point.dtype) * 1e6,
        ans_q4_est_tb=2 * estimate_params * step.value / 1e12,
    )


def glue_profile(
    attribution: profiling.Attribution,
    optimizer: profiling.Attribution,
    shape: trainstep.BlockShape,
    trace_path: str,
    roof_threads: int,
) -> None:
    """粘贴这一章展示的关于 profile 过的训练步的一切：值、表格、两张图。

    ``roof_threads`` 是 run file 测上限时所用的线程数。
    """
    import torch

    threads = torch.get_num_threads()
    roof = roof_threads
    same = "与这一步一样" if roof == threads else f"与这一步不同（这一步用 {threads} 个）"
    glue(
        profile_threads=threads,
        roof_threads=roof_threads,
        threads_note=f"run file 的上限用 {roof} 个线程测得，{same}",
        **step_figures(attribution, shape),
        **roof_figures(attribution),
        **problems(shape, optimizer),
    )
    glue(
        "tbl-10-ops-md",
        markdown_table(attribution_frame(attribution, 8), ["left"] * 2 + ["right"] * 7),
    )
    glue_figure("fig-10-roofline", roofline_figure(attribution))
    kernels = [r.name for r in attribution.modelled()]
    glue_figure("fig-10-timeline", timeline_figure(trace_path, kernels))


def glue_scaling(sweep: Sequence[tuple[int, float]]) -> None:
    """粘贴 batch 扩展的图和它的判定。"""
    glue(**scaling_figures(sweep))
    glue_figure("fig-10-scaling", scaling_figure(sweep))


__all__ = [
    "attribution_frame",
    "glue_profile",
    "glue_scaling",
    "levels_zh",
    "problems",
    "published_figures",
    "published_measurement",
    "roof_figures",
    "roofline_figure",
    "run_roof_figures",
    "scaling_figure",
    "scaling_figures",
    "shapes_text",
    "step_figures",
    "timeline_figure",
]
