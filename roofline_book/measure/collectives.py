"""在这台机器上用 ``torch.distributed`` 测集合通信，拟合每个 collective 的 alpha 与 beta。

:func:`measure` 在本机启动 ``procs`` 个进程（CPU 上 ``gloo``，有 GPU 时 ``nccl``，每个 rank 一块
GPU），对 :data:`roofline_book.distributed.collectives.OPS` 中的每个操作，从几个字节到数百 MB
逐一计时：

1. 先正确、再求快：每个操作先用各 rank 不同的值做一次，检查结果；错了就让这个 rank 失败。
2. 预热 :data:`~roofline_book.measure.bench.ranks.WARMUP` 次；按其中最快的一次（各 rank 取最大；
   同 ``time_cpu``）定下样本数，使计时约持续 ``budget`` 秒，至少
   :data:`~roofline_book.measure.bench.timing.MIN_SAMPLES` 个、至多
   :data:`~roofline_book.measure.bench.ranks.MAX_REPS` 个样本。各 rank 用同一个样本数，所以每个
   collective 都有全部 rank 参加。
3. 每个样本之前先 ``barrier``，让各 rank 同时开始；一个样本是这一次操作在某个 rank 上的时间，
   各 rank 取最大（操作在最慢的 rank 完成时才算完成）。报告中位数与四分位距
   （:class:`~roofline_book.measure.bench.timing.Timing`）。

size 按 nccl-tests 的约定（NVIDIA/nccl-tests ``doc/PERFORMANCE.md``）：all-reduce 与 broadcast 的
buffer，all-gather 的输出，reduce-scatter 的输入，all-to-all 的发送 buffer，send/recv 发出的
buffer；元素个数取 ``procs`` 的整数倍。algbw 是 size 除以时间，busbw 再乘
:func:`roofline_book.distributed.collectives.bus_factor`。

每个操作的拟合（:func:`fit_alpha_beta`）是 ``time = alpha + size x f / beta`` 的最小二乘，``f`` 是
模型里 ring 算法每个 rank 发出的字节占 size 的份额（与 busbw 的系数相同），所以 ``beta`` 可以与
每个方向的链路带宽相比，``alpha`` 是与大小无关的那部分时间。同一台主机上的几个进程测到的是
共享内存或 TCP loopback（gloo 走 TCP），不是 NVLink 或网卡。每个 rank 进程做的事在
:mod:`roofline_book.measure.bench.ranks`。
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..distributed.collectives import OPS, algorithm_bandwidth, bus_bandwidth, collective_time
from .bench.ranks import RankJob, rank_main
from .bench.timing import Timing

BACKENDS = ("gloo", "nccl")
"""``torch.distributed`` 的后端：CPU 上的 gloo，每个 rank 一块 CUDA GPU 的 nccl。"""

QUICK_SIZES = tuple(2**k for k in range(3, 23, 2))
"""``quick``：8 B 到 2 MiB，每次乘 4，共 10 个 size；两个 gloo 进程几秒内测完。"""

FULL_SIZES = tuple(2**k for k in range(3, 29))
"""完整的扫描：8 B 到 256 MiB，每次乘 2（nccl-tests 的 ``-b 8 -e 256M -f 2``）。"""

QUICK_BUDGET_S = 0.001
"""quick 时每个 (操作, size) 计时约持续的秒数（此外至少
:data:`~roofline_book.measure.bench.timing.MIN_SAMPLES` 个样本）。"""

FULL_BUDGET_S = 0.05
"""完整扫描时每个 (操作, size) 计时约持续的秒数。"""

MAX_PROCS = 64
"""一次测量最多的进程数：它们都在这一台主机上。"""


@dataclass(frozen=True)
class Point:
    """一个操作在一个 size 上的计时。

    Attributes
    ----------
    op : str
        :data:`~roofline_book.distributed.collectives.OPS` 之一。
    nbytes : int
        nccl-tests 的 size，byte。
    procs : int
        rank 数。
    timing : roofline_book.measure.bench.timing.Timing
        每个样本是各 rank 中最慢的那个的时间，s。
    """

    op: str
    nbytes: int
    procs: int
    timing: Timing

    @property
    def time_s(self) -> float:
        """时间的中位数，s。"""
        return self.timing.median_s

    @property
    def quartiles_s(self) -> tuple[float, float]:
        """样本的第一与第三四分位数，s（两者之差即 ``timing.iqr_s``）。"""
        import numpy as np  # here: the command line imports this module and runs without NumPy

        q1, q3 = np.percentile(self.timing.samples_s, [25, 75])
        return float(q1), float(q3)

    @property
    def algbw_Bps(self) -> float:
        """nccl-tests 的 algorithm bandwidth，byte/s。"""
        return algorithm_bandwidth(self.nbytes, self.time_s)

    @property
    def busbw_Bps(self) -> float:
        """nccl-tests 的 bus bandwidth，byte/s。"""
        return bus_bandwidth(self.op, self.algbw_Bps, self.procs)

    def as_dict(self) -> dict[str, Any]:
        """JSON 中 ``results`` 的一项。"""
        return {
            "op": self.op,
            "bytes": self.nbytes,
            "time_s": self.time_s,
            "iqr_s": self.timing.iqr_s,
            "reps": self.timing.reps,
            "algbw_Bps": self.algbw_Bps,
            "busbw_Bps": self.busbw_Bps,
        }


@dataclass(frozen=True)
class Fit:
    """一个操作的 alpha-beta 拟合。

    Attributes
    ----------
    alpha_s : float
        整次操作中与大小无关的时间，s（>= 0）；模型每一步的延迟见 :meth:`step_latency`。
    beta_Bps : float or None
        每个方向的带宽，byte/s；时间不随大小增长（扫描太短）时为 None。
    """

    alpha_s: float
    beta_Bps: float | None

    def step_latency(self, op: str, procs: int) -> float:
        """``alpha`` 摊到 ring 模型的每一步（``alpha / k``），s：
        :func:`~roofline_book.distributed.collectives.collective_time` 的 ``latency``。

        以它和 ``beta_Bps`` 调用 ``collective_time(op, S, procs, beta_Bps, step_latency)``，
        给出的时间与 :meth:`seconds` 相同。

        Examples
        --------
        >>> Fit(alpha_s=3e-4, beta_Bps=2e9).step_latency("all_reduce", 2)   # 2 (n - 1) = 2 steps
        0.00015
        """
        steps = collective_time(op, 1.0, procs, 1.0, 1.0).latency_s
        return self.alpha_s / steps

    def seconds(self, op: str, nbytes: float, procs: int) -> float:
        """拟合给出的 ``op`` 在 ``nbytes`` 上的时间，s。"""
        if self.beta_Bps is None:
            return self.alpha_s
        return self.alpha_s + model_share(op, procs) * nbytes / self.beta_Bps


@dataclass(frozen=True)
class Measurement:
    """一次测量：后端、进程数、每个点，以及每个操作的拟合。"""

    backend: str
    procs: int
    points: tuple[Point, ...]
    fits: dict[str, Fit]
    torch_version: str

    def of(self, op: str) -> tuple[Point, ...]:
        """``op`` 的各点，按 size 排序。"""
        return tuple(sorted((p for p in self.points if p.op == op), key=lambda p: p.nbytes))

    def as_dict(self) -> dict[str, Any]:
        """``roofline-book collectives --json`` 打印的内容。"""
        return {
            "roofline_book_version": __version__,
            "command": "collectives",
            "torch_version": self.torch_version,
            "backend": self.backend,
            "procs": self.procs,
            "results": [p.as_dict() for p in self.points],
            "fit": {
                op: {"alpha_s": fit.alpha_s, "beta_Bps": fit.beta_Bps}
                for op, fit in self.fits.items()
            },
        }


def model_share(op: str, procs: int) -> float:
    """ring 模型中每个 rank 发出的字节占 size 的份额 ``f`` （拟合中 size 的系数）。

    Examples
    --------
    >>> model_share("all_reduce", 2), model_share("all_gather", 4), model_share("send_recv", 2)
    (1.0, 0.75, 1.0)
    """
    return collective_time(op, 1.0, procs, 1.0, 0.0).bandwidth_s


def fit_alpha_beta(op: str, procs: int, nbytes: Sequence[float], seconds: Sequence[float]) -> Fit:
    """对 ``seconds = alpha + nbytes x f / beta`` 做最小二乘，``f`` 来自 :func:`model_share`。

    残差按相对误差计（每点权重 ``1/t^2``）：几个字节的点与几百 MB 的点同样要紧，小消息定出
    alpha，大消息定出 beta。alpha 为负（无物理意义）时取 0，再只拟合 beta；斜率不为正时
    beta 为 None。

    Examples
    --------
    两个 rank 的 all-reduce（``f = 1``），每点都正好是 20 us + size / 2 GB/s：

    >>> sizes = [8, 1e4, 1e6, 1e8]
    >>> fit = fit_alpha_beta("all_reduce", 2, sizes, [20e-6 + s / 2e9 for s in sizes])
    >>> round(fit.alpha_s * 1e6, 6), round(fit.beta_Bps / 1e9, 6)
    (20.0, 2.0)
    """
    if len(nbytes) != len(seconds) or len(nbytes) < 2:
        raise InvalidArgument(
            "nbytes",
            f"and seconds must be two sequences of the same length >= 2; "
            f"got {len(nbytes)} and {len(seconds)}",
        )
    share = model_share(op, procs)
    x = [share * _validate.non_negative("nbytes", s) for s in nbytes]
    t = [_validate.positive("seconds", s) for s in seconds]
    w = [1 / ti**2 for ti in t]
    sw = sum(w)
    sx = sum(wi * xi for wi, xi in zip(w, x, strict=True))
    st = sum(wi * ti for wi, ti in zip(w, t, strict=True))
    sxx = sum(wi * xi * xi for wi, xi in zip(w, x, strict=True))
    sxt = sum(wi * xi * ti for wi, xi, ti in zip(w, x, t, strict=True))
    det = sw * sxx - sx * sx
    if det <= 0:
        raise InvalidArgument("nbytes", "must hold at least two different sizes")
    slope = (sw * sxt - sx * st) / det
    alpha = (st - slope * sx) / sw
    if alpha < 0:
        alpha, slope = 0.0, sxt / sxx
    return Fit(alpha_s=alpha, beta_Bps=1 / slope if slope > 0 else None)


# --- the parent -----------------------------------------------------------------------------


def free_port() -> int:
    """本机 loopback 上一个此刻空闲的 TCP 端口。"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_method(backend: str) -> str:
    """gloo 在 Linux 上 fork（子进程不必再导入 torch，省下数秒）；nccl 与其他系统上 spawn。"""
    return "fork" if backend == "gloo" and sys.platform.startswith("linux") else "spawn"


