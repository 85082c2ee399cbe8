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
``bench``
    The benchmark suite of :mod:`roofline_book.bench`.

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
bytes             6 MB
kernels           1
intensity         0.1667 FLOP/B
ridge point       100 FLOP/B
peak compute      100 TFLOP/s
memory bandwidth  1 TB/s
bound             memory
attainable        166.7 GFLOP/s
time, compute     10 ns
time, memory      6 us
time lower bound  6 us
0
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NoReturn

from . import __version__, ops
from .hardware import Hardware, adhoc, catalog, hardware, peak_key
from .ops import Cost
from .roofline import Row, attainable, bound, time_lower_bound
from .transformer import LLAMA2_7B, block_table, optimizer_table
from .units import parse_si, si

PROG = "roofline-book"
DEFAULT_DEVICE = "h100-sxm"
EXIT_USAGE = 2

# --------------------------------------------------------------------------
# Reading what people type


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: what was wrong, where to look."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")


class _UsageError(ValueError):
    """Bad input found after parsing; printed as one line, exit status 2."""


_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(k|K|M|G|T|Ki|Mi|Gi|Ti)?$")
_POWER = re.compile(r"^(\d+)(?:\^|\*\*)(\d+)$")
_SIZE_SCALE = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_SIZE_FORMS = "e.g. 4096, 1_048_576, 4k (= 4000), 4Ki (= 4096) or 2^20"


def parse_size(text: str) -> int:
    """Read a size: a whole number >= 0, plain, with an SI or binary suffix, or a power.

    ``k`` means 1000 and ``Ki`` 1024; a value that is not a whole number is
    refused rather than rounded.

    Parameters
    ----------
    text : str
        What was typed.

    Returns
    -------
    int

    Raises
    ------
    argparse.ArgumentTypeError
        Naming the accepted forms.

    Examples
    --------
    >>> parse_size("4096"), parse_size("4k"), parse_size("4Ki"), parse_size("2^20")
    (4096, 4000, 4096, 1048576)
    >>> parse_size("1.5M"), parse_size("1_048_576")
    (1500000, 1048576)
    >>> parse_size("1.0001k")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number (e.g. ...), got '1.0001k'
    """
    flat = str(text).strip().replace("_", "")
    power = _POWER.match(flat)
    if power:
        base, exponent = int(power[1]), int(power[2])
        if base > 1 and exponent * math.log10(base) > 300:
            raise argparse.ArgumentTypeError(f"{text!r} is too large a size")
        return base**exponent
    match = _SIZE.match(flat)
    if match:
        value = Fraction(match[1]) * _SIZE_SCALE[match[2] or ""]
        if value.denominator == 1:
            return int(value)
    raise argparse.ArgumentTypeError(f"expected a whole number ({_SIZE_FORMS}), got {text!r}")


def _rate(unit: str, wrong: str, what: str) -> Callable[[str], float]:
    """A parser of a rate > 0 in ``unit``; text containing ``wrong`` is ``what``, refused."""

    def parse(text: str) -> float:
        if wrong in text:
            raise argparse.ArgumentTypeError(f"{text!r} is {what}; this takes {unit}")
        try:
            value = parse_si(text, name="rate")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("rate: ")) from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a rate > 0 in {unit}, got {text!r}")
        return value

    parse.__name__ = unit
    return parse


parse_peak = _rate("FLOP/s", "B", "a bandwidth (bytes)")
parse_bandwidth = _rate("byte/s", "FLOP", "a compute rate")


# --------------------------------------------------------------------------
# The operators, described once for both `op` and `plot --point`

_REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class _Arg:
    """One argument of an operator function, as the command line offers it."""

    name: str
    kind: str  # "size", "text" or "flag"
    help: str
    required: bool | None = None  # None: as the library's signature says

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class _Operator:
    """A library operator function and the arguments the command line passes to it."""

    func: Callable[..., Cost]
    args: tuple[_Arg, ...]
    roof_dtype: str = "dtype"  # the argument whose precision selects the compute roof
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.func) or "").splitlines()[0]

    def default(self, name: str) -> Any:
        return inspect.signature(self.func).parameters[name].default

    def is_required(self, arg: _Arg) -> bool:
        return self.default(arg.name) is _REQUIRED if arg.required is None else arg.required

    def call(self, given: dict[str, Any]) -> tuple[Cost, dict[str, Any]]:
        """The cost, and every argument the function saw (defaults filled in)."""
        kwargs = self.prepare(dict(given)) if self.prepare else dict(given)
        bound_args = inspect.signature(self.func).bind(**kwargs)
        bound_args.apply_defaults()
        return self.func(**kwargs), dict(bound_args.arguments)

    def roof_precision(self, arguments: dict[str, Any]) -> str:
        return arguments[self.roof_dtype]


_DTYPE = _Arg("dtype", "text", "precision name, e.g. bf16, fp16, fp32, fp8")
_NUMEL = _Arg("numel", "size", "elements per tensor")


def _numel_op(func: Callable[..., Cost]) -> _Operator:
    return _Operator(func, (_NUMEL, _DTYPE))


