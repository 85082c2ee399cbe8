"""benchmark case：每个算子登记一次，带它的 torch 调用和模型。

每个类别一个模块（:mod:`.gemm`、:mod:`.streams`、:mod:`.norms`、:mod:`.adamw`、
:mod:`.attention`）；导入本包就按这个顺序登记全部算子。

每个算子是一项 :func:`~roofline_book.measure.bench.registry.register`；流式算子（带宽探针和
elementwise 算子）各占 :data:`STREAMS` 的一行。case 在计时之前先与 float64 参考结果对照
（先正确、再求快），并带有 :mod:`roofline_book.ops` 给出的模型 FLOPs 与字节数。

Examples
--------
>>> case_for("gemm", {"m": 32, "k": 128, "n": 128}, "fp32", "mm").id
'gemm/fp32/mm/m=32,k=128,n=128'
>>> [name for name, op in OPERATORS.items() if op.family == "elementwise"]
['add', 'relu']
>>> shape_text("attention", dict(batch=1, heads=8, seq_q=1024, seq_k=1024, head_dim=64))
'b1 h8 s1024 d64'
"""

from __future__ import annotations

from collections.abc import Mapping

from ...._base import validate as _validate
from ..registry import REGISTRY, Case, Operator

# importing each family's module registers its operators (ordered by family in the registry)
from ._tensors import is_out_of_memory
from .adamw import ADAMW_FLAGS, ADAMW_HYPER, adamw_case
from .attention import ATTENTION_IMPLS, attention_case
from .gemm import gemm_case
from .norms import RMSNORM_EPS, rmsnorm_case, softmax_case
from .streams import BANDWIDTH_KINDS, STREAMS, TRIAD_SCALAR, Stream, elementwise_case

OPERATORS = REGISTRY
"""按名称索引的全部做 benchmark 的算子（即登记表，只读）。"""


def operator(name: str) -> Operator:
    """登记过的算子 ``name``；不存在时抛出 ValueError 并列出允许的名称。"""
    return OPERATORS[_validate.choice("name", name, tuple(OPERATORS))]


def names(family: str) -> tuple[str, ...]:
    """一个类别中的算子，按登记顺序。

    Examples
    --------
    >>> names("ceiling")
    ('copy', 'triad', 'triad_inplace')
    """
    return tuple(name for name, op in OPERATORS.items() if op.family == family)


def make(
    name: str,
    shape: Mapping[str, int] | tuple[int, ...],
    precision: str,
    impl: str | None = None,
) -> Case:
    """算子 ``name`` 的 case：``shape`` 把尺寸名映射到尺寸，或按算子的顺序给出各尺寸；
    ``impl`` 默认取第一个实现。

    Examples
    --------
    >>> make("rmsnorm", (64, 256), "fp32").id
    'rmsnorm/fp32/rms_norm/rows=64,d=256'
    """
    op = operator(name)
    impl = op.impls[0] if impl is None else _validate.choice("impl", impl, op.impls)
    sizes = tuple(shape[k] for k in op.sizes) if isinstance(shape, Mapping) else tuple(shape)
    return op.make(*sizes, impl=impl, precision=precision)


def case_for(name: str, shape: Mapping[str, int], precision: str, impl: str) -> Case:
    """由 run 条目的 ``name``、``shape``、``precision`` 和 ``impl`` 找回它描述的 case。

    Examples
    --------
    >>> case_for("add", {"numel": 8}, "fp32", "sub")
    Traceback (most recent call last):
    ...
    ValueError: impl must be 'add' for add, got 'sub'
    """
    if not isinstance(shape, Mapping):
        raise TypeError(f"shape must be a mapping of sizes, got {type(shape).__name__}")
    op = operator(name)
    s = dict(shape)
    if impl not in op.impls:
        allowed = " or ".join(repr(i) for i in op.impls)
        raise ValueError(f"impl must be {allowed} for {name}, got {impl!r}")
    missing = [k for k in op.sizes if k not in s]
    if missing:
        raise ValueError(f"shape of {name} lacks {missing[0]!r}; got {s}")
    if list(s) != list(op.sizes):
        raise ValueError(f"shape of {name} must have exactly {list(op.sizes)}; got {s}")
    try:
        return make(name, s, precision, impl)
    except TypeError as exc:
        raise ValueError(f"shape of {name}: {exc}") from None


def shape_text(name: str, shape: Mapping[str, int]) -> str:
    """条目 shape 的简短标签，按其算子的写法。

    Examples
    --------
    >>> shape_text("gemm", {"m": 32, "k": 128, "n": 128})
    '32x128x128'
    >>> shape_text("add", {"numel": 2**20})
    'n=2^20'
    >>> shape_text("rmsnorm", {"rows": 1024, "d": 4096})
    '1024x4096'
    """
    return operator(name).label(shape)


__all__ = [
    "ADAMW_FLAGS",
    "ADAMW_HYPER",
    "ATTENTION_IMPLS",
    "BANDWIDTH_KINDS",
    "OPERATORS",
    "RMSNORM_EPS",
    "STREAMS",
    "TRIAD_SCALAR",
    "Stream",
    "adamw_case",
    "attention_case",
    "case_for",
    "elementwise_case",
    "gemm_case",
    "is_out_of_memory",
    "make",
    "names",
    "operator",
    "rmsnorm_case",
    "shape_text",
    "softmax_case",
]
