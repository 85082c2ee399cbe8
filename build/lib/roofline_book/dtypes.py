"""Bytes per element of each precision.

A precision is named by a string (``"bf16"``, ``"fp32"``, ...; case does not
matter, common aliases such as ``"bfloat16"`` are accepted) or by a
``torch.dtype``. The canonical names are the keys of :data:`BYTES`.

Examples
--------
>>> bytes_per_element("bf16"), bytes_per_element("FP32"), bytes_per_element("fp8_e4m3")
(2, 4, 1)

TF32 is a Tensor Core compute mode: its operands are stored as 32-bit floats.

>>> bytes_per_element("tf32")
4
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # torch is optional: its dtypes are accepted where it is installed
    import torch

#: Bytes one element occupies in memory, by canonical precision name.
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


def precision_name(dtype: Precision) -> str:
    """Canonical name of a precision given as a string or a ``torch.dtype``.

    Parameters
    ----------
    dtype : str or torch.dtype
        ``"bf16"``, ``"BF16"``, ``"bfloat16"``, ``torch.bfloat16``, ...

    Returns
    -------
    str
        One of the keys of :data:`BYTES`.

    Raises
    ------
    ValueError
        If the name is not a known precision.
    TypeError
        If ``dtype`` is neither a string nor a ``torch.dtype``.

    Examples
    --------
    >>> precision_name("BFloat16"), precision_name("half"), precision_name("fp8")
    ('bf16', 'fp16', 'fp8_e4m3')
    """
    if type(dtype).__name__ == "dtype" and type(dtype).__module__ == "torch":
        text = str(dtype).removeprefix("torch.")
    elif isinstance(dtype, str):
        text = dtype
    else:
        raise TypeError(
            f"dtype must be a precision name such as 'bf16' or a torch.dtype, got {dtype!r}"
        )
    key = text.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in BYTES:
        raise ValueError(
            f"dtype {dtype!r} is not a known precision; allowed: {', '.join(BYTES)} "
            "(aliases such as 'bfloat16', 'float32', 'half' and torch dtypes work too)"
        )
    return key


def bytes_per_element(dtype: Precision) -> int:
    """Bytes one element of ``dtype`` occupies in memory (byte).

    Parameters
    ----------
    dtype : str or torch.dtype
        A precision name or a ``torch.dtype``.

    Returns
    -------
    int
        Bytes per element.

    Examples
    --------
    The reference chapter's elementwise add moves 2 bytes per BF16 value:

    >>> bytes_per_element("bf16")
    2
    >>> import torch
    >>> bytes_per_element(torch.float16), bytes_per_element(torch.float64)
    (2, 8)
    """
    return BYTES[precision_name(dtype)]
