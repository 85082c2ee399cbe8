"""``roofline-book bench``: measure this machine and write a run file.

The suite, its timing and the run file are :mod:`roofline_book.measure`;
this is the command line over :func:`~roofline_book.measure.run.run_suite`.
torch is needed to run it, not to list its options; the measuring modules are
imported when it runs, so the other subcommands start without them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .. import _validate
from ..extras import MissingExtra, require
from ..measure.suites import DEVICES, SUITES


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``bench`` to ``sub``."""
    parser = sub.add_parser(
        "bench",
        help="time real operators on this machine (needs torch)",
        description="Time real operators and write a run file (roofline_book.measure).",
    )
    configure_parser(parser)
    parser.set_defaults(handler=run)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser``."""
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
    """``--threads``: a count >= 1, or ``"all"`` (None: torch's default).

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
    """Run ``bench`` from parsed options; the exit status.

    0: measured and written. 2: nothing measured, because CUDA was asked for
    without a CUDA device, ``--out`` exists without ``--force`` or cannot be
    written, or torch is missing (one line on stderr says which). 1: measured,
    but a file took the name ``--out`` meanwhile; the run went next to it.
    """
    from ..measure import machine, runfile
    from ..measure import run as measure_run
    from ..measure.claims import check_claims, format_checks

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
        out = out.with_name(f"{out.stem}.{measured['date'].replace(':', '')}{out.suffix}")
        runfile.write_run(measured, out)
        print(f"bench: {args.out} appeared during the run; wrote {out} instead", file=sys.stderr)
        status = 1
    print(measure_run.summary_table(measured))
    print()
    print(format_checks(check_claims(measured)))
    print(f"\nwrote {out}")
    return status
