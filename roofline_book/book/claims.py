"""按中文页面的样子给出一次 run 的结论。

:mod:`roofline_book.measure.claims` 用英文写出每条结论、判定和数字，供命令行使用。书中用
中文读它们：这里按做出判定的检验重新写出每条结论，数字的标签逐词翻译（标识符、shape、单位和
数字不变）。
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..measure import claims, report
from ..measure.ceilings import SENTINEL_TOLERANCE
from ..measure.claims import SPEED_TOLERANCE, Check, Figure, check_claims
from ..measure.predict import CACHE_FILL
from ..measure.run import CHECKPOINT_EVERY
from ..measure.suites import SMALL_GEMM
from ..tables import markdown_table as markdown_table_text
from . import measured

_M, _K, _N = SMALL_GEMM

#: 每条结论的中文表述，按做出它的检验索引。
CLAIMS_ZH = {
    "large_gemm_is_compute_bound": "大 GEMM 是 compute-bound：跑得接近实测峰值",
    "elementwise_is_memory_bound": (
        "elementwise 算子是 memory-bound：带宽接近 copy，FLOP/s 远低于峰值"
    ),
    "small_gemm_is_far_from_peak": f"小 GEMM（{_M}×{_K} 乘 {_K}×{_N}）离峰值很远",
    "gemm_rises_with_n": "GEMM 的吞吐随 n 增大而上升",
    "fused_adamw_is_fastest": "fused AdamW 不慢于 foreach，foreach 不慢于逐张量循环",
    "sdpa_beats_materialized": "SDPA（FlashAttention）比 materialized attention 快，流量也更少",
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
        f"每种精度下，扫描中最大的方阵 GEMM 达到另行测得的峰值的 {claims.NEAR_PEAK:.0%} 以上，"
        "且算术强度在实测 ridge point 右侧；比值离阈值不到它自身的离散（计时的半个四分位距、"
        f"峰值各轮之间的差异，再加 {SPEED_TOLERANCE:.0%}）时无法判定"
    ),
    "elementwise_is_memory_bound": (
        f"每种精度下，数据量至少是末级缓存 {claims.CACHE_MARGIN} 倍的最大 add 与 ReLU，"
        f"带宽达到 copy 的 {claims.NEAR_COPY:.0%} 以上，FLOP/s 不超过峰值的 "
        f"{claims.TINY_FLOP_FRACTION:.0%}；离阈值不到它们自身的离散时无法判定"
    ),
    "small_gemm_is_far_from_peak": (
        f"每种精度下，它的 FLOP/s 不超过实测峰值的 {claims.FAR_FROM_PEAK:.0%}；"
        "离阈值不到它自身的离散时无法判定"
    ),
    "gemm_rises_with_n": (
        f"每种精度下，最大 n 的 FLOP/s 至少是最小 n 的 {claims.RISE_FACTOR:g} 倍，"
        "且最快的 n 落在扫描的较大一半；倍数离阈值不到两者计时的离散时无法判定"
    ),
    "fused_adamw_is_fastest": (
        "fused 比 foreach 快、foreach 比 loop 快，都要超出两者计时的四分位区间再加 "
        f"{SPEED_TOLERANCE:.0%}；区间重叠则无法判定"
    ),
    "sdpa_beats_materialized": (
        "在两种实现都测过的最长序列上，SDPA 比 materialized 快，超出两者计时的四分位区间再加 "
        f"{SPEED_TOLERANCE:.0%}；“流量更少”只依据模型的字节数，不是测量"
    ),
    "bf16_beats_fp32": (
        "在两种精度都测过的最大 n 上，BF16 比 FP32 快，超出两者计时的四分位区间再加 "
        f"{SPEED_TOLERANCE:.0%}；区间重叠则无法判定"
    ),
    "roofline_bounds_time": (
        f"没有一个计时条目快于实测上限所允许的最短时间的 {1 - claims.BOUND_TOLERANCE:.0%}："
        "FLOPs 按它用到的每个计算单元的峰值算，字节按它的数据必须到达的那一级存储的带宽算"
        "（流式的按 DRAM，放得进缓存的按那一级缓存，没有测过 roof 的那一级不算字节）"
    ),
    "write_allocate_explains_bandwidths": (
        "三种带宽探针计入 write-allocate 读取后，彼此相差不超过 "
        f"{claims.WRITE_ALLOCATE_AGREEMENT:.0%}，且比只按模型字节时更接近；"
        "相差的幅度离阈值不到探针各轮之间的离散时无法判定"
    ),
}

#: run 可能缺少的数据的中文表述（检验的 ``missing``）。
MISSING_ZH = {
    "no GEMM sweep or no bandwidth ceiling": "没有 GEMM 扫描或带宽上限",
    "no precision with two or more GEMMs timed": "没有哪种精度测了两个以上的 GEMM",
    "no copy bandwidth from beyond the cache, or no peak": (
        "没有越过缓存测得的 copy 带宽，或没有峰值"
    ),
    "no add or ReLU large enough to leave the cache": "没有大到越过缓存的 add 或 ReLU",
    f"no {_M}x{_K}x{_N} GEMM": f"没有 {_M}×{_K}×{_N} 的 GEMM",
    "no sweep of three or more square GEMMs": "没有三个以上方阵 GEMM 的扫描",
    "no AdamW shape with loop, foreach and fused all timed": (
        "没有同时测了 loop、foreach 与 fused 的 AdamW"
    ),
    "no shape timed both materialized and with SDPA": "没有两种 attention 实现都测过的 shape",
    "no square GEMM size timed in both BF16 and FP32": "没有 BF16 与 FP32 都测过的方阵 GEMM",
    "no bandwidth ceiling": "没有带宽上限",
    "no timed operator with a measured peak": "没有带实测峰值的计时条目",
    "not a CPU run": "不是 CPU 上的 run",
    "no copy, triad and in-place triad with write-allocate bytes": (
        "没有记录 write-allocate 字节的 copy、triad 与原地 triad"
    ),
}

#: 每种判定的中文表述。
VERDICTS_ZH = {"pass": "成立", "fail": "不成立", "inconclusive": "无法判定", "not measured": "未测"}

#: 每个数字测的是什么（标签中 "subject: " 之后的部分）的中文表述。
QUANTITIES_ZH = {
    "achieved / peak": "实测 / 峰值",
    "achieved": "实测",
    "intensity": "算术强度",
    "ridge point": "ridge point",
    "bandwidth": "带宽",
    "bandwidth / copy": "带宽 / copy 带宽",
    "FLOP/s / peak": "FLOP/s / 峰值",
    "largest / smallest": "最大 n / 最小 n",
    "loop time": "loop 用时",
    "foreach time": "foreach 用时",
    "fused time": "fused 用时",
    "loop / fused time": "用时之比 loop / fused",
    "materialized time": "materialized 用时",
    "sdpa time": "SDPA 用时",
    "materialized / sdpa time": "用时之比 materialized / SDPA",
    "model bytes materialized / flash": "模型流量之比 materialized / flash",
    "fp32 time": "FP32 用时",
    "bf16 time": "BF16 用时",
    "fp32 / bf16 time": "用时之比 FP32 / BF16",
    "entries judged": "检验的条目数",
    "of those, faster than the bound allows": "其中快于下界的条目数",
    "tightest bound / measured": "最贴近下界的条目：下界 / 实测",
    "median |predicted - measured| / measured": "|预测 − 实测| / 实测 的中位数",
    "model bytes": "按模型字节",
    "with write-allocate": "计入 write-allocate",
    "spread, model bytes": "三者的离散（按模型字节）",
    "spread, with write-allocate": "三者的离散（计入 write-allocate）",
}

#: 是单词的 subject 的中文表述。
_SUBJECTS_ZH = {"prediction": "预测", "probes": "带宽探针", "copy": "copy"}


def subject_zh(subject: str) -> str:
    """The subject of a figure as a Chinese reader writes it.

    Examples
    --------
    >>> subject_zh("fp32 2^23 in 8"), subject_zh("prediction"), subject_zh("add bf16 n=2^27")
    ('fp32，2^23 个参数分在 8 个张量中', '预测', 'add bf16 n=2^27')
    """
    subject = _SUBJECTS_ZH.get(subject, subject)
    return re.sub(r"^(\S+) (\S+) in (\d+)$", r"\1，\2 个参数分在 \3 个张量中", subject)


def figure_zh(figure: Figure) -> tuple[str, str, str]:
    """A figure as a row of a Chinese table: (对象, 量, 数值).

    Fractions read as percentages, ratios as "N 倍", counts as whole numbers.

    Examples
    --------
    >>> figure_zh(Figure("fp32 n=1024: achieved / peak", 0.000116, "fraction"))
    ('fp32 n=1024', '实测 / 峰值', '0.0116%')
    >>> figure_zh(Figure("fp32 2^23 in 8: loop / fused time", 2.789, "ratio"))
    ('fp32，2^23 个参数分在 8 个张量中', '用时之比 loop / fused', '2.79 倍')
    """
    subject, _, quantity = figure.label.rpartition(": ")
    value = f"{figure.value:.3g} 倍" if figure.unit == "ratio" else figure.text
    return subject_zh(subject), QUANTITIES_ZH.get(quantity, quantity), value


def claim_zh(check: Check) -> str:
    """``check`` 的结论的中文表述（检验未知时用它的英文原文）。"""
    return CLAIMS_ZH.get(check.key, check.claim)


def rule_zh(check: Check) -> str:
    """``check`` 的判定规则的中文表述；run 缺少数据时写明缺什么。"""
    rule = RULES_ZH.get(check.key, check.rule)
    if check.verdict == "not measured":
        rule += f"。这次 run 缺少数据：{MISSING_ZH.get(check.missing, check.missing)}"
    elif check.rule.endswith("(run unstable)"):
        rule += "。这次 run 不稳定，不下结论"
    return rule


def claims_table(run: Mapping[str, Any]) -> Any:
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


def verdict_counts(run: Mapping[str, Any]) -> str:
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


def run_highlights(run: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`roofline_book.book.measured.highlights` 的结果，加上写成一句中文的判定
    （``verdict_counts``）、``speed_tolerance_pct`` （速度比较允许的余量，%）、稳定性与 cache roof
    的分句，以及这一章提到的常量：``checkpoint_every``、``cache_margin``、``prediction_band_pct``、
    ``cache_fill_pct`` （预测允许一个 cache 层级装下多少）。
    """
    out = measured.highlights(run)
    return out | {
        "verdict_counts": verdict_counts(run),
        "speed_tolerance_pct": 100 * SPEED_TOLERANCE,
        "stability_text": stability_text(run),
        "cache_roofs_text": cache_roofs_text(run),
        "checkpoint_every": CHECKPOINT_EVERY,
        "cache_margin": claims.CACHE_MARGIN,
        "prediction_band_pct": 100 * report.PREDICTION_TARGET,
        "cache_fill_pct": 100 * CACHE_FILL,
    }


