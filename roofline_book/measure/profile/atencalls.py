"""profiler 记下的一次算子调用（:class:`Call`）：按所装 torch 的 schema 读出的参数名，dtype
与 shape。

profiler 按算子 schema 的顺序记下每个参数（关键字参数也在内）：``input_shapes``、
``input_dtypes`` 与 ``concrete_inputs``。参数的位置会随 torch 的版本移动（``is_causal`` 在
CPU 的 flash attention 反向里是第 8 个，在 CUDA 的里是第 12 个），所以这里不记位置：
:meth:`Call.names` 从 ``torch.ops.<ns>.<op>.<overload>._schema.arguments`` 中取参数个数与记录
相符、类型最吻合的那个 overload，得到每个位置的名字，模型用名字取参数。

Examples
--------
>>> call = Call("aten::sum", ((65536, 4), (), (), ()), ("float", "ScalarList", "Scalar", ""),
...             (None, [0], False, None))
>>> call.names()
('self', 'dim', 'keepdim', 'dtype')
>>> call.tensor("self"), call.value("dim"), call.value("keepdim")
(((65536, 4), 'float'), [0], False)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...dtypes import bytes_per_element, precision_name

Shape = tuple[int, ...]
Listed = tuple[tuple[Shape, str], ...]
"""一个 tensor 列表（``TensorList``）中每个 tensor 的 (shape, dtype)。"""


@dataclass(frozen=True)
class Call:
    """一个算子的一次调用记录：名称、输入 shape、dtype 和标量参数。

    ``dtypes`` 是 profiler 给出的字符串（``"float"``、``"c10::BFloat16"``、``"Scalar"``、
    ``"TensorList"``）；``concrete`` 是它保留下来的标量参数（tensor 处为 ``None``）；
    ``lists`` 在 tensor 列表的位置上给出列表中各 tensor 的 (shape, dtype)（profiler 的
    ``input_shapes`` 不记这些）；``footprints`` 给出每个 tensor 输入中不同元素的个数，按它的
    stride 数（``expand`` 出来的维 stride 为 0，那一维的元素只有一份）。``names`` 是每个位置的
    参数名，不给时从 torch 的 schema 读。
    """

    name: str
    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...] = ()
    concrete: tuple[object, ...] = field(default=(), compare=False)
    lists: tuple[Listed | None, ...] = field(default=(), compare=False)
    argnames: tuple[str, ...] | None = field(default=None, compare=False)
    footprints: tuple[int | None, ...] = field(default=(), compare=False)

    def distinct(self, index: int) -> int:
        """第 ``index`` 个输入中不同元素的个数：有 stride 记录时按它，否则是 shape 的元素个数。"""
        known = self.footprints[index] if index < len(self.footprints) else None
        return numel(self.shapes[index]) if known is None else known

    def names(self) -> tuple[str, ...]:
        """每个记录位置的参数名（从 schema 读）；torch 没有这个算子时为空。"""
        if self.argnames is not None:
            return self.argnames
        kinds = tuple(_recorded_kind(d) for d in self.dtypes[: len(self.shapes)])
        kinds += ("",) * (len(self.shapes) - len(kinds))
        return argument_names(self.name, kinds)

    def _index(self, arg: str) -> int | None:
        names = self.names()
        return names.index(arg) if arg in names else None

    def tensor(self, arg: str) -> tuple[Shape, str] | None:
        """名为 ``arg`` 的 tensor 参数的 (shape, dtype)；没有、为 None 或是标量时为 None。"""
        i = self._index(arg)
        if i is None or i >= len(self.shapes) or i >= len(self.dtypes):
            return None
        dtype = self.dtypes[i]
        if _recorded_kind(dtype) != "tensor":
            return None
        return self.shapes[i], dtype

    def value(self, arg: str, default: object = None) -> object:
        """名为 ``arg`` 的标量参数（profiler 保留了的话），否则 ``default``。"""
        i = self._index(arg)
        if i is None or i >= len(self.concrete) or self.concrete[i] is None:
            return default
        return self.concrete[i]

    def tensor_list(self, arg: str) -> Listed | None:
        """名为 ``arg`` 的 tensor 列表中各 tensor 的 (shape, dtype)；没有记录时为 None。"""
        i = self._index(arg)
        if i is None or i >= len(self.lists):
            return None
        return self.lists[i]


# --------------------------------------------------------------------------
# Argument names from the installed torch's schemas


def _recorded_kind(dtype: str) -> str:
    """profiler 记下的一个输入是什么：tensor、tensor 列表、列表、标量，或空（None）。"""
    if dtype == "TensorList":
        return "tensors"
    if dtype in ("ScalarList", "GenericList"):
        return "list"
    if dtype == "Scalar":
        return "scalar"
    return "" if not dtype else "tensor"


def _schema_kind(type_text: str) -> str:
    text = type_text.removeprefix("Optional[").removesuffix("]")
    if text.startswith("List[") or text.endswith("[]") or "[" in text:
        return "tensors" if "Tensor" in text else "list"
    return "tensor" if text == "Tensor" else "scalar"


@functools.cache
def schemas(name: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """算子 ``name`` （``"aten::sum"``）的各 overload：(overload 名, 各参数的 (名字, 种类))。

    读自所装 torch 的 ``torch.ops.<ns>.<op>.<overload>._schema.arguments``；torch 不在、或
    没有这个算子（``record_function`` 的范围、autograd 的节点）时为空。

    Examples
    --------
    >>> [a for a, _ in schemas("aten::_scaled_dot_product_flash_attention_for_cpu")[0][1]][:5]
    ['query', 'key', 'value', 'dropout_p', 'is_causal']
    >>> schemas("Optimizer.step#AdamW.step")
    ()
    """
    namespace, _, op = name.partition("::")
    if not op or not namespace.isidentifier() or not op.isidentifier():
        return ()
    try:
        import torch

        packet = getattr(getattr(torch.ops, namespace), op)
        overloads = packet.overloads()
    except (ImportError, AttributeError, RuntimeError):
        return ()
    found = []
    for overload in overloads:
        try:
            arguments = getattr(packet, overload)._schema.arguments
        except (AttributeError, RuntimeError):
            continue
        found.append((overload, tuple((a.name, _schema_kind(str(a.type))) for a in arguments)))
    return tuple(found)


@functools.cache
def _overload(name: str, kinds: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    best: tuple[int, str, tuple[str, ...]] = (-1, "", ())
    for overload, arguments in schemas(name):
        if len(arguments) != len(kinds):
            continue
        score = sum(not k or k == kind for k, (_, kind) in zip(kinds, arguments, strict=True))
        if score > best[0]:
            best = (score, overload, tuple(a for a, _ in arguments))
    return best[1], best[2]


def argument_names(name: str, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """记录了 ``len(kinds)`` 个输入的 ``name`` 调用，每个位置的参数名。

    取参数个数相同的 overload 中，记录的种类（tensor、tensor 列表、列表、标量或空）与 schema
    吻合最多的一个；记录为空（None）的位置与任何种类都吻合。没有个数相同的 overload 时为空。
    """
    return _overload(name, kinds)[1]


#: 没有自己的 kernel、工作全在下面的算子里的算子，torch 的 dispatcher 又说不出来的（它们注册为
#: CompositeExplicitAutograd，而这样注册的算子也可能自己干活：``sort`` 在自己的 self time
#: 里排序）。
#: 工厂函数与转换的工作是下面那个 ``fill_``、``copy_`` 或随机数生成。
WRAPPERS = frozenset(
    f"aten::{op}"
    for op in ("zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
               "new_ones", "new_full", "new_empty", "scalar_tensor", "_to_copy", "clone",
               "copy", "lift_fresh_copy", "_reshape_copy", "view_copy", "arange", "randn",
               "rand", "randint", "randn_like", "rand_like", "randint_like", "normal",
               "bernoulli", "tensor", "as_tensor")
)  # fmt: skip


def is_wrapper(call: Call) -> bool:
    """这个算子是否不运行自己的 kernel：列在 :data:`WRAPPERS` 里，或者 torch 把所记录的 overload
    注册为 ``CompositeImplicitAutograd`` （``aten::linear``、``aten::cross_entropy_loss``：
    它们在 autograd 之上就拆成了别的算子，没有任何后端的 kernel）。

    Examples
    --------
    >>> is_wrapper(Call("aten::linear", ((4, 8), (16, 8), ()), ("float", "float", "")))
    True
    >>> is_wrapper(Call("aten::sort", ((10,), (), ()), ("float", "Scalar", "Scalar")))
    False
    """
    if call.name in WRAPPERS:
        return True
    kinds = tuple(_recorded_kind(d) for d in call.dtypes[: len(call.shapes)])
    kinds += ("",) * (len(call.shapes) - len(kinds))
    overload, _ = _overload(call.name, kinds)
    if not overload:
        return False
    return _implicit(call.name if overload == "default" else f"{call.name}.{overload}")


@functools.cache
def _implicit(qualified: str) -> bool:
    import torch

    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(
            qualified, "CompositeImplicitAutograd"
        )
    except RuntimeError:
        return False


# --------------------------------------------------------------------------
# Shapes and sizes


_INTEGERS = {"long int": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1,
             "bool": 1}  # fmt: skip


def precision_of(profiler_dtype: str) -> str | None:
    """profiler 的 dtype 字符串在本包中的精度名称；不是浮点类型时为 None。

    Examples
    --------
    >>> precision_of("float"), precision_of("c10::BFloat16"), precision_of("long int")
    ('fp32', 'bf16', None)
    """
    text = profiler_dtype.removeprefix("c10::").strip()
    if text in _INTEGERS or text.startswith("int") or text.startswith("uint"):
        return None
    try:
        return precision_name(text)
    except (ValueError, TypeError):
        return None


def itemsize(profiler_dtype: str) -> int | None:
    """profiler 的 dtype 字符串每个元素的字节数（整数类型也算）；不认识时为 None。

    Examples
    --------
    >>> itemsize("c10::Half"), itemsize("long int"), itemsize("bool"), itemsize("Scalar")
    (2, 8, 1, None)
    """
    text = profiler_dtype.removeprefix("c10::").strip()
    if text in _INTEGERS:
        return _INTEGERS[text]
    precision = precision_of(profiler_dtype)
    return None if precision is None else bytes_per_element(precision)


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def nbytes(item: tuple[Shape, str] | None) -> int:
    """一个 tensor 的字节数；没有它、0 维或类型不明时为 0。"""
    if item is None or not item[0]:
        return 0
    return numel(item[0]) * (itemsize(item[1]) or 0)


def float_tensors(call: Call) -> list[tuple[Shape, str]]:
    """浮点 tensor 输入（不含 Python 标量和 ``out=`` 的输出），写成 (shape, precision)。"""
    names = call.names()
    out = []
    for i, shape in enumerate(call.shapes):
        dtype = call.dtypes[i] if i < len(call.dtypes) else ""
        precision = precision_of(dtype)
        if precision is not None and not (i < len(names) and names[i] == "out"):
            out.append((shape, precision))
    return out


def data_tensors(call: Call) -> list[tuple[Shape, str]]:
    """有已知元素大小的 tensor 输入（整数类型也算），写成 (shape, dtype)。"""
    return [(s, d) for s, d in zip(call.shapes, call.dtypes, strict=False) if itemsize(d)]


def broadcast(shapes: Sequence[Sequence[int]]) -> Shape | None:
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes], strict=True):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def reduced_dims(value: object, rank: int) -> frozenset[int] | None:
    """记录下的 ``dim`` 参数（一个整数、一列整数，或 None/[] 表示全部）化为非负维度的集合。"""
    if value is None or value == []:
        return frozenset(range(rank))
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    ints = [d for d in items if isinstance(d, int) and not isinstance(d, bool)]
    if len(ints) != len(items):
        return None
    return frozenset(d % rank for d in ints) if rank else frozenset()


def rows_cols(shape: Shape, normalized: object) -> tuple[int, int] | None:
    """按最后 ``len(normalized)`` 维归一化：(行数, 每行的元素数)。"""
    if not isinstance(normalized, (list, tuple)) or not normalized:
        return None
    cols = numel(normalized)
    if list(shape[len(shape) - len(normalized) :]) != list(normalized):
        return None
    return numel(shape) // cols, cols


__all__ = [
    "WRAPPERS",
    "Call",
    "Listed",
    "Shape",
    "argument_names",
    "broadcast",
    "data_tensors",
    "float_tensors",
    "is_wrapper",
    "itemsize",
    "nbytes",
    "numel",
    "precision_of",
    "reduced_dims",
    "rows_cols",
    "schemas",
]
