"""由探针与哨兵的条目得出一次 run 的上限与稳定性。

探针（:func:`roofline_book.measure.bench.suites.probes`）分轮交替计时；每个上限取其探针最好的一轮，
旁边记下各轮的离散程度。哨兵在各个算子 case 之间计时，说明机器在整个 run 中是否保持不变。

上限是这次 run 在那个单元上见过的最好水平：扫描中的某个 GEMM 比峰值探针还快时，矩阵单元的峰值
取它（:func:`peak`，:func:`of_run` 给出的上限就用它），判定它的结论会写明这一点。
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ...roofline.bounds import Ceilings, Level, outward_floor
from ..bench.registry import Case
from ..runs.records import Entry, LevelInversion, Run
from ..runs.runparts import CacheCeiling, Ceiling, MeasuredCeilings, Stability
from .verdicts import SPEED_TOLERANCE


def _spread(entry: Entry) -> float:
    """一个条目各轮中位数的 ``max / min - 1`` （只有一轮时为 0）。"""
    rounds = entry.rounds_s or (entry.median_s,)
    return max(rounds) / min(rounds) - 1


def _ceiling(entry: Entry, which: int) -> Ceiling:
    return Ceiling(value=entry.rates[which], entry=entry.id, spread=_spread(entry))


def record(
    entries: Sequence[Entry],
    sets: Mapping[str, Sequence[Case]],
    levels: Mapping[str, tuple[int, Case]] | None = None,
) -> MeasuredCeilings:
    """由各探针的条目得出 run 的 ``ceilings``。

    Parameters
    ----------
    entries : sequence of roofline_book.measure.runs.records.Entry
        探针的条目，即 :func:`roofline_book.measure.run.measure_rounds` 的返回值。
    sets : mapping
        按用途分组的探针，即 :func:`~roofline_book.measure.bench.suites.probes` 的返回值。
    levels : mapping, optional
        测过的 cache 层级：名称到（字节数，copy case），即
        :func:`~roofline_book.measure.bench.suites.cache_probes` 给出的内容。

    Returns
    -------
    roofline_book.measure.runs.runparts.MeasuredCeilings
        每种精度的 ``peak_flops`` （该精度各峰值 GEMM 中最高的速率），每种方式的
        ``bandwidth`` （copy、triad、原地 triad：模型字节数除以时间），
        ``working_set_bytes`` （copy 触及的数据量）；CPU 上还有每个层级的
        ``cache_bandwidth`` （数据留在该层的 copy），附带工作集与 cache 大小，
        以及每种精度的 ``vector_flops`` （L2 之内的 add：向量单元做 elementwise
        运算的速率）。每个上限都记下它来自哪个条目，以及各轮之间的离散程度。
    """
    by_id = {e.id: e for e in entries if e.ok}
    peaks: dict[str, Ceiling] = {}
    for c in sets["peak"]:  # the best of a precision's peak probes
        if c.id in by_id and (
            c.precision not in peaks or by_id[c.id].rates[0] > peaks[c.precision].value
        ):
            peaks[c.precision] = _ceiling(by_id[c.id], 0)
    found = {}
    for level, (size, case) in (levels or {}).items():
        if case.id in by_id:
            ceiling = _ceiling(by_id[case.id], 1)
            found[level] = CacheCeiling(
                value=ceiling.value,
                entry=ceiling.entry,
                spread=ceiling.spread,
                working_set_bytes=case.cost.bytes,
                cache_bytes=size,
            )
    return MeasuredCeilings(
        peak_flops=peaks,
        bandwidth={c.name: _ceiling(by_id[c.id], 1) for c in sets["bandwidth"] if c.id in by_id},
        working_set_bytes=sets["bandwidth"][0].cost.bytes,
        vector_flops={
            c.precision: _ceiling(by_id[c.id], 0) for c in sets.get("vector", ()) if c.id in by_id
        },
        cache_bandwidth=found,
    )


def _drift(entry: Entry) -> float:
    """最后一轮的中位数除以前面各轮中最好的一轮（1 表示没有变化）。"""
    *earlier, last = entry.rounds_s or ()
    return last / min(earlier)


def stability(
    probe: str,
    checkpoints: Sequence[float],
    probes: Sequence[Entry] = (),
    judged: Collection[str] = (),
) -> Stability | None:
    """run 的 ``stability`` 记录。

    哨兵各检查点之间的离散（``max / min - 1``）不超过判定所用的计时余量
    :data:`~roofline_book.measure.judge.verdicts.SPEED_TOLERANCE` 时，run
    记为稳定（``stable``）；超过时，
    判定把每个比较的余量放宽到这个离散（:func:`roofline_book.measure.judge.verdicts.tolerance`），而不是
    另用一个更宽的阈值。每个检查点取哨兵最快的样本，所以短暂的停顿（它会加大各 case 自身的离散）
    不会移动它，而持续的变化会：时钟变慢、有进程共用这个核、第二个线程在等一个忙碌的线程。

    Parameters
    ----------
    probe : str
        哨兵条目的 id。
    checkpoints : sequence of float
        哨兵在每个检查点的时间（秒）。
    probes : sequence of roofline_book.measure.runs.records.Entry
        上限探针的条目，含最后一轮。
    judged : Collection of str
        记录漂移的探针（峰值 GEMM 和 DRAM 带宽探针）：其中最大的漂移记为
        ``ceiling_drift``，供读者参考；它不决定 ``stable``，因为各项上限取的是
        case 前后各轮中最好的一轮（在这台虚拟机上，即使机器空闲，BF16 峰值 GEMM
        单独一轮的结果也能相差 2.7 倍）。

    Returns
    -------
    roofline_book.measure.runs.runparts.Stability or None
        少于两个检查点时为 None。

    Examples
    --------
    >>> r = stability("copy", [1.0, 1.02, 0.99, 1.04])
    >>> round(r.spread, 3), r.stable, r.drift
    (0.051, False, 1.04)
    >>> stability("copy", [1.0, 1.03, 0.99]).stable
    True
    >>> stability("copy", [1.0]) is None
    True
    """
    if len(checkpoints) < 2:
        return None
    first, last = checkpoints[0], checkpoints[-1]
    spread = max(checkpoints) / min(checkpoints) - 1
    drifts = [_drift(e) for e in probes if e.ok and len(e.rounds_s or ()) >= 2 and e.id in judged]
    return Stability(
        probe=probe,
        first_s=first,
        last_s=last,
        drift=last / first,
        checkpoints_s=tuple(checkpoints),
        spread=spread,
        stable=spread <= SPEED_TOLERANCE,
        ceiling_drift=max(drifts, key=lambda d: abs(d - 1)) if drifts else None,
    )


@dataclass(frozen=True)
class Peak:
    """一种精度下这次 run 在矩阵单元上见过的最高 FLOP/s。

    Attributes
    ----------
    value : float
        峰值（FLOP/s）：记录的上限（峰值探针最好的一轮），或比它更快的 GEMM 的速率。
    entry : str
        达到 ``value`` 的条目的 id。
    probe : float
        run file 记录的上限（FLOP/s）。
    spread : float
        峰值探针各轮之间的离散（``max / min - 1``）。
    """

    value: float
    entry: str
    probe: float
    spread: float

    @property
    def raised(self) -> bool:
        """扫描中的某个条目是否比峰值探针更快，使上限取了它。"""
        return self.value > self.probe


def peak(run: Run, precision: str, *, excluding: str = "") -> Peak | None:
    """``precision`` 的矩阵单元峰值：记录的上限，与 run 中该精度每个计时的 GEMM 中最快的一个。

    Parameters
    ----------
    run : roofline_book.measure.runs.records.Run
    precision : str
    excluding : str, optional
        不参与的条目 id：判定一个条目时，它的参照不能就是它自己。

    Returns
    -------
    Peak or None
        该精度没有记录峰值、或除 ``excluding`` 之外没有 GEMM 时为 None。

    Examples
    --------
    >>> import dataclasses
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> run = load_run("tests/data/fixture-cpu-pass.json")   # its FP32 peak: the 1024^3 GEMM
    >>> peak(run, "fp32").entry, peak(run, "fp32").raised
    ('gemm/fp32/mm/m=1024,k=1024,n=1024', False)
    >>> peak(run, "fp32", excluding="gemm/fp32/mm/m=1024,k=1024,n=1024").entry
    'gemm/fp32/mm/m=512,k=512,n=512'
    >>> slow = run.entry("gemm/fp32/mm/m=512,k=512,n=512")   # as if the probe: 2^28 FLOP in 3 ms
    >>> low = Ceiling(value=slow.rates[0], entry=slow.id)
    >>> ceilings = dataclasses.replace(run.ceilings, peak_flops={"fp32": low})
    >>> p = peak(dataclasses.replace(run, ceilings=ceilings), "fp32")
    >>> round(p.value / p.probe, 3), p.raised     # 2^31 FLOP in 20 ms against 2^28 in 3 ms
    (1.2, True)
    """
    recorded = run.ceilings.peak_flops.get(precision)
    if recorded is None:
        return None
    candidates = [] if recorded.entry == excluding else [(recorded.value, recorded.entry)]
    candidates += [
        (e.rates[0], e.id)
        for e in run.results("gemm")
        if e.precision == precision and e.id != excluding
    ]
    if not candidates:
        return None
    value, entry = max(candidates)
    return Peak(value, entry, recorded.value, recorded.spread or 0.0)


def _traffic_rate(entry: Entry) -> float:
    """条目按模型字节数加上 write-allocate 字节数算出的速率（byte/s）：CPU 搬运的全部字节。"""
    return (entry.cost.bytes + (entry.write_allocate_bytes or 0)) / entry.median_s


def _typical_rate(entry: Entry) -> float:
    """一个峰值探针各轮中位数的中位数对应的 FLOP/s：单元在 run 期间通常的速率。"""
    return entry.cost.flops / statistics.median(entry.rounds_s or [entry.median_s])


def of_run(run: Run, *, typical: bool = False) -> Ceilings:
    """一次 run 测得的各项上限，写成目录设备所给的同一种
    :class:`~roofline_book.roofline.bounds.Ceilings`。

    - **矩阵单元**：每种精度取 :func:`~roofline_book.measure.judge.ceilings.peak`：峰值探针最好的
      一轮，以及扫描中每个 GEMM 实际做到的 FLOP/s 中更高的一个。测得的上限是 run 在这个单元上见过
      的最好水平的上界，扫描中的 GEMM 跑赢探针时就取它（``sources`` 记下是哪个条目）。
      ``typical=True`` 时取探针各轮的中位数（预测用它：单元在各 case 运行时通常的速率）。
    - **向量单元与特殊函数**：run 没有测 lane 速率；取 FP32 峰值的 FLOP/s，当作每秒 lane slot 数。
      FP32 GEMM 与 elementwise 运算在同样的 FMA 单元上运行，一个 FMA 占一个 slot、计 2 FLOP，所以
      这个数是 lane 速率的 2 倍，下界仍是下界。
    - **存储层级**：由内向外，先是 run 报告的各级 cache（测过 roof 的带宽取其 copy 的速率，计入
      write-allocate 字节；没测过的没有带宽），然后是主存：CPU 为 ``"dram"``，取带宽探针中最高的
      速率（计入 write-allocate 字节），GPU 为 ``"hbm"``。没有报告各级 cache 的 run 取
      ``cache_bytes`` 为 L2。一级测得比外面的一级还慢时（忙碌的机器上），它的 roof 取外面那一级的
      （:func:`roofline_book.roofline.bounds.outward_floor`；:func:`inversions` 列出这些层级）。

    Parameters
    ----------
    run : roofline_book.measure.runs.records.Run
        例如 :func:`~roofline_book.measure.runs.runfile.load_run` 给出的 run。

    Raises
    ------
    ValueError
        run 没有测出任何带宽。

    Examples
    --------
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> roofs = of_run(load_run("tests/data/fixture-cpu-pass.json"))
    >>> [level.name for level in roofs.levels], round(roofs.memory.bandwidth / 1e9, 1)
    (['l2', 'dram'], 32.2)
    """
    measured = run.ceilings
    by_id = {e.id: e for e in run.results()}
    rates: dict[tuple[str, str], float] = {}
    sources: dict[tuple[str, str], str] = {}
    for precision, c in measured.peak_flops.items():
        probe, best = by_id.get(c.entry), peak(run, precision)
        if typical and probe:
            rates["matrix", precision], sources["matrix", precision] = _typical_rate(probe), c.entry
        elif best is not None:  # a GEMM of the sweep may have run faster than the peak probe
            rates["matrix", precision], sources["matrix", precision] = best.value, best.entry
    lanes = rates.get(("matrix", "fp32"))
    if lanes is not None:
        for unit in ("vector", "special"):
            for precision in {p for _, p in list(rates)}:
                rates[unit, precision], sources[unit, precision] = lanes, sources["matrix", "fp32"]
    return Ceilings(
        f"{run.device.name} (measured {run.date})", rates, outward_floor(_levels(run)), sources
    )


def _levels(run: Run) -> tuple[Level, ...]:
    """run 测得的各层级，由内向外，照测得的带宽（未经
    :func:`~roofline_book.roofline.bounds.outward_floor`）。"""
    measured = run.ceilings
    by_id = {e.id: e for e in run.results()}
    cpu = run.device.type == "cpu"
    streams = [by_id[c.entry] for c in measured.bandwidth.values() if c.entry in by_id]
    if cpu and streams:
        memory = max(_traffic_rate(e) for e in streams)
    else:
        if not measured.bandwidth:
            raise ValueError("run: the ceilings hold no measured bandwidth")
        memory = max(c.value for c in measured.bandwidth.values())
    probed = {
        name.lower(): _traffic_rate(by_id[c.entry]) if c.entry in by_id else c.value
        for name, c in measured.cache_bandwidth.items()
    }
    caches = dict(run.device.caches) or (
        {"L2": run.device.cache_bytes} if run.device.cache_bytes else {}
    )
    levels = [
        Level(name.lower(), probed.get(name.lower()), size)
        for name, size in sorted(caches.items(), key=lambda item: item[1])
    ]
    levels.append(Level("dram" if cpu else "hbm", memory))
    return tuple(levels)


def inversions(run: Run) -> tuple[LevelInversion, ...]:
    """测得比它外面某一级还慢的层级：每个这样的层级，与它外面测得最快的一级。

    数据放在近处，至少能像从更远的一级那样读到，所以这只能是测量出了问题：测它的那几轮里机器
    被别的任务占用。:func:`of_run` 对这样的层级取外面那一级的带宽，run 把它记在 ``stability``
    中（:class:`~roofline_book.measure.runs.runparts.Stability` 的 ``inverted_levels``）。

    Examples
    --------
    >>> from roofline_book.measure.runs.runfile import load_run
    >>> inversions(load_run("tests/data/fixture-cpu-pass.json"))  # its L2 has no roof
    ()
    """
    levels = _levels(run)
    found = []
    for i, level in enumerate(levels[:-1]):
        outer = [lv for lv in levels[i + 1 :] if lv.bandwidth is not None]
        if level.bandwidth is None or not outer:
            continue
        fastest = max(outer, key=lambda lv: lv.bandwidth or 0.0)
        if fastest.bandwidth is not None and fastest.bandwidth > level.bandwidth:
            found.append(
                LevelInversion(
                    level=level.name,
                    bandwidth=level.bandwidth,
                    outer=fastest.name,
                    outer_bandwidth=fastest.bandwidth,
                )
            )
    return tuple(found)
