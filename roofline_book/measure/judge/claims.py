"""本书的定性结论，用一次实测的 run 来检验。

每条结论成为一个 :class:`~roofline_book.measure.judge.verdicts.Check`：它所依据的数字（取自 run
file，见
:mod:`roofline_book.measure.runs.runfile`），以及判定：``"pass"``、``"fail"``、在噪声之内时为
``"inconclusive"``，或 run 中缺少这条结论所需的数据时为 ``"not measured"``。阈值就是下面那些
具名常量；噪声是测得的（:func:`~roofline_book.measure.judge.verdicts.tolerance`、各计时的四分位距、
各上限各轮之间的离散），改动其中一个，所有判定随之改变。

这些结论是：大 GEMM 跑得接近其他 GEMM 测得的峰值；elementwise 算子从内存流过时带宽接近 copy；
小 GEMM 离峰值很远；GEMM 吞吐随 ``n`` 增大而上升；fused AdamW 比 foreach 快，foreach 比 loop
快；SDPA 比 materialized attention 快；BF16 GEMM 比 FP32 的快；没有算子快过由测得上限画出的
roofline；CPU 上 write-allocate 解释了三种带宽探针的差别。

结论 8 与 9 在 :mod:`roofline_book.measure.judge.roofclaims` 中。上限是 run 在那个单元上见过的最好
水平（:func:`roofline_book.measure.judge.ceilings.peak`）：扫描中的
GEMM 比峰值探针更快时，峰值取它，判定与它有关的结论会列出这个条目。

``python -m roofline_book bench`` 在 run 结束后打印这份清单；:func:`check_claims`
可对任意 run file 给出它。
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from ..._base.validate import InvalidArgumentType
from ...ops import Cost
from ..bench.cases import names
from ..bench.suites import CACHE_MARGIN, SMALL_GEMM
from ..runs import runfile
from ..runs.records import Entry, Run
from . import ceilings
from .roofclaims import (
    _TOLERANCE_RULE,
    _not_measured,
    _raised,
    _spread,
    roofline_bounds_time,
    write_allocate_explains_bandwidths,
)
from .roofclaims import WRITE_ALLOCATE_AGREEMENT as WRITE_ALLOCATE_AGREEMENT
from .roofclaims import bound_seconds as bound_seconds
from .verdicts import (
    VERDICTS,
    Check,
    Figure,
    Order,
    Ref,
    _holds,
    _noise,
    _verdict_of,
    against,
    order,
    tolerance,
)

NEAR_PEAK = 0.8
"""GEMM 达到实测峰值的这个比例或更多时，算作“接近峰值”。"""

NEAR_COPY = 0.7
"""elementwise 算子的带宽（模型字节数除以时间）达到实测 copy 带宽的这个比例或更多时，算作
“受限于内存”：它的时间至少有这么多是搬运数据所必需的。
"""

FAR_FROM_PEAK = 0.25
"""小 GEMM 为峰值的这个比例或更少时，算作“离峰值很远”。"""

RISE_FACTOR = 2.0
"""最大尺寸的 FLOP/s 至少是最小尺寸的这么多倍（且最好的尺寸在上半部分）时，GEMM 吞吐算作
“随 n 上升”。
"""


def streams_from_memory(run: Run, cost: Cost) -> bool:
    """``cost`` 的每个 kernel 是否搬运 cache 的 :data:`CACHE_MARGIN` 倍或更多。"""
    cache = run.device.cache_bytes
    return cache is None or cost.bytes >= CACHE_MARGIN * cache * max(cost.kernels, 1)


def _bandwidth(run: Run) -> float | None:
    """测得的内存 roof，前提是 copy 的工作集超出了 cache。"""
    copy = Cost(0, run.ceilings.working_set_bytes, 0)
    return run.memory_roof if streams_from_memory(run, copy) else None


def _probe_ids(run: Run) -> set[str]:
    """属于上限探针的条目：分轮计时的那些（``rounds_s``）；
    有探针之前的 run 除扫描外没有这样的条目。
    """
    return {e.id for e in run.results() if e.rounds_s}


def square_gemms(run: Run, precision: str) -> list[Entry]:
    """run 中某一精度计过时的方阵 GEMM（m = k = n），从小到大；只取扫描，不含专门的峰值探针。"""
    probes = _probe_ids(run)
    return sorted(
        (
            e
            for e in run.results("gemm")
            if e.precision == precision
            and e.shape["m"] == e.shape["k"] == e.shape["n"]
            and e.id not in probes
        ),
        key=lambda e: e.shape["n"],
    )


def _gemm_precisions(run: Run) -> list[str]:
    return [p for p in run.ceilings.peak_flops if square_gemms(run, p)]


def _by_impl(run: Run, name: str) -> dict[tuple, dict[str, Entry]]:
    """一个算子计过时的条目，按 (precision, shape) 分组，再按实现索引。"""
    groups: dict[tuple, dict[str, Entry]] = {}
    for e in run.results(name):
        key = (e.precision, tuple(sorted(e.shape.items())))
        groups.setdefault(key, {})[e.impl] = e
    return groups


def large_gemm_is_compute_bound(run: Run) -> Check:
    """每种精度扫描中最大的方阵 GEMM 接近实测峰值，且在 ridge point 右侧。

    参照是峰值探针与该精度*其他* GEMM 中最好的一个，所以被判定的条目绝不会就是判定它所用的上限。
    这个参照本身也是 GEMM：结论只说明最大的 GEMM 与这个库最好的表现相当，说明不了库离硬件的峰值
    多远，一个各个尺寸都同样慢的库也会通过。
    """
    claim = "Large GEMMs are compute-bound: they run close to the peak the run's other GEMMs reach"
    rule = (
        f"per precision, the largest square GEMM of the sweep reaches >= {NEAR_PEAK:.0%} of the "
        "best rate of the peak probe and the precision's other GEMMs, and its intensity is right "
        "of the measured ridge point; inconclusive where the ratio lies within its own spread of "
        f"the threshold (half its IQR, the peak's rounds, {_TOLERANCE_RULE}). The reference is "
        "itself a GEMM: this shows the largest GEMM is as fast as the library's best, not that the "
        "library reaches the hardware's peak (a uniformly slow library passes)"
    )
    bandwidth = run.memory_roof
    precisions = _gemm_precisions(run)
    if not precisions or bandwidth is None:
        return _not_measured(claim, rule, "gemm_sweep_or_bandwidth")
    tol = tolerance(run)
    figures: list[Figure] = []
    orders: list[Order] = []
    seen = []
    for p in precisions:
        largest = square_gemms(run, p)[-1]
        reference = ceilings.peak(run, p, excluding=largest.id)
        best = ceilings.peak(run, p)
        if reference is None or best is None:
            continue
        seen.append(p)
        fraction = largest.rates[0] / reference.value
        intensity, ridge = largest.cost.intensity, best.value / bandwidth
        spread = _spread(run.ceilings.peak_flops.get(p))
        noise = _noise(largest.timed, spreads=(spread,), tolerance=tol)
        orders += [against(fraction, NEAR_PEAK, noise), _holds(intensity >= ridge)]
        figures += [
            Figure(largest, "achieved_over_peak", fraction, "fraction"),
            Figure(largest, "intensity", intensity, "FLOP/B"),
            Figure(Ref("precision", p), "ridge_point", ridge, "FLOP/B"),
        ]
    if not seen:
        return _not_measured(claim, rule, "gemm_reference")
    figures += _raised(run, seen)
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def elementwise_is_memory_bound(run: Run) -> Check:
    """add 和 ReLU 从内存流过时，带宽接近 copy：它们的时间由搬运的字节决定。

    只判带宽。它们的 FLOP/s 与矩阵单元峰值之比无论机器怎样都远低于任何阈值（算术强度远在 ridge
    point 左侧），判它什么也说明不了。
    """
    claim = (
        "Elementwise operators are memory-bound: streaming from memory, they move data close to "
        "the copy bandwidth"
    )
    rule = (
        f"the largest add and ReLU per precision, moving >= {CACHE_MARGIN}x the last-level cache, "
        f"reach >= {NEAR_COPY:.0%} of the copy bandwidth; inconclusive where the ratio lies within "
        f"its spread of the threshold (half the IQRs, the copy's rounds, {_TOLERANCE_RULE})"
    )
    copy = run.ceilings.bandwidth.get("copy")
    if copy is None or _bandwidth(run) is None:
        return _not_measured(claim, rule, "streaming_copy")
    tol = tolerance(run)
    copy_time = run.ceiling_entry(copy).timed
    figures: list[Figure] = [Figure(Ref("ceiling", "copy"), "bandwidth", copy.value, "B/s")]
    orders: list[Order] = []
    for name in names("elementwise"):
        for p in sorted({e.precision for e in run.results(name)}):
            largest = max(
                (e for e in run.results(name) if e.precision == p), key=lambda e: e.shape["numel"]
            )
            if not streams_from_memory(run, largest.cost):
                continue
            bandwidth = largest.rates[1]
            to_copy = bandwidth / copy.value
            noise = _noise(largest.timed, copy_time, spreads=(copy.spread,), tolerance=tol)
            orders.append(against(to_copy, NEAR_COPY, noise))
            figures += [
                Figure(largest, "bandwidth", bandwidth, "B/s"),
                Figure(largest, "bandwidth_over_copy", to_copy, "fraction"),
            ]
    if not orders:
        return _not_measured(claim, rule, "streaming_elementwise")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def small_gemm_is_far_from_peak(run: Run) -> Check:
    """小 GEMM（:data:`~roofline_book.measure.bench.suites.SMALL_GEMM`）离峰值很远。"""
    m, k, n = SMALL_GEMM
    claim = f"A small GEMM ({m}x{k} times {k}x{n}) is far from the peak"
    rule = (
        f"per precision, it reaches <= {FAR_FROM_PEAK:.0%} of the measured peak (the best of the "
        "peak probe and the other GEMMs); inconclusive within its spread of the threshold"
    )
    tol = tolerance(run)
    figures: list[Figure] = []
    orders: list[Order] = []
    for e in run.results("gemm"):
        if (e.shape["m"], e.shape["k"], e.shape["n"]) != (m, k, n):
            continue
        best = ceilings.peak(run, e.precision, excluding=e.id)
        if best is None:
            continue
        fraction = e.rates[0] / best.value
        spread = _spread(run.ceilings.peak_flops.get(e.precision))
        noise = _noise(e.timed, spreads=(spread,), tolerance=tol)
        orders.append(against(fraction, FAR_FROM_PEAK, noise, above=False))
        figures += [
            Figure(e, "achieved", e.rates[0], "FLOP/s"),
            Figure(e, "achieved_over_peak", fraction, "fraction"),
        ]
    if not figures:
        return _not_measured(claim, rule, "small_gemm")
    figures += _raised(
        run, sorted({f.subject.precision for f in figures if isinstance(f.subject, Entry)})
    )
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def gemm_rises_with_n(run: Run) -> Check:
    """方阵 GEMM 的 FLOP/s 从扫描中最小的尺寸到最大的尺寸递增。"""
    claim = "GEMM throughput rises with n"
    rule = (
        f"per precision, the largest n runs >= {RISE_FACTOR:g}x the smallest n's FLOP/s, "
        "and the best n lies in the larger half of the sweep; inconclusive where the factor lies "
        f"within the two timings' spread of the threshold (half their IQRs, {_TOLERANCE_RULE})"
    )
    tol = tolerance(run)
    figures: list[Figure] = []
    orders: list[Order] = []
    for p in _gemm_precisions(run):
        sweep = square_gemms(run, p)
        if len(sweep) < 3:
            continue
        flops = [e.rates[0] for e in sweep]
        best = max(range(len(sweep)), key=flops.__getitem__)
        noise = _noise(sweep[0].timed, sweep[-1].timed, tolerance=tol)
        orders += [
            against(flops[-1] / flops[0], RISE_FACTOR, noise),
            _holds(best >= len(sweep) // 2),
        ]
        figures += [Figure(e, "achieved", f, "FLOP/s") for e, f in zip(sweep, flops, strict=True)]
        figures.append(
            Figure(Ref("precision", p), "largest_over_smallest", flops[-1] / flops[0], "ratio")
        )
    if not orders:
        return _not_measured(claim, rule, "gemm_sweep")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def fused_adamw_is_fastest(run: Run) -> Check:
    """每个 AdamW shape 上，fused 比 foreach 快，foreach 比逐张量的 loop 快，都超出计时的离散。"""
    claim = "Fused AdamW is faster than foreach, and foreach faster than the per-tensor loop"
    rule = (
        "fused faster than foreach and foreach faster than loop, each beyond both timings' "
        f"interquartile spans and {_TOLERANCE_RULE}; inconclusive where they overlap"
    )
    tol = tolerance(run)
    figures: list[Figure] = []
    orders: list[Order] = []
    for impls in _by_impl(run, "adamw").values():
        if not {"loop", "foreach", "fused"} <= impls.keys():
            continue
        loop, foreach, fused = impls["loop"], impls["foreach"], impls["fused"]
        orders += [order(fused.timed, foreach.timed, tol), order(foreach.timed, loop.timed, tol)]
        figures += [Figure(e, "time", e.median_s, "s") for e in (loop, foreach, fused)]
        ratio = loop.median_s / fused.median_s
        figures.append(Figure(fused, "loop_over_fused_time", ratio, "ratio"))
    if not orders:
        return _not_measured(claim, rule, "adamw_impls")
    return Check(claim, _verdict_of(orders), rule, tuple(figures))


def sdpa_beats_materialized(run: Run) -> Check:
    """在最长的序列上，SDPA 比 materialized attention 快。

    两者的模型字节数之比列在旁边供读者参考；它是模型的数，不是测量，不参与判定。
    """
    claim = "SDPA (FlashAttention) is faster than materialized attention"
    rule = (
        "at the longest sequence timed both ways, SDPA is faster beyond both timings' "
        f"interquartile spans and {_TOLERANCE_RULE} (inconclusive where they overlap); "
        "the ratio of the model's bytes is shown, not judged: it is not a measurement"
    )
    pairs = [p for p in _by_impl(run, "attention").values() if {"materialized", "sdpa"} <= p.keys()]
    if not pairs:
        return _not_measured(claim, rule, "attention_impls")
    pairs.sort(key=lambda p: p["sdpa"].shape["seq_q"])
    figures = []
    for p in pairs:
        mat, fl = p["materialized"], p["sdpa"]
        figures += [
            Figure(mat, "time", mat.median_s, "s"),
            Figure(fl, "time", fl.median_s, "s"),
            Figure(fl, "materialized_over_sdpa_time", mat.median_s / fl.median_s, "ratio"),
            Figure(
                fl, "model_bytes_materialized_over_sdpa", mat.cost.bytes / fl.cost.bytes, "ratio"
            ),
        ]
    mat, fl = pairs[-1]["materialized"], pairs[-1]["sdpa"]  # the longest sequence
    verdict = _verdict_of([order(fl.timed, mat.timed, tolerance(run))])
    return Check(claim, verdict, rule, tuple(figures))


def bf16_beats_fp32(run: Run) -> Check:
    """在两种精度都测过的最大方阵尺寸上，BF16 GEMM 比 FP32 的快。"""
    claim = "BF16 GEMMs are faster than FP32 GEMMs"
    rule = (
        "at the largest n timed in both, BF16 is faster beyond both timings' interquartile "
        f"spans and {_TOLERANCE_RULE}; inconclusive where they overlap"
    )
    fp32 = {e.shape["n"]: e for e in square_gemms(run, "fp32")}
    bf16 = {e.shape["n"]: e for e in square_gemms(run, "bf16")}
    common = sorted(fp32.keys() & bf16.keys())
    if not common:
        return _not_measured(claim, rule, "bf16_fp32_pair")
    a, b = fp32[common[-1]], bf16[common[-1]]
    figures = (
        Figure(a, "time", a.median_s, "s"),
        Figure(b, "time", b.median_s, "s"),
        Figure(b, "fp32_over_bf16_time", a.median_s / b.median_s, "ratio"),
    )
    return Check(claim, _verdict_of([order(b.timed, a.timed, tolerance(run))]), rule, figures)


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


def check_claims(run: Run | str | os.PathLike[str]) -> list[Check]:
    """用一次 run 检验本书的每一条结论。

    Parameters
    ----------
    run : roofline_book.measure.runs.records.Run or path
        一个 :class:`~roofline_book.measure.runs.records.Run` （例如
        :func:`roofline_book.measure.run.run_suite` 的返回值），或 run file 的路径，会被读取
        并按 schema 校验。

    Returns
    -------
    list of roofline_book.measure.judge.verdicts.Check
        每条结论一项，顺序与 :data:`CHECKS` 相同。哨兵测得机器在 run 中的变化超过
        :data:`~roofline_book.measure.judge.verdicts.SPEED_TOLERANCE` 时（run
        不稳定），每个比较的余量
        放宽到这个变化（:func:`~roofline_book.measure.judge.verdicts.tolerance`）：差别比它小的比较无法判定。
    """
    if isinstance(run, (str, os.PathLike)):
        run = runfile.load_run(run)
    elif not isinstance(run, Run):
        raise InvalidArgumentType("run", f"must be a Run or a path, got {type(run).__name__}")
    return [dataclasses.replace(check(run), key=check.__name__) for check in CHECKS]


def format_checks(checks: Iterable[Check]) -> str:
    """把检验清单写成文本：每条结论的判定、规则和数字，最后是汇总。"""
    checks = list(checks)
    if not all(isinstance(c, Check) for c in checks):
        raise TypeError("checks must be Check objects, as check_claims returns them")
    tally = ", ".join(f"{sum(c.verdict == v for c in checks)} {v}" for v in VERDICTS)
    return "\n".join([*(str(c) for c in checks), f"claims: {tally}"])
