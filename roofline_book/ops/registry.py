"""算子登记表：每个算子登记一次，命令行、计算器表单、JSON Schema、benchmark 与 profiler 都读它。

一项 :class:`Entry` 是一个返回 :class:`~roofline_book.ops.Cost` 的模型函数，加上函数签名里
读不出来的几件事：英文与中文的一句话说明、benchmark case 的名字、它作为模型的 aten 算子。
各参数的种类（``int`` 是尺寸，``bool`` 是开关，``Precision``/``str`` 是文字）、是否必填与默认值
都从签名读出；各参数的英文帮助、中文标签与示例值取自按参数名索引的 :data:`VOCABULARY`。
:func:`register` 仿照 PyTorch ``torch.utils.flop_counter`` 的 ``register_flop_formula``：
一个名字登记两次就报错。
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from .attn import (
    ATTENTION_BACKWARD_IMPLS,
    ATTENTION_IMPLS,
    FlashTile,
    attention,
    attention_backward,
)
from .cost import ZERO, Cost
from .matmul import gemm, linear_backward, tiled_gemm
from .mla import mla_attention
from .norms import layernorm, layernorm_backward, rmsnorm, rmsnorm_eager
from .optimizer import ADAMW_IMPLS, adamw
from .pointwise import add, elementwise, gelu, relu, residual_add, rope, softmax, swiglu

__all__ = ["KINDS", "REGISTRY", "VOCABULARY", "Entry", "Param", "Word", "entry", "register"]

KINDS = {"int": "size", "bool": "flag", "str": "text", "Precision": "text"}
"""参数注解 -> 参数的种类：尺寸（正整数）、开关、文字（精度名、实现名）。``X | None`` 同 ``X``。"""


class Word(NamedTuple):
    """一个参数名的词条：命令行帮助（英文）、表单标签（中文）、示例值、最小值。"""

    help: str
    label: str
    example: int | None = None
    minimum: int = 1  # the smallest size the models take (kind "size" only)


#: 每个参数名一条：同名的参数在各个算子里是同一个意思，写一次。
VOCABULARY: Mapping[str, Word] = MappingProxyType({
    "m": Word("rows of A and C", "m（A 与 C 的行数）", 4096),
    "k": Word("the shared (reduction) dimension", "k（归约维度）", 4096),
    "n": Word("columns of B and C", "n（B 与 C 的列数）", 4096),
    "batch": Word("sequences", "batch", 1),
    "dtype": Word("precision name, e.g. bf16, fp16, fp32, fp8", "精度"),
    "out_dtype": Word("precision of C, if not that of A and B", "C 的精度"),
    "numel": Word("elements per tensor", "每个张量的元素数", 4096 * 4096),
    "inputs": Word("tensors read", "读取的张量数"),
    "outputs": Word("tensors written", "写入的张量数", minimum=0),
    "flops_per_element": Word("FLOPs per element", "每个元素的 FLOPs", minimum=0),
    "rows": Word("rows (tokens)", "行数", 4096),
    "d": Word("features normalized over", "归一化的特征数 d", 4096),
    "weight_dtype": Word(
        "precision of the weight, if not --dtype", "norm 的 weight（与 bias）的精度"
    ),
    "cols": Word("elements per row", "每行的元素数", 4096),
    "params": Word("parameters updated", "参数个数", 6_738_415_616),
    "impl": Word("implementation", "实现"),
    "tensors": Word("parameter tensors the parameters are spread over", "参数张量的个数"),
    "param_dtype": Word("precision of the parameters (and of the compute roof)", "参数的精度"),
    "grad_dtype": Word("precision of the gradients (default: --param-dtype)", "梯度的精度"),
    "state_dtype": Word("precision of both moments (default: --param-dtype)", "两个矩的精度"),
    "model_dtype": Word(
        "precision of the weight copy a master-weight optimizer also writes "
        "(needed when --grad-dtype differs from --param-dtype)",
        "优化器另写的权重副本的精度",
    ),
    "heads": Word("attention heads", "head 数", 32),
    "seq_q": Word("queries per sequence", "query 的序列长度", 4096),
    "seq_k": Word("keys per sequence (default: --seq-q)", "key 的序列长度"),
    "head_dim": Word("width of one head", "head dim", 128),
    "causal": Word(
        "apply a causal mask, aligned bottom-right as FlashAttention (>= 2.1) aligns it: "
        "query i sees keys 0 .. seq_k - seq_q + i. PyTorch's "
        "scaled_dot_product_attention(is_causal=True) aligns it top-left (query i sees "
        "keys 0 .. i); the two differ when --seq-q and --seq-k differ",
        "causal mask",
    ),
    "sram_bytes": Word(
        "on-chip memory of one flash thread block, bytes; sets the block size "
        "(default: FlashAttention-3's tile on Hopper devices for the forward pass, "
        "else the device's shared memory per SM)",
        "一个 thread block 的片上存储（字节）",
    ),
    "tile": Word("edge of a square output tile, elements", "输出 tile 的边长", 128),
    "tokens": Word("rows of the input x", "token 数", 4096),
    "in_features": Word("input features (columns of x)", "输入特征数", 4096),
    "out_features": Word("output features (rows of W)", "输出特征数", 11008),
    "upcast": Word(
        "compute the intermediates in FP32 (--no-upcast: in --dtype)", "中间结果用 FP32"
    ),
    "kv_heads": Word("key heads (default: --heads)", "KV head 数"),
    "window": Word(
        "sliding-window width: each query sees at most this many keys (with --causal)",
        "滑动窗口的宽度（key 数，需 causal）",
    ),
    "kv_dtype": Word("precision of K and V (default: --dtype), e.g. fp8 for an FP8 cache",
                     "K 与 V 的精度"),
    "d_qk": Word("width of one query/key head (MLA absorbed: kv_lora_rank + rope, 576)",
                 "query/key 的 head 宽度", 576),
    "d_v": Word("width of one value head (MLA absorbed: kv_lora_rank, 512)",
                "value 的 head 宽度", 512),
    "value_in_key": Word("values are the first --d-v columns of the cached keys (MLA absorbed)",
                         "value 取自 key 的前 d_v 列"),
})  # fmt: skip

_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Param:
    """模型函数的一个参数，按命令行与表单提供它的方式。

    ``kind`` 与 ``required``、``default`` 读自签名，``help``、``label``、``example``、``minimum``
    读自 :data:`VOCABULARY`。``default`` 为 None 表示没有可显示的默认值（必填，或由别的参数或设备
    补上）。
    """

    name: str
    kind: str
    required: bool
    default: Any
    help: str
    label: str
    example: int | None
    minimum: int

    @property
    def flag(self) -> str:
        """命令行上的写法：``--seq-q``。"""
        return "--" + self.name.replace("_", "-")


def _kind(annotation: Any) -> str | None:
    """注解对应的参数种类；不是尺寸、开关或文字的参数（一个 FlashTile）返回 None。"""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    names = [t.strip() for t in text.split("|") if t.strip() != "None"]
    return KINDS.get(names[0]) if len(names) == 1 else None


@dataclass(frozen=True)
class Entry:
    """登记表的一项：一个算子。

    Attributes
    ----------
    name : str
        ``op NAME`` 中的名字。
    func : callable
        模型函数。
    summary : tuple of str
        一句话说明：英文（``op --help``）与中文（计算器的下拉框），依次两项。
    args : tuple of str or None
        命令行提供的参数，按显示的顺序；None 时为签名中全部尺寸、开关与文字参数，按签名顺序。
    filled : tuple of str
        签名中没有默认值（或默认值不必显示）、但可以省略的参数：由 ``prepare`` 或设备补上。
    help : mapping
        这个算子把某个参数名的意思说得更窄时，它的英文帮助（其余取自 :data:`VOCABULARY`）。
    choices : mapping
        文字参数允许的值，写进帮助（``implementation: fused, foreach, loop``）。
    roof_dtype : str
        决定计算 roof 精度的参数。
    prepare : callable or None
        调用之前补全参数（``seq_k`` 默认取 ``seq_q``）。
    total : callable or None
        把 ``func`` 的返回值变成一个 Cost（None 时它本身就返回 Cost）。
    case : str or None
        :mod:`roofline_book.measure.bench.cases` 中测量它的 benchmark case；没有时为 None。
    aten : tuple of str
        profiler 中以它为模型的 aten 算子（参数按名字从记录的调用中读出）。
    """

    name: str
    func: Callable[..., Any]
    summary: tuple[str, str]
    args: tuple[str, ...] | None = None
    filled: tuple[str, ...] = ()
    help: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    roof_dtype: str = "dtype"
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    total: Callable[[Any], Cost] | None = None
    case: str | None = None
    aten: tuple[str, ...] = ()

    @property
    def params(self) -> tuple[Param, ...]:
        """命令行与表单上的各参数，种类、必填与默认值读自签名。

        Raises
        ------
        ValueError
            一个参数名在 :data:`VOCABULARY` 中没有词条，或 ``args`` 列出的参数不在签名中、
            不是尺寸、开关或文字。
        """
        signature = inspect.signature(self.func).parameters
        names = self.args
        if names is None:
            names = tuple(n for n, p in signature.items() if _kind(p.annotation) is not None)
        params = []
        for name in names:
            p = signature.get(name)
            kind = None if p is None else _kind(p.annotation)
            if p is None or kind is None:
                raise ValueError(
                    f"{self.name}: {name!r} is not a size, flag or text parameter of "
                    f"{self.func.__name__}"
                )
            if name not in VOCABULARY:
                raise ValueError(
                    f"{self.name}: parameter {name!r} has no entry in the vocabulary "
                    "(roofline_book.ops.registry.VOCABULARY: help, label, example)"
                )
            word = VOCABULARY[name]
            required = p.default is _EMPTY and name not in self.filled
            helptext = self.help.get(name, word.help)
            if name in self.choices:
                helptext += ": " + ", ".join(self.choices[name])
            default = None if required or name in self.filled else p.default
            params.append(
                Param(
                    name, kind, required, default, helptext, word.label, word.example, word.minimum
                )
            )
        return tuple(params)

    @property
    def label(self) -> str:
        """中文的一句话说明。"""
        return self.summary[1]

    def usage(self) -> str:
        """命令行参数一览，可省略的参数放在方括号里。

        Examples
        --------
        >>> REGISTRY["softmax"].usage()
        '--rows --cols [--dtype]'
        """
        return " ".join(p.flag if p.required else f"[{p.flag}]" for p in self.params)

    def call(self, given: Mapping[str, Any]) -> tuple[Cost, dict[str, Any]]:
        """代价，以及函数收到的每个参数（已补上默认值；FlashTile 写成普通的数）。

        Examples
        --------
        >>> cost, args = REGISTRY["gemm"].call({"m": 8, "k": 8, "n": 8})
        >>> cost.flops, args["dtype"]                  # 2 * 8**3
        (1024, 'bf16')
        """
        kwargs = self.prepare(dict(given)) if self.prepare else dict(given)
        bound = inspect.signature(self.func).bind(**kwargs)
        bound.apply_defaults()
        shown = {
            k: dataclasses.asdict(v) if isinstance(v, FlashTile) else v
            for k, v in bound.arguments.items()
        }
        value = self.func(**kwargs)
        return (self.total(value) if self.total else value), shown


_REGISTRY: dict[str, Entry] = {}
REGISTRY: Mapping[str, Entry] = MappingProxyType(_REGISTRY)
"""按名字索引的全部算子（只读），按登记的顺序。"""


def register(item: Entry) -> Entry:
    """把一个算子登记进 :data:`REGISTRY`；一个名字、一个 benchmark case、一个 aten 算子都只能
    登记一次。

    Raises
    ------
    ValueError
        名字、case 或 aten 算子已登记过，或参数在 :data:`VOCABULARY` 中没有词条。
    """
    if item.name in _REGISTRY:
        raise ValueError(f"operator {item.name!r} is registered already")
    for other in _REGISTRY.values():
        if item.case is not None and item.case == other.case:
            raise ValueError(f"benchmark case {item.case!r} is registered already ({other.name})")
        if twice := set(item.aten) & set(other.aten):
            raise ValueError(f"{', '.join(sorted(twice))} already modelled by {other.name}")
    item.params  # noqa: B018 (every parameter has its words, or this raises)
    _REGISTRY[item.name] = item
    return item


def entry(name: str) -> Entry:
    """登记过的算子 ``name``（``-`` 与 ``_`` 同义，不分大小写）。

    Raises
    ------
    KeyError
        没有这个算子。
    """
    return _REGISTRY[name.strip().lower().replace("-", "_")]


# --------------------------------------------------------------------------
# The operators


def _seq_k_defaults_to_seq_q(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("seq_k", kwargs.get("seq_q"))
    return kwargs


def _kernels_total(kernels: list[tuple[str, Cost]]) -> Cost:
    """``(name, Cost)`` kernel 列表的代价之和。"""
    return sum((cost for _, cost in kernels), ZERO)


_ATTENTION_ARGS = ("batch", "heads", "seq_q", "seq_k", "head_dim", "dtype", "impl", "causal",
                   "sram_bytes")  # fmt: skip

register(Entry(
    "gemm", gemm,
    ("Matrix product C = A @ B, A of shape (m, k) and B of shape (k, n).", "矩阵乘法 C = A @ B"),
    args=("m", "k", "n", "batch", "dtype", "out_dtype"),
    help={"batch": "independent products of this shape"},
    case="gemm",
))  # fmt: skip
register(Entry(
    "add", add,
    ("z = x + y over numel elements: 1 FLOP, two reads and one write each.", "逐元素加法"),
    case="add",
))  # fmt: skip
register(Entry(
    "residual_add", residual_add,
    ("y = x + f(x), a Transformer block's skip connection; costs what add does.", "residual add"),
))  # fmt: skip
register(Entry(
    "relu", relu,
    ("y = max(x, 0): one input, one output, one FLOP (a comparison) per element.", "ReLU"),
    case="relu",
))  # fmt: skip
register(Entry(
    "gelu", gelu,
    ("GELU activation, tanh form: one tanh per element, on the special function units.",
     "GELU（tanh 近似）"),
))  # fmt: skip
register(Entry(
    "swiglu", swiglu,
    ("The gated activation of a SwiGLU MLP, silu(gate) * up: two inputs, one output.",
     "SwiGLU 的门控激活"),
))  # fmt: skip
register(Entry(
    "elementwise", elementwise,
    ("A kernel that reads and writes whole tensors of numel elements, once each.",
     "通用的 elementwise kernel"),
    args=("numel", "inputs", "outputs", "flops_per_element", "dtype"),
))  # fmt: skip
register(Entry(
    "rmsnorm", rmsnorm,
    ("RMSNorm over the last dimension of a rows x d activation.", "RMSNorm（融合为一个 kernel）"),
    case="rmsnorm",
))  # fmt: skip
register(Entry(
    "layernorm", layernorm,
    ("LayerNorm over the last dimension of a rows x d activation.", "LayerNorm"),
    help={"weight_dtype": "precision of weight and bias, if not --dtype"},
))  # fmt: skip
register(Entry(
    "softmax", softmax,
    ("Softmax along the last dimension of a rows x cols tensor, one fused kernel.",
     "softmax（沿最后一维）"),
    help={"rows": "rows"},
    case="softmax",
))  # fmt: skip
register(Entry(
    "adamw", adamw,
    ("One AdamW step over params parameters held in tensors tensors.", "AdamW 的一步"),
    args=("params", "impl", "tensors", "param_dtype", "grad_dtype", "state_dtype", "model_dtype"),
    choices={"impl": ADAMW_IMPLS},
    roof_dtype="param_dtype",
    case="adamw",
))  # fmt: skip
register(Entry(
    "attention", attention,
    ("Scaled dot-product attention softmax(Q K^T / sqrt(d)) V, forward pass.", "attention 前向"),
    args=(*_ATTENTION_ARGS, "kv_heads", "window", "kv_dtype"),
    filled=("seq_k", "sram_bytes"),
    choices={"impl": ATTENTION_IMPLS},
    prepare=_seq_k_defaults_to_seq_q,
    case="attention",
))  # fmt: skip
register(Entry(
    "mla_attention", mla_attention,
    ("Attention with separate query/key and value widths: MLA, absorbed or expanded.",
     "MLA attention（query/key 与 value 宽度不同）"),
    args=("batch", "heads", "seq_q", "seq_k", "d_qk", "d_v", "dtype", "kv_heads",
          "value_in_key", "kv_dtype", "causal"),
    filled=("seq_k",),
    prepare=_seq_k_defaults_to_seq_q,
))  # fmt: skip
register(Entry(
    "attention_backward", attention_backward,
    ("Backward pass of attention: the gradients of Q, K and V from dO.", "attention 反向"),
    args=_ATTENTION_ARGS,
    filled=("seq_k", "sram_bytes"),
    choices={"impl": ATTENTION_BACKWARD_IMPLS},
    prepare=_seq_k_defaults_to_seq_q,
))  # fmt: skip
register(Entry(
    "tiled_gemm", tiled_gemm,
    ("A GEMM computed in tile x tile output tiles that share nothing through a cache.",
     "分块 GEMM（tile 之间不经 cache 共享）"),
))  # fmt: skip
register(Entry(
    "linear_backward", linear_backward,
    ("Backward pass of y = x @ W.T (a linear layer without bias): two GEMMs.",
     "线性层的反向（两个 GEMM）"),
))  # fmt: skip
register(Entry(
    "rmsnorm_eager", rmsnorm_eager,
    ("RMSNorm as eager PyTorch runs it: one kernel per operation, summed.",
     "RMSNorm（eager，每个运算一个 kernel）"),
    total=_kernels_total,
))  # fmt: skip
register(Entry(
    "rope", rope,
    ("Rotary position embedding (RoPE) applied to Q and K, as one fused kernel.", "RoPE"),
    help={"tokens": "rows of Q and K (batch x sequence)", "heads": "query heads",
          "head_dim": "width of one head (even)"},
))  # fmt: skip
register(Entry(
    "layernorm_backward", layernorm_backward,
    ("Backward pass of LayerNorm: dX, dgamma and dbeta from dY, X and the saved mean and rstd.",
     "LayerNorm 反向"),
    help={"weight_dtype": "precision of weight and bias, if not --dtype"},
    case="layernorm_backward",
    aten=("aten::native_layer_norm_backward",),
))  # fmt: skip
