"""运行一个 suite：先测出各项上限，再检查并计时每个算子 case，汇成一次 run。

方法：先正确、再求快（结果与 float64 参考比较，错误的记为 ``failed``、不计时）；预热后计时，
CPU 上用 :func:`~roofline_book.measure.bench.timing.time_cpu`，CUDA 上用 CUDA event 并在受限于
内存的 case 之前冲刷 L2；报告单次调用时间的中位数与四分位距。装不下或不支持的 case 记为
``skipped`` 并写明原因。一个 case 怎样检查与计时见 :mod:`roofline_book.measure.runs.rounds`，
上限与稳定性怎样得出见 :mod:`roofline_book.measure.judge.ceilings`，结果的格式见
:mod:`roofline_book.measure.runs.runfile`。
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from collections.abc import Iterator
from datetime import datetime, timezone

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from .bench import machine
from .bench.registry import Case, Prepared
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
from .judge import ceilings
from .runs import runfile
from .runs.records import FORMAT, VERSION, Device, Entry, Run, Software
from .runs.rounds import Rounds, measure, measure_rounds, release, timer_for

__all__ = ["CHECKPOINT_EVERY", "WARMUP_S", "Rounds", "measure", "measure_rounds", "run_suite"]

FLUSH_MIN_BYTES = 256 * 2**20
"""两次调用之间为冲刷 GPU 的 L2 而写的缓冲区的最小大小（byte）。"""

WARMUP_S = 0.25
"""在第一轮之前，每个峰值探针先运行这么长时间（秒）：宽的向量单元与矩阵单元（AVX-512、AMX）要工作
一段时间后才升到它们的时钟频率。
"""


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
        raise InvalidArgument("device", f"'cuda' needs a CUDA device: {machine.no_cuda_message()}")
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
    judged = {c.id for c in sets["peak"] + sets["bandwidth"]}
    run = Run(
        format=FORMAT,
        version=VERSION,
        date=date,
        host=socket.gethostname(),
        suite=suite,
        device=Device.from_mapping(info),
        software=Software.from_mapping(machine.describe_software(dev)),
        ceilings=ceilings.record(probe_entries, sets, levels),
        entries=tuple(probe_entries + entries),
        load_average=None if None in load else tuple(x for x in load if x is not None),
        stability=ceilings.stability(sentinel.id, checkpoints, probe_entries, judged),
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
        timed, _ = timer_for(self.device, SENTINEL_RUN_TIME, self.flush, self.case)
        try:
            return [min(timed(self.prepared.fn).samples_s)]
        except Exception:
            self.__exit__()
            return []

    def __exit__(self, *exc: object) -> None:
        if self.prepared is not None:
            self.prepared.close()
        self.prepared = None
        release(self.device)


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
