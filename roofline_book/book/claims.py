"""按中文页面的样子给出一次 run 的结论。

:mod:`roofline_book.measure.judge.claims` 给出的每条结论、每个数字都是结构化的：检验的键、数字的对象
（一个条目，或 :class:`~roofline_book.measure.judge.verdicts.Ref`）与量的键。命令行用
:mod:`roofline_book.measure.judge.verdicts` 里的英文词汇写出它们；书用这里的中文词汇，按同样的键
索引，不解析英文（两套词汇由测试对齐：每个键在两种语言中都有表述）。
"""

from __future__ import annotations

from typing import Any

from ..measure.bench.cases import OPERATORS, shape_text
from ..measure.bench.registry import power_text
from ..measure.bench.suites import SMALL_GEMM
from ..measure.judge import claims, report
from ..measure.judge.claims import Check, Figure, check_claims
from ..measure.judge.predict import CACHE_FILL
from ..measure.judge.verdicts import SPEED_TOLERANCE, Ref, tolerance
from ..measure.run import CHECKPOINT_EVERY
from ..measure.runs.records import Entry, Run
from ..present.tables import markdown_table as markdown_table_text
from ..present.words import VERDICTS
from .measured import highlights as measured_highlights

_M, _K, _N = SMALL_GEMM
_TOL = f"这次 run 的计时余量（{SPEED_TOLERANCE:.0%} 与哨兵离散中较大的一个）"

#: 每条结论的中文表述，按做出它的检验索引。
CLAIMS_ZH = {
    "large_gemm_is_compute_bound": (
        "大 GEMM 是 compute-bound：跑得接近这次 run 中别的 GEMM 达到的峰值"
    ),
    "elementwise_is_memory_bound": ("elementwise 算子是 memory-bound：从内存流过时，带宽接近 copy"),
    "small_gemm_is_far_from_peak": f"小 GEMM（{_M}×{_K} 乘 {_K}×{_N}）离峰值很远",
    "gemm_rises_with_n": "GEMM 的吞吐随 n 增大而上升",
    "fused_adamw_is_fastest": "fused AdamW 比 foreach 快，foreach 比逐张量循环快",
    "sdpa_beats_materialized": "SDPA（FlashAttention）比 materialized attention 快",
    "bf16_beats_fp32": "BF16 GEMM 比 FP32 GEMM 快",
    "roofline_bounds_time": "由实测上限得出的时间下界，没有一个算子能突破",
    "write_allocate_explains_bandwidths": (
        "这台 CPU 写入不在缓存中的行之前会先把它读进来（write-allocate）："
        "计入这部分读取后，copy、triad 与原地 triad 的速率一致"
    ),
}