def _seq_k_defaults_to_seq_q(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("seq_k", kwargs.get("seq_q"))
    return kwargs


OPERATORS: dict[str, _Operator] = {
    "gemm": _Operator(
        ops.gemm,
        (
            _Arg("m", "size", "rows of A and C"),
            _Arg("k", "size", "the shared (reduction) dimension"),
            _Arg("n", "size", "columns of B and C"),
            _Arg("batch", "size", "independent products of this shape"),
            _DTYPE,
            _Arg("out_dtype", "text", "precision of C, if not that of A and B"),
        ),
    ),
    "add": _numel_op(ops.add),
    "residual_add": _numel_op(ops.residual_add),
    "relu": _numel_op(ops.relu),
    "gelu": _numel_op(ops.gelu),
    "swiglu": _numel_op(ops.swiglu),
    "elementwise": _Operator(
        ops.elementwise,
        (
            _NUMEL,
            _Arg("inputs", "size", "tensors read"),
            _Arg("outputs", "size", "tensors written"),
            _Arg("flops_per_element", "size", "FLOPs per element"),
            _DTYPE,
        ),
    ),
    "rmsnorm": _Operator(
        ops.rmsnorm,
        (
            _Arg("rows", "size", "rows (tokens)"),
            _Arg("d", "size", "features normalized over"),
            _DTYPE,
            _Arg("weight_dtype", "text", "precision of the weight, if not --dtype"),
        ),
    ),
    "layernorm": _Operator(
        ops.layernorm,
        (
            _Arg("rows", "size", "rows (tokens)"),
            _Arg("d", "size", "features normalized over"),
            _DTYPE,
            _Arg("weight_dtype", "text", "precision of weight and bias, if not --dtype"),
        ),
    ),
    "softmax": _Operator(
        ops.softmax,
        (
            _Arg("rows", "size", "rows"),
            _Arg("cols", "size", "elements per row"),
            _DTYPE,
        ),
    ),
    "adamw": _Operator(
        ops.adamw,
        (
            _Arg("params", "size", "parameters updated"),
            _Arg("impl", "text", f"implementation: {', '.join(ops.ADAMW_IMPLS)}"),
            _Arg("tensors", "size", "parameter tensors the parameters are spread over"),
            _Arg("param_dtype", "text", "precision of the parameters (and of the compute roof)"),
            _Arg("grad_dtype", "text", "precision of the gradients (default: --param-dtype)"),
            _Arg("state_dtype", "text", "precision of both moments (default: --param-dtype)"),
        ),
        roof_dtype="param_dtype",
    ),
    "attention": _Operator(
        ops.attention,
        (
            _Arg("batch", "size", "sequences"),
            _Arg("heads", "size", "attention heads"),
            _Arg("seq_q", "size", "queries per sequence"),
            _Arg("seq_k", "size", "keys per sequence (default: --seq-q)", required=False),
            _Arg("head_dim", "size", "width of one head"),
            _DTYPE,
            _Arg("impl", "text", f"implementation: {', '.join(ops.ATTENTION_IMPLS)}"),
            _Arg("causal", "flag", "apply a causal mask"),
            _Arg("sram_bytes", "size", "on-chip memory of one flash thread block, bytes"),
        ),
        prepare=_seq_k_defaults_to_seq_q,
    ),
}
_ALIASES = {"residual_add": ["residual-add"]}


def _operator(name: str) -> tuple[str, _Operator]:
    key = name.strip().lower().replace("-", "_")
    if key not in OPERATORS:
        raise _UsageError(f"unknown operator {name!r}; allowed: {', '.join(OPERATORS)}")
    return key, OPERATORS[key]


def _add_operator_arguments(parser: argparse.ArgumentParser, spec: _Operator) -> None:
    for arg in spec.args:
        required = spec.is_required(arg)
        default = spec.default(arg.name) if arg.required is None else _REQUIRED
        shown = "" if required or default in (_REQUIRED, None) else f" (default: {default})"
        if arg.kind == "flag":
            parser.add_argument(
                arg.flag,
                dest=arg.name,
                action="store_true",
                default=argparse.SUPPRESS,
                help=arg.help,
            )
            continue
        parser.add_argument(
            arg.flag,
            dest=arg.name,
            type=parse_size if arg.kind == "size" else str,
            required=required,
            default=argparse.SUPPRESS,
            metavar="N" if arg.kind == "size" else arg.name.upper(),
            help=arg.help + shown,
        )


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_point(text: str, dtype: str | None = None) -> tuple[str, str, Cost, dict[str, Any]]:
    """Read ``NAME:SIZE,SIZE,...,KEY=VALUE`` into an operator's cost.

    Sizes fill the operator's size arguments in order (``gemm:M,K,N``,
    ``add:NUMEL``, ``attention:BATCH,HEADS,SEQ_Q,SEQ_K,HEAD_DIM``); any
    argument can also be named, ``adamw:1M,impl=loop``, ``gemm:64,64,64,batch=8``.

    Parameters
    ----------
    text : str
        The point as typed.
    dtype : str, optional
        Precision of an operator that takes a ``dtype`` and names none here
        (AdamW's precisions keep their own defaults).

    Returns
    -------
    (str, str, Cost, dict)
        The operator's name, a label, its cost and every argument it saw.

    Raises
    ------
    ValueError, TypeError
        For a malformed point, an unknown operator or argument, or sizes the
        operator refuses; each message names the point.

    Examples
    --------
    >>> name, label, cost, _ = parse_point("gemm:4096,4096,4096")
    >>> name, label, cost.flops
    ('gemm', 'gemm 4096x4096x4096', 137438953472)
    >>> parse_point("adamw:1M,impl=loop")[1]          # the label keeps what was typed
    'adamw 1M impl=loop'
    """
    name, sep, rest = text.partition(":")
    key, spec = _operator(name)
    if not sep or not rest.strip():
        wanted = ",".join(a.name.upper() for a in spec.args if spec.is_required(a))
        raise _UsageError(f"--point {text!r}: give sizes after the name, e.g. {key}:{wanted}")
    by_name = {a.name: a for a in spec.args}
    sizes = [a for a in spec.args if a.kind == "size"]
    given: dict[str, Any] = {}
    positional: list[str] = []
    named: list[str] = []
    for item in (part.strip() for part in rest.split(",")):
        try:
            if "=" in item:
                field, value = (s.strip() for s in item.split("=", 1))
                field = field.replace("-", "_")
                if field not in by_name:
                    raise _UsageError(
                        f"--point {text!r}: {key} has no argument {field!r}; "
                        f"allowed: {', '.join(by_name)}"
                    )
                arg = by_name[field]
                named.append(f"{field}={value}")
            else:
                if len(positional) == len(sizes):
                    raise _UsageError(
                        f"--point {text!r}: {key} takes at most {len(sizes)} sizes "
                        f"({', '.join(a.name for a in sizes)})"
                    )
                arg, value = sizes[len(positional)], item
                positional.append(item)
            if arg.kind == "size":
                given[arg.name] = parse_size(value)
            elif arg.kind == "flag":
                if value.lower() not in _TRUE | _FALSE:
                    raise _UsageError(f"--point {text!r}: {arg.name} must be true or false")
                given[arg.name] = value.lower() in _TRUE
            else:
                given[arg.name] = value
        except argparse.ArgumentTypeError as exc:
            raise _UsageError(f"--point {text!r}: {exc}") from None
    missing = [a.name for a in spec.args if spec.is_required(a) and a.name not in given]
    if missing:
        raise _UsageError(f"--point {text!r}: {key} needs {', '.join(missing)}")
    if dtype is not None and "dtype" in by_name:
        given.setdefault("dtype", dtype)
    try:
        cost, arguments = spec.call(given)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"--point {text!r}: {exc}") from None
    label = " ".join([key, "x".join(positional), *named]) if positional else " ".join([key, *named])
    return key, label, cost, arguments


