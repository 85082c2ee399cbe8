"""集合通信测量中一个 rank 进程做的事：加入进程组，先检查每个操作的结果，再按 size 计时。

测量的方法、size 的约定与拟合见 :mod:`roofline_book.measure.collectives`，它启动这些进程并汇总
rank 0 写下的结果。
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from .timing import MIN_SAMPLES, Timing

WARMUP = 3
"""每个 (操作, size) 计时前的预热次数；各 rank 做同样多次，所以是固定的次数而不是时长。"""

MAX_REPS = 200
"""每个 (操作, size) 最多的样本数。"""

ELEMENT_BYTES = 4
"""计时用 float32 tensor（nccl-tests 的默认 ``-d float``）。"""


def _buffers(torch: Any, op: str, count: int, procs: int, device: Any) -> dict[str, Any]:
    """``op`` 的 tensor：``count`` 个 float32 是 nccl-tests 的 size。"""
    part = count // procs
    zeros = lambda n: torch.zeros(n, dtype=torch.float32, device=device)  # noqa: E731
    if op == "all_gather":
        return {"inp": zeros(part), "out": zeros(count)}
    if op == "reduce_scatter":
        return {"inp": zeros(count), "out": zeros(part)}
    if op in ("all_to_all", "send_recv"):
        return {"inp": zeros(count), "out": zeros(count)}
    return {"inp": zeros(count)}  # all_reduce, broadcast: in place


def run_op(dist: Any, op: str, buf: dict[str, Any], rank: int, procs: int) -> None:
    """做一次 ``op``，直到它在这个 rank 上完成。"""
    if op == "all_reduce":
        dist.all_reduce(buf["inp"])
    elif op == "all_gather":
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        gather(buf["out"], buf["inp"])
    elif op == "reduce_scatter":
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        scatter(buf["out"], buf["inp"])
    elif op == "all_to_all":
        dist.all_to_all_single(buf["out"], buf["inp"])
    elif op == "broadcast":
        dist.broadcast(buf["inp"], src=0)
    else:  # send_recv: each rank sends to the next and receives from the previous (nccl-tests)
        ops = [
            dist.P2POp(dist.isend, buf["inp"], (rank + 1) % procs),
            dist.P2POp(dist.irecv, buf["out"], (rank - 1) % procs),
        ]
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def _check(torch: Any, dist: Any, op: str, rank: int, procs: int, device: Any) -> None:
    """先正确：rank r 放入 r + 1（all-to-all 与 all-gather 放入可辨认的块），检查结果。"""
    count = 2 * procs
    buf = _buffers(torch, op, count, procs, device)
    for tensor in buf.values():
        tensor.fill_(rank + 1)
    if op == "all_to_all":  # block j of rank r holds 100 r + j; rank r receives 100 j + r
        buf["inp"].copy_(torch.arange(procs, device=device).repeat_interleave(2) + 100 * rank)
    run_op(dist, op, buf, rank, procs)
    ranks = torch.arange(1, procs + 1, dtype=torch.float32, device=device)
    if op in ("all_reduce", "reduce_scatter"):
        expected = torch.full_like(buf["out" if op == "reduce_scatter" else "inp"], ranks.sum())
    elif op == "all_gather":
        expected = ranks.repeat_interleave(2)
    elif op == "all_to_all":
        expected = (100 * torch.arange(procs, device=device) + rank).repeat_interleave(2)
    elif op == "broadcast":
        expected = torch.ones(count, device=device)
    else:
        expected = torch.full((count,), float((rank - 1) % procs + 1), device=device)
    got = buf["out" if "out" in buf else "inp"]
    if not torch.equal(got.float(), expected.float()):
        raise RuntimeError(f"{op} gave a wrong result on rank {rank}: {got.tolist()}")


def _time_point(
    torch: Any,
    dist: Any,
    op: str,
    nbytes: int,
    rank: int,
    procs: int,
    device: Any,
    budget: float,
) -> tuple[int, Timing]:
    """计时 ``op`` 的一个 size；返回实际的 size（byte）与各 rank 取最大的样本。"""
    count = max(procs, nbytes // ELEMENT_BYTES // procs * procs)
    buf = _buffers(torch, op, count, procs, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    fastest = math.inf
    for _ in range(WARMUP):
        dist.barrier()
        t0 = time.perf_counter()
        run_op(dist, op, buf, rank, procs)
        sync()
        fastest = min(fastest, time.perf_counter() - t0)
    estimate = torch.tensor([fastest], dtype=torch.float64, device=device)
    dist.all_reduce(estimate, op=dist.ReduceOp.MAX)
    once = max(float(estimate.item()), 1e-7)
    reps = min(MAX_REPS, max(MIN_SAMPLES, math.ceil(budget / once)))
    samples = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        run_op(dist, op, buf, rank, procs)
        sync()
        samples.append(time.perf_counter() - t0)
    slowest_rank = torch.tensor(samples, dtype=torch.float64, device=device)
    dist.all_reduce(slowest_rank, op=dist.ReduceOp.MAX)
    return count * ELEMENT_BYTES, Timing(tuple(float(s) for s in slowest_rank.tolist()), inner=1)


@dataclass(frozen=True)
class RankJob:
    """每个 rank 都做的同一份工作：进程组在哪里、测哪些操作与 size、结果写到哪里。

    Attributes
    ----------
    procs : int
        rank 的个数。
    backend : {"gloo", "nccl"}
    port : int
        rank 0 在本机 loopback 上监听的 TCP 端口。
    sizes : tuple of int
        要计时的 size（byte）。
    ops : tuple of str
        要测的操作（:data:`roofline_book.distributed.collectives.OPS` 的子集）。
    budget : float
        每个 (操作, size) 计时约持续的秒数。
    timeout : float
        父进程等待的时限（s）；进程组的时限比它长，挂住的同伴由父进程报告为超时。
    out : str
        rank 0 写结果的文件；出错的 rank 在它旁边留下 ``out.rank<r>.error``。
    """

    procs: int
    backend: str
    port: int
    sizes: tuple[int, ...]
    ops: tuple[str, ...]
    budget: float
    timeout: float
    out: str


def rank_main(rank: int, job: RankJob) -> None:
    """一个 rank 进程的入口：加入进程组，检查并计时每个操作；rank 0 把结果写进 ``job.out``。"""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # the ranks share this machine's cores
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # stay on this host's loopback
    _join_and_time(dist, torch, rank, job)


def _join_and_time(dist: Any, torch: Any, rank: int, job: RankJob) -> None:
    """加入进程组，检查并计时每个操作；出错时在 ``out`` 旁留下带时间的记录，再抛出。"""
    procs, out = job.procs, job.out
    device = torch.device("cpu")
    kwargs: dict[str, Any] = {}
    if job.backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
        kwargs["device_id"] = device
    try:
        dist.init_process_group(
            job.backend,
            init_method=f"tcp://127.0.0.1:{job.port}",
            rank=rank,
            world_size=procs,
            # past the parent's deadline, so a hung peer is reported by the parent as a timeout
            timeout=timedelta(seconds=job.timeout + 60),
            **kwargs,
        )
        rows = []
        for op in job.ops:
            _check(torch, dist, op, rank, procs, device)
            for nbytes in job.sizes:
                actual, timing = _time_point(
                    torch, dist, op, nbytes, rank, procs, device, job.budget
                )
                rows.append((op, actual, timing.samples_s))
        if rank == 0:
            Path(out).write_text(repr(rows))
        dist.barrier()
    except BaseException as exc:
        # the first rank to fail on its own is the cause; its peers fail after it (a reset
        # connection), so each leaves a note with the time, before the group is torn down, and
        # the parent reports the earliest
        note = f"{time.time()!r}\n{type(exc).__name__}: {' '.join(str(exc).split())}"
        Path(f"{out}.rank{rank}.error").write_text(note)
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
