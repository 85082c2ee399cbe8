"""一次 run 自己测得的上限对每个计时条目说了什么：一个下界和一个预测。

两者都从测得上限的 roofline 出发，再加上两条 roof 的模型没有考虑、而机器实际会做的事：

- **数据必须到达的存储层级。** 工作集（每个 kernel 的流量）装得进一个测过 roof 的 cache 层级
  （CPU 的 cache 探针）的条目，受该层级带宽约束；工作集为末级 cache 的
  :data:`~roofline_book.measure.suites.CACHE_MARGIN` 倍或更多、或在冲刷 L2 之后计时的条目，
  受 DRAM 约束。
- **write-allocate**（CPU 的 run）：x86 核心向它没有持有的 cache line 写入之前，先读入这一行，
  所以非原地的 kernel 写出的字节要搬运两次。run 为每个条目记下这些字节
  （``write_allocate_bytes``）；各 roof 也计入它们，所以没有这类字节的原地 triad，与有多少写就有
  多少这类字节的 copy，在模型正确时给出相同的带宽（:func:`write_allocate_rates`）。
- **每个 kernel 的固定开销**（开销主导的区间）：拟合为每个 GEMM 和 elementwise 算子最小的
  case 超出其 roofline 时间的部分的中位数，按每个 kernel 计。

``bound = max(matrix FLOPs / peak, vector FLOPs / vector peak, bytes / roof)``，roof 取数据
可能由之供给的最快一级；真实的 run 超过它的幅度绝不会大于噪声。
``predicted = kernels x t0 + max(compute, traffic / roof)``，流量中计入实现实际运行的内容
（``implementation``）和 write-allocate 字节，各计算单元的时间相加（一个核依次运行它们）。
下界取每个峰值 GEMM 最好的一轮（单元能做到的最好水平）；预测取它中位数的一轮（各 case 运行时
单元通常的水平）。

在 CPU 上，向量峰值取测得的 FP32 GEMM 峰值：FP32 GEMM 与 elementwise 运算运行在同样的
AVX-512 FMA 单元上，而且达到了它们的最高速率（elementwise 算子超不过它，所以下界仍是下界）。
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ops import Cost
from . import runfile
from .cases import OPERATORS
from .runfile import model_cost
from .suites import CACHE_MARGIN, CACHE_PROBE_FRACTION

DRAM = "DRAM"
"""所有 cache 之外那一级存储的名称。"""

CACHE_FILL = 1 / CACHE_PROBE_FRACTION
"""预测允许一个 cache 层级装下条目数据的量，至多为其容量的这个比例，也就是测它的探针所用的比例：
这么多已经证明能留在其中，而与其他核（在虚拟机上还有其他租户）共用的 cache 可能留不住其余的
部分。下界则允许它装满。（取一半容量时，在构建用虚拟机共享的 105 MiB L3 上，48 到 64 MB 的
case 被预测在 L3 roof 上，实际却以 DRAM 的速度运行。）
"""

ELEMENTWISE_FAMILIES = ("elementwise", "norm")
"""预测按测得的 elementwise 速率（``ceilings.vector_flops``）为其向量运算计时的算子类别：PyTorch
把它们的每个 kernel 作为对每个元素的一趟简单运算来执行。每个元素做许多次运算的融合 kernel
（AdamW 的、attention 的）以 FMA 单元的速率运行，即 FP32 峰值。
"""


@dataclass(frozen=True)
class Roofs:
    """一次 run 测得的上限，按下界与预测所用的方式整理。

    Attributes
    ----------
    peaks : dict
        每种精度的峰值 FLOP/s（峰值 GEMM）。
    vector_peak : float or None
        向量单元的 FLOP/s：FP32 峰值（见模块说明）。
    dram : float or None
        DRAM 带宽（byte/s）：最好的带宽探针，计入 write-allocate 字节。
    levels : tuple
        ``(str, int, float)`` 的序列：测过 roof 的 cache 层级，从小到大：名称、字节数、byte/s。
    unprobed : tuple of int
        没有 roof 的更快层级（L1）的大小（byte）。
    last_level : int or None
        末级 cache 或 L2 的大小（byte）。
    write_allocate : bool
        流量是否计入 write-allocate 字节（CPU 的 run）。
    probes : frozenset of str
        本身就是上限的条目。
    streams : dict
        每个带宽探针计入 write-allocate 字节后的 DRAM 速率（byte/s），按方式索引：预测让 kernel
        受与它的数据流模式相同的探针约束。
    vector : dict
        每种精度下向量单元做 elementwise 运算的 FLOP/s，来自 run 中驻留 cache 的 ``vector``
        探针（L2 之内的 add）；只用于预测，不用于下界（别的 elementwise kernel 可能更快）。
    typical_peaks : dict
        每种精度下峰值 GEMM 各轮中位数对应的 FLOP/s：矩阵单元在 run 期间通常保持的速率，预测
        用它；下界用最好的一轮（``peaks``）。在共享机器上两者可能相差 2 倍以上。
    """

    peaks: dict[str, float]
    vector_peak: float | None
    dram: float | None
    levels: tuple[tuple[str, int, float], ...] = ()
    unprobed: tuple[int, ...] = ()
    last_level: int | None = None
    write_allocate: bool = False
    probes: frozenset[str] = field(default_factory=frozenset)
    streams: dict[str, float] = field(default_factory=dict)
    vector: dict[str, float] = field(default_factory=dict)
    typical_peaks: dict[str, float] = field(default_factory=dict)


def _typical_seconds(entry: Mapping[str, Any]) -> float:
    """一个探针各轮中位数的中位数（秒）；它最好的一轮就是上限。"""
    return statistics.median(entry.get("rounds_s") or [entry["time"]["median_s"]])


def _running(entry: Mapping[str, Any]) -> Cost:
    """条目的实现实际运行的内容：记录下的 ``implementation``，没有时取模型。"""
    return Cost(**entry["implementation"]) if "implementation" in entry else model_cost(entry)


def _traffic(entry: Mapping[str, Any], cost: Cost) -> int:
    """``cost`` 搬运的字节数加上条目的 write-allocate 字节数。"""
    return cost.bytes + entry.get("write_allocate_bytes", 0)


def write_allocate_rates(run: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """每个带宽探针按模型字节数算出的速率，以及计入 write-allocate 字节后的速率
    （byte/s）：``{kind: (model, with write-allocate)}``。"""
    by_id = {e["id"]: e for e in runfile.results(run)}
    out = {}
    for kind, ceiling in run["ceilings"]["bandwidth"].items():
        entry = by_id[ceiling["entry"]]
        seconds = entry["time"]["median_s"]
        out[kind] = (ceiling["value"], _traffic(entry, model_cost(entry)) / seconds)
    return out


def roofs(run: Mapping[str, Any]) -> Roofs:
    """``run`` 测得的各项上限；``run`` 是 :func:`roofline_book.measure.runfile.read_run`
    给出的 mapping。"""
    ceilings = run["ceilings"]
    by_id = {e["id"]: e for e in runfile.results(run)}
    peaks = {p: c["value"] for p, c in ceilings["peak_flops"].items()}
    typical = {
        p: model_cost(by_id[c["entry"]]).flops / _typical_seconds(by_id[c["entry"]])
        for p, c in ceilings["peak_flops"].items()
        if c["entry"] in by_id
    }
    streams = {kind: wa for kind, (_, wa) in write_allocate_rates(run).items()}
    rates = list(streams.values())
    levels = []
    for name, c in ceilings.get("cache_bandwidth", {}).items():
        entry = by_id[c["entry"]]
        levels.append(
            (
                name,
                c["cache_bytes"],
                _traffic(entry, model_cost(entry)) / entry["time"]["median_s"],
            )
        )
    levels.sort(key=lambda level: level[1])
    caches = run["device"].get("caches") or {}
    smallest = levels[0][1] if levels else None
    unprobed = (
        tuple(size for size in caches.values() if smallest is None or size < smallest)
        if levels
        else ()
    )
    ids = {c["entry"] for group in ("peak_flops", "bandwidth") for c in ceilings[group].values()}
    ids |= {c["entry"] for c in ceilings.get("cache_bandwidth", {}).values()}
    ids |= {c["entry"] for c in ceilings.get("vector_flops", {}).values()}
    ids |= {e["id"] for e in runfile.results(run) if "rounds_s" in e}  # every probe
    return Roofs(
        peaks=peaks,
        vector_peak=peaks.get("fp32"),
        dram=max(rates) if rates else None,
        levels=tuple(levels),
        unprobed=unprobed,
        last_level=run["device"].get("cache_bytes"),
        write_allocate=run["device"]["type"] == "cpu",
        probes=frozenset(ids),
        streams=streams,
        vector={p: c["value"] for p, c in ceilings.get("vector_flops", {}).items()},
        typical_peaks=typical,
    )


def _working_set(entry: Mapping[str, Any]) -> float:
    cost = model_cost(entry)
    return cost.bytes / max(cost.kernels, 1)


def _streams(entry: Mapping[str, Any], r: Roofs) -> bool:
    return bool(entry.get("l2_flush")) or (
        r.last_level is not None and _working_set(entry) >= CACHE_MARGIN * r.last_level
    )


def level(entry: Mapping[str, Any], r: Roofs, *, bound: bool) -> tuple[str, float | None]:
    """条目的数据所受约束的存储层级，以及它的带宽（byte/s）。

    对下界：条目流式读写时为 DRAM（见模块说明）；否则为装得下其工作集的最小的测过层级，都装不下
    时取最后一级；数据可能落在没有 roof 的更快层级中，或没有测过 cache roof 时为 ``(name, None)``
    （没有内存项）。对预测：工作集超过最后一级 cache 时为 DRAM，否则为装得下它的最小的测过层级。
    """
    ws = _working_set(entry)
    if _streams(entry, r):
        return DRAM, r.dram
    if not r.levels:  # no cache roof measured: no memory term for a bound
        return ("cache", None) if bound else (DRAM, r.dram)
    if bound and any(ws <= size for size in r.unprobed):
        return "L1", None
    for name, size, bandwidth in r.levels:
        # a bound lets the whole level hold the data; a prediction only as much as the
        # probe held, a cache shared with other cores and tenants keeping the rest
        if ws <= (size if bound else size * CACHE_FILL):
            return name, bandwidth
    name, _, bandwidth = r.levels[-1]  # beyond the last level, short of streaming
    return (name, bandwidth) if bound else (DRAM, r.dram)


def _compute(entry: Mapping[str, Any], r: Roofs, cost: Cost, *, bound: bool) -> float | None:
    peak = r.peaks.get(entry["precision"])
    if peak is None:
        return None
    # lane slots: a measured add rate is one operation per slot, and an FMA takes one slot
    vector = cost.vector_slots + cost.special_flops
    if bound:
        return max(cost.matrix_flops / peak, vector / r.vector_peak if r.vector_peak else 0.0)
    matrix_s = cost.matrix_flops / r.typical_peaks.get(entry["precision"], peak)
    elementwise = OPERATORS[entry["name"]].family in ELEMENTWISE_FAMILIES
    fma = r.typical_peaks.get("fp32", r.vector_peak)
    rate = (r.vector.get(entry["precision"]) if elementwise else None) or fma
    return matrix_s + (vector / rate if rate else 0.0)


def _stream_rate(entry: Mapping[str, Any], r: Roofs) -> float | None:
    """与条目数据流模式相同的带宽探针的 DRAM 速率：原地（没有 write-allocate 字节）时取原地 triad；
    非原地时，每个输出一个输入取 copy，更多输入取 triad。
    """
    if not r.streams:
        return r.dram
    if r.write_allocate and not entry.get("write_allocate_bytes"):
        return r.streams.get("triad_inplace", r.dram)
    cost = model_cost(entry)
    kind = "copy" if cost.bytes_read <= cost.bytes_written else "triad"
    return r.streams.get(kind, r.dram)


def bound_seconds(entry: Mapping[str, Any], r: Roofs) -> float | None:
    """测得的上限所允许的一个条目的最短时间（秒）；它的精度没有测得峰值时为 None。"""
    cost = model_cost(entry)
    compute = _compute(entry, r, cost, bound=True)
    if compute is None:
        return None
    _, bandwidth = level(entry, r, bound=True)
    return max(compute, cost.bytes / bandwidth if bandwidth else 0.0)


def roof_seconds(entry: Mapping[str, Any], r: Roofs) -> float | None:
    """条目预测中的 roofline 部分（秒）：不含固定开销。"""
    impl = _running(entry)
    compute = _compute(entry, r, impl, bound=False)
    name, bandwidth = level(entry, r, bound=False)
    if name == DRAM:
        bandwidth = _stream_rate(entry, r)
    if compute is None or bandwidth is None:
        return None
    traffic = _traffic(entry, impl) if r.write_allocate else impl.bytes
    return max(compute, traffic / bandwidth)


def _kernels(entry: Mapping[str, Any]) -> int:
    return max(_running(entry).kernels, 1)


def overhead_fit(
    run: Mapping[str, Any], r: Roofs | None = None
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
    r = r or roofs(run)
    smallest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for e in runfile.results(run):
        if e["id"] in r.probes or e["name"] not in _FIT_OPERATORS:
            continue
        key = (e["name"], e["precision"])
        if key not in smallest or model_cost(e).bytes < model_cost(smallest[key]).bytes:
            smallest[key] = e
    per: dict[tuple[str, str], float] = {}
    for key, e in smallest.items():
        roof = roof_seconds(e, r)
        if roof is not None:
            per[key] = max(0.0, e["time"]["median_s"] - roof) / _kernels(e)
    overall = statistics.median(per.values()) if per else 0.0
    return per, overall, [e["id"] for e in smallest.values()]


_FIT_OPERATORS = ("gemm", "add", "relu")


@dataclass(frozen=True)
class Prediction:
    """一个计时条目的模型时间，与实测时间并列（秒）。"""

    id: str
    predicted_s: float
    measured_s: float
    bound_s: float | None
    level: str
    """预测让条目受约束的存储层级（``"L2"``、``"L3"``、``"DRAM"``）。"""
    excluded: str = ""
    """条目不计入预测误差的原因：它是一个上限，或用来拟合固定开销；计入误差的条目为空。"""

    @property
    def error(self) -> float:
        """``|predicted - measured| / measured``。"""
        return abs(self.predicted_s - self.measured_s) / self.measured_s


def predictions(run: Mapping[str, Any]) -> list[Prediction]:
    """每个计过时、且其精度测得了峰值的条目的预测。"""
    r = roofs(run)
    if r.dram is None:
        return []
    per, overall, fitted = overhead_fit(run, r)
    out = []
    for e in runfile.results(run):
        roof = roof_seconds(e, r)
        if roof is None:
            continue
        excluded = (
            "ceiling" if e["id"] in r.probes else "fits the fixed cost" if e["id"] in fitted else ""
        )
        out.append(
            Prediction(
                e["id"],
                roof + _kernels(e) * per.get((e["name"], e["precision"]), overall),
                e["time"]["median_s"],
                bound_seconds(e, r),
                level(e, r, bound=False)[0],
                excluded,
            )
        )
    return out


def median_error(items: Sequence[Prediction]) -> float | None:
    """未被排除的条目上 ``|predicted - measured| / measured`` 的中位数。"""
    kept = [p.error for p in items if not p.excluded]
    return statistics.median(kept) if kept else None
