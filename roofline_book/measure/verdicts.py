"""判定所用的词汇：数字、检验，以及知道自身噪声的比较。

一条结论（:mod:`roofline_book.measure.claims`）依据若干 :class:`Figure` 值，得出一个
:class:`Check`，判定为 ``pass``、``fail``、``inconclusive`` （测量自身的离散跨过了规则的界线）
或 ``not measured``。:func:`order` 按四分位区间比较两个计时；:func:`against` 把一个比值与阈值
比较，并要求超出它的噪声。
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..units import si

Verdict = Literal["pass", "fail", "inconclusive", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "inconclusive", "not measured")
"""``inconclusive``：所比较的计时落在彼此的离散范围内，run 分不出哪个更快；
``not measured``：run 缺少所需的条目。
"""

SPEED_TOLERANCE = 0.05
"""比较中位数时允许的计时噪声：``t_A <= (1 + tol) t_B`` 时 A “至少和 B 一样快”，
``(1 + tol) t_A < t_B`` 时 A “更快”。
"""


@dataclass(frozen=True)
class Figure:
    """判定所依据的一个数，带单位（普通比值为 ""）。"""

    label: str
    value: float
    unit: str = ""
    """SI 单位（``"FLOP/s"``、``"B/s"``、``"s"``、``"FLOP/B"``），或普通数的读法：``"fraction"``
    （显示为百分比）、``"ratio"``、``"count"``。
    """

    @property
    def text(self) -> str:
        """按读者读的方式写出的值：``"0.0116%"``、``"2.79x"``、``"37"``、``"1.2 ms"``。

        Examples
        --------
        >>> Figure("a", 0.000116, "fraction").text, Figure("b", 2.789, "ratio").text
        ('0.0116%', '2.79x')
        """
        if self.unit == "fraction":
            return f"{100 * self.value:.3g}%"
        if self.unit == "ratio":
            return f"{self.value:.3g}x"
        if self.unit == "count":
            return f"{self.value:.0f}"
        return si(self.value, self.unit) if self.unit else f"{self.value:.3g}"

    def __str__(self) -> str:
        return f"{self.label}: {self.text}"


@dataclass(frozen=True)
class Check:
    """一条结论、为它测得的数字，以及这些数字给出的判定。

    Attributes
    ----------
    claim : str
        结论，按章节中的说法。
    verdict : {"pass", "fail", "not measured"}
    rule : str
        数字怎样决定判定。
    figures : tuple of Figure
    """

    claim: str
    verdict: Verdict
    rule: str
    figures: tuple[Figure, ...] = ()
    key: str = ""
    """做出它的检验（函数名），供重新表述它的展示使用。"""
    missing: str = ""
    """用于 ``not measured``：run 缺少什么。"""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")

    def __str__(self) -> str:
        lines = [f"[{self.verdict}] {self.claim}", f"    rule: {self.rule}"]
        lines += [f"    {f}" for f in self.figures]
        return "\n".join(lines)


def _verdict(ok: bool) -> Verdict:
    return "pass" if ok else "fail"


Order = Literal["faster", "slower", "overlap"]


def order(a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = SPEED_TOLERANCE) -> Order:
    """计时条目 ``a`` 是否比 ``b`` 快，且超出两者计时的离散。

    每个计时覆盖其中位数加减半个四分位距的区间。``a`` 的区间上端乘以 ``1 + tolerance`` 仍低于
    ``b`` 的区间下端时为 ``"faster"``；反过来为 ``"slower"``；否则两个区间重叠，run 无法给它们排序。

    Examples
    --------
    >>> t = lambda median, iqr: {"time": {"median_s": median, "iqr_s": iqr}}
    >>> order(t(1.0, 0.1), t(2.0, 0.1)), order(t(2.0, 0.1), t(1.0, 0.1))
    ('faster', 'slower')
    >>> order(t(18.2, 1.1), t(20.1, 1.1))    # 0.15 ms apart, IQRs of a millisecond
    'overlap'
    """
    ma, ia = a["time"]["median_s"], a["time"]["iqr_s"]
    mb, ib = b["time"]["median_s"], b["time"]["iqr_s"]
    if (1 + tolerance) * (ma + ia / 2) < mb - ib / 2:
        return "faster"
    if ma - ia / 2 > (1 + tolerance) * (mb + ib / 2):
        return "slower"
    return "overlap"


def _noise(*entries: Mapping[str, Any], ceilings: tuple[Mapping[str, Any], ...] = ()) -> float:
    """这些计时条目（及上限）之比所带的相对离散：每个条目的半个 IQR 除以其中位数、每个上限各轮之间的
    离散（机器在 run 的其他时候慢了多少），再加上 :data:`SPEED_TOLERANCE`。
    """
    spread = sum(c.get("spread", 0.0) for c in ceilings)
    return (
        SPEED_TOLERANCE
        + spread
        + sum(e["time"]["iqr_s"] / e["time"]["median_s"] / 2 for e in entries)
    )


def against(value: float, threshold: float, noise: float, *, above: bool = True) -> Order:
    """``value`` 是否越过 ``threshold``，且超出它的相对 ``noise``。

    越过时为 ``"faster"`` （``above`` 时要求 ``value (1 - noise) >= threshold``，
    对不得超过的上限要求
    ``value (1 + noise) <= threshold``），超出噪声地没有越过时为 ``"slower"``，噪声跨过界线时为
    ``"overlap"``。

    Examples
    --------
    >>> against(0.95, 0.8, 0.1), against(0.6, 0.8, 0.1), against(0.79, 0.8, 0.1)
    ('faster', 'slower', 'overlap')
    >>> against(0.1, 0.25, 0.1, above=False)
    'faster'
    """
    if above:
        if value * (1 - noise) >= threshold:
            return "faster"
        return "slower" if value * (1 + noise) < threshold else "overlap"
    if value * (1 + noise) <= threshold:
        return "faster"
    return "slower" if value * (1 - noise) > threshold else "overlap"


def _holds(condition: bool) -> Order:
    """噪声改变不了的条件（在 ridge point 的哪一侧、哪个尺寸最好）。"""
    return "faster" if condition else "slower"


def _verdict_of(orders: list[Order]) -> Verdict:
    """有任何比较方向相反时为 ``fail``，有任何比较分不出时为 ``inconclusive``，
    每个比较都符合结论时为
    ``pass``。
    """
    if "slower" in orders:
        return "fail"
    return "inconclusive" if "overlap" in orders else "pass"
