"""运行一个 suite：每个 case 先检查、再计时，汇成一次 run。

run 先在预热之后分轮交替测出各项上限，每项保留最好的一轮（内存带宽来自大块 copy、STREAM triad
和原地 triad；每种精度的峰值 FLOP/s 来自专门的大 GEMM；CPU 上 cache roof 来自末级 cache 之内的
copy），然后测 suite 中的每个算子 case，其间计时一个哨兵，记录机器是否保持不变。在 CPU 上，
除非另行指定，它只用一个线程。每个 case 的方法：

1. 先正确、再求快：结果与 float64 的参考结果比较（``torch.allclose``）；结果错误的记为
   ``failed``，不计时。
2. 预热，然后计时（:mod:`roofline_book.measure.bench.timing`）：CPU 上用 ``torch.utils.benchmark``；
   CUDA 上用 CUDA event，受限于内存的 case 在每次调用前（计时区间之外）写一个比 L2 大的缓冲区，
   这样没有哪次调用能用上前一次留在 cache 里的数据。
3. 报告单次调用时间的中位数和四分位距，连同样本、样本个数（``reps``）和每个样本的调用次数
   （``inner``）。

装不进内存的 case，或这个 PyTorch、这块设备不支持的 case，记为 ``skipped`` 并写明原因。结果是
一次 run（见 :mod:`roofline_book.measure.runs.runfile`）。
"""

from __future__ import annotations

import dataclasses
import socket
import sys
import time
from collections.abc import Collection, Iterator
from datetime import datetime, timezone
from typing import Any

from .._base import validate as _validate
from ..units import si
from .bench import machine
from .bench.cases import is_out_of_memory
from .bench.registry import Case, Incorrect, Prepared, Unsupported
from .bench.suites import (
    DEVICES,
    FALLBACK_CACHE_BYTES,
    SUITES,
    cache_probes,
    cases,
    ceiling_numel,
    probes,
    suite_spec,
)
from .bench.timing import Timing, time_cpu, time_cuda
from .judge import ceilings
from .runs import runfile
from .runs.records import (
    FORMAT,
    VERSION,
    Check,
    Device,
    Entry,
    MeasuredCeilings,
    Run,
    Software,
    Stability,
    Time,
)

FLUSH_MIN_BYTES = 256 * 2**20
"""两次调用之间为冲刷 GPU 的 L2 而写的缓冲区的最小大小（byte）。"""

MEMORY_HEADROOM = 0.5
"""case 的 tensor 要占用设备空闲内存的这个比例以上时跳过它：在 Linux 上，过量申请的 CPU 内存
会招来 OOM killer，而不是抛出异常。
"""


def _sync(device) -> None:
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


def _timer(device, min_run_time: float, flush, case: Case, *, probe: bool = False):
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


def _release(device) -> None:
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


WARMUP_S = 0.25
"""在第一轮之前，每个峰值探针先运行这么长时间（秒）：宽的向量单元与矩阵单元（AVX-512、AMX）要工作
一段时间后才升到它们的时钟频率。
"""


