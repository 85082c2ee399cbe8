"""The command-line tool: the book's models on your own shapes and hardware.

``roofline-book`` (or ``python -m roofline_book``) is a thin layer over the
package: every figure it prints comes from :mod:`roofline_book.ops`,
:mod:`roofline_book.roofline`, :mod:`roofline_book.hardware` and
:mod:`roofline_book.transformer`, the same functions the book calls.

Subcommands
-----------
``op``
    One operator's FLOPs, bytes, intensity, bound, attainable rate and time
    lower bound on a device.
``block``
    The operators of one Transformer decoder block (and, with ``--optimizer``,
    an AdamW step over its weights) as a table.
``devices``
    The hardware catalog: dense peaks, ridge points and sources.
``plot``
    A roofline chart (SVG or PNG) with operators as points.
``profile``
    A PyTorch script run under the profiler, each recorded op attributed to
    the models and held to a roof.
``bench``
    The benchmark suite of :mod:`roofline_book.measure`.

Each subcommand is one module of this package with an ``add_parser(sub,
common)`` that adds its options and a ``run(args)`` that answers;
:data:`SUBCOMMANDS` lists them in the order ``--help`` shows them.

Input: sizes are whole numbers, written plainly (``4096``, ``1_048_576``),
with a decimal SI suffix (``4k`` = 4000, ``1.5M`` = 1500000), a binary one
(``4Ki`` = 4096, ``192Ki`` = 196608) or as a power (``2^20``). Rates take an
SI prefix and an optional unit: ``--peak 989.5T``, ``--bandwidth 3.35TB/s``.

Output: aligned tables with SI prefixes, or with ``--json`` plain numbers in
base units (FLOP, byte, FLOP/s, byte/s, second, FLOP/byte).

Bad input prints one line on stderr, naming what was wrong and what is
allowed, and exits with status 2.

Examples
--------
>>> main(["op", "add", "--numel", "1M", "--peak", "100T", "--bandwidth", "1TB/s"])
operator          add(numel=1000000, dtype=bf16)
device            ad hoc (100 TFLOP/s, 1 TB/s), any precision
FLOPs             1 MFLOP
bytes read        4 MB
bytes written     2 MB
bytes             6 MB (compulsory)
kernels           1
intensity         0.1667 FLOP/B
ridge point       100 FLOP/B (matrix over HBM)
matrix peak       100 TFLOP/s
memory bandwidth  1 TB/s
time, compute     10 ns
time, HBM         6 us  <- bound
bound             HBM
attainable        166.7 GFLOP/s
time lower bound  6 us
0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..extras import MissingExtra
from . import bench, block, claims, devices, infer, op, plot, profile
from .common import EXIT_USAGE, PROG, SIZE_FORMS, Parser, UsageError, parse_size
from .operators import OPERATORS, parse_point

SUBCOMMANDS = (op, block, infer, devices, plot, profile, bench, claims)
"""The subcommands' modules, in the order the help lists them."""

__all__ = ["EXIT_USAGE", "OPERATORS", "PROG", "build_parser", "main", "parse_point", "parse_size"]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, one parser with a subparser per subcommand."""
    parser = Parser(
        prog=PROG,
        description=(
            "FLOPs, memory traffic, arithmetic intensity and the roofline model, "
            "on your own shapes and hardware."
        ),
        epilog=(
            f"Sizes: whole numbers ({SIZE_FORMS}); k, M, G, T are powers of 1000, "
            "Ki, Mi, Gi, Ti powers of 1024. Rates: a number with an optional SI prefix "
            "and unit, e.g. 989.5T or 3.35TB/s. --json prints base units: FLOP, byte, "
            "FLOP/s, byte/s, second. Bad input exits with status 2."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output, base units")

    for module in SUBCOMMANDS:
        module.add_parser(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """运行命令行；返回退出状态（成功为 0，输入有误为 2）。

    Parameters
    ----------
    argv : sequence of str, optional
        不含程序名的参数；默认为 ``sys.argv[1:]``。
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        status = args.handler(args)
        return 0 if status is None else int(status)
    except (UsageError, ValueError, TypeError, MissingExtra) as exc:
        message = " ".join(str(exc).split())
        where = f"{PROG} {args.command}" + (f" {args.operator}" if args.command == "op" else "")
        print(f"{where}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `roofline-book devices | head -3`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