#: 每条结论的判定规则的中文表述，按做出它的检验索引。
RULES_ZH = {
    "large_gemm_is_compute_bound": (
        f"每种精度下，扫描中最大的方阵 GEMM 达到峰值探针与该精度其他 GEMM 中最好者的 "
        f"{claims.NEAR_PEAK:.0%} 以上，且算术强度在实测 ridge point 右侧；比值离阈值不到它自身的"
        f"离散（计时的半个四分位距、峰值各轮之间的差异，再加{_TOL}）时无法判定。"
        "参照本身也是 GEMM，所以这一条只说明最大的 GEMM 与这个库最好的表现相当，"
        "说明不了库离硬件峰值多远：一个各尺寸都同样慢的库也会成立"
    ),
    "elementwise_is_memory_bound": (
        f"每种精度下，数据量至少是末级缓存 {claims.CACHE_MARGIN} 倍的最大 add 与 ReLU，"
        f"带宽达到 copy 的 {claims.NEAR_COPY:.0%} 以上；离阈值不到它们自身的离散"
        f"（半个四分位距、copy 各轮之间的差异，再加{_TOL}）时无法判定。"
        "FLOP/s 不参与判定：它们的算术强度远在 ridge point 左侧，拿 FLOP/s 与峰值比，结果怎样都一样"
    ),
    "small_gemm_is_far_from_peak": (
        f"每种精度下，它的 FLOP/s 不超过峰值（峰值探针与其他 GEMM 中最好者）的 "
        f"{claims.FAR_FROM_PEAK:.0%}；离阈值不到它自身的离散时无法判定"
    ),
    "gemm_rises_with_n": (
        f"每种精度下，最大 n 的 FLOP/s 至少是最小 n 的 {claims.RISE_FACTOR:g} 倍，"
        "且最快的 n 落在扫描的较大一半；倍数离阈值不到两者计时的离散"
        f"（半个四分位距，再加{_TOL}）时无法判定"
    ),
    "fused_adamw_is_fastest": (
        f"fused 比 foreach 快、foreach 比 loop 快，都要超出两者计时的四分位区间再加{_TOL}；"
        "区间重叠则无法判定"
    ),
    "sdpa_beats_materialized": (
        "在两种实现都测过的最长序列上，SDPA 比 materialized 快，超出两者计时的四分位区间再加"
        f"{_TOL}；区间重叠则无法判定。表中的模型流量之比是模型的数，不是测量，不参与判定"
    ),
    "bf16_beats_fp32": (
        f"在两种精度都测过的最大 n 上，BF16 比 FP32 快，超出两者计时的四分位区间再加{_TOL}；"
        "区间重叠则无法判定"
    ),
    "roofline_bounds_time": (
        "没有一个计时条目快于实测上限所允许的最短时间："
        "FLOPs 按它用到的每个计算单元的峰值算（峰值取这次 run 在该单元上见过的最好水平："
        "峰值探针，或扫描中比它更快的 GEMM），字节按它的数据必须到达的那一级存储的带宽算"
        "（流式的按 DRAM，放得进缓存的按那一级缓存，没有测过 roof 的那一级不算字节）。"
        "有条目快于下界、但快得不超过它的噪声（半个四分位距、下界所用上限中最大的各轮离散，"
        f"再加{_TOL}）时无法判定，超过时不成立。各计算项用的都是这次 run 见过的最好 GEMM，"
        "所以没有一个 GEMM 能快过自己的计算下界，别的算子也跑不过最好的 GEMM："
        "这一条实际上只可能在受字节限制的条目上不成立"
    ),
    "write_allocate_explains_bandwidths": (
        "三种带宽探针计入 write-allocate 读取后，彼此相差不超过 "
        f"{claims.WRITE_ALLOCATE_AGREEMENT:.0%}，且比只按模型字节时更接近，两者都要超出探针各轮之间"
        f"最大的离散再加{_TOL}；差别不超过它时无法判定"
    ),
}

#: run 可能缺少的数据的中文表述，按检验的 ``missing`` 键索引。
MISSING_ZH = {
    "gemm_sweep_or_bandwidth": "没有 GEMM 扫描或带宽上限",
    "gemm_reference": "没有哪种精度测了两个以上的 GEMM",
    "streaming_copy": "没有越过缓存测得的 copy 带宽",
    "streaming_elementwise": "没有大到越过缓存的 add 或 ReLU",
    "small_gemm": f"没有 {_M}×{_K}×{_N} 的 GEMM",
    "gemm_sweep": "没有三个以上方阵 GEMM 的扫描",
    "adamw_impls": "没有同时测了 loop、foreach 与 fused 的 AdamW",
    "attention_impls": "没有两种 attention 实现都测过的 shape",
    "bf16_fp32_pair": "没有 BF16 与 FP32 都测过的方阵 GEMM",
    "bandwidth": "没有带宽上限",
    "bounded_entry": "没有带实测峰值的计时条目",
    "cpu": "不是 CPU 上的 run",
    "write_allocate_probes": "没有记录 write-allocate 字节的 copy、triad 与原地 triad",
}

#: 每种判定的中文表述。
VERDICTS_ZH = VERDICTS["zh"]

#: 每个数字的量的中文表述，按 :data:`~roofline_book.measure.judge.verdicts.QUANTITIES` 的键索引。
QUANTITIES_ZH = {
    "achieved": "实测",
    "achieved_over_peak": "实测 / 峰值（峰值探针与其他 GEMM 中最好者）",
    "above_peak_probe": "速率 / 峰值探针（上限取它）",
    "intensity": "算术强度",
    "ridge_point": "ridge point",
    "bandwidth": "带宽",
    "bandwidth_over_copy": "带宽 / copy 带宽",
    "largest_over_smallest": "最大 n / 最小 n",
    "time": "用时",
    "loop_over_fused_time": "用时之比 loop / fused",
    "materialized_over_sdpa_time": "用时之比 materialized / SDPA",
    "model_bytes_materialized_over_sdpa": "模型流量之比 materialized / SDPA（不是测量）",
    "fp32_over_bf16_time": "用时之比 FP32 / BF16",
    "entries_judged": "检验的条目数",
    "beat_bound": "其中快于下界的",
    "beat_bound_beyond_noise": "其中快得超出噪声的",
    "bound_over_measured": "下界 / 实测",
    "noise": "这个比较的噪声",
    "prediction_error": "|预测 − 实测| / 实测 的中位数",
    "bandwidth_model_bytes": "按模型字节",
    "bandwidth_write_allocate": "计入 write-allocate",
    "spread_model_bytes": "三种探针的离散（按模型字节）",
    "spread_write_allocate": "三种探针的离散（计入 write-allocate）",
}

