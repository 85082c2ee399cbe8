"""命令行所提供的库中算子：``op OPERATOR`` 与 ``plot --point NAME:SIZES`` 都读算子登记表。

每个算子是 :data:`roofline_book.ops.registry.REGISTRY` 的一项：模型函数、读自签名的参数，以及
各参数的帮助文字。这里只把登记表变成命令行的参数、``--point`` 的写法，并补上由设备决定的参数。
"""

from __future__ import annotations

import argparse
import inspect
from functools import partial
from typing import Any

from .._base.records import codec
from ..devices.catalog import Hardware
from ..devices.kernels import device_flash_tile, device_sram_bytes
from ..ops import Cost
from ..ops.registry import REGISTRY, Entry
from .common import UsageError, parse_size

#: 命令行的算子，即算子登记表（只读）。
OPERATORS = REGISTRY


class Arguments(dict[str, Any]):
    """模型函数收到的每个参数（默认值在内），参数名 -> 值；``--json`` 原样写出。"""


codec(Arguments, encode=dict, decode=Arguments, schema=lambda: {"type": "object"})

#: ``op linear-backward`` as well as ``op linear_backward``: the flags are written with hyphens
ALIASES = {name: [name.replace("_", "-")] for name in OPERATORS if "_" in name}


def operator(name: str) -> tuple[str, Entry]:
    key = name.strip().lower().replace("-", "_")
    if key not in OPERATORS:
        raise UsageError(f"unknown operator {name!r}; allowed: {', '.join(OPERATORS)}")
    return key, OPERATORS[key]


def add_operator_arguments(parser: argparse.ArgumentParser, spec: Entry) -> None:
    for arg in spec.params:
        required, default = arg.required, arg.default
        shown = "" if required or default is None else f" (default: {default})"
        if arg.kind == "flag":
            on_by_default = default is True  # then --no-NAME turns it off
            parser.add_argument(
                arg.flag,
                dest=arg.name,
                action=argparse.BooleanOptionalAction if on_by_default else "store_true",
                default=argparse.SUPPRESS,
                help=arg.help + (" (default: on)" if on_by_default else ""),
            )
            continue
        parser.add_argument(
            arg.flag,
            dest=arg.name,
            type=partial(parse_size, minimum=arg.minimum) if arg.kind == "size" else str,
            required=required,
            default=argparse.SUPPRESS,
            metavar="N" if arg.kind == "size" else arg.name.upper(),
            help=arg.help + shown,
        )


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def device_defaults(spec: Entry, given: dict[str, Any], device: Hardware) -> dict[str, Any]:
    """补上由设备决定的参数之后的 ``given``：flash kernel 的 tile。

    设备运行 FlashAttention-3 时（:func:`roofline_book.devices.kernels.device_flash_tile`）用它的
    tile；
    否则，或者给了片上存储时，query 块按片上存储的规则来定，默认是设备每个 SM 的 shared memory。
    """
    params = {a.name: a for a in spec.params}
    if "sram_bytes" not in params or given.get("sram_bytes") is not None:
        return given
    given = given | {"sram_bytes": device_sram_bytes(device)}
    head_dim = given.get("head_dim")
    takes_tile = "tile" in inspect.signature(spec.func).parameters  # the forward kernel
    if takes_tile and isinstance(head_dim, int):
        dtype = given.get("dtype", params["dtype"].default)
        causal = given.get("causal", params["causal"].default)
        try:
            tile = device_flash_tile(device, head_dim, dtype, bool(causal))
        except (ValueError, TypeError):  # a bad precision: the operator itself says so
            tile = None
        if tile is not None:
            given = given | {"tile": tile}
    return given


def point_form(name: str) -> str:
    """``--point`` 的写法：名字、冒号，然后按位置给出的尺寸，可以省略的放在方括号里。

    位置参数按顺序填入，所以最后一个必需的尺寸之前的尺寸都要给出。

    Examples
    --------
    >>> point_form("gemm")
    'gemm:M,K,N[,BATCH]'
    >>> point_form("attention")
    'attention:BATCH,HEADS,SEQ_Q,SEQ_K,HEAD_DIM[,SRAM_BYTES[,KV_HEADS[,WINDOW]]]'
    """
    key, spec = operator(name)
    sizes = [a for a in spec.params if a.kind == "size"]
    last = max((i for i, a in enumerate(sizes) if a.required), default=-1)
    given = ",".join(a.name.upper() for a in sizes[: last + 1])
    optional = "".join(f"[,{a.name.upper()}" for a in sizes[last + 1 :])
    return f"{key}:{given}{optional}{']' * len(sizes[last + 1 :])}"