def _spin(fn, device, seconds: float) -> None:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        _sync(device)


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
                _sync(self.device)
            except Exception as exc:  # one broken case must not lose the whole run
                if prepared is not None:
                    prepared.close()
                del prepared
                _release(self.device)
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
            timer, flushed = _timer(
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
        _release(self.device)

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


CHECKPOINT_EVERY = 6
"""稳定性哨兵在第一个算子 case 之前、每隔这么多个 case、以及最后一个 case 之后各计时一次。"""

SENTINEL_RUN_TIME = 0.02
"""每个哨兵检查点计时的总时长下限（秒）。"""


def run_suite(
    device: str = "cpu",
    suite: str = "quick",
    *,
    threads: int | None = 1,
    progress: bool = False,
) -> Run:
    """测出一个 suite 的各项上限和每个 case；返回经过校验的 run。

    先在预热之后分轮交替计时各个上限探针（:func:`~roofline_book.measure.bench.suites.probes`，
    见 :func:`measure_rounds`），测完算子 case 之后再测一轮；每种精度到目前为止
    最快的峰值 GEMM 在 case 之间的每个检查点都再测一次，因为共享机器上矩阵单元的
    速度在一次 run 中会忽快忽慢。每个探针最好的一轮就是它的上限。
    每隔 :data:`CHECKPOINT_EVERY` 个 case 计时一个很短的哨兵（CPU 上是 L2 之内的
    copy，CUDA 上是第一个峰值 GEMM）。哨兵的离散程度，以及最后一轮相对前几轮的漂移，
    构成 run 的 ``stability``
    （:func:`roofline_book.measure.judge.ceilings.stability`）；测得比外面一级
    还慢的 cache 层级也记在那里（:func:`roofline_book.measure.judge.ceilings.inversions`）。

    Parameters
    ----------
    device : {"cpu", "cuda"}
        ``"cuda"`` 表示在当前 CUDA 设备上运行。
    suite : {"tiny", "quick", "full"}
        尺寸集合，见 :func:`~roofline_book.measure.bench.suites.suite_spec`。``tiny``
        供测试用：它的带宽上限装得进 cache，没有多少意义。
    threads : int or None
        run 期间 torch 使用的 CPU 线程数（结束后恢复）；None 沿用 torch 的默认值，
        即全部核心。本书用单线程（默认）：在小的共享机器上，第二个线程要等机器上
        别的任务，它的停顿会被误读成算子的性质。
    progress : bool
        在 stderr 上显示进度条（tqdm）。

    Raises
    ------
    ValueError
        设备或 suite 未知、线程数小于 1，或没有 CUDA 时给了 ``device="cuda"``。
    """
    device = _validate.choice("device", device, DEVICES)
    suite = _validate.choice("suite", suite, SUITES)
    if threads is not None:
        threads = _validate.size("threads", threads)
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(machine.no_cuda_message())
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _run(device, suite, progress=progress, all_threads=threads is None)
    finally:
        torch.set_num_threads(before)


def _run(device: str, suite: str, *, progress: bool, all_threads: bool) -> Run:
    import torch

    dev = (
        torch.device("cuda", torch.cuda.current_device())
        if device == "cuda"
        else torch.device("cpu")
    )
    load = [machine.load_average()]
    now = datetime.now(timezone.utc)  # noqa: UP017 - datetime.UTC needs Python >= 3.11
    date = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    info = machine.describe_device(dev)
    if dev.type == "cpu":
        info["threads_policy"] = "all" if all_threads else "set"
    spec = suite_spec(device, suite)
    cache = info["cache_bytes"] or FALLBACK_CACHE_BYTES
    caches = machine.cpu_caches() if dev.type == "cpu" else {}
    sets = probes(device, suite, cache_bytes=cache, caches=caches)
    numel = spec.ceiling_numel or ceiling_numel(cache)
    levels = cache_probes(caches, numel) if dev.type == "cpu" else {}
    todo = cases(device, suite, cache_bytes=cache)
    flush = None
    if device == "cuda":
        size = max(FLUSH_MIN_BYTES, 2 * cache)
        flush = torch.empty(size, dtype=torch.int8, device=dev)
    probed = [c for key in ("bandwidth", "peak", "cache", "vector") for c in sets[key]]
    todo = [c for c in todo if c.id not in {p.id for p in probed}]  # measured once, as probe
    peaks = {c.id for c in sets["peak"]}
    sentinel = (sets["cache"] or sets["peak"])[0]  # the smallest cache's copy: a core's own
    checkpoints: list[float] = []
    entries: list[Entry] = []
    with Rounds(probed, dev, min_run_time=spec.min_run_time, flush=flush, probe=True) as live:
        live.warm_up(WARMUP_S if suite != "tiny" else 0.0)
        for _ in range(spec.rounds - 1):
            live.time()
        with _Sentinel(sentinel, dev, flush) as watch:
            checkpoints += watch.time()
            for i, case in enumerate(_progress(todo, progress), 1):
                entries.append(measure(case, dev, min_run_time=spec.min_run_time, flush=flush))
                if i % CHECKPOINT_EVERY == 0 or i == len(todo):
                    checkpoints += watch.time()
                if i % CHECKPOINT_EVERY == 0 and i < len(todo):
                    # a peak is the most the units do at any time of the run: each
                    # precision's fastest peak GEMM is timed again at every checkpoint
                    live.time(live.fastest(peaks))
        live.time()  # the last round, after the cases
    probe_entries = live.entries()
    load.append(machine.load_average())
    probe_records = [e.as_mapping() for e in probe_entries]
    judged = {c.id for c in sets["peak"] + sets["bandwidth"]}
    record = ceilings.stability(sentinel.id, checkpoints, probe_records, judged)
    run = Run(
        format=FORMAT,
        version=VERSION,
        date=date,
        host=socket.gethostname(),
        suite=suite,
        device=Device.from_mapping(info),
        software=Software.from_mapping(machine.describe_software(dev)),
        ceilings=MeasuredCeilings.from_mapping(ceilings.record(probe_records, sets, levels)),
        entries=tuple(probe_entries + entries),
        load_average=None if None in load else tuple(x for x in load if x is not None),
        stability=None if record is None else Stability.from_mapping(record),
    )
    slow = ceilings.inversions(run)  # a cache level measured slower than one further out
    if slow and run.stability is not None:
        stability = dataclasses.replace(run.stability, inverted_levels=slow)
        run = dataclasses.replace(run, stability=stability)
    runfile.validate_run(run.as_mapping(), require_schema=False)
    return run


class _Sentinel:
    """在各算子 case 期间一直保留的探针，在每个检查点计时。"""

    def __init__(self, case: Case, device, flush) -> None:
        self.case, self.device, self.flush = case, device, flush
        self.prepared: Prepared | None = None

    def __enter__(self) -> _Sentinel:
        try:
            self.prepared = self.case.build(self.device)
            self.prepared.check()
        except Exception:  # no sentinel, no stability record; the run goes on
            self.__exit__()
        return self

    def time(self) -> list[float]:
        """哨兵此刻最快的样本（秒；别的进程或更慢的时钟只会让调用变慢）；无法运行时为空。"""
        if self.prepared is None:
            return []
        timer, _ = _timer(self.device, SENTINEL_RUN_TIME, self.flush, self.case)
        try:
            return [min(timer(self.prepared.fn).samples_s)]
        except Exception:
            self.__exit__()
            return []

    def __exit__(self, *exc: object) -> None:
        if self.prepared is not None:
            self.prepared.close()
        self.prepared = None
        _release(self.device)


def _progress(todo: list[Case], enabled: bool) -> Iterator[Case]:
    """逐个给出 case，并在 stderr 上显示 tqdm 进度条（没有 tqdm 时每个 case 一行）。"""
    if not enabled:
        yield from todo
        return
    try:
        from tqdm import tqdm
    except ImportError:
        for i, case in enumerate(todo, 1):
            print(f"bench [{i}/{len(todo)}] {case.id}", file=sys.stderr, flush=True)
            yield case
        return
    with tqdm(todo, file=sys.stderr, unit="case", mininterval=0.5) as bar:
        for case in bar:
            bar.set_postfix_str(case.id, refresh=False)
            yield case
