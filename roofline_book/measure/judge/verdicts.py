"""判定所用的词汇：数字、检验，以及知道自身噪声的比较。

一条结论（:mod:`roofline_book.measure.judge.claims`）依据若干 :class:`Figure` 值，得出一个
:class:`Check`，判定为 ``pass``、``fail``、``inconclusive`` （测量自身的离散跨过了规则的界线）
或 ``not measured``。:func:`order` 按四分位区间比较两个计时；:func:`against` 把一个比值与阈值
比较，并要求超出它的噪声。

数字是结构化的：对象（一个条目，或一个 :class:`Ref`）、量（:data:`QUANTITIES` 的一个键）、值与
单位。命令行用这里的英文词汇写出它们，书用 :mod:`roofline_book.book.claims` 中的中文词汇；两者
按同一组键索引，谁也不解析谁的文字。

噪声只有一种说法（:func:`tolerance`）：每个比较允许的计时余量是 :data:`SPEED_TOLERANCE`，
或哨兵测得的机器在这次 run 中的变化，取较大者；run 的 ``stable`` 记录的就是后者是否在前者之内。
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ...units import si
from ..bench.suites import SMALL_GEMM
from ..runs.records import Entry, Run, Time

Verdict = Literal["pass", "fail", "inconclusive", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "inconclusive", "not measured")
"""``inconclusive``：所比较的计时落在彼此的离散范围内，run 分不出哪个更快；
``not measured``：run 缺少所需的条目。
"""

SPEED_TOLERANCE = 0.05
"""比较中位数时至少允许的计时噪声：``(1 + tol) t_A < t_B`` 时 A “更快”。哨兵测得机器在 run 中
变化得更多时，改用测得的变化（:func:`tolerance`）。
"""

_M, _K, _N = SMALL_GEMM

QUANTITIES: dict[str, str] = {
    "achieved": "achieved",
    "achieved_over_peak": "achieved / peak (best of the peak probe and the other GEMMs)",
    "above_peak_probe": "rate / peak probe (the ceiling is raised to it)",
    "intensity": "intensity",
    "ridge_point": "ridge point",
    "bandwidth": "bandwidth",
    "bandwidth_over_copy": "bandwidth / copy",
    "largest_over_smallest": "largest / smallest",
    "time": "time",
    "loop_over_fused_time": "loop / fused time",
    "materialized_over_sdpa_time": "materialized / sdpa time",
    "model_bytes_materialized_over_sdpa": "model bytes materialized / sdpa (not measured)",
    "fp32_over_bf16_time": "fp32 / bf16 time",
    "entries_judged": "entries judged",
    "beat_bound": "of those, faster than the bound",
    "beat_bound_beyond_noise": "of those, faster than the bound beyond the noise",
    "bound_over_measured": "bound / measured",
    "noise": "noise of the comparison",
    "prediction_error": "prediction: median |predicted - measured| / measured",
    "bandwidth_model_bytes": "model bytes",
    "bandwidth_write_allocate": "with write-allocate",
    "spread_model_bytes": "spread, model bytes",
    "spread_write_allocate": "spread, with write-allocate",
}
"""每个数字的量（:class:`Figure` 的 ``quantity``）的英文表述，按键索引。"""

MISSING: dict[str, str] = {
    "gemm_sweep_or_bandwidth": "no GEMM sweep or no bandwidth ceiling",
    "gemm_reference": "no precision with two or more GEMMs timed",
    "streaming_copy": "no copy bandwidth from beyond the cache",
    "streaming_elementwise": "no add or ReLU large enough to leave the cache",
    "small_gemm": f"no {_M}x{_K}x{_N} GEMM",
    "gemm_sweep": "no sweep of three or more square GEMMs",
    "adamw_impls": "no AdamW shape with loop, foreach and fused all timed",
    "attention_impls": "no shape timed both materialized and with SDPA",
    "bf16_fp32_pair": "no square GEMM size timed in both BF16 and FP32",
    "bandwidth": "no bandwidth ceiling",
    "bounded_entry": "no timed operator with a measured peak",
    "cpu": "not a CPU run",
    "write_allocate_probes": "no copy, triad and in-place triad with write-allocate bytes",
}
"""run 可能缺少的数据（:attr:`Check.missing`）的英文表述，按键索引。"""

REF_KINDS: dict[str, str] = {"precision": "{name}", "ceiling": "{name} probe", "run": "run"}
"""不是单个条目的对象（:class:`Ref`）的英文表述，按种类索引。"""


@dataclass(frozen=True)
class Ref:
    """不是单个条目的数字对象：一种精度的 roofline、一个测得的上限，或整个 run。"""

    kind: Literal["precision", "ceiling", "run"]
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in REF_KINDS:
            raise ValueError(f"kind must be one of {', '.join(REF_KINDS)}; got {self.kind!r}")

    @property
    def text(self) -> str:
        """英文表述：``"fp32"``、``"copy probe"``、``"run"``。"""
        return REF_KINDS[self.kind].format(name=self.name)


Subject = Entry | Ref
"""数字说的是谁：run 的一个条目（:class:`~roofline_book.measure.runs.records.Entry`），或一个
:class:`Ref`。
"""


@dataclass(frozen=True)
class Figure:
    """判定所依据的一个数：它说的是谁（``subject``）、是什么量（``quantity``，:data:`QUANTITIES`
    的键）、值与单位。

    Examples
    --------
    >>> f = Figure(Ref("precision", "fp32"), "ridge_point", 1.57, "FLOP/B")
    >>> str(f)
    'fp32: ridge point: 1.57 FLOP/B'
    >>> Figure(Ref("run"), "speed", 1.0)
    Traceback (most recent call last):
    ...
    ValueError: quantity must be a key of QUANTITIES; got 'speed'
    """

    subject: Subject
    quantity: str
    value: float
    unit: str = ""
    """SI 单位（``"FLOP/s"``、``"B/s"``、``"s"``、``"FLOP/B"``），或普通数的读法：``"fraction"``
    （显示为百分比）、``"ratio"``、``"count"``。
    """

    def __post_init__(self) -> None:
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity must be a key of QUANTITIES; got {self.quantity!r}")

    @property
    def text(self) -> str:
        """按读者读的方式写出的值：``"0.0116%"``、``"2.79x"``、``"37"``、``"1.2 ms"``。

        Examples
        --------
        >>> r = Ref("run")
        >>> Figure(r, "noise", 0.000116, "fraction").text, Figure(r, "noise", 2.789, "ratio").text
        ('0.0116%', '2.79x')
        """
        if self.unit == "fraction":
            return f"{100 * self.value:.3g}%"
        if self.unit == "ratio":
            return f"{self.value:.3g}x"
        if self.unit == "count":
            return f"{self.value:.0f}"
        return si(self.value, self.unit) if self.unit else f"{self.value:.3g}"

    @property
    def label(self) -> str:
        """英文标签：对象与量。"""
        return f"{self.subject.text}: {QUANTITIES[self.quantity]}"

    def as_mapping(self) -> dict[str, Any]:
        """写进 JSON 的样子：对象（条目的 ``entry`` id，或 ``kind`` 与 ``name``）、量的键、
        英文标签、值与单位。

        Examples
        --------
        >>> Figure(Ref("precision", "bf16"), "ridge_point", 7.0, "FLOP/B").as_mapping()["subject"]
        {'kind': 'precision', 'name': 'bf16'}
        """
        subject: dict[str, str] = (
            {"entry": self.subject.id}
            if isinstance(self.subject, Entry)
            else {"kind": self.subject.kind, "name": self.subject.name}
        )
        return {
            "subject": subject,
            "quantity": self.quantity,
            "label": self.label,
            "value": self.value,
            "unit": self.unit,
        }

    def __str__(self) -> str:
        return f"{self.label}: {self.text}"


@dataclass(frozen=True)
class Check:
    """一条结论、为它测得的数字，以及这些数字给出的判定。

    Attributes
    ----------
    claim : str
        结论，按章节中的说法（英文）。
    verdict : {"pass", "fail", "inconclusive", "not measured"}
    rule : str
        数字怎样决定判定（英文）。
    figures : tuple of Figure
    key : str
        做出它的检验（函数名），各语言的表述按它索引。
    missing : str
        用于 ``not measured``：run 缺少什么，:data:`MISSING` 的键。
    """

    claim: str
    verdict: Verdict
    rule: str
    figures: tuple[Figure, ...] = ()
    key: str = ""
    missing: str = field(default="")

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")
        if self.missing and self.missing not in MISSING:
            raise ValueError(f"missing must be a key of MISSING; got {self.missing!r}")

    def __str__(self) -> str:
        rule = self.rule
        if self.missing:
            rule += f" (not measured: {MISSING[self.missing]})"
        lines = [f"[{self.verdict}] {self.claim}", f"    rule: {rule}"]
        lines += [f"    {f}" for f in self.figures]
        return "\n".join(lines)


def tolerance(run: Run) -> float:
    """这次 run 的计时余量：:data:`SPEED_TOLERANCE`，或哨兵各检查点之间的离散
    （``max / min - 1``，机器在 run 中快慢变化了多少），取较大者。

    没有记录哨兵的 run 取 :data:`SPEED_TOLERANCE`；只记录了首末之比的旧 run 取 ``|drift - 1|``。

    Examples
    --------
    >>> import dataclasses
    >>> from roofline_book.measure.runs.records import Stability
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> run = load_run("tests/data/fixture-cpu-pass.json")  # it records no sentinel
    >>> def at(drift, spread=None):
    ...     record = Stability(probe="copy", first_s=1.0, last_s=drift, drift=drift,
    ...                        spread=spread, stable=False)
    ...     return dataclasses.replace(run, stability=record)
    >>> tolerance(run), tolerance(at(1.0, spread=0.04))
    (0.05, 0.05)
    >>> tolerance(at(1.1, spread=0.18)), tolerance(at(1.5))      # an old run: |drift - 1|
    (0.18, 0.5)
    """
    record = run.stability
    if record is None:
        return SPEED_TOLERANCE
    spread = record.spread if record.spread is not None else abs(record.drift - 1)
    return max(SPEED_TOLERANCE, spread)


Order = Literal["faster", "slower", "overlap"]


def order(a: Time, b: Time, tolerance: float = SPEED_TOLERANCE) -> Order:
    """计时 ``a`` 是否比 ``b`` 快，且超出两者计时的离散。

    每个计时覆盖其中位数加减半个四分位距的区间。``a`` 的区间上端乘以 ``1 + tolerance`` 仍低于
    ``b`` 的区间下端时为 ``"faster"``；反过来为 ``"slower"``；否则两个区间重叠，run 无法给它们排序。

    Examples
    --------
    >>> t = lambda median, iqr: Time(median_s=median, iqr_s=iqr, reps=5, inner=1)
    >>> order(t(1.0, 0.1), t(2.0, 0.1)), order(t(2.0, 0.1), t(1.0, 0.1))
    ('faster', 'slower')
    >>> order(t(18.2, 1.1), t(20.1, 1.1))    # 0.15 ms apart, IQRs of a millisecond
    'overlap'
    """
    ma, ia, mb, ib = a.median_s, a.iqr_s, b.median_s, b.iqr_s
    if (1 + tolerance) * (ma + ia / 2) < mb - ib / 2:
        return "faster"
    if ma - ia / 2 > (1 + tolerance) * (mb + ib / 2):
        return "slower"
    return "overlap"


def _noise(*times: Time, spreads: tuple[float | None, ...] = (), tolerance: float) -> float:
    """这些计时（及上限）之比所带的相对离散：每个计时的半个 IQR 除以其中位数、每个上限各轮
    之间的离散 ``spreads`` （机器在 run 的其他时候慢了多少），再加上 run 的计时余量
    ``tolerance`` （:func:`tolerance`）。

    Examples
    --------
    >>> t = Time(median_s=1.0, iqr_s=0.1, reps=5, inner=1)
    >>> round(_noise(t, spreads=(0.03,), tolerance=0.05), 3), round(_noise(t, tolerance=0.2), 3)
    (0.13, 0.25)
    """
    return tolerance + sum(s or 0.0 for s in spreads) + sum(t.iqr_fraction / 2 for t in times)


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


def within(ratio: float, noise: float) -> Order:
    """一个不得超过 1 的比值（下界 / 实测）：没有超过为 ``"faster"``，超过但在 ``noise`` 之内为
    ``"overlap"``，超出噪声地超过为 ``"slower"``。

    与 :func:`against` 不同，正好落在界线上是结论所允许的（实测时间可以等于下界），所以界线以内没有
    “无法判定”的区间；只有超过界线时才要问超过的幅度是否大于噪声。

    Examples
    --------
    >>> within(0.99, 0.1), within(1.06, 0.1), within(1.2, 0.1)
    ('faster', 'overlap', 'slower')
    """
    if ratio <= 1:
        return "faster"
    return "overlap" if ratio <= 1 + noise else "slower"


def _holds(condition: bool) -> Order:
    """噪声改变不了的条件（在 ridge point 的哪一侧、哪个尺寸最好）。"""
    return "faster" if condition else "slower"


def _verdict_of(orders: list[Order]) -> Verdict:
    """有任何比较方向相反时为 ``fail``，有任何比较分不出时为 ``inconclusive``，
    每个比较都符合结论时为 ``pass``。
    """
    if "slower" in orders:
        return "fail"
    return "inconclusive" if "overlap" in orders else "pass"