def parse_point(
    text: str, dtype: str | None = None, device: Hardware | None = None
) -> tuple[str, str, Cost, dict[str, Any]]:
    """把 ``NAME:SIZE,SIZE,...,KEY=VALUE`` 读成一个算子的代价。

    各尺寸按顺序填入算子的尺寸参数（``gemm:M,K,N``、``add:NUMEL``、
    ``attention:BATCH,HEADS,SEQ_Q,SEQ_K,HEAD_DIM``）；任何参数也可以按名字给出，如
    ``adamw:1M,impl=loop``、``gemm:64,64,64,batch=8``。

    Parameters
    ----------
    text : str
        键入的点。
    dtype : str, optional
        接收 ``dtype`` 而这里没有指定的算子所用的精度（AdamW 的各精度保留自己的默认值）。
    device : Hardware, optional
        补上由设备决定的内容（:func:`device_defaults`）。

    Returns
    -------
    (str, str, Cost, dict)
        算子名、标签、它的代价，以及它收到的每个参数。

    Raises
    ------
    ValueError, TypeError
        点的格式错误、算子或参数未知，或算子拒绝这些尺寸时抛出；每条信息都写明是哪个点。

    Examples
    --------
    >>> name, label, cost, _ = parse_point("gemm:4096,4096,4096")
    >>> name, label, cost.flops
    ('gemm', 'gemm 4096x4096x4096', 137438953472)
    >>> parse_point("adamw:1M,impl=loop")[1]          # the label keeps what was typed
    'adamw 1M impl=loop'
    """
    name, sep, rest = text.partition(":")
    try:
        key, spec = operator(name)
    except UsageError as exc:
        raise UsageError(f"--point {text!r}: {exc}") from None
    if not sep or not rest.strip():
        wanted = ",".join(a.name.upper() for a in spec.params if a.required)
        raise UsageError(f"--point {text!r}: give sizes after the name, e.g. {key}:{wanted}")
    by_name = {a.name: a for a in spec.params}
    sizes = [a for a in spec.params if a.kind == "size"]
    given: dict[str, Any] = {}
    positional: list[str] = []
    named: list[str] = []
    for item in (part.strip() for part in rest.split(",")):
        try:
            if "=" in item:
                field, value = (s.strip() for s in item.split("=", 1))
                field = field.replace("-", "_")
                if field not in by_name:
                    raise UsageError(
                        f"--point {text!r}: {key} has no argument {field!r}; "
                        f"allowed: {', '.join(by_name)}"
                    )
                arg = by_name[field]
                named.append(f"{field}={value}")
            else:
                if len(positional) == len(sizes):
                    raise UsageError(
                        f"--point {text!r}: {key} takes at most {len(sizes)} sizes "
                        f"({', '.join(a.name for a in sizes)})"
                    )
                arg, value = sizes[len(positional)], item
                positional.append(item)
            if arg.kind == "size":
                given[arg.name] = parse_size(value, minimum=arg.minimum)
            elif arg.kind == "flag":
                if value.lower() not in _TRUE | _FALSE:
                    raise UsageError(f"--point {text!r}: {arg.name} must be true or false")
                given[arg.name] = value.lower() in _TRUE
            else:
                given[arg.name] = value
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--point {text!r}: {exc}") from None
    missing = [a.name for a in spec.params if a.required and a.name not in given]
    if missing:
        raise UsageError(f"--point {text!r}: {key} needs {', '.join(missing)}")
    if dtype is not None and "dtype" in by_name:
        given.setdefault("dtype", dtype)
    if device is not None:
        given = device_defaults(spec, given, device)
    try:
        cost, arguments = spec.call(given)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"--point {text!r}: {exc}") from None
    label = " ".join([key, "x".join(positional), *named]) if positional else " ".join([key, *named])
    return key, label, cost, arguments