def check_backend(backend: str, procs: int) -> str:
    """``backend`` 能否在这台机器上跑 ``procs`` 个 rank；不能时抛出写明原因的 ValueError。"""
    backend = _validate.choice("backend", backend, BACKENDS)
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise ValueError(f"this torch {torch.__version__} was built without torch.distributed")
    if backend == "gloo" and not dist.is_gloo_available():
        raise InvalidArgument("backend", f"gloo is not available in torch {torch.__version__}")
    if backend == "nccl":
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not dist.is_nccl_available() or gpus < procs:
            raise InvalidArgument(
                "backend",
                f"nccl needs one CUDA GPU per process: --procs {procs} asked, "
                f"this machine has {gpus} (torch {torch.__version__}, "
                f"NCCL {'available' if dist.is_nccl_available() else 'not built in'})",
            )
    return backend


def measure(
    procs: int = 2,
    backend: str = "gloo",
    *,
    quick: bool = True,
    sizes: Sequence[int] | None = None,
    ops: Sequence[str] = OPS,
    budget: float | None = None,
    timeout: float = 600.0,
) -> Measurement:
    """在本机启动 ``procs`` 个 rank，测 ``ops`` 中每个操作在每个 size 上的时间，并拟合。

    Parameters
    ----------
    procs : int
        进程数，2 到 :data:`MAX_PROCS`。
    backend : {"gloo", "nccl"}
        nccl 需要每个进程一块 CUDA GPU。
    quick : bool
        :data:`QUICK_SIZES` （几秒）或 :data:`FULL_SIZES`。
    sizes : sequence of int, optional
        自选的 size（byte），代替上面两组。
    ops : sequence of str
        :data:`~roofline_book.distributed.collectives.OPS` 的子集。
    budget : float, optional
        每个 (操作, size) 计时约持续的秒数；默认为 :data:`QUICK_BUDGET_S` 或 :data:`FULL_BUDGET_S`。
    timeout : float
        整次测量的时限（s）；超时则结束各 rank 并抛出 TimeoutError。

    Raises
    ------
    ValueError
        参数越界，或这台机器跑不了这个后端。
    RuntimeError
        某个 rank 出错或死掉；信息写明是哪个 rank、为什么。
    TimeoutError
        超过 ``timeout``。
    """
    procs = _validate.size("procs", procs, minimum=2)
    if procs > MAX_PROCS:
        raise InvalidArgument(
            "procs", f"must be at most {MAX_PROCS} (processes on this host); got {procs}"
        )
    ops = tuple(_validate.choice("ops", op, OPS) for op in ops)
    if not ops:
        raise InvalidArgument("ops", f"must name at least one of {', '.join(OPS)}")
    chosen = tuple(sizes) if sizes is not None else (QUICK_SIZES if quick else FULL_SIZES)
    chosen = tuple(_validate.size("sizes", s) for s in chosen)
    if len(set(chosen)) < 2:
        raise InvalidArgument("sizes", f"must hold at least two different sizes; got {chosen}")
    if budget is None:
        budget = QUICK_BUDGET_S if quick else FULL_BUDGET_S
    budget = _validate.positive("budget", budget)
    timeout = _validate.positive("timeout", timeout)
    backend = check_backend(backend, procs)
    import torch
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="roofline-collectives-") as folder:
        out = os.path.join(folder, "rows")
        job = RankJob(procs, backend, free_port(), chosen, ops, budget, timeout, out)
        _launch(mp, rank_main, (job,), procs, _start_method(backend), timeout, out)
        rows = _read_rows(Path(out))
    points = tuple(
        Point(op, nbytes, procs, Timing(tuple(samples), inner=1)) for op, nbytes, samples in rows
    )
    fits = {}
    for op in ops:
        mine = [p for p in points if p.op == op]
        fits[op] = fit_alpha_beta(op, procs, [p.nbytes for p in mine], [p.time_s for p in mine])
    return Measurement(backend, procs, points, fits, torch.__version__)


