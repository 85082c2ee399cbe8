"""各子命令共用的部分：单行错误信息、读取尺寸与速率、设备、输出。"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware, adhoc, catalog, hardware

if TYPE_CHECKING:  # the type of what read_run_file returns; measure/ loads only when needed
    from ..measure.runs.records import Run
from .._base.records import as_mapping
from ..present.tables import text_table
from ..present.words import RESOURCES
from ..units import SIZE_FORMS, parse_si, si
from ..units import parse_size as _parse_size
from .results import is_adhoc

if TYPE_CHECKING:  # the types of what model_arg returns and reads
    from ..llm.config import ModelConfig

PROG = "roofline-book"
DEFAULT_DEVICE = "h100-sxm"
EXIT_USAGE = 2

__all__ = [
    "DEFAULT_DEVICE",
    "RESOURCE_TEXT",
    "EXIT_USAGE",
    "PROG",
    "SIZE_FORMS",
    "Parser",
    "UsageError",
    "add_device_arguments",
    "rate_rows",
    "time_rows",
    "device_from_args",
    "device_line",
    "emit",
    "emit_result",
    "is_adhoc",
    "model_arg",
    "model_help",
    "number",
    "output_file",
    "parse_bandwidth",
    "parse_peak",
    "parse_size",
    "plain_text",
    "read_run_file",
    "text_table",
]


#: 模型参数名与命令行 flag 不同时的对应；其余参数的 flag 是 ``--NAME``（``_`` 换成 ``-``）。
PARAMETER_FLAGS = {"weights": "--weights-dtype", "activations": "--dtype", "kv": "--kv-dtype"}


class Parser(argparse.ArgumentParser):
    """错误信息只有一行的 ``ArgumentParser``：哪里错了、该去哪里看。

    以 ``-`` 开头、后面是数字的参数（``--peak -1T``、``--m -1``）当作值读入，再由该选项的检查
    拒绝（“must be > 0”），而不是被当成一个未知的选项。

    选项只认全名（``allow_abbrev=False``）：argparse 默认把 ``--model`` 当作唯一以它开头的
    ``--model-dtype`` 的缩写，于是一个打错或用错子命令的选项会悄悄变成另一个选项；这里它是
    “unrecognized arguments: --model”。
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE^]|[A-Za-z/_]|$)")

    def flag(self, name: str) -> str | None:
        """用户为参数 ``name`` 输入的 flag（``"m"`` 是 ``--m``，``"weights"`` 是
        ``--weights-dtype``）；这个命令没有这样的选项时为 None。参数名与 flag 只在这里对应。"""
        if name in PARAMETER_FLAGS:
            return PARAMETER_FLAGS[name]
        # argparse lists its options only in the private _actions (tested in test_cli.py)
        options = [a.option_strings[-1] for a in self._actions if a.dest == name]
        return options[0] if options and options[0].startswith("--") else None

    def error(self, message: str) -> NoReturn:
        text = _choices_unquoted(" ".join(message.split()))
        self.exit(EXIT_USAGE, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")


_CHOOSE_FROM = re.compile(r"\(choose from (.*)\)$")


def _choices_unquoted(message: str) -> str:
    """argparse 的 "choose from" 清单，各项不加引号，与 Python 的版本无关。

    Python 3.11 写 ``(choose from 'gemm', 'add')``，3.12.8 起写 ``(choose from gemm, add)``；
    浏览器里的 Python 与终端里的不同版本时，同一个错误要印成同一行。

    Examples
    --------
    >>> _choices_unquoted("invalid choice: 'x' (choose from 'gemm', 'add')")
    "invalid choice: 'x' (choose from gemm, add)"
    >>> _choices_unquoted("invalid choice: 'x' (choose from gemm, add)")
    "invalid choice: 'x' (choose from gemm, add)"
    """
    found = _CHOOSE_FROM.search(message)
    if found is None:
        return message
    names = ", ".join(name.strip().strip("'") for name in found[1].split(","))
    return f"{message[: found.start()]}(choose from {names})"


class UsageError(ValueError):
    """解析之后才发现的错误输入；打印为一行，退出状态为 2。"""


_ROLE = re.compile(r":[a-z]+:`~?(?:[^`<]*<)?([^`>]+)>?`")


def plain_text(text: str) -> str:
    """把 docstring 中的 reST 标记写成 ``--help`` 用的纯文本。

    Examples
    --------
    >>> plain_text("``y = x + f(x)``, the same cost as :func:`add`; see :data:`~ops.GELU`.")
    'y = x + f(x), the same cost as add; see GELU.'
    """
    text = _ROLE.sub(lambda m: m[1].rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def parse_size(text: str, minimum: int = 1) -> int:
    """把 :func:`roofline_book.units.parse_size` 用作 argparse 的 type。

    命令行的尺寸 >= ``minimum``，默认为 1（``elementwise`` 的 ``--outputs`` 与
    ``--flops-per-element`` 可以为 0）。

    Examples
    --------
    >>> parse_size("4Ki")
    4096
    >>> parse_size("4.5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number >= 1 (e.g. ...), got '4.5'
    """
    try:
        return _parse_size(text, minimum=minimum)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rate(quantity: str, flag: str) -> Callable[[str], float]:
    """读取 ``quantity`` （:data:`roofline_book.units.UNITS` 的键）的、> 0 的速率的 parser。

    写了单位时它必须度量 ``quantity``：``--peak 100TB/s``、``--bandwidth 1TOP/s`` 和
    ``--peak 100Ts`` 都会被拒绝，而不是当作另一种量读进来。
    """

    def parse(text: str) -> float:
        try:
            value = parse_si(text, name=flag, quantity=quantity)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None
        if math.isinf(value):  # 1e999: beyond any float, not "not > 0"
            raise argparse.ArgumentTypeError(f"{text!r} is too large a rate (beyond 1.8e308)")
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a rate > 0 in {quantity}, got {text!r}")
        return value

    parse.__name__ = quantity
    return parse


parse_peak = _rate("FLOP/s", "--peak")
parse_bandwidth = _rate("byte/s", "--bandwidth")


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("device")
    group.add_argument(
        "--device",
        metavar="NAME",
        help=f"catalog device, any case: {', '.join(catalog())} (default: {DEFAULT_DEVICE})",
    )
    group.add_argument(
        "--peak", type=parse_peak, metavar="FLOP/s", help="ad-hoc device's peak, e.g. 100T"
    )
    group.add_argument(
        "--bandwidth",
        type=parse_bandwidth,
        metavar="B/s",
        help="ad-hoc device's memory bandwidth, e.g. 1T or 3.35TB/s",
    )


def device_from_args(args: argparse.Namespace) -> Hardware:
    """``--device`` 指定的目录设备，或由 ``--peak --bandwidth`` 建的自定义设备。

    Examples
    --------
    >>> ns = argparse.Namespace(device=None, peak=100e12, bandwidth=1e12)
    >>> device_from_args(ns).ridge_point()
    100.0
    """
    if args.peak is None and args.bandwidth is None:
        return hardware(DEFAULT_DEVICE if args.device is None else args.device)
    if args.device is not None:
        raise UsageError("give either --device or --peak with --bandwidth, not both")
    if args.peak is None or args.bandwidth is None:
        missing = "--bandwidth" if args.peak is not None else "--peak"
        raise UsageError(
            f"an ad-hoc device needs both --peak and --bandwidth; {missing} is missing"
        )
    name = f"ad hoc ({si(args.peak, 'FLOP/s')}, {si(args.bandwidth, 'B/s')})"
    return adhoc(name, args.peak, args.bandwidth)


def output_file(text: str, flag: str, suffixes: tuple[str, ...] = ("svg", "png")) -> Path:
    """``flag`` 给出的输出文件，在做任何工作之前检查能否写入；返回它的绝对路径。

    绝对路径使得之后改变工作目录（被剖析的脚本可能 ``os.chdir``）也不会把文件写到别处。

    Raises
    ------
    UsageError
        扩展名不在 ``suffixes`` 中、路径是一个文件夹、所在文件夹不存在或不可写时抛出，
        一行写明是哪个选项、哪个路径。

    Examples
    --------
    >>> output_file("/nonexistent/x.svg", "--out")
    Traceback (most recent call last):
    ...
    roofline_book.cli.common.UsageError: --out '/nonexistent/x.svg': the folder ... does not exist
    >>> output_file("x.pdf", "--out")
    Traceback (most recent call last):
    ...
    roofline_book.cli.common.UsageError: --out must end in .svg or .png, got 'x.pdf'
    """
    path = Path(text)
    if path.suffix.lower().removeprefix(".") not in suffixes:
        allowed = " or ".join(f".{s}" for s in suffixes)
        raise UsageError(f"{flag} must end in {allowed}, got {text!r}")
    path = path.absolute()
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{flag} {text!r} is a folder; give a file name")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"{flag} {text!r}: the folder '{folder}' {what}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{flag} {text!r}: no permission to write there")
    return path


def read_run_file(path: str, what: str = "the run file") -> Run:
    """读取、校验并载入一个 run file
    （:func:`~roofline_book.measure.runs.runfile.load_run`）；读不了时
    抛出一行、写明文件名与原因的 :class:`UsageError`。

    ``what`` 是错误信息对它的称呼（例如 ``"--device-ceilings: the run file"``）。
    """
    from ..measure.runs import runfile  # only the commands that read a run file load measure/

    try:
        return runfile.load_run(path)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"cannot read {what} {path!r}: not UTF-8 text (byte {exc.start} is "
            f"0x{exc.object[exc.start]:02x}); a run file is the JSON 'bench' writes"
        ) from None
    except RecursionError:
        raise UsageError(
            f"cannot read {what} {path!r}: its JSON nests too deeply to be a run file"
        ) from None
    except ValueError as exc:  # not a run file: the message names the file and the field
        raise UsageError(str(exc)) from None


def _is_config_path(text: str) -> bool:
    """``--model`` 的值是否当作 ``config.json`` 的路径：以 ``.json`` 结尾，或是一个已有的文件。"""
    return text.lower().endswith(".json") or Path(text).is_file()


def model_help(default: str | None = None) -> str:
    """``--model`` 的帮助文字：目录中的模型，或一份 Hugging Face ``config.json`` 的路径。"""
    from ..llm.config import models

    tail = f" (default: {default})" if default is not None else ""
    return (
        f"catalog model, any case: {', '.join(models())}; or the path to a Hugging Face "
        f"config.json (a name ending in .json, or an existing file){tail}"
    )


def model_arg(text: str, flag: str = "--model") -> ModelConfig:
    """``--model`` 给出的模型：目录中的名字，或一份 Hugging Face ``config.json`` 的路径（以
    ``.json`` 结尾或是已有的文件，由 :func:`roofline_book.llm.config.model_from_config` 读入）。

    ``infer``、``block`` 与 ``train`` 都这样读 ``--model``。读不了时抛出一行、写明 ``flag`` 的
    :class:`UsageError`：文件不存在、不是合法的 JSON、``model_type`` 不支持（导入的原话）；
    两者都不是时列出目录中的名字。

    Examples
    --------
    >>> model_arg("Llama-2-7B").key
    'llama-2-7b'
    >>> model_arg("no/such/config.json")
    Traceback (most recent call last):
    ...
    roofline_book.cli.common.UsageError: --model 'no/such/config.json': no such file
    >>> model_arg("gpt-9")
    Traceback (most recent call last):
    ...
    roofline_book.cli.common.UsageError: --model 'gpt-9' is not in the catalog; allowed: \
llama-2-7b, ...; or the path to a Hugging Face config.json
    """
    from ..llm.config import model, model_from_config

    if not _is_config_path(text):
        try:
            return model(text)
        except InvalidArgument as exc:
            raise UsageError(
                f"{flag} {exc.detail}; or the path to a Hugging Face config.json"
            ) from None
    if not Path(text).exists():
        raise UsageError(f"{flag} {text!r}: no such file")
    try:
        return model_from_config(text)
    except InvalidArgument as exc:  # the importer's words: which key, what it allows
        detail = exc.detail if exc.name == "config" else str(exc)
        where = "" if text in detail else f" {text!r}"  # the importer names the file itself
        raise UsageError(f"{flag}{where}: {detail}") from None


def device_line(device: Hardware, precision: str) -> str:
    if is_adhoc(device):
        return f"{device.name}, any precision"
    return f"{device.key} ({device.name}), {precision} dense peak"


def number(value: float) -> str:
    """无量纲的数（算术强度、ridge point），保留 4 位有效数字。"""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def emit(data: Any) -> None:
    """把 ``data`` 打印为缩进的严格 JSON（没有 NaN 与 Infinity）。"""
    print(json.dumps(data, indent=2, allow_nan=False))


def emit_result(result: Any) -> None:
    """打印一个子命令的结果记录（:mod:`roofline_book.cli.results`）的 JSON。"""
    emit(as_mapping(result))


#: 文本输出对每种资源的叫法。
RESOURCE_TEXT = RESOURCES["en"]


def rate_rows(figures: dict[str, Any], device: Hardware, precision: str) -> list[tuple[str, str]]:
    """文本报告中的 ``attainable, <unit>`` 各行：每种单元的速率，旁边是它的峰值。

    特殊函数的速率按每秒求值次数计（每次 exp 计 1）。
    """
    rows = []
    for unit, rate in figures["attainable_by_unit_per_s"].items():
        peak = (
            device.peak_flops(precision) if unit == "compute" else device.ceiling(unit, precision)
        )
        name = " exp/s" if unit == "special" else "FLOP/s"  # one evaluation per exp
        rows.append(
            (f"attainable, {RESOURCE_TEXT[unit]}", f"{si(rate, name)} (peak {si(peak, name)})")
        )
    return rows or [("attainable", si(0.0, "FLOP/s") + " (no FLOPs)")]


def time_rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """文本报告中的 ``time, <resource>`` 各行，起限制作用的那一行加标记。"""
    bound = figures["bound"]
    return [
        (f"time, {RESOURCE_TEXT[r]}", si(t, "s") + ("  <- bound" if r == bound else ""))
        for r, t in figures["time_by_resource_s"].items()
    ]
