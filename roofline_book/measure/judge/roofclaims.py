"""关于 roofline 本身的两条结论：测得上限给出的下界没有被突破（结论 8），write-allocate 解释了
三种带宽探针的差别（结论 9）；以及各条结论共用的几个小工具。

结论 8 的下界与 run 的预测、profiler 用的是同一个
:func:`roofline_book.roofline.bounds.bound`，上限取
:func:`~roofline_book.measure.judge.ceilings.of_run`。清单本身在
:mod:`roofline_book.measure.judge.claims`。
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...roofline.bounds import Ceilings
from ..runs.records import Ceiling, Entry, Run
from . import ceilings, predict
from .verdicts import SPEED_TOLERANCE, Check, Figure, Ref, _noise, _verdict_of, tolerance, within

_TOLERANCE_RULE = (
    f"the run's tolerance (the larger of {SPEED_TOLERANCE:.0%} and the sentinel's spread)"
)
"""结论的规则里写的计时余量。"""


def _spread(ceiling: Ceiling | None) -> float:
    return (ceiling.spread or 0.0) if ceiling is not None else 0.0


def _not_measured(claim: str, rule: str, missing: str) -> Check:
    return Check(claim, "not measured", rule, missing=missing)


def _raised(run: Run, precisions: Iterable[str]) -> list[Figure]:
    """每种精度下比峰值探针更快、使峰值取了它的 GEMM（:func:`ceilings.peak`），各写成一个数字。"""
    out = []
    for p in precisions:
        best = ceilings.peak(run, p)
        if best is not None and best.raised:
            ratio = best.value / best.probe
            out.append(Figure(run.entry(best.entry), "above_peak_probe", ratio, "fraction"))
    return out


def bound_seconds(entry: Entry, roofs: Ceilings) -> float | None:
    """测得的上限允许 ``entry`` 的最短时间（秒）：结论 8 取下界的唯一入口
    （:func:`roofline_book.roofline.bounds.bound`，经由
    :func:`~roofline_book.measure.judge.predict.bound_seconds`）。"""
    return predict.bound_seconds(entry, roofs)


def _bound_spread(run: Run, precision: str) -> float:
    """一个下界可能用到的上限（该精度与 FP32 的峰值、各带宽与各级 cache）中最大的各轮离散。"""
    c = run.ceilings
    used: Sequence[Ceiling | None] = [
        c.peak_flops.get(precision),
        c.peak_flops.get("fp32"),
        *c.bandwidth.values(),
        *c.cache_bandwidth.values(),
    ]
    return max((_spread(u) for u in used), default=0.0)


def roofline_bounds_time(run: Run) -> Check:
    """没有条目快过测得上限给出的下界，超出噪声地快过则不成立；同时报告预测的误差。

    下界让每个条目受它的工作所用的每种单元的上限约束，也受它的数据必须到达的存储层级约束
    （:func:`bound_seconds`）。峰值取 run 在矩阵单元上见过的最好水平
    （:func:`roofline_book.measure.judge.ceilings.peak`，经由
    :func:`~roofline_book.measure.judge.ceilings.of_run`）。一个条目的实测时间低于下界，但低得不超过
    它的噪声（半个 IQR、所用上限各轮之间的离散、run 的计时余量）时，结论无法判定；超过噪声时不成立。
    """
    claim = "The roofline of the measured ceilings bounds every operator's time"
    rule = (
        "no timed entry runs faster than the least time the measured ceilings allow it: its "
        "FLOPs at the peak of each unit it uses (the best rate the run saw on that unit: the peak "
        "probe, or a GEMM of the sweep faster than it), its bytes at the bandwidth of the level "
        "its data must reach (DRAM when it streams, the cache level that holds it otherwise, none "
        "where no roof was measured for that level); an entry faster than its bound by less than "
        "its noise (half its IQR, the largest spread among the ceilings a bound uses, "
        f"{_TOLERANCE_RULE}) makes the claim inconclusive, by more, false. Since every compute "
        "term uses the best GEMM the run saw, no GEMM can beat its compute bound, and no other "
        "entry outruns the best GEMM: in practice the claim can fail only on entries bound by "
        "their bytes"
    )
    if run.memory_roof is None:
        return _not_measured(claim, rule, "bandwidth")
    roofs, probes = ceilings.of_run(run), predict.probe_ids(run)
    tol = tolerance(run)
    judged = []
    for e in run.results():
        bound = None if e.id in probes else bound_seconds(e, roofs)
        if bound:
            noise = _noise(e.timed, spreads=(_bound_spread(run, e.precision),), tolerance=tol)
            judged.append((e, bound / e.median_s, noise))
    if not judged:
        return _not_measured(claim, rule, "bounded_entry")
    orders = [within(ratio, noise) for _, ratio, noise in judged]
    beaten = sorted((j for j in judged if j[1] > 1), key=lambda j: -j[1])
    everyone = Ref("run")
    figures = [
        Figure(everyone, "entries_judged", len(judged), "count"),
        Figure(everyone, "beat_bound", len(beaten), "count"),
        Figure(everyone, "beat_bound_beyond_noise", orders.count("slower"), "count"),
    ]
    for e, ratio, noise in beaten or [max(judged, key=lambda j: j[1])]:
        figures.append(Figure(e, "bound_over_measured", ratio, "fraction"))
        if ratio > 1:
            figures.append(Figure(e, "noise", noise, "fraction"))
    figures += _raised(run, run.ceilings.peak_flops)
    error = predict.median_error(predict.predictions(run))
    if error is not None:
        figures.append(Figure(everyone, "prediction_error", error, "fraction"))
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


WRITE_ALLOCATE_AGREEMENT = 0.15
"""计入 write-allocate 字节后，最快的带宽探针与最慢的相差在这个比例之内时，三个带宽探针算作一致。"""


def write_allocate_explains_bandwidths(run: Run) -> Check:
    """在 CPU 上，计入 write-allocate 读取后，copy、triad 和原地 triad 的带宽趋于一致。"""
    claim = (
        "On this CPU a store to a line not in cache first reads it (write-allocate): counting "
        "those reads, copy, triad and in-place triad move data at the same rate"
    )
    rule = (
        "the three probes' rates with write-allocate bytes counted lie within "
        f"{WRITE_ALLOCATE_AGREEMENT:.0%} of each other and closer than from the model's bytes, "
        "each beyond the probes' largest round-to-round spread and "
        f"{_TOLERANCE_RULE} (inconclusive within them)"
    )
    if run.device.type != "cpu":
        return _not_measured(claim, rule, "cpu")
    rates_ = predict.write_allocate_rates(run)
    if len(rates_) < 3 or not any(e.write_allocate_bytes is not None for e in run.results("copy")):
        return _not_measured(claim, rule, "write_allocate_probes")
    plain = [r for r, _ in rates_.values()]
    counted = [w for _, w in rates_.values()]
    spread_plain, spread_counted = max(plain) / min(plain) - 1, max(counted) / min(counted) - 1
    figures = []
    for kind, (model, allocated) in rates_.items():
        probe = Ref("ceiling", kind)
        figures += [
            Figure(probe, "bandwidth_model_bytes", model, "B/s"),
            Figure(probe, "bandwidth_write_allocate", allocated, "B/s"),
        ]
    figures += [
        Figure(Ref("run"), "spread_model_bytes", spread_plain, "fraction"),
        Figure(Ref("run"), "spread_write_allocate", spread_counted, "fraction"),
    ]
    noise = max(_spread(run.ceilings.bandwidth[k]) for k in rates_) + tolerance(run)
    worse = spread_counted - spread_plain > noise  # counting the fills moves them apart
    if worse or spread_counted - noise > WRITE_ALLOCATE_AGREEMENT:
        return Check(claim, "fail", rule, tuple(figures))
    closer = spread_plain - spread_counted > noise
    ok = closer and spread_counted + noise <= WRITE_ALLOCATE_AGREEMENT
    return Check(claim, "pass" if ok else "inconclusive", rule, tuple(figures))