def _read_rows(path: Path) -> list[tuple[str, int, tuple[float, ...]]]:
    import ast

    if not path.exists():
        raise RuntimeError("the ranks finished without writing their results")
    return list(ast.literal_eval(path.read_text()))


def _first_failure(out: str, procs: int) -> tuple[int, str] | None:
    """各 rank 留下的失败记录中最早的一条：(rank, 原因)。"""
    notes = []
    for rank in range(procs):
        path = Path(f"{out}.rank{rank}.error")
        if path.exists():
            when, _, reason = path.read_text().partition("\n")
            notes.append((float(when), rank, reason))
    if not notes:
        return None
    _, rank, reason = min(notes)
    return rank, reason


def _launch(
    mp: Any,
    fn: Callable[..., None],
    args: tuple,
    procs: int,
    method: str,
    timeout: float,
    out: str,
) -> None:
    """启动 ``procs`` 个 rank 并等它们结束；出错、死掉或超时时结束其余的 rank 并抛出。

    一个 rank 出错时，它的同伴随后也会失败（连接被重置）；报告的是最先失败的那个 rank。
    """
    with warnings.catch_warnings():
        # Python 3.12+ warns on fork() in a process with threads (a Jupyter kernel has some); the
        # ranks touch no lock of those threads: they run torch.distributed and exit
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        context = mp.start_processes(fn, args=args, nprocs=procs, join=False, start_method=method)
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=0.05):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the {procs} ranks did not finish within {timeout:g} s; they were stopped"
                )
    except mp.ProcessRaisedException as exc:
        time.sleep(0.2)  # let the peers that failed after it leave their notes
        first = _first_failure(out, procs)
        if first is None:
            last = [line for line in str(exc).strip().splitlines() if line.strip()]
            first = (exc.error_index, last[-1].strip() if last else "an exception")
        raise RuntimeError(f"rank {first[0]} failed: {first[1]}") from None
    except mp.ProcessExitedException as exc:
        how = f"signal {exc.signal_name}" if exc.signal_name else f"exit code {exc.exit_code}"
        raise RuntimeError(f"rank {exc.error_index} died ({how})") from None
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
