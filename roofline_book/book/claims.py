"""A run's claims and summary as a Chinese page shows them.

:mod:`roofline_book.measure.claims` words each claim, verdict and figure in
English, for the command line. The book reads them in Chinese: the claims
are worded anew here, by the check that made them, and the figures' labels
translated word by word (identifiers, shapes, units and numbers stay).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..measure import report
from ..measure.claims import SPEED_TOLERANCE, Check, check_claims
from ..measure.suites import SMALL_GEMM

_M, _K, _N = SMALL_GEMM

#: Each claim in Chinese, by the check that makes it.
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
    "roofline_bounds_time": "由实测上限画出的 roofline 是每个算子时间的下界",
}

#: Each verdict in Chinese.
VERDICTS_ZH = {"pass": "成立", "fail": "不成立", "inconclusive": "无法判定", "not measured": "未测"}

#: Words of the figures' labels, longest first, and their Chinese.
_WORDS_ZH = (
    ("median |predicted - measured| / measured", "|预测 − 实测| / 实测 的中位数"),
    ("of those, faster than the roofline allows", "其中快于 roofline 所允许的"),
    ("operators streaming from memory", "数据来自内存的算子数"),
    ("model bytes materialized / flash", "模型流量 materialized / flash"),
    ("tightest: predicted / measured", "最贴近的 预测 / 实测"),
    ("operators compared", "比较的算子数"),
    ("bandwidth / copy", "带宽 / copy"),
    ("copy bandwidth", "copy 带宽"),
    ("achieved / best other GEMM", "实测 / 其余 GEMM 的最好成绩"),
    ("achieved / peak", "实测 / 峰值"),
    ("FLOP/s / peak", "FLOP/s / 峰值"),
    ("largest / smallest", "最大 / 最小"),
    ("ridge point", "ridge point"),
    (" time", " 时间"),
    ("intensity", "算术强度"),
    ("bandwidth", "带宽"),
    ("achieved", "实测"),
    (" in ", " 分为 "),
)

#: The rows of a run's summary in Chinese; measured ceilings keep their precision or kind.
_SUMMARY_ZH = {
    "device": "设备",
    "type": "类型",
    "host": "主机",
    "date (UTC)": "日期（UTC）",
    "suite": "测试集",
    "driver": "驱动",
}


def figure_zh(label: str) -> str:
    """A figure's label in Chinese, word by word.

    Examples
    --------
    >>> figure_zh("fp32 n=1024: achieved / peak")
    'fp32 n=1024: 实测 / 峰值'
    """
    for english, chinese in _WORDS_ZH:
        label = label.replace(english, chinese)
    return label


def claim_zh(check: Check) -> str:
    """The claim of ``check`` in Chinese (its English text if the check is not known)."""
    return CLAIMS_ZH.get(check.key, check.claim)


def claims_table(run: Mapping[str, Any]) -> Any:
    """The claims checklist of a run in Chinese: 结论, 判定 and 数据, one row per claim.

    Examples
    --------
    >>> from roofline_book.measure.claims import Check, Figure
    >>> check = Check("GEMM throughput rises with n", "pass", "rule",
    ...               (Figure("fp32: largest / smallest", 3.5),), key="gemm_rises_with_n")
    >>> claim_zh(check), "; ".join(figure_zh(str(f)) for f in check.figures)
    ('GEMM 的吞吐随 n 增大而上升', 'fp32: 最大 / 最小: 3.5')
    """
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "结论": claim_zh(c),
                "判定": VERDICTS_ZH[c.verdict],
                "数据": "；".join(figure_zh(str(f)) for f in c.figures),
            }
            for c in check_claims(run)
        ]
    )


def failed_claims(run: Mapping[str, Any]) -> str:
    """The claims a run does not bear out, in Chinese, joined by "；" (or "（无）")."""
    failed = [claim_zh(c) for c in check_claims(run) if c.verdict == "fail"]
    return "；".join(failed) if failed else "（无）"


def run_highlights(run: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`roofline_book.measure.report.highlights` with the failed claims in Chinese,
    and ``speed_tolerance_pct``, the margin a speed comparison allows (percent)."""
    return report.highlights(run) | {
        "failed_claims": failed_claims(run),
        "speed_tolerance_pct": 100 * SPEED_TOLERANCE,
    }


def summary_table(run: Mapping[str, Any]) -> Any:
    """:func:`roofline_book.measure.report.summary` as a one-column table with Chinese row names.

    Measured peaks read ``实测峰值 fp32``, measured bandwidths ``实测带宽（copy）``.
    """
    import pandas as pd

    rows = {}
    for key, value in report.summary(run).items():
        if key.startswith("measured peak "):
            key = "实测峰值 " + key.removeprefix("measured peak ")
        elif key.startswith("measured bandwidth ("):
            key = "实测带宽（" + key.removeprefix("measured bandwidth (").removesuffix(")") + "）"
        rows[_SUMMARY_ZH.get(key, key)] = value
    return pd.Series(rows, name="值").to_frame()
