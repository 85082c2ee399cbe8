"""run file 的内容写成冻结的 dataclass：一次 run（:class:`Run`）与它的条目（:class:`Entry`）。

字段名就是 JSON 的键，字段的 metadata 带着 schema 的约束（:mod:`roofline_book._base.records`）；
描述机器的记录在 :mod:`roofline_book.measure.runs.runparts`；读写文件见
:mod:`roofline_book.measure.runs.runfile`。一个 :class:`Run` 构建时就检查 schema 表达不了的
一致性（id 唯一，上限与它的条目相符），所以拿到的 run 总是自洽的。

Examples
--------
>>> import json
>>> from pathlib import Path
>>> data = json.loads(Path("tests/data/fixture-cpu-pass.json").read_text())
>>> run = Run.from_mapping(data)
>>> run.as_mapping() == data
True
>>> e = run.entry("gemm/bf16/mm/m=1024,k=1024,n=1024")
>>> e.text, e.cost.flops, e.time.median_s > 0
('gemm bf16 1024x1024x1024', 2147483648, True)
>>> [x.id for x in run.results("adamw")][:1]
['adamw/fp32/loop/params=4194304,tensors=8']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..._base.records import record_field as _field
from ..._base.validate import InvalidArgument
from ...dtypes import BYTES
from ...ops import Cost
from ...ops.cost import COST_REQUIRED, cost_mapping
from ..bench.cases import OPERATORS, shape_text
from ..bench.suites import SUITES
from ..bench.timing import IQR_WARN_THRESHOLD, Timing
from .runparts import (
    CacheCeiling,
    Ceiling,
    Device,
    LevelInversion,
    MeasuredCeilings,
    Record,
    Software,
    Stability,
)

FORMAT = "roofline-book-run"
"""每个 run file 都带的 ``format`` 字段。"""

VERSION = 1
"""本包读写的 run file 格式版本。"""

# A ceiling must equal the rate of the entry it names, to this relative tolerance
# (the two are written from the same float; the slack only absorbs decimal round trips).
_CEILING_RTOL = 1e-9

STATUSES = ("ok", "skipped", "failed")
"""``ok``：已检查并计时；``skipped``：这里没有运行（不支持、内存不足），带原因；``failed``：结果
错误或 case 抛出异常，因此没有计时；原因写明是哪一种。
"""


@dataclass(frozen=True, kw_only=True)
class Time(Record):
    """条目的 ``time`` 记录：单次调用时间的中位数与 IQR（秒），以及背后的样本。

    与 :class:`~roofline_book.measure.bench.timing.Timing` 的区别：这里存的是 run file 写下的数，
    样本可以没有（手写的测试数据只给中位数和 IQR）。:meth:`of` 由一次计时构建它。

    Examples
    --------
    >>> t = Time.of(Timing((1e-3, 1.1e-3, 1.2e-3, 0.9e-3, 1e-3), inner=4))
    >>> round(t.median_s, 6), t.reps, t.inner, round(t.iqr_fraction, 3), t.meets_confidence()
    (0.001, 5, 4, 0.1, False)
    """

    median_s: float = _field(exclusiveMinimum=0)
    iqr_s: float = _field(minimum=0)
    reps: int = _field(minimum=1)
    inner: int = _field(minimum=1)
    samples_s: tuple[float, ...] | None = _field(
        optional=True,
        minItems=1,
        item={"minimum": 0},
        description="per-call time of each sample, second",
    )

    @classmethod
    def of(cls, timing: Timing) -> Time:
        """一次计时的记录。"""
        return cls(
            median_s=timing.median_s,
            iqr_s=timing.iqr_s,
            reps=timing.reps,
            inner=timing.inner,
            samples_s=tuple(timing.samples_s),
        )

    @property
    def iqr_fraction(self) -> float:
        """IQR 占中位数的比例。"""
        return self.iqr_s / self.median_s

    def meets_confidence(self, threshold: float | None = None) -> bool:
        """IQR 相对中位数是否小于 ``threshold`` （默认同
        :meth:`~roofline_book.measure.bench.timing.Timing.meets_confidence`）。"""
        return self.iqr_fraction < (IQR_WARN_THRESHOLD if threshold is None else threshold)

    @property
    def timing(self) -> Timing | None:
        """保留了样本时的 :class:`~roofline_book.measure.bench.timing.Timing`，否则为 None。"""
        return None if self.samples_s is None else Timing(self.samples_s, self.inner)


@dataclass(frozen=True, kw_only=True)
class Check(Record):
    """结果与参考结果的比较（``torch.allclose`` 的容差）。"""

    reference: str = _field(minLength=1)
    max_abs_err: float = _field(minimum=0)
    rtol: float = _field(minimum=0)
    atol: float = _field(minimum=0)


@dataclass(frozen=True, kw_only=True)
class MeasuredBytes(Record):
    """由计数器（例如 Nsight Compute）测得的 DRAM 字节数。"""

    read: int = _field(minimum=0)
    written: int = _field(minimum=0)
    kernels: int = _field(minimum=1)
    tool: str = _field(minLength=1)


@dataclass(frozen=True, kw_only=True)
class Entry(Record):
    """run 中的一个条目：一个 case 的模型，以及它的计时或没有计时的原因。

    Attributes
    ----------
    id : str
        ``name/precision/impl/size=value,...``，与这些字段一致。
    name, precision, impl : str
        算子（登记过的名称）、精度、实现。
    shape : Mapping of str to int
        各尺寸，按算子的顺序。
    status : {"ok", "skipped", "failed"}
    reason : str or None
        没有计时的原因（``status`` 不是 ``"ok"`` 时才有）。
    note : str or None
        case 对这次运行的附注。
    cost : Cost
        模型的 FLOPs 与字节数（JSON 中的 ``model``）。
    implementation : Cost or None
        CPU：实现实际运行的内容，比模型多时才有。
    write_allocate_bytes : int or None
        CPU：向不在 cache 中的行写入之前取来的字节数。
    time : Time or None
        ``status`` 为 ``"ok"`` 时的计时。
    check : Check or None
        ``status`` 为 ``"ok"`` 时与参考结果的比较。
    l2_flush : bool or None
        每次调用之前是否冲刷了 L2。
    rounds_s : tuple of float or None
        上限探针：每一轮的中位数（``time`` 是最好的一轮）。
    measured_dram_bytes : MeasuredBytes or None
        计数器测得的 DRAM 字节数。

    Examples
    --------
    >>> e = Entry(id="add/fp32/add/numel=1024", name="add", shape={"numel": 1024},
    ...           precision="fp32", impl="add", status="skipped", reason="not here",
    ...           cost=Cost(1024, 8192, 4096, vector_flops=1024))
    >>> e.text, e.ok, e.as_mapping()["model"]["vector_flops"]
    ('add fp32 n=2^10', False, 1024)
    """

    id: str = _field(minLength=1)
    name: str = _field(enum=list(OPERATORS))
    shape: Mapping[str, int] = _field(minProperties=1, item={"minimum": 1})
    precision: str = _field(enum=list(BYTES))
    impl: str = _field(minLength=1)
    status: str = _field(enum=list(STATUSES))
    reason: str | None = _field(optional=True, minLength=1)
    note: str | None = _field(optional=True, minLength=1)
    cost: Cost = _field(key="model")
    write_allocate_bytes: int | None = _field(
        optional=True,
        minimum=0,
        description="CPU: line fills before stores to lines not in cache, byte",
    )
    implementation: Cost | None = _field(
        optional=True, description="CPU: what the implementation runs, where it does more"
    )
    time: Time | None = _field(optional=True)
    check: Check | None = _field(optional=True)
    l2_flush: bool | None = _field(optional=True)
    rounds_s: tuple[float, ...] | None = _field(
        optional=True,
        minItems=2,
        item={"exclusiveMinimum": 0},
        description="ceiling probes: the median of each round; time is the best",
    )
    measured_dram_bytes: MeasuredBytes | None = _field(optional=True)

    # the status decides what else the entry holds: a timing and a check, or a reason
    SCHEMA_EXTRA = {
        "allOf": [
            {
                "if": {"properties": {"status": {"const": "ok"}}},
                "then": {"required": ["time", "check"], "not": {"required": ["reason"]}},
                "else": {
                    "required": ["reason"],
                    "not": {"anyOf": [{"required": ["time"]}, {"required": ["check"]}]},
                },
            }
        ]
    }

    def __post_init__(self) -> None:
        sizes = ",".join(f"{k}={v}" for k, v in self.shape.items())
        expected = f"{self.name}/{self.precision}/{self.impl}/{sizes}"
        if self.id != expected:
            raise ValueError(f"id: {self.id!r} does not match its fields ({expected!r})")

    @property
    def ok(self) -> bool:
        """是否已检查并计时。"""
        return self.status == "ok"

    @property
    def text(self) -> str:
        """按读者写法：算子、精度、shape，不是默认实现时带上实现。

        Examples
        --------
        >>> Entry(id="adamw/fp32/fused/params=8388608,tensors=8", name="adamw",
        ...       shape={"params": 8388608, "tensors": 8}, precision="fp32", impl="fused",
        ...       status="skipped", reason="-", cost=Cost(0, 0, 0)).text
        'adamw fp32 2^23 in 8 (fused)'
        """
        default = OPERATORS[self.name].impls[0] if self.name in OPERATORS else self.impl
        tail = f" ({self.impl})" if self.impl != default else ""
        return f"{self.name} {self.precision} {shape_text(self.name, self.shape)}{tail}"

    @property
    def timed(self) -> Time:
        """条目的计时；没有计时的条目抛出 ValueError。"""
        if self.time is None:
            raise ValueError(f"entry {self.id!r} has status {self.status!r}: it was not timed")
        return self.time

    @property
    def median_s(self) -> float:
        """单次调用时间的中位数（秒）；没有计时的条目抛出 ValueError。"""
        return self.timed.median_s

    @property
    def rates(self) -> tuple[float, float]:
        """按模型算出的实测速率 (FLOP/s, byte/s)：模型 FLOPs 与字节数（读加写）除以时间中位数。

        Examples
        --------
        >>> e = Entry(id="add/fp32/add/numel=1024", name="add", shape={"numel": 1024},
        ...           precision="fp32", impl="add", status="ok",
        ...           cost=Cost(1024, 8192, 4096), time=Time(median_s=1e-6, iqr_s=0.0, reps=5,
        ...           inner=1))
        >>> e.rates
        (1024000000.0, 12288000000.0)
        """
        seconds = self.median_s
        return self.cost.flops / seconds, self.cost.bytes / seconds


@dataclass(frozen=True, kw_only=True)
class Run(Record):
    """一次 benchmark run：设备、软件、日期、测得的上限，以及每个 case 一个条目。

    Attributes
    ----------
    format : str
        总是 :data:`FORMAT`。
    version : int
        总是 :data:`VERSION`。
    date : str
        run 开始的时刻，UTC，ISO 8601。
    host : str
    suite : str
        :data:`~roofline_book.measure.bench.suites.SUITES` 之一。
    device : roofline_book.measure.runs.runparts.Device
    software : roofline_book.measure.runs.runparts.Software
    ceilings : roofline_book.measure.runs.runparts.MeasuredCeilings
    entries : tuple of Entry
        每个 case 一个条目（JSON 中的 ``results``）。
    load_average : tuple of float or None
        开始与结束时宿主机 1 分钟的负载。
    stability : roofline_book.measure.runs.runparts.Stability or None

    Raises
    ------
    ValueError
        schema 表达不了的不一致：两个条目 id 相同，样本个数不等于 ``reps``，或一项上限所指的
        条目不存在、没有计时，或它的速率不等于上限（错误信息写明字段，例如
        ``run.ceilings.bandwidth.copy.entry``）。每个条目的 id 与其字段一致由 :class:`Entry`
        检查。
    """

    format: str = _field(const=FORMAT)
    version: int = _field(const=VERSION)
    date: str = _field(
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$",
        description="start of the run, UTC, ISO 8601",
    )
    host: str = _field()
    suite: str = _field(enum=list(SUITES))
    device: Device = _field()
    software: Software = _field()
    ceilings: MeasuredCeilings = _field()
    entries: tuple[Entry, ...] = _field(key="results")
    load_average: tuple[float, ...] | None = _field(
        optional=True,
        minItems=2,
        maxItems=2,
        item={"minimum": 0},
        description="the host's 1-minute load average at the start and the end",
    )
    stability: Stability | None = _field(optional=True)

    def __post_init__(self) -> None:
        index: dict[str, Entry] = {}
        for i, entry in enumerate(self.entries):
            if entry.id in index:
                raise ValueError(f"run.results[{i}].id: {entry.id!r} appears twice")
            index[entry.id] = entry
            t = entry.time
            if t is not None and t.samples_s is not None and len(t.samples_s) != t.reps:
                raise ValueError(
                    f"run.results[{i}].time.samples_s: {len(t.samples_s)} samples, "
                    f"but reps is {t.reps}"
                )
        for name, ceiling, which in self.ceilings.named():
            where = f"run.ceilings.{name}"
            found = index.get(ceiling.entry)
            if found is None:
                raise ValueError(f"{where}.entry: no result has id {ceiling.entry!r}")
            if not found.ok:
                raise ValueError(f"{where}.entry: {ceiling.entry!r} has status {found.status!r}")
            expected = found.rates[which]
            if not math.isclose(ceiling.value, expected, rel_tol=_CEILING_RTOL):
                raise ValueError(
                    f"{where}.value: {ceiling.value!r} is not the rate of {ceiling.entry!r} "
                    f"({expected!r})"
                )

    def results(self, name: str | None = None, *, status: str | None = "ok") -> tuple[Entry, ...]:
        """条目，可以只取某个算子的、只取某种状态的。

        Parameters
        ----------
        name : str, optional
            登记过的算子名；省略时取所有算子。
        status : str or None
            :data:`STATUSES` 之一（默认 ``"ok"``），None 表示所有状态。
        """
        if name is not None and name not in OPERATORS:
            raise InvalidArgument("name", f"must be one of {', '.join(OPERATORS)}; got {name!r}")
        if status is not None and status not in STATUSES:
            raise InvalidArgument(
                "status", f"must be one of {', '.join(STATUSES)} or None; got {status!r}"
            )
        return tuple(
            e
            for e in self.entries
            if (name is None or e.name == name) and (status is None or e.status == status)
        )

    def entry(self, id: str) -> Entry:  # noqa: A002 - the run file's own word
        """id 为 ``id`` 的条目；没有时抛出 KeyError。"""
        for e in self.entries:
            if e.id == id:
                return e
        raise KeyError(f"run has no result with id {id!r}")

    def ceiling_entry(self, ceiling: Ceiling) -> Entry:
        """一项上限所来自的条目。"""
        return self.entry(ceiling.entry)

    @property
    def memory_roof(self) -> float | None:
        """测得的内存带宽：各带宽上限中最高的一个（byte/s），没有时为 None。"""
        return self.ceilings.memory_roof


__all__ = [
    "COST_REQUIRED",
    "FORMAT",
    "STATUSES",
    "VERSION",
    "CacheCeiling",
    "Ceiling",
    "MeasuredCeilings",
    "Check",
    "Device",
    "Entry",
    "LevelInversion",
    "MeasuredBytes",
    "Run",
    "Software",
    "Stability",
    "Time",
    "cost_mapping",
]