# --------------------------------------------------------------------------
# Devices


def _add_device_arguments(parser: argparse.ArgumentParser) -> None:
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
    """The catalog device named by ``--device``, or an ad-hoc one from ``--peak --bandwidth``.

    Examples
    --------
    >>> ns = argparse.Namespace(device=None, peak=100e12, bandwidth=1e12)
    >>> device_from_args(ns).ridge_point()
    100.0
    """
    if args.peak is None and args.bandwidth is None:
        return hardware(args.device or DEFAULT_DEVICE)
    if args.device is not None:
        raise _UsageError("give either --device or --peak with --bandwidth, not both")
    if args.peak is None or args.bandwidth is None:
        missing = "--bandwidth" if args.peak is not None else "--peak"
        raise _UsageError(
            f"an ad-hoc device needs both --peak and --bandwidth; {missing} is missing"
        )
    name = f"ad hoc ({si(args.peak, 'FLOP/s')}, {si(args.bandwidth, 'B/s')})"
    return adhoc(name, args.peak, args.bandwidth)


def _is_adhoc(device: Hardware) -> bool:
    return catalog().get(device.key) is not device


def _device_json(device: Hardware, precision: str) -> dict[str, Any]:
    return {
        "key": device.key,
        "name": device.name,
        "precision": precision,
        "peak_flops": device.peak_flops(precision),
        "memory_bandwidth": device.memory_bandwidth,
        "ridge_point": device.ridge_point(precision),
    }


def _device_line(device: Hardware, precision: str) -> str:
    if _is_adhoc(device):
        return f"{device.name}, any precision"
    return f"{device.key} ({device.name}), {precision} dense peak"


# --------------------------------------------------------------------------
# Printing


