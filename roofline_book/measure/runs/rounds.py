"""检查一次、再分轮交替计时一组 case，得到它们在 run 中的条目。

计时本身在 :mod:`roofline_book.measure.bench.timing`；一次 run 怎样安排探针、case 与哨兵，见
:func:`roofline_book.measure.run.run_suite`。
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection
from typing import Any

from ..._base import validate as _validate
from ...units import si
from ..bench import machine
from ..bench.cases import is_out_of_memory
from ..bench.registry import Case, Incorrect, Prepared, Unsupported
from ..bench.timing import Timing, time_cpu, time_cuda
from .records import Check, Entry, Time

MEMORY_HEADROOM = 0.5
"""case 的 tensor 要占用设备空闲内存的这个比例以上时跳过它：在 Linux 上，过量申请的 CPU 内存
会招来 OOM killer，而不是抛出异常。
"""


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _entry(case: Case, device) -> Entry:
    """一个 case 在 run file 中的条目，尚未检查也未计时：模型，CPU 上还有 write-allocate 字节数和
    实现实际运行的内容。
    """
    if not isinstance(case, Case):
        kind = type(case).__name__
        raise TypeError(f"case must be a roofline_book.measure.bench.registry.Case, got {kind}")
    cpu = device.type == "cpu"
    return Entry(
        id=case.id,
        name=case.name,
        shape=dict(case.shape),
        precision=case.precision,
        impl=case.impl,
        status="ok",
        cost=case.cost,
        write_allocate_bytes=(case.allocate_bytes or None) if cpu else None,
        implementation=case.implementation if cpu else None,
    )


def _not_run(entry: Entry, exc: BaseException) -> Entry:
    """运行时抛出异常的 case 的条目。"""
    if isinstance(exc, Unsupported):
        return dataclasses.replace(entry, status="skipped", reason=str(exc))
    if isinstance(exc, Incorrect):
        return dataclasses.replace(entry, status="failed", reason=f"wrong result: {exc}")
    text = str(exc).strip()
    first_line = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
    if is_out_of_memory(exc):
        return dataclasses.replace(entry, status="skipped", reason=f"out of memory: {first_line}")
    return dataclasses.replace(entry, status="failed", reason=f"error: {first_line}")


def _too_large(case: Case, device, taken: int = 0) -> str | None:
    """``case`` 因内存而必须跳过的原因（已占用 ``taken`` 字节）；不必跳过时为 None。"""
    available = machine.available_memory(device)
    if available is None or taken + case.footprint <= MEMORY_HEADROOM * (available + taken):
        return None
    return (
        f"needs about {si(case.footprint, 'B')}, more than {MEMORY_HEADROOM:.0%} "
        f"of the {si(available, 'B')} free"
    )


def timer_for(device, min_run_time: float, flush, case: Case, *, probe: bool = False):
    flushed = device.type == "cuda" and flush is not None and case.memory_bound
    if device.type == "cuda":
        return (
            lambda fn: time_cuda(fn, min_run_time=min_run_time, flush=flush if flushed else None)
        ), flushed
    if probe:  # rounds absorb the noise: no longer round
        return (
            lambda fn: time_cpu(fn, min_run_time=min_run_time, min_samples=3, settle=False)
        ), flushed
    return (lambda fn: time_cpu(fn, min_run_time=min_run_time)), flushed


def release(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.empty_cache()


def measure(case: Case, device: Any = "cpu", *, min_run_time: float = 0.1, flush=None) -> Entry:
    """先检查、再计时一个 case；返回它在 run file 中的条目。

    Parameters
    ----------
    case : roofline_book.measure.bench.registry.Case
    device : str or torch.device
    min_run_time : float
        计时的总时长下限（秒）。
    flush : torch.Tensor, optional
        仅用于 CUDA：冲刷 L2 的缓冲区，case 受限于内存时使用。

    Returns
    -------
    roofline_book.measure.runs.records.Entry
        ``status`` 为 ``"ok"`` 时带 ``time`` 和 ``check``；为 ``"skipped"`` 时带
        ``reason`` （这里不支持，或所需内存超过空闲内存）；结果错误或 case 抛出异常时为
        ``"failed"``，带 ``reason`` （一个坏掉的 case 不会中断整个 run）。
    """
    return measure_rounds([case], device, rounds=1, min_run_time=min_run_time, flush=flush)[0]


def _spin(fn, device, seconds: float) -> None:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        sync(device)


def measure_rounds(
    todo: list[Case],
    device: Any = "cpu",
    *,
    rounds: int = 3,
    min_run_time: float = 0.1,
    flush=None,
    warmup_s: float = 0.0,
) -> list[Entry]:
    """每个 case 先检查一次，再分轮交替计时全部 case；返回它们的条目。

    第 ``r`` 轮按顺序把每个 case 各测一次，这样机器状态的变化（时钟爬升、别的进程）
    落在所有 case 上，而不是只落在某一个上。每个条目把最好的一轮记为 ``time``
    （上限是机器能做到的最好水平），把每一轮的中位数记为 ``rounds_s``。

    Parameters
    ----------
    todo : list of roofline_book.measure.bench.registry.Case
    device : str or torch.device
    rounds : int
        每个 case 计时的轮数，>= 1（为 1 时不记录 ``rounds_s``）。
    min_run_time : float
        每个 case 每一轮计时的总时长下限（秒）。
    flush : torch.Tensor, optional
        仅用于 CUDA：冲刷 L2 的缓冲区，用于受限于内存的 case。
    warmup_s : float
        每个受限于计算的 case（GEMM）在第一轮之前先运行的秒数（见
        :data:`WARMUP_S`）；受限于内存的 case 不需要等时钟爬升。
    """
    rounds = _validate.size("rounds", rounds)
    with Rounds(todo, device, min_run_time=min_run_time, flush=flush) as live:
        live.warm_up(warmup_s)
        for _ in range(rounds):
            live.time()
    return live.entries()


class Rounds:
    """构建并检查一次、一直保留、按要求的轮数计时的 case：即一次 run 的上限探针，在算子 case 之前
    计时，之后再计时一次。

    作为 context manager 使用；关闭之后调用 :meth:`entries`。
    """

    def __init__(
        self,
        todo: list[Case],
        device: Any,
        *,
        min_run_time: float,
        flush=None,
        probe: bool = False,
    ) -> None:
        import torch

        self.device = torch.device(device)
        self.min_run_time, self.flush, self.probe = min_run_time, flush, probe
        self.out: list[Entry] = []
        self.live: list[tuple[int, Prepared, Case]] = []
        self.timings: dict[int, list[Timing]] = {}
        self.todo = todo

    def __enter__(self) -> Rounds:
        taken = 0
        for case in self.todo:
            entry = _entry(case, self.device)
            reason = _too_large(case, self.device, taken)
            if reason is not None:
                self.out.append(dataclasses.replace(entry, status="skipped", reason=reason))
                continue
            prepared = None
            try:
                prepared = case.build(self.device)
                check = prepared.check()
                sync(self.device)
            except Exception as exc:  # one broken case must not lose the whole run
                if prepared is not None:
                    prepared.close()
                del prepared
                release(self.device)
                self.out.append(_not_run(entry, exc))
                continue
            checked = Check.from_mapping(check)
            self.out.append(dataclasses.replace(entry, note=prepared.note or None, check=checked))
            self.live.append((len(self.out) - 1, prepared, case))
            self.timings[len(self.out) - 1] = []
            taken += case.footprint
        return self

    def warm_up(self, seconds: float) -> None:
        """把每种精度的第一个受限于计算的 case 运行 ``seconds`` 秒：之后它所用的单元
        在其余时间里保持时钟频率（受限于内存的 case 不需要爬升）。
        """
        warm: set[str] = set()
        for _, prepared, case in self.live:
            if seconds and not case.memory_bound and case.precision not in warm:
                _spin(prepared.fn, self.device, seconds)
                warm.add(case.precision)

    def time(self, only: Collection[str] | None = None) -> None:
        """一轮：把每个保留的 case 各计时一次（给了 ``only`` 时只测 id 在其中的）。"""
        for i, prepared, case in self.live:
            if not self.out[i].ok or (only is not None and case.id not in only):
                continue
            timer, flushed = timer_for(
                self.device, self.min_run_time, self.flush, case, probe=self.probe
            )
            try:
                self.timings[i].append(timer(prepared.fn))
            except Exception as exc:
                self.out[i] = _not_run(_entry(case, self.device), exc)
                continue
            self.out[i] = dataclasses.replace(self.out[i], l2_flush=flushed)

    def fastest(self, among: Collection[str]) -> set[str]:
        """``among`` 中的 case 里，每种精度到目前为止最快的一个（按最好一轮的 FLOP/s）：
        值得再测一次的峰值 GEMM。
        """
        best: dict[str, tuple[float, str]] = {}
        for i, _, case in self.live:
            if case.id in among and self.timings[i]:
                rate = case.cost.flops / min(t.median_s for t in self.timings[i])
                if rate > best.get(case.precision, (0.0, ""))[0]:
                    best[case.precision] = (rate, case.id)
        return {case_id for _, case_id in best.values()}

    def __exit__(self, *exc: object) -> None:
        for _, prepared, _ in self.live:
            prepared.close()
        self.live = []
        release(self.device)

    def entries(self) -> list[Entry]:
        """每个 case 的条目：最好的一轮记为 ``time``，
        每一轮的中位数记为 ``rounds_s`` （两轮及以上时）。"""
        entries = []
        for i, entry in enumerate(self.out):
            rounds = self.timings.get(i)
            if entry.ok and rounds:
                best = min(rounds, key=lambda t: t.median_s)
                entry = dataclasses.replace(
                    entry,
                    time=Time.of(best),
                    l2_flush=bool(entry.l2_flush),
                    rounds_s=tuple(t.median_s for t in rounds) if len(rounds) > 1 else None,
                )
            entries.append(entry)
        return entries