#: 不是单个条目的对象的中文表述，按种类索引。
REF_KINDS_ZH = {"precision": "{name}", "ceiling": "{name} 探针", "run": "全部条目"}

#: 带宽探针（``ceiling`` 对象）的中文名称。
_PROBES_ZH = {"copy": "copy", "triad": "triad", "triad_inplace": "原地 triad"}


def entry_zh(entry: Entry) -> str:
    """一个条目按中文读者的写法：算子、精度、shape（不是默认实现时加上实现），由条目的字段写出。

    Examples
    --------
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> run = load_run("tests/data/fixture-cpu-pass.json")
    >>> entry_zh(run.entry("adamw/fp32/fused/params=4194304,tensors=8"))
    'adamw fp32，2^22 个参数分在 8 个张量中（fused）'
    >>> entry_zh(run.entry("add/bf16/add/numel=16777216"))
    'add bf16 n=2^24'
    """
    shape = dict(entry.shape)
    if entry.name == "adamw":
        size = f"，{power_text(shape['params'])} 个参数分在 {shape['tensors']} 个张量中"
    else:
        size = f" {shape_text(entry.name, shape)}"
    default = entry.name not in OPERATORS or entry.impl == OPERATORS[entry.name].impls[0]
    tail = "" if default else f"（{entry.impl}）"
    return f"{entry.name} {entry.precision}{size}{tail}"


def subject_zh(subject: Entry | Ref) -> str:
    """一个数字的对象的中文表述。

    Examples
    --------
    >>> subject_zh(Ref("ceiling", "triad_inplace")), subject_zh(Ref("precision", "bf16"))
    ('原地 triad 探针', 'bf16')
    """
    if isinstance(subject, Entry):
        return entry_zh(subject)
    return REF_KINDS_ZH[subject.kind].format(name=_PROBES_ZH.get(subject.name, subject.name))


def figure_zh(figure: Figure) -> tuple[str, str, str]:
    """A figure as a row of a Chinese table: (对象, 量, 数值).

    Fractions read as percentages, ratios as "N 倍", counts as whole numbers.

    Examples
    --------
    >>> figure_zh(Figure(Ref("precision", "fp32"), "ridge_point", 1.571, "FLOP/B"))
    ('fp32', 'ridge point', '1.571 FLOP/B')
    >>> figure_zh(Figure(Ref("run"), "beat_bound", 2, "count"))
    ('全部条目', '其中快于下界的', '2')
    """
    value = f"{figure.value:.3g} 倍" if figure.unit == "ratio" else figure.text
    return subject_zh(figure.subject), QUANTITIES_ZH[figure.quantity], value


def claim_zh(check: Check) -> str:
    """``check`` 的结论的中文表述。"""
    return CLAIMS_ZH[check.key]


def rule_zh(check: Check) -> str:
    """``check`` 的判定规则的中文表述；run 缺少数据时写明缺什么。"""
    rule = RULES_ZH[check.key]
    if check.verdict == "not measured":
        rule += f"。这次 run 缺少数据：{MISSING_ZH[check.missing]}"
    return rule


def claims_table(run: Run) -> Any:
    """The checklist of a run in Chinese, as Markdown: each claim one numbered sentence
    with its verdict and rule, then its figures as a small table (对象, 量, 数值).

    Returns
    -------
    IPython.display.Markdown
    """
    from IPython.display import Markdown

    parts = []
    for i, c in enumerate(check_claims(run), 1):
        parts.append(
            f"**{i}. {claim_zh(c)}**　{VERDICTS_ZH[c.verdict]}\n\n判定规则：{rule_zh(c)}。"
        )
        if c.figures:
            rows = [figure_zh(f) for f in c.figures]
            parts.append(markdown_table_text(("对象", "量", "数值"), rows, right={2}))
    return Markdown("\n\n".join(parts))


