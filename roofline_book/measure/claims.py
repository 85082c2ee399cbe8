"""本书的定性结论，用一次实测的 run 来检验。

每条结论成为一个 :class:`~roofline_book.measure.verdicts.Check`：它所依据的数字（取自 run file，见
:mod:`roofline_book.measure.runfile`），以及判定：``"pass"``、``"fail"``，或 run 中缺少
这条结论所需的数据时为 ``"not measured"``。阈值就是下面那些具名常量；改动其中一个，
所有判定随之改变。

这些结论是：大 GEMM 受限于计算；elementwise 算子受限于内存；小 GEMM 离峰值很远；
GEMM 吞吐随 ``n`` 增大而上升；fused AdamW 至少和 foreach 一样快，foreach 至少和
loop 一样快；SDPA 比 materialized attention 快，搬运的数据也更少；BF16 GEMM 比 FP32
的快；没有算子快过由测得上限画出的 roofline。

``python -m roofline_book bench`` 在 run 结束后打印这份清单；:func:`check_claims`
可对任意 run file 给出它。
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..ops import Cost
from . import predict, runfile
from .cases import OPERATORS, names, shape_text
from .runfile import model_cost, rates
from .suites import CACHE_MARGIN, SMALL_GEMM
from .verdicts import (
    SPEED_TOLERANCE,
    VERDICTS,
    Check,
    Figure,
    Order,
    _holds,
    _noise,
    _verdict,
    _verdict_of,
    against,
    order,
)

NEAR_PEAK = 0.8
"""GEMM 达到实测峰值的这个比例或更多时，算作“接近峰值”。"""

NEAR_COPY = 0.7
"""elementwise 算子的带宽（模型字节数除以时间）达到实测 copy 带宽的这个比例或更多时，算作
“受限于内存”……
"""

TINY_FLOP_FRACTION = 0.05
"""……并且它的 FLOP/s 至多为峰值的这个比例。"""

FAR_FROM_PEAK = 0.25
"""小 GEMM 为峰值的这个比例或更少时，算作“离峰值很远”。"""

RISE_FACTOR = 2.0
"""最大尺寸的 FLOP/s 至少是最小尺寸的这么多倍（且最好的尺寸在上半部分）时，GEMM 吞吐算作
“随 n 上升”。
"""

BOUND_TOLERANCE = 0.10
"""没有算子的实测时间低于测得上限所允许时间的 ``(1 - tol)`` 倍时，roofline 下界成立。"""


def _ceiling(run: Mapping[str, Any], precision: str) -> Mapping[str, Any]:
    return run["ceilings"]["peak_flops"].get(precision, {})


def _peak(run: Mapping[str, Any], precision: str) -> float | None:
    entry = run["ceilings"]["peak_flops"].get(precision)
    return entry["value"] if entry else None


def _cache(run: Mapping[str, Any]) -> int | None:
    return run["device"].get("cache_bytes")


def streams_from_memory(run: Mapping[str, Any], cost: Cost) -> bool:
    """``cost`` 的每个 kernel 是否搬运 cache 的 :data:`CACHE_MARGIN` 倍或更多。"""
    cache = _cache(run)
    return cache is None or cost.bytes >= CACHE_MARGIN * cache * max(cost.kernels, 1)


def _bandwidth(run: Mapping[str, Any]) -> float | None:
    """测得的内存 roof，前提是 copy 的工作集超出了 cache。"""
    copy = Cost(0, run["ceilings"]["working_set_bytes"], 0)
    return runfile.memory_roof(run) if streams_from_memory(run, copy) else None


def _probe_ids(run: Mapping[str, Any]) -> set[str]:
    """属于上限探针的条目：分轮计时的那些（``rounds_s``）；
    有探针之前的 run 除扫描外没有这样的条目。
    """
    return {e["id"] for e in runfile.results(run) if "rounds_s" in e}


def square_gemms(run: Mapping[str, Any], precision: str) -> list[Mapping[str, Any]]:
    """run 中某一精度计过时的方阵 GEMM（m = k = n），从小到大；只取扫描，不含专门的峰值探针。"""
    probes = _probe_ids(run)
    entries = [
        e
        for e in runfile.results(run, "gemm")
        if e["precision"] == precision
        and e["shape"]["m"] == e["shape"]["k"] == e["shape"]["n"]
        and e["id"] not in probes
    ]
    return sorted(entries, key=lambda e: e["shape"]["n"])


def _gemm_precisions(run: Mapping[str, Any]) -> list[str]:
    return [p for p in run["ceilings"]["peak_flops"] if square_gemms(run, p)]


def _seconds(entry: Mapping[str, Any]) -> float:
    return entry["time"]["median_s"]


def _by_impl(run: Mapping[str, Any], name: str) -> dict[tuple, dict[str, Mapping[str, Any]]]:
    """一个算子计过时的条目，按 (precision, shape) 分组，再按实现索引。"""
    groups: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    for e in runfile.results(run, name):
        key = (e["precision"], tuple(sorted(e["shape"].items())))
        groups.setdefault(key, {})[e["impl"]] = e
    return groups


def _not_measured(claim: str, rule: str, missing: str) -> Check:
    return Check(claim, "not measured", f"{rule} (not measured: {missing})", missing=missing)


def entry_text(entry_id: str) -> str:
    """按读者写法给出条目的 id：算子、精度、shape（实现）。

    Examples
    --------
    >>> entry_text("gemm/bf16/mm/m=512,k=512,n=512")
    'gemm bf16 512x512x512'
    >>> entry_text("adamw/fp32/fused/params=8388608,tensors=8")
    'adamw fp32 2^23 in 8 (fused)'
    """
    name, precision, impl, sizes = entry_id.split("/", 3)
    shape = {k: int(v) for k, v in (part.split("=") for part in sizes.split(","))}
    default = OPERATORS[name].impls[0] if name in OPERATORS else impl
    tail = f" ({impl})" if impl != default else ""
    return f"{name} {precision} {shape_text(name, shape)}{tail}"


def large_gemm_is_compute_bound(run: Mapping[str, Any]) -> Check:
    """每种精度扫描中最大的方阵 GEMM 接近实测峰值。

    峰值来自专门的峰值探针，与扫描分开、分轮计时，所以被判定的条目绝不会就是判定它所用的上限。
    有探针之前的 run 从扫描中取峰值；那时的参照是该精度*其他* GEMM 中最好的一个。
    """
    claim = "Large GEMMs are compute-bound: they run close to the measured peak"
    rule = (
        f"per precision, the largest square GEMM of the sweep reaches >= {NEAR_PEAK:.0%} of "
        "the peak measured by a separate probe (in a run without one, of the best other GEMM) "
        "and its intensity is right of the measured ridge point; inconclusive where the ratio "
        "lies within its own spread of the threshold (half its IQR, the peak's rounds, "
        f"{SPEED_TOLERANCE:.0%})"
    )
    bandwidth = runfile.memory_roof(run)
    precisions = _gemm_precisions(run)
    if not precisions or bandwidth is None:
        return _not_measured(claim, rule, "no GEMM sweep or no bandwidth ceiling")
    probes = _probe_ids(run)
    figures: list[Figure] = []
    orders: list[Order] = []
    seen = 0
    for p in precisions:
        largest = square_gemms(run, p)[-1]
        peak = _peak(run, p)
        others = [
            rates(e)[0]
            for e in runfile.results(run, "gemm")
            if e["precision"] == p and e["id"] != largest["id"]
        ]
        reference = peak if run["ceilings"]["peak_flops"][p]["entry"] in probes else None
        reference = reference or (max(others) if others else None)
        if reference is None or peak is None:
            continue
        seen += 1
        fraction = rates(largest)[0] / reference
        intensity, ridge = model_cost(largest).intensity, peak / bandwidth
        orders += [
            against(fraction, NEAR_PEAK, _noise(largest, ceilings=(_ceiling(run, p),))),
            _holds(intensity >= ridge),
        ]
        label = f"{p} n={largest['shape']['n']}"
        figures += [
            Figure(f"{label}: achieved / peak", fraction, "fraction"),
            Figure(f"{label}: intensity", intensity, "FLOP/B"),
            Figure(f"{p}: ridge point", ridge, "FLOP/B"),
        ]
    if not seen:
        return _not_measured(claim, rule, "no precision with two or more GEMMs timed")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def elementwise_is_memory_bound(run: Mapping[str, Any]) -> Check:
    """add 和 ReLU 以接近 copy 带宽的速度流式读写，只用到峰值 FLOP/s 的一小部分。"""
    claim = "Elementwise operators are memory-bound: bandwidth near copy, FLOP/s far below peak"
    rule = (
        f"the largest add and ReLU per precision reach >= {NEAR_COPY:.0%} of the copy "
        f"bandwidth and <= {TINY_FLOP_FRACTION:.0%} of the peak FLOP/s"
    )
    copy = run["ceilings"]["bandwidth"].get("copy")
    peaks = run["ceilings"]["peak_flops"]
    if copy is None or not peaks or _bandwidth(run) is None:
        return _not_measured(claim, rule, "no copy bandwidth from beyond the cache, or no peak")
    figures: list[Figure] = []
    orders: list[Order] = []
    seen = 0
    for name in names("elementwise"):
        for p in sorted({e["precision"] for e in runfile.results(run, name)}):
            entries = [e for e in runfile.results(run, name) if e["precision"] == p]
            largest = max(entries, key=lambda e: e["shape"]["numel"])
            if not streams_from_memory(run, model_cost(largest)):
                continue
            seen += 1
            flops, bandwidth = rates(largest)
            peak = _peak(run, p) or max(c["value"] for c in peaks.values())
            to_copy, to_peak = bandwidth / copy["value"], flops / peak
            copy_entry = next(e for e in runfile.results(run) if e["id"] == copy["entry"])
            orders += [
                against(to_copy, NEAR_COPY, _noise(largest, copy_entry, ceilings=(copy,))),
                against(to_peak, TINY_FLOP_FRACTION, _noise(largest), above=False),
            ]
            label = f"{name} {p} {shape_text(name, largest['shape'])}"
            figures += [
                Figure(f"{label}: bandwidth", bandwidth, "B/s"),
                Figure(f"{label}: bandwidth / copy", to_copy, "fraction"),
                Figure(f"{label}: FLOP/s / peak", to_peak, "fraction"),
            ]
    if not seen:
        return _not_measured(claim, rule, "no add or ReLU large enough to leave the cache")
    figures.insert(0, Figure("copy: bandwidth", copy["value"], "B/s"))
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def small_gemm_is_far_from_peak(run: Mapping[str, Any]) -> Check:
    """小 GEMM（:data:`~roofline_book.measure.suites.SMALL_GEMM`）离峰值很远。"""
    m, k, n = SMALL_GEMM
    claim = f"A small GEMM ({m}x{k} times {k}x{n}) is far from the peak"
    rule = f"per precision, it reaches <= {FAR_FROM_PEAK:.0%} of the measured peak"
    figures: list[Figure] = []
    orders: list[Order] = []
    for e in runfile.results(run, "gemm"):
        if (e["shape"]["m"], e["shape"]["k"], e["shape"]["n"]) != (m, k, n):
            continue
        peak = _peak(run, e["precision"])
        if peak is None:
            continue
        fraction = rates(e)[0] / peak
        noise = _noise(e, ceilings=(_ceiling(run, e["precision"]),))
        orders.append(against(fraction, FAR_FROM_PEAK, noise, above=False))
        figures += [
            Figure(f"{e['precision']}: achieved", rates(e)[0], "FLOP/s"),
            Figure(f"{e['precision']}: achieved / peak", fraction, "fraction"),
        ]
    if not figures:
        return _not_measured(claim, rule, f"no {m}x{k}x{n} GEMM")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def gemm_rises_with_n(run: Mapping[str, Any]) -> Check:
    """方阵 GEMM 的 FLOP/s 从扫描中最小的尺寸到最大的尺寸递增。"""
    claim = "GEMM throughput rises with n"
    rule = (
        f"per precision, the largest n runs >= {RISE_FACTOR:g}x the smallest n's FLOP/s, "
        "and the best n lies in the larger half of the sweep"
    )
    figures: list[Figure] = []
    orders: list[Order] = []
    seen = 0
    for p in _gemm_precisions(run):
        sweep = square_gemms(run, p)
        if len(sweep) < 3:
            continue
        seen += 1
        flops = [rates(e)[0] for e in sweep]
        best = max(range(len(sweep)), key=flops.__getitem__)
        orders += [
            against(flops[-1] / flops[0], RISE_FACTOR, _noise(sweep[0], sweep[-1])),
            _holds(best >= len(sweep) // 2),
        ]
        figures += [
            Figure(f"{p} n={e['shape']['n']}: achieved", f, "FLOP/s")
            for e, f in zip(sweep, flops, strict=True)
        ]
        figures.append(Figure(f"{p}: largest / smallest", flops[-1] / flops[0], "ratio"))
    if not seen:
        return _not_measured(claim, rule, "no sweep of three or more square GEMMs")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def fused_adamw_is_fastest(run: Mapping[str, Any]) -> Check:
    """每个 AdamW shape 上，时间满足 fused <= foreach <= loop，允许计时误差。"""
    claim = "Fused AdamW is at least as fast as foreach, and foreach as the per-tensor loop"
    rule = (
        f"fused faster than foreach and foreach faster than loop, each beyond both timings' "
        f"interquartile spans and {SPEED_TOLERANCE:.0%}; inconclusive where the spans overlap"
    )
    figures: list[Figure] = []
    orders: list[Order] = []
    seen = 0
    for (precision, shape), impls in _by_impl(run, "adamw").items():
        if not {"loop", "foreach", "fused"} <= impls.keys():
            continue
        seen += 1
        t = {impl: _seconds(impls[impl]) for impl in ("loop", "foreach", "fused")}
        orders += [order(impls["fused"], impls["foreach"]), order(impls["foreach"], impls["loop"])]
        label = f"{precision} {shape_text('adamw', dict(shape))}"
        figures += [Figure(f"{label}: {impl} time", t[impl], "s") for impl in t]
        figures.append(Figure(f"{label}: loop / fused time", t["loop"] / t["fused"], "ratio"))
    if not seen:
        return _not_measured(claim, rule, "no AdamW shape with loop, foreach and fused all timed")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def sdpa_beats_materialized(run: Mapping[str, Any]) -> Check:
    """在最长的序列上，SDPA 比 materialized attention 快，搬运的数据也更少。"""
    claim = "SDPA (FlashAttention) is faster than materialized attention and moves less"
    rule = (
        "at the longest sequence timed both ways, SDPA is faster beyond both timings' "
        f"interquartile spans and {SPEED_TOLERANCE:.0%} (inconclusive where they overlap); "
        "that it moves less rests on the model's bytes, not on a measurement"
    )
    pairs = _by_impl(run, "attention")
    both = [(key, p) for key, p in pairs.items() if {"materialized", "sdpa"} <= p.keys()]
    if not both:
        return _not_measured(claim, rule, "no shape timed both materialized and with SDPA")
    ordered = sorted(both, key=lambda pair: dict(pair[0][1])["seq_q"])
    figures = []
    for (_, shape), p in ordered:
        mat, fl = p["materialized"], p["sdpa"]
        label = f"seq={dict(shape)['seq_q']}"
        figures += [
            Figure(f"{label}: materialized time", _seconds(mat), "s"),
            Figure(f"{label}: sdpa time", _seconds(fl), "s"),
            Figure(f"{label}: materialized / sdpa time", _seconds(mat) / _seconds(fl), "ratio"),
            Figure(
                f"{label}: model bytes materialized / flash",
                model_cost(mat).bytes / model_cost(fl).bytes,
                "ratio",
            ),
        ]
    mat, fl = ordered[-1][1]["materialized"], ordered[-1][1]["sdpa"]  # the longest sequence
    if model_cost(fl).bytes >= model_cost(mat).bytes:
        return Check(claim, "fail", rule, tuple(figures))
    return Check(claim, _verdict_of([order(fl, mat)]), rule, tuple(figures))


def bf16_beats_fp32(run: Mapping[str, Any]) -> Check:
    """在两种精度都测过的最大方阵尺寸上，BF16 GEMM 比 FP32 的快。"""
    claim = "BF16 GEMMs are faster than FP32 GEMMs"
    rule = (
        "at the largest n timed in both, BF16 is faster beyond both timings' interquartile "
        f"spans and {SPEED_TOLERANCE:.0%}; inconclusive where they overlap"
    )
    fp32 = {e["shape"]["n"]: e for e in square_gemms(run, "fp32")}
    bf16 = {e["shape"]["n"]: e for e in square_gemms(run, "bf16")}
    common = sorted(fp32.keys() & bf16.keys())
    if not common:
        return _not_measured(claim, rule, "no square GEMM size timed in both BF16 and FP32")
    n = common[-1]
    t32, t16 = _seconds(fp32[n]), _seconds(bf16[n])
    figures = (
        Figure(f"n={n}: fp32 time", t32, "s"),
        Figure(f"n={n}: bf16 time", t16, "s"),
        Figure(f"n={n}: fp32 / bf16 time", t32 / t16, "ratio"),
    )
    return Check(claim, _verdict_of([order(bf16[n], fp32[n])]), rule, figures)


def roofline_bounds_time(run: Mapping[str, Any]) -> Check:
    """没有条目快过测得上限给出的下界；同时报告预测的误差。

    下界让每个条目受它的工作所用的每种单元的上限约束，也受它的数据必须到达的存储层级约束
    （:func:`roofline_book.measure.predict.bound_seconds`）。
    """
    claim = "The roofline of the measured ceilings bounds every operator's time"
    rule = (
        f"no timed entry runs faster than {1 - BOUND_TOLERANCE:.0%} of the least time the "
        "measured ceilings allow it: its FLOPs at the peak of each unit it uses, its bytes at "
        "the bandwidth of the level its data must reach (DRAM when it streams, the cache "
        "level that holds it otherwise, none where no roof was measured for that level)"
    )
    if runfile.memory_roof(run) is None:
        return _not_measured(claim, rule, "no bandwidth ceiling")
    items = [p for p in predict.predictions(run) if p.bound_s is not None]
    if not items:
        return _not_measured(claim, rule, "no timed operator with a measured peak")
    judged = [(p, p.bound_s) for p in items if p.excluded != "ceiling" and p.bound_s]
    beaten = [p for p, bound in judged if p.measured_s < (1 - BOUND_TOLERANCE) * bound]
    figures = [
        Figure("entries judged", len(judged), "count"),
        Figure("of those, faster than the bound allows", len(beaten), "count"),
    ]
    if judged:
        tightest, bound = max(judged, key=lambda pair: pair[1] / pair[0].measured_s)
        figures.append(
            Figure(
                f"{entry_text(tightest.id)}: tightest bound / measured",
                bound / tightest.measured_s,
                "fraction",
            )
        )
    error = predict.median_error(items)
    if error is not None:
        figures.append(
            Figure("prediction: median |predicted - measured| / measured", error, "fraction")
        )
    return Check(claim, _verdict(not beaten), rule, tuple(figures))


WRITE_ALLOCATE_AGREEMENT = 0.15
"""计入 write-allocate 字节后，最快的带宽探针与最慢的相差在这个比例之内时，三个带宽探针算作一致。"""


def write_allocate_explains_bandwidths(run: Mapping[str, Any]) -> Check:
    """在 CPU 上，计入 write-allocate 读取后，copy、triad 和原地 triad 的带宽趋于一致。"""
    claim = (
        "On this CPU a store to a line not in cache first reads it (write-allocate): counting "
        "those reads, copy, triad and in-place triad move data at the same rate"
    )
    rule = (
        "the three probes' rates with write-allocate bytes counted lie within "
        f"{WRITE_ALLOCATE_AGREEMENT:.0%} of each other, closer than from the model's bytes, "
        "beyond the probes' own round-to-round spread (inconclusive within it)"
    )
    if run["device"]["type"] != "cpu":
        return _not_measured(claim, rule, "not a CPU run")
    rates_ = predict.write_allocate_rates(run)
    if len(rates_) < 3 or not any(
        "write_allocate_bytes" in e for e in runfile.results(run) if e["name"] == "copy"
    ):
        return _not_measured(
            claim, rule, "no copy, triad and in-place triad with write-allocate bytes"
        )
    plain = [r for r, _ in rates_.values()]
    counted = [w for _, w in rates_.values()]
    spread_plain, spread_counted = max(plain) / min(plain) - 1, max(counted) / min(counted) - 1
    figures = []
    for kind, (model, allocated) in rates_.items():
        figures += [
            Figure(f"{kind}: model bytes", model, "B/s"),
            Figure(f"{kind}: with write-allocate", allocated, "B/s"),
        ]
    figures += [
        Figure("probes: spread, model bytes", spread_plain, "fraction"),
        Figure("probes: spread, with write-allocate", spread_counted, "fraction"),
    ]
    noise = max(run["ceilings"]["bandwidth"][k].get("spread", 0.0) for k in rates_)
    if spread_counted >= spread_plain or spread_counted - noise > WRITE_ALLOCATE_AGREEMENT:
        return Check(claim, "fail", rule, tuple(figures))
    ok = spread_counted + noise <= WRITE_ALLOCATE_AGREEMENT
    return Check(claim, "pass" if ok else "inconclusive", rule, tuple(figures))


CHECKS = (
    large_gemm_is_compute_bound,
    elementwise_is_memory_bound,
    small_gemm_is_far_from_peak,
    gemm_rises_with_n,
    fused_adamw_is_fastest,
    sdpa_beats_materialized,
    bf16_beats_fp32,
    roofline_bounds_time,
    write_allocate_explains_bandwidths,
)
"""全部检验，按 :func:`check_claims` 运行它们的顺序。"""


def check_claims(run: Mapping[str, Any] | str | os.PathLike[str]) -> list[Check]:
    """用一次 run 检验本书的每一条结论。

    Parameters
    ----------
    run : Mapping or path
        一个 run（即 :func:`roofline_book.measure.run.run_suite` 的返回值），或
        run file 的路径；路径会被读取并按 schema 校验。mapping 则检查自洽性，
        装了 ``jsonschema`` 时也按 schema 校验。

    Returns
    -------
    list of roofline_book.measure.verdicts.Check
        每条结论一项，顺序与 :data:`CHECKS` 相同。漂移探针判定为不稳定的 run
        （``run["stability"]["stable"]`` 为假）中，没有结论通过或不通过：
        每一条都是无法判定。
    """
    if isinstance(run, (str, os.PathLike)):
        run = runfile.read_run(run)
    else:
        runfile.validate_run(run, require_schema=False)
    checks = [dataclasses.replace(check(run), key=check.__name__) for check in CHECKS]
    if run.get("stability", {}).get("stable") is False:  # the machine changed under the run
        checks = [
            dataclasses.replace(c, verdict="inconclusive", rule=f"{c.rule} (run unstable)")
            if c.verdict in ("pass", "fail")
            else c
            for c in checks
        ]
    return checks


def format_checks(checks: Iterable[Check]) -> str:
    """把检验清单写成文本：每条结论的判定、规则和数字，最后是汇总。"""
    checks = list(checks)
    if not all(isinstance(c, Check) for c in checks):
        raise TypeError("checks must be Check objects, as check_claims returns them")
    tally = ", ".join(f"{sum(c.verdict == v for c in checks)} {v}" for v in VERDICTS)
    return "\n".join([*(str(c) for c in checks), f"claims: {tally}"])
