"""一次 run 自己测得的上限对每个计时条目说了什么：一个下界和一个预测。

两者都调用同一个 :func:`roofline_book.roofline.bounds.bound`，所用的上限都来自 run
（:func:`roofline_book.measure.judge.ceilings.of_run`），只是取法不同：

- **下界** （:func:`bound_seconds`）：每个单元取 run 见过的最好水平，数据在装得下它的层级中
  （``resident=True``，一级装得下至多 :data:`~roofline_book.roofline.bounds.CACHE_MARGIN`
  倍容量的工作集；
  在冲刷 L2 之后计时的条目从主存开始）。真实的 run 超过它的幅度绝不会大于噪声。
- **预测** （:func:`predictions`）：再加上两条 roof 的模型没有考虑、而机器实际会做的事。

  - **数据必须到达的存储层级。** 一级只装得下它容量的 :data:`CACHE_FILL`，即测它的探针所用的
    份额；没有测过带宽的更快层级（L1）由最快的测过层级代替。
  - **write-allocate** （CPU 的 run）：x86 核心向它没有持有的 cache line 写入之前，先读入这一行，
    所以非原地的 kernel 写出的字节要搬运两次。run 为每个条目记下这些字节
    （``write_allocate_bytes``）；各 roof 也计入它们，所以没有这类字节的原地 triad，与有多少写就有
    多少这类字节的 copy，在模型正确时给出相同的带宽（:func:`write_allocate_rates`）。DRAM 取与条目
    数据流模式相同的带宽探针。
  - **各单元依次运行**：一个核先后做矩阵、向量和特殊函数运算，所以它们的时间相加；矩阵单元取峰值
    GEMM 各轮的中位数（各 case 运行时单元通常的水平），elementwise 类算子的向量运算取测得的
    elementwise 速率（``ceilings.vector_flops``）。
  - **每个 kernel 的固定开销** （开销主导的区间）：拟合为每个 GEMM 和 elementwise 算子最小的
    case 超出其 roofline 时间的部分的中位数，按每个 kernel 计。

``predicted = kernels x t0 + max(compute, traffic / roof)``，流量中计入实现实际运行的内容
（``implementation``）和 write-allocate 字节。
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...ops import Cost
from ...roofline.bounds import COMPUTE_RESOURCES, Ceilings, TimeBound, bound
from ..bench.cases import OPERATORS
from ..bench.suites import CACHE_PROBE_FRACTION
from ..runs.records import Entry, Run
from .ceilings import of_run

CACHE_FILL = 1 / CACHE_PROBE_FRACTION
"""预测允许一个 cache 层级装下条目数据的量，至多为其容量的这个比例，也就是测它的探针所用的比例：
这么多已经证明能留在其中，而与其他核（在虚拟机上还有其他租户）共用的 cache 可能留不住其余的
部分。下界则允许它装下 :data:`~roofline_book.roofline.bounds.CACHE_MARGIN`
倍。（取一半容量时，在构建用
虚拟机共享的 105 MiB L3 上，48 到 64 MB 的 case 被预测在 L3 roof 上，实际却以 DRAM 的速度运行。）
"""

ELEMENTWISE_FAMILIES = ("elementwise", "norm")
"""预测按测得的 elementwise 速率（``ceilings.vector_flops``）为其向量运算计时的算子类别：PyTorch
把它们的每个 kernel 作为对每个元素的一趟简单运算来执行。每个元素做许多次运算的融合 kernel
（AdamW 的、attention 的）以 FMA 单元的速率运行，即 FP32 峰值。
"""


def _running(entry: Entry) -> Cost:
    """条目的实现实际运行的内容：记录下的 ``implementation``，没有时取模型。"""
    return entry.implementation or entry.cost


def write_allocate_rates(run: Run) -> dict[str, tuple[float, float]]:
    """每个带宽探针按模型字节数算出的速率，以及计入 write-allocate 字节后的速率
    （byte/s）：``{kind: (model, with write-allocate)}``。"""
    out = {}
    for kind, ceiling in run.ceilings.bandwidth.items():
        entry = run.entry(ceiling.entry)
        traffic = entry.cost.bytes + (entry.write_allocate_bytes or 0)
        out[kind] = (ceiling.value, traffic / entry.median_s)
    return out


def probe_ids(run: Run) -> frozenset[str]:
    """本身就是上限的条目：各上限的探针，以及分轮计时的每个条目。"""
    c = run.ceilings
    groups = (c.peak_flops, c.bandwidth, c.cache_bandwidth, c.vector_flops)
    ids = {ceiling.entry for group in groups for ceiling in group.values()}
    return frozenset(ids | {e.id for e in run.results() if e.rounds_s})


def bound_seconds(entry: Entry, ceilings: Ceilings) -> float | None:
    """测得的上限所允许的一个条目的最短时间（秒）；它的精度没有测得峰值、或没有上限约束它时为 None。

    ``ceilings`` 是 :func:`~roofline_book.measure.judge.ceilings.of_run` 给出的上限。
    """
    try:
        t = bound(entry.cost, ceilings, entry.precision, resident=not entry.l2_flush)
    except ValueError:  # a precision the run measured no peak for
        return None
    return None if t is None else t.seconds


@dataclass(frozen=True)
class Expected:
    """预测所用的上限：各单元通常的速率，各层级的带宽，以及每种数据流的 DRAM 速率。"""

    ceilings: Ceilings
    vector: Mapping[str, float]
    """每种精度下 elementwise 运算的速率（FLOP/s，即每秒 lane slot 数）。"""
    streams: Mapping[str, float]
    """每个带宽探针计入 write-allocate 字节后的 DRAM 速率（byte/s），按方式索引。"""
    write_allocate: bool


def expected(run: Run) -> Expected:
    """预测用的上限：``of_run(run, typical=True)``，去掉没有测过带宽的层级。"""
    typical = of_run(run, typical=True)
    measured = tuple(level for level in typical.levels if level.bandwidth is not None)
    return Expected(
        dataclasses.replace(typical, levels=measured),
        {p: c.value for p, c in run.ceilings.vector_flops.items()},
        {kind: wa for kind, (_, wa) in write_allocate_rates(run).items()},
        run.device.type == "cpu",
    )


def _stream_rate(entry: Entry, x: Expected) -> float | None:
    """与条目数据流模式相同的带宽探针的 DRAM 速率：原地（没有 write-allocate 字节）时取原地 triad；
    非原地时，每个输出一个输入取 copy，更多输入取 triad。
    """
    if x.write_allocate and not entry.write_allocate_bytes:
        return x.streams.get("triad_inplace")
    cost = entry.cost
    return x.streams.get("copy" if cost.bytes_read <= cost.bytes_written else "triad")


def _expected_bound(entry: Entry, x: Expected) -> TimeBound | None:
    """条目在预测所用上限下的各项时间；它的精度没有测得峰值时为 None。"""
    impl, precision = _running(entry), entry.precision
    c = x.ceilings
    family = OPERATORS[entry.name].family
    if family in ELEMENTWISE_FAMILIES and precision in x.vector:
        for unit in ("vector", "special"):
            c = c.with_rate(unit, precision, x.vector[precision])
    stream = _stream_rate(entry, x)
    if stream is not None:
        c = c.with_bandwidth(c.memory.name, stream)
    fills = (entry.write_allocate_bytes or 0) if x.write_allocate else 0
    traffic = dataclasses.replace(impl, bytes_written=impl.bytes_written + fills)
    model = entry.cost
    try:
        return bound(traffic, c, precision, resident=not entry.l2_flush, fill=CACHE_FILL,
                     working_set=model.bytes / max(model.kernels, 1))  # fmt: skip
    except ValueError:
        return None


def roof_seconds(entry: Entry, x: Expected) -> float | None:
    """条目预测中的 roofline 部分（秒）：不含固定开销。各计算单元的时间相加，与内存时间取大者。"""
    t = _expected_bound(entry, x)
    if t is None:
        return None
    compute = sum(v for r, v in t.by_resource.items() if r in COMPUTE_RESOURCES)
    return max(compute, t.memory)


def expected_level(entry: Entry, x: Expected) -> str:
    """预测让条目受约束的存储层级：它的各内存项中时间最长的一个。"""
    t = _expected_bound(entry, x)
    memory = {r: v for r, v in (t.by_resource.items() if t else ()) if r not in COMPUTE_RESOURCES}
    return max(memory, key=memory.__getitem__) if memory else x.ceilings.memory.name


def _kernels(entry: Entry) -> int:
    return max(_running(entry).kernels, 1)


def overhead_fit(
    run: Run, x: Expected | None = None
) -> tuple[dict[tuple[str, str], float], float, list[str]]:
    """每个 kernel 的固定开销（秒）：按算子和精度分别给出，另有一个总体值。

    每个 GEMM 和 elementwise 算子在每种精度下计过时的最小 case（探针除外）
    工作量最少，固定开销在时间中占比最大：它的
    ``max(0, measured - roofline) / kernels`` 就是这个算子的固定开销（CPU 上
    16 位的 GEMM 要先准备矩阵 tile，FP32 的不用）。这些值的中位数用作其他
    所有算子的开销。

    Returns
    -------
    tuple
        ``(per_operator, overall, fitted)``：``per_operator[(name, precision)]``
        与 ``overall`` 的单位是秒；``fitted`` 是它们所依据的条目的 id。
    """
    x = x or expected(run)
    probes = probe_ids(run)
    smallest: dict[tuple[str, str], Entry] = {}
    for e in run.results():
        if e.id in probes or e.name not in _FIT_OPERATORS:
            continue
        key = (e.name, e.precision)
        if key not in smallest or e.cost.bytes < smallest[key].cost.bytes:
            smallest[key] = e
    per: dict[tuple[str, str], float] = {}
    for key, e in smallest.items():
        roof = roof_seconds(e, x)
        if roof is not None:
            per[key] = max(0.0, e.median_s - roof) / _kernels(e)
    overall = statistics.median(per.values()) if per else 0.0
    return per, overall, [e.id for e in smallest.values()]


_FIT_OPERATORS = ("gemm", "add", "relu")


@dataclass(frozen=True)
class Prediction:
    """一个计时条目的模型时间，与实测时间并列（秒）。"""

    id: str
    predicted_s: float
    measured_s: float
    bound_s: float | None
    level: str
    """预测中时间最长的存储层级（``"l2"``、``"l3"``、``"dram"``、``"hbm"``）。"""
    excluded: str = ""
    """条目不计入预测误差的原因：它是一个上限，或用来拟合固定开销；计入误差的条目为空。"""

    @property
    def error(self) -> float:
        """``|predicted - measured| / measured``。"""
        return abs(self.predicted_s - self.measured_s) / self.measured_s


def predictions(run: Run) -> list[Prediction]:
    """每个计过时、且其精度测得了峰值的条目的预测。"""
    if not run.ceilings.bandwidth:
        return []
    x, ceilings, probes = expected(run), of_run(run), probe_ids(run)
    per, overall, fitted = overhead_fit(run, x)
    out = []
    for e in run.results():
        roof = roof_seconds(e, x)
        if roof is None:
            continue
        excluded = "ceiling" if e.id in probes else "fits the fixed cost" if e.id in fitted else ""
        out.append(
            Prediction(
                e.id,
                roof + _kernels(e) * per.get((e.name, e.precision), overall),
                e.median_s,
                bound_seconds(e, ceilings),
                expected_level(e, x),
                excluded,
            )
        )
    return out


def median_error(items: Sequence[Prediction]) -> float | None:
    """未被排除的条目上 ``|predicted - measured| / measured`` 的中位数。"""
    kept = [p.error for p in items if not p.excluded]
    return statistics.median(kept) if kept else None