def verdict_counts(run: Run) -> str:
    """一次 run 的各条结论结果如何，写成一句中文。

    写出不成立的结论，或说明没有结论不成立；run 无法判定或缺少数据的结论计数列出。
    """
    checks = check_claims(run)
    count = {v: sum(c.verdict == v for c in checks) for v in VERDICTS_ZH}
    parts = [f"{len(checks)} 条结论中 {count['pass']} 条成立"]
    if count["inconclusive"]:
        parts.append(f"{count['inconclusive']} 条无法判定")
    if count["not measured"]:
        parts.append(f"{count['not measured']} 条缺少数据")
    failed = [claim_zh(c) for c in checks if c.verdict == "fail"]
    text = "、".join(parts)
    if failed:
        return f"{text}，{len(failed)} 条不成立：" + "；".join(failed) + "。"
    return f"{text}，没有一条不成立。"


def run_highlights(run: Run) -> dict[str, Any]:
    """:func:`roofline_book.book.measured.highlights` 的结果，加上写成一句中文的判定
    （``verdict_counts``）、``speed_tolerance_pct`` （判定至少允许的计时余量，%）与
    ``tolerance_pct`` （这次 run 实际用的余量，%）、稳定性与 cache roof 的分句，以及这一章提到的
    常量：``checkpoint_every``、``cache_margin``、``prediction_band_pct``、``cache_fill_pct``
    （预测允许一个 cache 层级装下多少）。
    """
    out = measured_highlights(run)
    return out | {
        "verdict_counts": verdict_counts(run),
        "speed_tolerance_pct": 100 * SPEED_TOLERANCE,
        "tolerance_pct": 100 * tolerance(run),
        "stability_text": stability_text(run),
        "cache_roofs_text": cache_roofs_text(run),
        "checkpoint_every": CHECKPOINT_EVERY,
        "cache_margin": claims.CACHE_MARGIN,
        "prediction_band_pct": 100 * report.PREDICTION_TARGET,
        "cache_fill_pct": 100 * CACHE_FILL,
    }


def stability_text(run: Run) -> str:
    """这次 run 是否稳定、判定用多大的余量，写成一个中文句子的结尾。

    稳定的阈值就是判定所用的计时余量 :data:`~roofline_book.measure.judge.verdicts.SPEED_TOLERANCE`；
    超过它时，每个比较的余量放宽到哨兵测得的离散（:func:`~roofline_book.measure.judge.verdicts.tolerance`）。

    Examples
    --------
    >>> import dataclasses
    >>> from roofline_book.measure.runs.records import Stability
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> run = load_run("tests/data/fixture-cpu-pass.json")
    >>> at = lambda spread: dataclasses.replace(run, stability=Stability(probe="copy",
    ...     first_s=1.0, last_s=1.0, drift=1.0, spread=spread, stable=spread <= 0.05))
    >>> stability_text(at(0.04))
    '在判定所用的 5% 计时余量之内，这次 run 判为稳定，每个比较按 5% 的余量判定。'
    >>> stability_text(at(0.18))
    '超出了判定所用的 5% 计时余量，这次 run 判为不稳定：下面每个比较的余量放宽到 18%。'
    >>> stability_text(run)
    '这份 run file 没有记录哨兵，每个比较按 5% 的余量判定。'
    """
    base = f"{SPEED_TOLERANCE:.0%}"
    if run.stability is None or run.stability.spread is None:
        return f"这份 run file 没有记录哨兵，每个比较按 {base} 的余量判定。"
    if run.stability.spread <= SPEED_TOLERANCE:
        return (
            f"在判定所用的 {base} 计时余量之内，这次 run 判为稳定，每个比较按 {base} 的余量判定。"
        )
    return (
        f"超出了判定所用的 {base} 计时余量，这次 run 判为不稳定："
        f"下面每个比较的余量放宽到 {tolerance(run):.0%}。"
    )


def cache_roofs_text(run: Run) -> str:
    """The run's cache roofs as a Chinese clause ("各级缓存的 roof：L2 45.1 GB/s、L3 17.8 GB/s").

    Examples
    --------
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> cache_roofs_text(load_run("tests/data/fixture-cpu-pass.json"))
    '这份 run file 没有测缓存的 roof'
    """
    levels = run.ceilings.cache_bandwidth
    if not levels:
        return "这份 run file 没有测缓存的 roof"
    return "各级缓存的 roof：" + "、".join(
        f"{level} 为 {c.value / 1e9:.1f} GB/s" for level, c in levels.items()
    )