def _number(value: float) -> str:
    """A dimensionless figure (intensity, ridge point) with 4 significant digits."""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _table(header: Sequence[str] | None, rows: Sequence[Sequence[str]], right: set[int]) -> str:
    """Rows as aligned text; columns whose index is in ``right`` are right-aligned."""
    lines = ([list(header)] if header else []) + [list(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _emit(data: Any) -> None:
    print(json.dumps(data, indent=2))


# --------------------------------------------------------------------------
# op


def _cost_figures(cost: Cost, peak: float, bandwidth: float) -> dict[str, Any]:
    """What the roofline model says about one cost, in base units."""
    time = time_lower_bound(cost, peak, bandwidth)
    return {
        "flops": cost.flops,
        "bytes_read": cost.bytes_read,
        "bytes_written": cost.bytes_written,
        "bytes": cost.bytes,
        "kernels": cost.kernels,
        "intensity": cost.intensity,
        "bound": bound(cost.intensity, peak, bandwidth),
        "attainable": attainable(cost.intensity, peak, bandwidth),
        "time_compute": time.compute,
        "time_memory": time.memory,
        "time_lower_bound": time.seconds,
    }


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in arguments.items() if v is not None)
    return f"{name}({shown})"


def run_op(args: argparse.Namespace) -> int:
    """The ``op`` subcommand: one operator on one device."""
    spec = OPERATORS[args.operator]
    given = {a.name: getattr(args, a.name) for a in spec.args if hasattr(args, a.name)}
    cost, arguments = spec.call(given)
    device = device_from_args(args)
    precision = spec.roof_precision(arguments)
    peak, band = device.peak_flops(precision), device.memory_bandwidth
    figures = _cost_figures(cost, peak, band)
    if args.json:
        _emit(
            {
                "operator": args.operator,
                "arguments": arguments,
                "device": _device_json(device, precision),
                **figures,
            }
        )
        return 0
    rows = [
        ("operator", _call_text(args.operator, arguments)),
        ("device", _device_line(device, precision)),
        ("FLOPs", si(cost.flops, "FLOP")),
        ("bytes read", si(cost.bytes_read, "B")),
        ("bytes written", si(cost.bytes_written, "B")),
        ("bytes", si(cost.bytes, "B")),
        ("kernels", str(cost.kernels)),
        ("intensity", f"{_number(cost.intensity)} FLOP/B"),
        ("ridge point", f"{_number(device.ridge_point(precision))} FLOP/B"),
        ("peak compute", si(peak, "FLOP/s")),
        ("memory bandwidth", si(band, "B/s")),
        ("bound", figures["bound"]),
        ("attainable", si(figures["attainable"], "FLOP/s")),
        ("time, compute", si(figures["time_compute"], "s")),
        ("time, memory", si(figures["time_memory"], "s")),
        ("time lower bound", si(figures["time_lower_bound"], "s")),
    ]
    print(_table(None, rows, right=set()))
    return 0


# --------------------------------------------------------------------------
# block

_CONFIG_FIELDS = ("batch", "seq", "hidden", "heads", "ffn")


def _row_json(row: Row) -> dict[str, Any]:
    return {
        "name": row.name,
        "flops": row.cost.flops,
        "bytes_read": row.cost.bytes_read,
        "bytes_written": row.cost.bytes_written,
        "bytes": row.cost.bytes,
        "kernels": row.cost.kernels,
        "intensity": row.cost.intensity,
        "bound": row.bound,
        "attainable": row.attainable,
        "time_compute": row.time.compute,
        "time_memory": row.time.memory,
        "time_lower_bound": row.time.seconds,
        "share": row.share,
    }


def _rows_table(rows: Sequence[Row], *, total: bool = True) -> str:
    header = (
        "operator",
        "FLOPs",
        "bytes",
        "kernels",
        "FLOP/B",
        "bound",
        "attainable",
        "time bound",
        "share",
    )
    body = [
        (
            r.name,
            si(r.cost.flops, "FLOP"),
            si(r.cost.bytes, "B"),
            str(r.cost.kernels),
            _number(r.cost.intensity),
            r.bound,
            si(r.attainable, "FLOP/s"),
            si(r.time.seconds, "s"),
            f"{r.share:.1%}",
        )
        for r in rows
    ]
    if total:
        summed = sum((r.cost for r in rows), ops.ZERO)
        seconds = sum(r.time.seconds for r in rows)
        body.append(
            ("total", si(summed.flops, "FLOP"), si(summed.bytes, "B"), str(summed.kernels))
            + ("", "", "", si(seconds, "s"), "")
        )
    return _table(header, body, right={1, 2, 3, 4, 6, 7, 8})


def run_block(args: argparse.Namespace) -> int:
    """The ``block`` subcommand: a decoder block's operators, and optionally AdamW."""
    changes = {
        f: getattr(args, f) for f in (*_CONFIG_FIELDS, "dtype", "causal") if hasattr(args, f)
    }
    config = dataclasses.replace(LLAMA2_7B, **changes)
    device = device_from_args(args)
    sram = {"sram_bytes": args.sram_bytes} if args.sram_bytes is not None else {}
    rows = block_table(config, device, attention_impl=args.attention, **sram)
    opt_rows: list[Row] = []
    if args.optimizer:
        opt_rows = optimizer_table(
            config,
            device,
            param_dtype=args.param_dtype,
            grad_dtype=args.grad_dtype,
            state_dtype=args.state_dtype,
        )
    if args.json:
        data: dict[str, Any] = {
            "config": dataclasses.asdict(config)
            | {
                "tokens": config.tokens,
                "head_dim": config.head_dim,
                "parameters": config.parameters,
            },
            "attention": args.attention,
            "device": _device_json(device, config.dtype),
            "rows": [_row_json(r) for r in rows],
        }
        if args.optimizer:
            data["optimizer"] = {
                "device": _device_json(device, args.param_dtype),
                "rows": [_row_json(r) for r in opt_rows],
            }
        _emit(data)
        return 0
    shape = ", ".join(f"{f}={getattr(config, f)}" for f in _CONFIG_FIELDS)
    print(
        f"decoder block ({shape}, dtype={config.dtype}, causal={config.causal}, "
        f"attention={args.attention}), forward pass"
    )
    print(f"device: {_device_line(device, config.dtype)}")
    print()
    print(_rows_table(rows))
    if args.optimizer:
        print()
        print(
            f"one AdamW step over the block's {config.parameters:,} parameters, "
            f"roof: {_device_line(device, args.param_dtype)}"
        )
        print()
        print(_rows_table(opt_rows, total=False))  # three alternatives: no sum
    return 0


# --------------------------------------------------------------------------
# devices


def _precisions(device: Hardware, wanted: str | None) -> list[str]:
    return [p for p in device.precisions if wanted is None or p == wanted]


def _rate_unit(precision: str) -> str:
    return "OP/s" if precision == "int8" else "FLOP/s"  # int8 peaks count integer operations


def run_devices(args: argparse.Namespace) -> int:
    """The ``devices`` subcommand: the catalog, dense peaks and ridge points, with sources."""
    devices = [hardware(args.device)] if args.device else list(catalog().values())
    wanted = None if args.dtype is None else peak_key(args.dtype)
    if args.json:
        out = []
        for d in devices:
            keep = _precisions(d, wanted)
            entry: dict[str, Any] = {
                "key": d.key,
                "name": d.name,
                "vendor": d.vendor,
                "memory_bandwidth": d.memory_bandwidth,
                "memory_capacity": d.memory_capacity,
                "l2_cache": d.l2_cache,
                "shared_memory_per_sm": d.shared_memory_per_sm,
                "sms": d.sms,
                "dense_peaks": {p: d.peak_flops(p) for p in keep},
                "ridge_points": {p: d.ridge_point(p) for p in keep},
            }
            if args.sparse:
                entry["sparse_peaks"] = {p: v for p, v in d.sparse_peaks.items() if p in keep}
            entry["sources"] = {
                f: dataclasses.asdict(s)
                for f, s in d.sources.items()
                if args.sparse or f != "peak_flops_sparse"
            }
            out.append(entry)
        _emit({"devices": out})
        return 0
    header = ["device", "precision", "dense peak", "bandwidth", "ridge point"]
    if args.sparse:
        header.append("2:4-sparse peak (never a roof)")
    body = []
    for d in devices:
        for p in _precisions(d, wanted):
            row = [
                d.key,
                p,
                si(d.peak_flops(p), _rate_unit(p)),
                si(d.memory_bandwidth, "B/s"),
                f"{_number(d.ridge_point(p))} {_rate_unit(p)[:-2]}/B",
            ]
            if args.sparse:
                sparse = p in d.sparse_peaks
                row.append(si(d.sparse_peak_flops(p), _rate_unit(p)) if sparse else "-")
            body.append(row)
    if not body:
        raise _UsageError(f"no device here publishes a dense peak for {wanted}")
    print(_table(header, body, right={2, 3, 4, 5}))
    print()
    print("sources:")
    for d in devices:
        cited: dict[str, list[str]] = {}
        for figure, source in d.sources.items():
            if args.sparse or figure != "peak_flops_sparse":
                cited.setdefault(source.key, []).append(figure)
        print(f"  {d.key}: {d.name}")
        for figures in cited.values():
            source = d.sources[figures[0]]
            url = f" <{source.url}>" if source.url else ""
            print(f"    {', '.join(figures)}: {source}{url}")
    return 0


# --------------------------------------------------------------------------
# plot


def _y_unit(peak: float, units: dict[str, float]) -> str:
    return next((u for u, scale in units.items() if peak >= scale), list(units)[-1])


def run_plot(args: argparse.Namespace) -> int:
    """The ``plot`` subcommand: a roofline chart with operators as points."""
    suffix = args.out.rsplit(".", 1)[-1].lower() if "." in args.out else ""
    if suffix not in ("svg", "png"):
        raise _UsageError(f"--out must end in .svg or .png, got {args.out!r}")
    device = device_from_args(args)
    peak, band = device.peak_flops(args.dtype), device.memory_bandwidth
    named = [parse_point(text, args.dtype) for text in args.point]

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from . import plotting

    plotting.use_style()
    ridge = device.ridge_point(args.dtype)
    xs = [ridge] + [cost.intensity for _, _, cost, _ in named]
    lo = 10 ** math.floor(math.log10(min(xs)) - 1)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 1)
    unit = _y_unit(peak, plotting.UNITS)
    fig, ax = plt.subplots()
    try:
        plotting.roofline(
            ax,
            peak,
            band,
            label=_device_line(device, args.dtype),
            intensity_range=(lo, hi),
            unit=unit,
        )
        named_costs = [(label, cost) for _, label, cost, _ in named]
        # the legend names the points; labels beside them would collide
        plotting.points(ax, named_costs, peak, band, unit=unit, annotate=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the axes, off the roof
        metadata = {"Date": None} if suffix == "svg" else {}
        fig.savefig(args.out, format=suffix, metadata=metadata)
    finally:
        plt.close(fig)
    if args.json:
        _emit(
            {
                "out": args.out,
                "device": _device_json(device, args.dtype),
                "points": [
                    {"operator": key, "label": label, "arguments": arguments}
                    | _cost_figures(cost, peak, band)
                    for key, label, cost, arguments in named
                ],
            }
        )
        return 0
    print(f"wrote {args.out}: {_device_line(device, args.dtype)}, {len(named)} point(s)")
    body = [
        (
            label,
            _number(cost.intensity),
            bound(cost.intensity, peak, band),
            si(attainable(cost.intensity, peak, band), "FLOP/s"),
        )
        for _, label, cost, _ in named
    ]
    if body:
        print(_table(("point", "FLOP/B", "bound", "attainable"), body, right={1, 3}))
    return 0


# --------------------------------------------------------------------------
# bench


def load_bench() -> tuple[Any, str | None]:
    """Import :mod:`roofline_book.bench`: the module, or ``None`` and why it cannot run."""
    if importlib.util.find_spec(f"{__package__}.bench") is None:
        return None, "roofline_book.bench is not installed"
    try:
        from . import bench
    except ImportError as exc:  # e.g. torch is missing
        return None, f"importing roofline_book.bench failed ({exc}); try the [bench] extra"
    needed = ("configure_parser", "run_from_args")
    missing = [f for f in needed if not callable(getattr(bench, f, None))]
    if missing:
        return None, f"roofline_book.bench lacks {', '.join(missing)}"
    return bench, None


def _add_bench(subparsers: Any, bench: Any) -> None:
    """The ``bench`` subparser; its options and handler come from ``bench`` when given.

    The module (which needs torch) is imported only when the command line
    asks for ``bench``; other subcommands see an empty ``bench`` entry.
    """
    parser = subparsers.add_parser(
        "bench",
        help="time real operators on this machine (needs torch)",
        description="Time real operators and write a run file (roofline_book.bench).",
    )
    if bench is not None:
        bench.configure_parser(parser)
        parser.set_defaults(handler=bench.run_from_args)


# --------------------------------------------------------------------------
# The parser


def build_parser(*, bench: Any = None) -> argparse.ArgumentParser:
    """The whole command line, one parser with a subparser per subcommand.

    Parameters
    ----------
    bench : module, optional
        :mod:`roofline_book.bench`, to give the ``bench`` subcommand its options.
    """
    parser = _Parser(
        prog=PROG,
        description=(
            "FLOPs, memory traffic, arithmetic intensity and the roofline model, "
            "on your own shapes and hardware."
        ),
        epilog=(
            f"Sizes: whole numbers ({_SIZE_FORMS}); k, M, G, T are powers of 1000, "
            "Ki, Mi, Gi, Ti powers of 1024. Rates: a number with an optional SI prefix "
            "and unit, e.g. 989.5T or 3.35TB/s. --json prints base units: FLOP, byte, "
            "FLOP/s, byte/s, second. Bad input exits with status 2."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output, base units")

    # op
    op = sub.add_parser(
        "op",
        help="one operator on one device",
        description="One operator's FLOPs, bytes, intensity, bound and time lower bound.",
    )
    op_sub = op.add_subparsers(dest="operator", metavar="OPERATOR", required=True)
    for name, spec in OPERATORS.items():
        p = op_sub.add_parser(
            name,
            aliases=_ALIASES.get(name, []),
            parents=[common],
            help=spec.summary,
            description=spec.summary,
        )
        _add_operator_arguments(p, spec)
        _add_device_arguments(p)
        p.set_defaults(handler=run_op, operator=name)

    # block
    block = sub.add_parser(
        "block",
        parents=[common],
        help="a Transformer decoder block's operators as a table",
        description=(
            "The forward operators of one Llama-style decoder block on a device; "
            "sizes default to a Llama-2-7B block at sequence length 4096."
        ),
    )
    for field in _CONFIG_FIELDS:
        block.add_argument(
            f"--{field}",
            type=parse_size,
            default=argparse.SUPPRESS,
            metavar="N",
            help=f"(default: {getattr(LLAMA2_7B, field)})",
        )
    block.add_argument(
        "--dtype", default=argparse.SUPPRESS, help=f"precision (default: {LLAMA2_7B.dtype})"
    )
    block.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help=f"causal self-attention (default: {LLAMA2_7B.causal})",
    )
    block.add_argument(
        "--attention",
        default="flash",
        metavar="IMPL",
        help=f"attention implementation: {', '.join(ops.ATTENTION_IMPLS)} (default: flash)",
    )
    block.add_argument(
        "--sram-bytes",
        type=parse_size,
        metavar="N",
        help=f"on-chip memory of a flash thread block (default: {ops.DEFAULT_SRAM_BYTES})",
    )
    block.add_argument(
        "--optimizer", action="store_true", help="add one AdamW step over the block's weights"
    )
    block.add_argument("--param-dtype", default="fp32", help="AdamW parameters (default: fp32)")
    block.add_argument("--grad-dtype", help="AdamW gradients (default: --param-dtype)")
    block.add_argument("--state-dtype", help="AdamW moments (default: --param-dtype)")
    _add_device_arguments(block)
    block.set_defaults(handler=run_block)

    # devices
    devices = sub.add_parser(
        "devices",
        parents=[common],
        help="the hardware catalog: dense peaks, ridge points, sources",
        description=(
            "The hardware catalog. Peaks are dense rates; ridge points use them. "
            "Vendors' 2:4-sparse rates are shown only with --sparse."
        ),
    )
    devices.add_argument("--device", metavar="NAME", help="show one device only")
    devices.add_argument("--dtype", help="show one precision only, e.g. bf16")
    devices.add_argument(
        "--sparse", action="store_true", help="also show 2:4-sparse peaks (never used as a roof)"
    )
    devices.set_defaults(handler=run_devices)

    # plot
    plot = sub.add_parser(
        "plot",
        parents=[common],
        help="a roofline chart (SVG or PNG) with operators as points",
        description=(
            "Draw the roofline of a device and place operators on it. A point is "
            "NAME:SIZE,SIZE,...[,KEY=VALUE], e.g. gemm:4096,4096,4096, add:1048576, "
            "attention:1,32,4096,4096,128,impl=materialized."
        ),
    )
    plot.add_argument("--out", required=True, help="output file, .svg or .png")
    plot.add_argument(
        "--point",
        action="append",
        default=[],
        metavar="NAME:SIZES",
        help=f"an operator to place (repeatable); NAME is one of {', '.join(OPERATORS)}",
    )
    plot.add_argument("--dtype", default="bf16", help="precision of the roof and the points")
    _add_device_arguments(plot)
    plot.set_defaults(handler=run_plot)

    _add_bench(sub, bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 on success, 2 on bad input).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    bench = None
    if argv and argv[0] == "bench":
        bench, problem = load_bench()
        if problem:
            print(f"{PROG} bench: error: bench is not available: {problem}", file=sys.stderr)
            return EXIT_USAGE
    parser = build_parser(bench=bench)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        status = args.handler(args)
        return 0 if status is None else int(status)
    except (_UsageError, ValueError, TypeError) as exc:
        message = " ".join(str(exc).split())
        where = f"{PROG} {args.command}" + (f" {args.operator}" if args.command == "op" else "")
        print(f"{where}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `roofline-book devices | head -3`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