def stability_text(run: Mapping[str, Any]) -> str:
    """这次 run 是否稳定，写成一个中文句子的结尾。

    Examples
    --------
    >>> stability_text({"stability": {"stable": True, "spread": 0.12}})
    '在 30% 的阈值之内，这次 run 判为稳定。'
    >>> stability_text({})
    '这份 run file 没有记录哨兵。'
    """
    record = run.get("stability")
    if record is None or "spread" not in record:
        return "这份 run file 没有记录哨兵。"
    limit = f"{SENTINEL_TOLERANCE:.0%}"
    if record["stable"]:
        return f"在 {limit} 的阈值之内，这次 run 判为稳定。"
    return f"超出了 {limit} 的阈值，这次 run 判为不稳定：下面每一条结论都只能判为无法判定。"


def cache_roofs_text(run: Mapping[str, Any]) -> str:
    """The run's cache roofs as a Chinese clause ("各级缓存的 roof：L2 45.1 GB/s、L3 17.8 GB/s").

    Examples
    --------
    >>> cache_roofs_text({"ceilings": {"cache_bandwidth": {"L2": {"value": 4.51e10}}}})
    '各级缓存的 roof：L2 为 45.1 GB/s'
    """
    levels = run["ceilings"].get("cache_bandwidth", {})
    if not levels:
        return "这份 run file 没有测缓存的 roof"
    return "各级缓存的 roof：" + "、".join(
        f"{level} 为 {c['value'] / 1e9:.1f} GB/s" for level, c in levels.items()
    )
