"""各种精度每个元素占多少字节。

精度可以用字符串给出（``"bf16"``、``"fp32"`` 等，不分大小写，也接受
``"bfloat16"`` 这类常见别名），也可以直接给 ``torch.dtype``。规范名称就是
:data:`BYTES` 的键。

Examples
--------
>>> bytes_per_element("bf16"), bytes_per_element("FP32"), bytes_per_element("fp8_e4m3")
(2, 4, 1)

TF32 是 Tensor Core 的一种计算模式，操作数在内存里仍按 32 位浮点数存放。

>>> bytes_per_element("tf32")
4
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Union

from ._base.validate import InvalidArgument, InvalidArgumentType

if TYPE_CHECKING:  # torch is optional: its dtypes are accepted where it is installed
    import torch

#: 一个元素在内存中占的字节数（byte），按规范精度名称索引。
BYTES = MappingProxyType(
    {
        "fp64": 8,
        "fp32": 4,
        "tf32": 4,  # NB: a compute mode; values live in memory as fp32
        "bf16": 2,
        "fp16": 2,
        "fp8_e4m3": 1,
        "fp8_e5m2": 1,
        "int8": 1,
    }
)

_ALIASES = {
    "float64": "fp64",
    "double": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3fnuz": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "float8_e5m2fnuz": "fp8_e5m2",
}

Precision = Union[str, "torch.dtype"]


def precision_name(dtype: Precision, name: str = "dtype") -> str:
    """把字符串或 ``torch.dtype`` 形式的精度换成规范名称。

    Parameters
    ----------
    dtype : str or torch.dtype
        ``"bf16"``, ``"BF16"``, ``"bfloat16"``, ``torch.bfloat16``, ...
    name : str
        错误信息中的参数名（``"out_dtype"``、``"grad_dtype"`` ……）。

    Returns
    -------
    str
        :data:`BYTES` 的某个键。

    Raises
    ------
    ValueError
        名称不是已知的精度。
    TypeError
        ``dtype`` 既不是字符串，也不是 ``torch.dtype``。

    Examples
    --------
    >>> precision_name("BFloat16"), precision_name("half"), precision_name("fp8")
    ('bf16', 'fp16', 'fp8_e4m3')
    >>> precision_name("torch.bfloat16")   # a torch dtype's name, as the command line gets it
    'bf16'
    """
    if type(dtype) is str and dtype in BYTES:  # already the canonical name: the common case
        return dtype
    if type(dtype).__name__ == "dtype" and type(dtype).__module__ == "torch":
        text = str(dtype).removeprefix("torch.")
    elif isinstance(dtype, str):
        text = dtype
    else:
        raise InvalidArgumentType(
            name, f"must be a precision name such as 'bf16' or a torch.dtype, got {dtype!r}"
        )
    key = text.strip().lower().removeprefix("torch.")  # "torch.bfloat16", as a torch dtype prints
    key = _ALIASES.get(key, key)
    if key not in BYTES:
        raise InvalidArgument(
            name,
            f"{dtype!r} is not a known precision; allowed: {', '.join(BYTES)} "
            "(aliases such as 'bfloat16', 'float32', 'half' work too, and torch dtypes or their "
            "names, e.g. 'torch.bfloat16')",
        )
    return key


def bytes_per_element(dtype: Precision, name: str = "dtype") -> int:
    """``dtype`` 的一个元素在内存中占的字节数（byte）。

    Parameters
    ----------
    dtype : str or torch.dtype
        精度名称或 ``torch.dtype``。
    name : str
        错误信息中的参数名。

    Returns
    -------
    int
        每个元素的字节数。

    Examples
    --------
    本书 elementwise add 的例子里，每个 BF16 值占 2 字节：

    >>> bytes_per_element("bf16")
    2
    >>> import torch
    >>> bytes_per_element(torch.float16), bytes_per_element(torch.float64)
    (2, 8)
    """
    return BYTES[precision_name(dtype, name)]
