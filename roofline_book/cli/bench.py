"""``roofline-book bench``：测量这台机器，写出一个 run file。

suite、它的计时和 run file 都在 :mod:`roofline_book.measure` 中；这里是
:func:`~roofline_book.measure.run.run_suite` 之上的命令行。运行它需要 torch，列出它的选项则不需要；
测量用的模块在运行时才导入，所以其他子命令启动时不加载它们。
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base import validate as _validate
from .._base.extras import MissingExtra, require
from ..measure.bench.cases import shape_text
from ..measure.bench.suites import DEVICES, SUITES
from ..present.tables import text_table
from ..units import si

if TYPE_CHECKING:
    from ..measure.runs.records import Ceiling, Run


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``bench`` 加到 ``sub`` 中。"""
    parser = sub.add_parser(
        "bench",
        help="time real operators on this machine (needs torch)",
        description="Time real operators and write a run file (roofline_book.measure).",
    )
    configure_parser(parser)
    parser.set_defaults(handler=run)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """把 ``bench`` 的选项加到 ``parser`` 中。"""
    parser.add_argument(
        "--device", choices=DEVICES, default="cpu", help="where to measure (default: cpu)"
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        dest="suite",
        action="store_const",
        const="quick",
        help="smaller sizes, for a first look (same as --suite quick)",
    )
    size.add_argument(
        "--suite",
        choices=SUITES,
        help="sizes to run: tiny (tests), quick, full (default)",
    )
    parser.set_defaults(suite="full")
    parser.add_argument("--out", required=True, type=Path, help="run file (JSON) to write")
    parser.add_argument(
        "--force", action="store_true", help="replace --out if it exists (default: refuse)"
    )
    parser.add_argument(
        "--threads",
        default="1",
        metavar="N|all",
        help="CPU threads during the run: a count, or 'all' for torch's default (default: 1, "
        "steadier on a small shared machine; the run file records it)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def threads_option(text: str) -> int | None:
    """``--threads``：>= 1 的个数，或 ``"all"`` （None：torch 的默认值）。

    Examples
    --------
    >>> threads_option("4"), threads_option("all")
    (4, None)
    >>> threads_option("0")
    Traceback (most recent call last):
    ...
    ValueError: --threads must be a whole number >= 1 or 'all'; got '0'
    """
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--threads must be a whole number >= 1 or 'all'; got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """按解析好的选项运行 ``bench``；返回退出状态。

    0：已测量并写出。2：什么也没测，因为要求了 CUDA 却没有 CUDA 设备、``--out`` 已存在而没有给
    ``--force`` 或无法写入，或缺少 torch（stderr 上的一行写明是哪种）。1：已测量，但期间有文件占用了
    ``--out`` 这个名字；run 写在了它旁边。
    """
    from ..measure import run as measure_run
    from ..measure.bench import machine
    from ..measure.judge.claims import check_claims, format_checks
    from ..measure.runs import runfile

    device = _validate.choice("device", args.device, DEVICES)
    suite = _validate.choice("suite", args.suite, SUITES)
    try:
        threads = threads_option(str(getattr(args, "threads", "1")))
    except ValueError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    force = bool(getattr(args, "force", False))
    if out.is_dir():
        print(f"bench: --out {out} is a folder; give a file name", file=sys.stderr)
        return 2
    if out.exists() and not force:
        print(f"bench: {out} exists; pass --force to replace it", file=sys.stderr)
        return 2
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"bench: cannot create the folder of --out: {exc}", file=sys.stderr)
        return 2
    if not os.access(out.parent, os.W_OK):
        print(f"bench: cannot write in {out.parent}", file=sys.stderr)
        return 2
    try:
        torch = require("torch", "measuring")
    except MissingExtra as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    if device == "cuda" and not torch.cuda.is_available():
        print(f"bench: {machine.no_cuda_message()}", file=sys.stderr)
        return 2
    progress = not getattr(args, "no_progress", False)
    measured = measure_run.run_suite(device, suite, threads=threads, progress=progress)
    status = 0
    try:
        runfile.write_run(measured, out, force=force)
    except FileExistsError:
        out = out.with_name(f"{out.stem}.{measured.date.replace(':', '')}{out.suffix}")
        runfile.write_run(measured, out)
        print(f"bench: {args.out} appeared during the run; wrote {out} instead", file=sys.stderr)
        status = 1
    print(summary_table(measured))
    print()
    print(format_checks(check_claims(measured)))
    print(f"\nwrote {out}")
    return status


def _spread(c: Ceiling) -> str:
    return "best of the sweep" if c.spread is None else f"rounds spread {c.spread:.0%}"


def summary_table(run: Run) -> str:
    """各项上限，以及每个条目一行：时间与模型给出的速率（``bench`` 在测完后打印它）。"""
    c = run.ceilings
    lines = [f"{run.device.name} ({run.device.type}), {run.suite} suite, {run.date}"]
    named = [
        *((f"peak {key}", ceiling, "FLOP/s") for key, ceiling in c.peak_flops.items()),
        *((f"vector {key}", ceiling, "FLOP/s") for key, ceiling in c.vector_flops.items()),
        *((key, ceiling, "B/s") for key, ceiling in c.bandwidth.items()),
        *((f"{key} copy", ceiling, "B/s") for key, ceiling in c.cache_bandwidth.items()),
    ]
    for label, ceiling, unit in named:
        value = si(ceiling.value, unit)
        lines.append(f"  {label:<16}{value:>14}   {ceiling.entry} ({_spread(ceiling)})")
    stability = run.stability
    if stability is not None and stability.spread is not None:
        verdict = "stable" if stability.stable else "UNSTABLE"
        lines.append(
            f"  {verdict}: the sentinel's {len(stability.checkpoints_s or ())} checkpoints "
            f"spread {stability.spread:.0%}"
        )
    head = ("operator", "shape", "prec", "impl", "median", "IQR", "FLOP/s", "B/s", "status")
    rows = []
    for e in run.entries:
        row = [e.name, shape_text(e.name, e.shape), e.precision, e.impl]
        if e.time is not None:
            flops, bytes_ = e.rates
            row += [
                si(e.time.median_s, "s"),
                f"{100 * e.time.iqr_fraction:.0f}%",
                si(flops, "FLOP/s"),
                si(bytes_, "B/s"),
                "ok",
            ]
        else:
            row += ["", "", "", "", f"{e.status}: {e.reason}"]
        rows.append(row)
    lines.append(text_table(head, rows, right={4, 5, 6, 7}))
    return "\n".join(lines)
