"""What a run's own ceilings say about each timed entry: a lower bound and a prediction.

Both start from the roofline of the measured ceilings and add what the
machine does that the two-roof model leaves out:

- **the memory level the data must reach.** An entry whose working set (its
  traffic per kernel) fits in a cache level with a measured roof (the CPU's
  cache probes) is held to that level's bandwidth; one of
  :data:`~roofline_book.measure.suites.CACHE_MARGIN` times the last-level
  cache or more, or timed after an L2 flush, to DRAM.
- **write-allocate** (CPU runs): before a store to a line it does not hold,
  an x86 core reads the line, so an out-of-place kernel moves its written
  bytes twice. The run records those bytes per entry
  (``write_allocate_bytes``); the roofs count them too, so the in-place
  triad, which has none, and the copy, which has as many as it writes, give
  the same bandwidth where the model is right
  (:func:`write_allocate_rates`).
- **a fixed cost per kernel** (the overhead regime): fitted as the median
  excess of the smallest case of each GEMM and elementwise operator over its
  roofline time, per kernel.

``bound = max(matrix FLOPs / peak, vector FLOPs / vector peak, bytes / roof)``
with the fastest roof the data may be served from; a real run never beats it
by more than the noise. ``predicted = kernels x t0 + max(compute, traffic /
roof)``, with what the implementation runs (``implementation``) and the
write-allocate bytes in the traffic, and the compute units' times added (one
core runs them one after another). The bound takes each peak GEMM's best
round (the most the units did); the prediction its median round (what they
typically did while the cases ran).

On a CPU the vector peak is the measured FP32 GEMM peak: FP32 GEMM runs on
the same AVX-512 FMA units as elementwise arithmetic, at the most they do
(an elementwise op cannot beat it, so the bound stays a bound).
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
"""The name of the memory level beyond every cache."""

CACHE_FILL = 1 / CACHE_PROBE_FRACTION
"""A prediction lets a cache level hold an entry's data up to this fraction of its
size, the share its probe was measured on: that much was shown to stay there, while
a cache shared with other cores (and, on a VM, other tenants) may keep less of the
rest. A bound lets it hold all of it. (At half the size, on the build VM's shared
105 MiB L3, cases of 48 to 64 MB were predicted at the L3 roof and ran at DRAM
speed.)"""

ELEMENTWISE_FAMILIES = ("elementwise", "norm")
"""Families whose vector work a prediction times at the measured elementwise rate
(``ceilings.vector_flops``): PyTorch runs each of their kernels as one simple pass
per element. A fused kernel of many operations per element (AdamW's, attention's)
runs at the FMA units' rate, the FP32 peak."""


@dataclass(frozen=True)
class Roofs:
    """A run's measured ceilings, as the bound and the prediction use them.

    Attributes
    ----------
    peaks : dict
        Peak FLOP/s per precision (the peak GEMM).
    vector_peak : float or None
        FLOP/s of the vector units: the FP32 peak (see the module's text).
    dram : float or None
        DRAM bandwidth (byte/s): the best bandwidth probe, write-allocate bytes counted.
    levels : tuple of (str, int, float)
        Cache levels with a measured roof, smallest first: name, bytes, byte/s.
    unprobed : tuple of int
        Sizes of the faster levels without a roof (the L1), byte.
    last_level : int or None
        The last-level cache or L2 (byte).
    write_allocate : bool
        Whether the traffic counts write-allocate bytes (a CPU run).
    probes : frozenset of str
        Entries that are the ceilings themselves.
    streams : dict
        Each bandwidth probe's DRAM rate with write-allocate bytes counted (byte/s), by
        kind: a prediction holds a kernel to the probe with its pattern of streams.
    vector : dict
        Per precision, the vector units' FLOP/s on elementwise work, from the run's
        cache-resident ``vector`` probe (an add within the L2); the prediction's,
        never the bound's (another elementwise kernel may run faster).
    typical_peaks : dict
        Per precision, the peak GEMM's FLOP/s in the median of its rounds: the rate
        the matrix units typically held during the run, which the prediction uses;
        the bound uses the best round (``peaks``). On a shared machine the two can
        differ by a factor of two or more.
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
    """The median of a probe's round medians (second); its best round is the ceiling."""
    return statistics.median(entry.get("rounds_s") or [entry["time"]["median_s"]])


def _running(entry: Mapping[str, Any]) -> Cost:
    """What the entry's implementation runs: its recorded ``implementation``, else the model."""
    return Cost(**entry["implementation"]) if "implementation" in entry else model_cost(entry)


def _traffic(entry: Mapping[str, Any], cost: Cost) -> int:
    """Bytes ``cost`` moves plus the entry's write-allocate bytes."""
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
    """The memory level an entry's data is held to, and its bandwidth (byte/s).

    For the bound: DRAM if the entry streams (see the module's text); else the
    smallest measured cache level that holds its working set, or the last one
    if none does; ``(name, None)`` (no memory term) where the data may sit in
    a faster level without a roof, or no cache roof was measured. For the
    prediction: DRAM once the working set exceeds the last cache level, else
    the smallest measured level that holds it.
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
    vector = cost.vector_flops + cost.special_flops
    if bound:
        return max(cost.matrix_flops / peak, vector / r.vector_peak if r.vector_peak else 0.0)
    matrix_s = cost.matrix_flops / r.typical_peaks.get(entry["precision"], peak)
    elementwise = OPERATORS[entry["name"]].family in ELEMENTWISE_FAMILIES
    fma = r.typical_peaks.get("fp32", r.vector_peak)
    rate = (r.vector.get(entry["precision"]) if elementwise else None) or fma
    return matrix_s + (vector / rate if rate else 0.0)


def _stream_rate(entry: Mapping[str, Any], r: Roofs) -> float | None:
    """The DRAM rate of the bandwidth probe with the entry's pattern of streams: in place
    (no write-allocate bytes) the in-place triad; out of place, the copy for one input
    per output, the triad for more."""
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
    """The prediction's roofline part for an entry (second): no fixed cost."""
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
    """The model's time for one timed entry beside the measured time (second)."""

    id: str
    predicted_s: float
    measured_s: float
    bound_s: float | None
    level: str
    """The memory level the prediction holds the entry to (``"L2"``, ``"L3"``, ``"DRAM"``)."""
    excluded: str = ""
    """Why the entry is left out of the prediction's error: it is a ceiling, or fits the
    fixed cost; empty for the entries the error is taken over."""

    @property
    def error(self) -> float:
        """``|predicted - measured| / measured``."""
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
    """Median ``|predicted - measured| / measured`` over the entries not excluded."""
    kept = [p.error for p in items if not p.excluded]
    return statistics.median(kept) if kept else None
