"""``roofline-book collectives``：在这台机器上测集合通信，报告 algbw、busbw 与 alpha-beta 拟合。

测量在 :mod:`roofline_book.measure.collectives` 中；这里是它之上的命令行，``--json`` 写出
:class:`CollectivesResult`。运行需要 torch（``[bench]`` extra），列出选项则不需要。
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .._base.extras import require
from .._base.records import record_field
from ..distributed.collectives import OPS
from ..measure.collectives import BACKENDS, MAX_PROCS
from ..units import si
from .common import UsageError, emit_result, text_table
from .results import Result, command_field

if TYPE_CHECKING:  # the measurement's types; measure.collectives loads torch only when it runs
    from ..measure.collectives import Fit, Measurement, Point


@dataclass(frozen=True, kw_only=True)
class PointEntry:
    """一个集合通信在一个 size 上的计时。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one collective at one size"}

    op: str = record_field(enum=list(OPS), description="the collective")
    bytes: int = record_field(
        minimum=0, unit="byte", description="nccl-tests' size: each rank's (larger) buffer"
    )
    time_s: float = record_field(
        minimum=0, unit="s", description="median of the samples, each the slowest rank's"
    )
    iqr_s: float = record_field(
        minimum=0, unit="s", description="interquartile range of the samples"
    )
    reps: int = record_field(minimum=0, unit="1", description="samples")
    algbw_Bps: float = record_field(
        minimum=0, unit="byte/s", description="nccl-tests' algorithm bandwidth, bytes / time_s"
    )
    busbw_Bps: float = record_field(
        minimum=0, unit="byte/s", description="nccl-tests' bus bandwidth, algbw x its factor"
    )

    @classmethod
    def of(cls, p: Point) -> PointEntry:
        """计时 ``p`` 的记录。"""
        return cls(
            op=p.op,
            bytes=p.nbytes,
            time_s=p.time_s,
            iqr_s=p.timing.iqr_s,
            reps=p.timing.reps,
            algbw_Bps=p.algbw_Bps,
            busbw_Bps=p.busbw_Bps,
        )


@dataclass(frozen=True, kw_only=True)
class FitEntry:
    """一个集合通信的 alpha-beta 拟合。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "time = alpha_s + bytes x f / beta_Bps, f the ring's share of bytes sent"
    }

    alpha_s: float = record_field(minimum=0, unit="s", description="fixed time of one operation")
    beta_Bps: float | None = record_field(
        nullable=True,
        minimum=0,
        unit="byte/s",
        description="fitted bandwidth; null if the time does not grow with size",
    )

    @classmethod
    def of(cls, fit: Fit) -> FitEntry:
        """拟合 ``fit`` 的记录。"""
        return cls(alpha_s=fit.alpha_s, beta_Bps=fit.beta_Bps)


@dataclass(frozen=True, kw_only=True)
class CollectivesResult(Result):
    """``collectives --json``：一次测量的每个点与每个拟合。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "collectives timed with torch.distributed on this machine"
    }

    command: str = command_field("collectives")
    torch_version: str = record_field(description="torch that measured")
    backend: str = record_field(enum=list(BACKENDS), description="torch.distributed backend")
    procs: int = record_field(minimum=0, unit="1", description="processes (ranks)")
    results: tuple[PointEntry, ...] = record_field(description="every collective at every size")
    fit: Mapping[str, FitEntry] = record_field(description="the alpha-beta fit of each collective")

    @classmethod
    def of(cls, m: Measurement) -> CollectivesResult:
        """测量 ``m`` 的记录。"""
        return cls(
            torch_version=m.torch_version,
            backend=m.backend,
            procs=m.procs,
            results=tuple(PointEntry.of(p) for p in m.points),
            fit={op: FitEntry.of(fit) for op, fit in m.fits.items()},
        )


RESULT = CollectivesResult


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``collectives`` 加到 ``sub`` 中。"""
    parser = sub.add_parser(
        "collectives",
        parents=[common],
        help="time torch.distributed collectives on this machine and fit alpha-beta (needs torch)",
        description=(
            "Start N processes with torch.distributed on this machine (gloo on the CPU; nccl with "
            "one CUDA GPU per process), time all_reduce, all_gather, reduce_scatter, all_to_all, "
            "broadcast and send/recv from 8 bytes up, and report nccl-tests' algbw and busbw and "
            "an alpha-beta fit per collective. Processes on one host measure shared memory or "
            "loopback, not NVLink or the network."
        ),
    )
    parser.add_argument(
        "--procs",
        type=int,
        default=2,
        metavar="N",
        help=f"processes (ranks), 2 to {MAX_PROCS} (default: 2)",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="gloo", help="torch.distributed backend"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="sizes up to 2 MiB, a few seconds (default: up to 256 MiB)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="stop the ranks after this many seconds (default: 600)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """按解析好的选项测量；返回退出状态。

    0：已测量。2：什么也没测，因为输入有误（``--procs`` 小于 2、后端在这台机器上不能用、缺少
    torch）；stderr 上的一行写明原因。1：某个 rank 出错、死掉或超时（stderr 上的一行写明）。
    """
    if not 2 <= args.procs <= MAX_PROCS:
        raise UsageError(
            f"--procs must be an integer from 2 to {MAX_PROCS} (processes on this host), "
            f"got {args.procs}"
        )
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a finite number of seconds > 0, got {args.timeout:g}")
    require("torch", "collectives")
    from ..measure import collectives as measured  # torch is imported in its functions

    try:
        measured.check_backend(args.backend, args.procs)
    except ValueError as exc:
        raise UsageError(f"--backend {args.backend}: {exc}") from None
    try:
        result = measured.measure(args.procs, args.backend, quick=args.quick, timeout=args.timeout)
    except TimeoutError as exc:
        print(f"roofline-book collectives: {exc} (allow more with --timeout)", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"roofline-book collectives: {exc}", file=sys.stderr)
        return 1
    if args.json:
        emit_result(CollectivesResult.of(result))
        return 0
    print(
        f"{args.backend}, {args.procs} processes on this host (torch {result.torch_version}); "
        "size, algbw and busbw as nccl-tests reports them"
    )
    rows = [
        [
            p.op,
            si(p.nbytes, "B"),
            si(p.time_s, "s"),
            si(p.timing.iqr_s, "s"),
            si(p.algbw_Bps, "B/s"),
            si(p.busbw_Bps, "B/s"),
        ]
        for op in OPS
        for p in result.of(op)
    ]
    print(text_table(["op", "size", "time", "IQR", "algbw", "busbw"], rows, right={1, 2, 3, 4, 5}))
    print()
    print("fit: time = alpha + size x f / beta (f: bytes each rank sends per byte of size)")
    fits = [
        [
            op,
            si(fit.alpha_s, "s"),
            "n/a" if fit.beta_Bps is None else si(fit.beta_Bps, "B/s"),
        ]
        for op, fit in result.fits.items()
    ]
    print(text_table(["op", "alpha", "beta"], fits, right={1, 2}))
    return 0
