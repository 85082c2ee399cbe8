"""命令行工具：把本书的模型用在你自己的 shape 和硬件上。

``roofline-book`` （或 ``python -m roofline_book``）是包之上很薄的一层：它打印的每个数字都来自
本书调用的那些模型函数。每个子命令是本包的一个模块（:data:`SUBCOMMANDS`，按 ``--help`` 的顺序），
含一个添加其选项的 ``add_parser(sub, common)`` 和一个 ``run(args)``：``run`` 只解析参数、调用
模型、构建结果记录（:mod:`roofline_book.cli.results`），再把它写成文本或 JSON。
``roofline-book --help`` 列出各子命令。

输入：尺寸是整数，可以直接写（``4096``、``1_048_576``），带十进制 SI 后缀（``4k`` = 4000，
``1.5M`` = 1500000）、二进制后缀（``4Ki`` = 4096，``192Ki`` = 196608），或写成幂（``2^20``）。
速率带 SI 前缀和可选的单位：``--peak 989.5T``、``--bandwidth 3.35TB/s``。

输出：带 SI 前缀的对齐表格；加 ``--json`` 时为基本单位（FLOP、byte、FLOP/s、byte/s、秒、
FLOP/byte）的普通数。FLOPs 与字节数是精确的整数：很大的 shape （每维接近 ``2^63``）下它们超过
int64 与 JavaScript 能精确表示的 ``2^53``，读它们的程序要按大整数读（Python 的 ``json`` 就是这样）。

错误的输入在 stderr 上打印一行，写明错在哪里、允许什么，并以状态 2 退出；其他异常是本包的
bug，照常印出 traceback。

Examples
--------
>>> main(["op", "add", "--numel", "1M", "--peak", "100T", "--bandwidth", "1TB/s"])
operator             add(numel=1000000, dtype=bf16)
device               ad hoc (100 TFLOP/s, 1 TB/s), any precision
FLOPs                1 MFLOP
bytes read           4 MB
bytes written        2 MB
bytes                6 MB (compulsory)
kernels              1
intensity            0.1667 FLOP/B
ridge point          100 FLOP/B (matrix over HBM)
matrix peak          100 TFLOP/s
memory bandwidth     1 TB/s
time, compute        10 ns
time, HBM            6 us  <- bound
bound                HBM
attainable, compute  166.7 GFLOP/s (peak 100 TFLOP/s)
time lower bound     6 us
0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from .._base.extras import MissingExtra
from .._base.validate import InvalidArgument
from . import bench, block, claims, collectives, devices, infer, op, plot, profile, serve, train
from .common import EXIT_USAGE, PROG, SIZE_FORMS, Parser, UsageError, parse_size
from .operators import OPERATORS, parse_point

SUBCOMMANDS = (op, block, infer, serve, train, devices, plot, profile, bench, collectives, claims)
"""各子命令的模块，按帮助列出它们的顺序。"""

__all__ = ["EXIT_USAGE", "OPERATORS", "PROG", "build_parser", "main", "parse_point", "parse_size"]


def build_parser() -> argparse.ArgumentParser:
    """整个命令行：一个 parser，每个子命令一个 subparser。"""
    parser = Parser(
        prog=PROG,
        description=(
            "FLOPs, memory traffic, arithmetic intensity and the roofline model, "
            "on your own shapes and hardware."
        ),
        epilog=(
            f"Sizes: whole numbers >= 1 ({SIZE_FORMS}); k, M, G, T are powers of 1000, "
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


#: 报告 bug 的地方。
ISSUES = "https://github.com/roofline-book/roofline-book/issues"


def main(argv: Sequence[str] | None = None) -> int:
    """运行命令行；返回退出状态（成功为 0，输入有误为 2）。

    输入有误（:class:`~roofline_book.InvalidArgument`、``UsageError``）印一行错误，指出用户输入
    的 flag；其他异常是本包的 bug，照常抛出，traceback 后附一句请报告它的说明。

    Parameters
    ----------
    argv : sequence of str, optional
        不含程序名的参数；默认为 ``sys.argv[1:]``。
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # named by the subcommand, whose --help lists what it takes
            _subparser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    where = f"{PROG} {args.command}" + (f" {args.operator}" if args.command == "op" else "")
    try:
        status = args.handler(args)
        return 0 if status is None else int(status)
    except InvalidArgument as exc:  # a model's parameter, named by the flag the user typed
        command = _subparser(parser, args)
        flag = command.flag(exc.name) if isinstance(command, Parser) else None
        _error(where, f"{flag} {exc.detail}" if flag else str(exc))
        return EXIT_USAGE
    except (UsageError, MissingExtra) as exc:
        _error(where, str(exc))
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `roofline-book devices | head -3`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:  # a file that could be checked but not written (disk full, ...)
        name = f" {exc.filename!r}" if exc.filename else ""
        _error(where, f"cannot write{name}: {exc.strerror or exc}")
        return 1
    except Exception as exc:  # not the user's input: a bug, shown with its traceback
        exc.add_note(
            f"This is a bug in roofline-book {__version__}, not a problem with your input. "
            f"Please report it, with the command line above, at {ISSUES}"
        )
        raise


def _error(where: str, message: str) -> None:
    text = " ".join(message.split())
    print(f"{where}: error: {text}", file=sys.stderr)


def _subparser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """``args`` 所选的最深一层子命令的 parser（``op gemm`` 的，而不是顶层的）。"""
    for name in (getattr(args, "command", None), getattr(args, "operator", None)):
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if name is None or not actions or name not in actions[0].choices:
            break
        parser = actions[0].choices[name]
    return parser
