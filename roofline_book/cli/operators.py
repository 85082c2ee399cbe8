"""命令行所提供的库中算子函数，只描述一次。

``op OPERATOR`` 和 ``plot --point NAME:SIZES`` 都读 :data:`OPERATORS`：每一项是一个
:mod:`roofline_book.ops` 函数，以及命令行传给它的参数，所以新算子只需在这里加一项。
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .. import ops
from ..devices.catalog import Hardware
from ..devices.kernels import device_flash_tile, device_sram_bytes
from ..ops import Cost
from .common import UsageError, parse_size, plain_text

_REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Arg:
    """算子函数的一个参数，按命令行提供它的方式。"""

    name: str
    kind: str  # "size", "text" or "flag"
    help: str
    required: bool | None = None  # None: as the library's signature says
    minimum: int = 1  # the smallest size the library takes (kind "size" only)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Operator:
    """库中的一个算子函数，以及命令行传给它的参数。"""

    func: Callable[..., Any]
    args: tuple[Arg, ...]
    roof_dtype: str = "dtype"  # the argument whose precision selects the compute roof
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # turns what ``func`` returns into one Cost (None: it returns a Cost)
    total: Callable[[Any], Cost] | None = None

    @property
    def summary(self) -> str:
        """算子在 ``op --help`` 中的那一行：英文，与命令行的语言一致。"""
        name = self.func.__name__
        return SUMMARIES.get(name) or plain_text((inspect.getdoc(self.func) or "").splitlines()[0])

    def default(self, name: str) -> Any:
        return inspect.signature(self.func).parameters[name].default

    def is_required(self, arg: Arg) -> bool:
        return self.default(arg.name) is _REQUIRED if arg.required is None else arg.required

    def usage(self) -> str:
        """命令行参数一览，可省略的参数放在方括号里，例如 ``--m --k --n [--dtype]``。

        Examples
        --------
        >>> OPERATORS["softmax"].usage()
        '--rows --cols [--dtype]'
        """
        return " ".join(a.flag if self.is_required(a) else f"[{a.flag}]" for a in self.args)

    def call(self, given: dict[str, Any]) -> tuple[Cost, dict[str, Any]]:
        """代价，以及函数收到的每个参数（已补上默认值）。"""
        kwargs = self.prepare(dict(given)) if self.prepare else dict(given)
        bound_args = inspect.signature(self.func).bind(**kwargs)
        bound_args.apply_defaults()
        shown = {  # a flash tile as plain numbers, so that --json can print it
            k: dataclasses.asdict(v) if isinstance(v, ops.FlashTile) else v
            for k, v in bound_args.arguments.items()
        }
        value = self.func(**kwargs)
        return (self.total(value) if self.total else value), shown

    def roof_precision(self, arguments: dict[str, Any]) -> str:
        return arguments[self.roof_dtype]


_DTYPE = Arg("dtype", "text", "precision name, e.g. bf16, fp16, fp32, fp8")
_NUMEL = Arg("numel", "size", "elements per tensor")

#: ``op --help`` 中每个算子一行，用命令行的语言（英文），不带 docstring 的 reST 标记
#: （docstring 是为本书的 API 附录写的中文）。
SUMMARIES = {
    "gemm": "Matrix product C = A @ B, A of shape (m, k) and B of shape (k, n).",
    "add": "z = x + y over numel elements: 1 FLOP, two reads and one write each.",
    "residual_add": "y = x + f(x), a Transformer block's skip connection; costs what add does.",
    "relu": "y = max(x, 0): one input, one output, one FLOP (a comparison) per element.",
    "gelu": "GELU activation, tanh form: one tanh per element, on the special function units.",
    "swiglu": "The gated activation of a SwiGLU MLP, silu(gate) * up: two inputs, one output.",
    "elementwise": "A kernel that reads and writes whole tensors of numel elements, once each.",
    "rmsnorm": "RMSNorm over the last dimension of a rows x d activation.",
    "layernorm": "LayerNorm over the last dimension of a rows x d activation.",
    "softmax": "Softmax along the last dimension of a rows x cols tensor, one fused kernel.",
    "adamw": "One AdamW step over params parameters held in tensors tensors.",
    "attention": "Scaled dot-product attention softmax(Q K^T / sqrt(d)) V, forward pass.",
    "attention_backward": "Backward pass of attention: the gradients of Q, K and V from dO.",
    "tiled_gemm": "A GEMM computed in tile x tile output tiles that share nothing through a cache.",
    "linear_backward": "Backward pass of y = x @ W.T (a linear layer without bias): two GEMMs.",
    "rmsnorm_eager": "RMSNorm as eager PyTorch runs it: one kernel per operation, summed.",
    "rope": "Rotary position embedding (RoPE) applied to Q and K, as one fused kernel.",
}


def _numel_op(func: Callable[..., Cost]) -> Operator:
    return Operator(func, (_NUMEL, _DTYPE))


def _seq_k_defaults_to_seq_q(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("seq_k", kwargs.get("seq_q"))
    return kwargs


def _kernels_total(kernels: list[tuple[str, Cost]]) -> Cost:
    """``(name, Cost)`` kernel 列表的代价之和。"""
    return sum((cost for _, cost in kernels), ops.ZERO)


def _attention_args(impls: tuple[str, ...]) -> tuple[Arg, ...]:
    return (
        Arg("batch", "size", "sequences"),
        Arg("heads", "size", "attention heads"),
        Arg("seq_q", "size", "queries per sequence"),
        Arg("seq_k", "size", "keys per sequence (default: --seq-q)", required=False),
        Arg("head_dim", "size", "width of one head"),
        _DTYPE,
        Arg("impl", "text", f"implementation: {', '.join(impls)}"),
        Arg(
            "causal",
            "flag",
            "apply a causal mask, aligned bottom-right as FlashAttention (>= 2.1) aligns it: "
            "query i sees keys 0 .. seq_k - seq_q + i. PyTorch's "
            "scaled_dot_product_attention(is_causal=True) aligns it top-left (query i sees "
            "keys 0 .. i); the two differ when --seq-q and --seq-k differ",
        ),
        Arg(
            "sram_bytes",
            "size",
            "on-chip memory of one flash thread block, bytes; sets the block size "
            "(default: FlashAttention-3's tile on Hopper devices for the forward pass, "
            "else the device's shared memory per SM)",
            required=False,
        ),
    )


OPERATORS: dict[str, Operator] = {
    "gemm": Operator(
        ops.gemm,
        (
            Arg("m", "size", "rows of A and C"),
            Arg("k", "size", "the shared (reduction) dimension"),
            Arg("n", "size", "columns of B and C"),
            Arg("batch", "size", "independent products of this shape"),
            _DTYPE,
            Arg("out_dtype", "text", "precision of C, if not that of A and B"),
        ),
    ),
    "add": _numel_op(ops.add),
    "residual_add": _numel_op(ops.residual_add),
    "relu": _numel_op(ops.relu),
    "gelu": _numel_op(ops.gelu),
    "swiglu": _numel_op(ops.swiglu),
    "elementwise": Operator(
        ops.elementwise,
        (
            _NUMEL,
            Arg("inputs", "size", "tensors read"),
            Arg("outputs", "size", "tensors written", minimum=0),
            Arg("flops_per_element", "size", "FLOPs per element", minimum=0),
            _DTYPE,
        ),
    ),
    "rmsnorm": Operator(
        ops.rmsnorm,
        (
            Arg("rows", "size", "rows (tokens)"),
            Arg("d", "size", "features normalized over"),
            _DTYPE,
            Arg("weight_dtype", "text", "precision of the weight, if not --dtype"),
        ),
    ),
    "layernorm": Operator(
        ops.layernorm,
        (
            Arg("rows", "size", "rows (tokens)"),
            Arg("d", "size", "features normalized over"),
            _DTYPE,
            Arg("weight_dtype", "text", "precision of weight and bias, if not --dtype"),
        ),
    ),
    "softmax": Operator(
        ops.softmax,
        (
            Arg("rows", "size", "rows"),
            Arg("cols", "size", "elements per row"),
            _DTYPE,
        ),
    ),
    "adamw": Operator(
        ops.adamw,
        (
            Arg("params", "size", "parameters updated"),
            Arg("impl", "text", f"implementation: {', '.join(ops.ADAMW_IMPLS)}"),
            Arg("tensors", "size", "parameter tensors the parameters are spread over"),
            Arg("param_dtype", "text", "precision of the parameters (and of the compute roof)"),
            Arg("grad_dtype", "text", "precision of the gradients (default: --param-dtype)"),
            Arg("state_dtype", "text", "precision of both moments (default: --param-dtype)"),
            Arg(
                "model_dtype",
                "text",
                "precision of the weight copy a master-weight optimizer also writes "
                "(needed when --grad-dtype differs from --param-dtype)",
            ),
        ),
        roof_dtype="param_dtype",
    ),
    "attention": Operator(
        ops.attention, _attention_args(ops.ATTENTION_IMPLS), prepare=_seq_k_defaults_to_seq_q
    ),
    "attention_backward": Operator(
        ops.attention_backward,
        _attention_args(ops.ATTENTION_BACKWARD_IMPLS),
        prepare=_seq_k_defaults_to_seq_q,
    ),
    "tiled_gemm": Operator(
        ops.tiled_gemm,
        (
            Arg("m", "size", "rows of A and C"),
            Arg("k", "size", "the shared (reduction) dimension"),
            Arg("n", "size", "columns of B and C"),
            Arg("tile", "size", "edge of a square output tile, elements"),
            _DTYPE,
        ),
    ),
    "linear_backward": Operator(
        ops.linear_backward,
        (
            Arg("tokens", "size", "rows of the input x"),
            Arg("in_features", "size", "input features (columns of x)"),
            Arg("out_features", "size", "output features (rows of W)"),
            _DTYPE,
        ),
    ),
    "rmsnorm_eager": Operator(
        ops.rmsnorm_eager,
        (
            Arg("rows", "size", "rows (tokens)"),
            Arg("d", "size", "features normalized over"),
            _DTYPE,
            Arg("upcast", "flag", "compute the intermediates in FP32 (--no-upcast: in --dtype)"),
        ),
        total=_kernels_total,
    ),
    "rope": Operator(
        ops.rope,
        (
            Arg("tokens", "size", "rows of Q and K (batch x sequence)"),
            Arg("heads", "size", "query heads"),
            Arg("head_dim", "size", "width of one head (even)"),
            _DTYPE,
            Arg("kv_heads", "size", "key heads (default: --heads)", required=False),
        ),
    ),
}
#: ``op linear-backward`` as well as ``op linear_backward``: the flags are written with hyphens
ALIASES = {name: [name.replace("_", "-")] for name in OPERATORS if "_" in name}


def operator(name: str) -> tuple[str, Operator]:
    key = name.strip().lower().replace("-", "_")
    if key not in OPERATORS:
        raise UsageError(f"unknown operator {name!r}; allowed: {', '.join(OPERATORS)}")
    return key, OPERATORS[key]


def add_operator_arguments(parser: argparse.ArgumentParser, spec: Operator) -> None:
    for arg in spec.args:
        required = spec.is_required(arg)
        default = spec.default(arg.name) if arg.required is None else _REQUIRED
        shown = "" if required or default in (_REQUIRED, None) else f" (default: {default})"
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


def device_defaults(spec: Operator, given: dict[str, Any], device: Hardware) -> dict[str, Any]:
    """补上由设备决定的参数之后的 ``given``：flash kernel 的 tile。

    设备运行 FlashAttention-3 时（:func:`roofline_book.devices.kernels.device_flash_tile`）用它的
    tile；
    否则，或者给了片上存储时，query 块按片上存储的规则来定，默认是设备每个 SM 的 shared memory。
    """
    if not any(a.name == "sram_bytes" for a in spec.args) or given.get("sram_bytes") is not None:
        return given
    given = given | {"sram_bytes": device_sram_bytes(device)}
    head_dim = given.get("head_dim")
    takes_tile = "tile" in inspect.signature(spec.func).parameters  # the forward kernel
    if takes_tile and isinstance(head_dim, int):
        dtype = given.get("dtype", spec.default("dtype"))
        causal = given.get("causal", spec.default("causal"))
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
    'attention:BATCH,HEADS,SEQ_Q,SEQ_K,HEAD_DIM[,SRAM_BYTES]'
    """
    key, spec = operator(name)
    sizes = [a for a in spec.args if a.kind == "size"]
    last = max((i for i, a in enumerate(sizes) if spec.is_required(a)), default=-1)
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
        wanted = ",".join(a.name.upper() for a in spec.args if spec.is_required(a))
        raise UsageError(f"--point {text!r}: give sizes after the name, e.g. {key}:{wanted}")
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
    missing = [a.name for a in spec.args if spec.is_required(a) and a.name not in given]
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
