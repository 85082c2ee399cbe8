"""所有公开函数共用的参数检查。

每项检查都写明它拒绝的是哪个参数、允许什么值，所以错误的调用会明确地失败，而不是返回一个错误的数。
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable

from ..units import MAX_SIZE


class InvalidArgument(ValueError):
    """一个参数的值不被接受：``name`` 是参数名，``detail`` 说明允许什么、收到了什么。

    消息是 ``"{name} {detail}"``。命令行按 ``name`` 找到用户输入的 flag，
    印出 ``"{flag} {detail}"``，不从消息文本里读参数名；
    不是 :class:`InvalidArgument` 的异常是本包的 bug。

    Examples
    --------
    >>> error = InvalidArgument("m", "must be an integer >= 1, got 0")
    >>> str(error), error.name, isinstance(error, ValueError)
    ('m must be an integer >= 1, got 0', 'm', True)
    """

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name} {detail}")
        self.name = name
        self.detail = detail


class InvalidArgumentType(InvalidArgument, TypeError):
    """参数的类型不对（例如把 ``True`` 当尺寸）：也是 ``TypeError``。"""


InvalidArgument.__module__ = InvalidArgumentType.__module__ = "roofline_book"


def is_bool(value: object) -> bool:
    """``value`` 是 Python 的 ``bool`` 或 NumPy 的 ``numpy.bool_``。

    布尔值不是尺寸也不是实数，虽然 ``bool`` 是 ``int`` 的子类。本模块不导入 NumPy：
    ``numpy.bool_`` 的实例只能来自已经导入的 NumPy，所以只在 ``sys.modules`` 里找它。

    Examples
    --------
    >>> is_bool(True), is_bool(1), is_bool(0.0)
    (True, False, False)
    """
    if isinstance(value, bool):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


def size(name: str, value: object, *, minimum: int = 1) -> int:
    """``value`` 是 >= ``minimum`` 且 <= :data:`~roofline_book.units.MAX_SIZE` 的整数时，以 Python
    ``int`` 返回。

    拒绝布尔值、float（即使是 ``4096.0``）、字符串和 NaN：尺寸是元素的个数，
    悄悄转换会掩盖调用方的 bug。大于 ``2**63 - 1`` 的尺寸不是任何 tensor 的尺寸，它们的乘积
    也写不成 float，同样拒绝。

    Examples
    --------
    >>> size("m", 2**64)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: m must be an integer from 1 to 2**63 - 1 (...), got 2**64
    """
    value = count(name, value, minimum=minimum)
    if value > MAX_SIZE:
        shown = (
            f"2**{value.bit_length() - 1}"
            if value == 1 << (value.bit_length() - 1)
            else (f"about 2**{value.bit_length() - 1}")
        )
        raise InvalidArgument(
            name,
            f"must be an integer from {minimum} to 2**63 - 1 "
            f"(a tensor size is an int64), got {shown}",
        )
    return value


def elements(what: str, value: int) -> int:
    """一个 tensor 的元素个数 ``value`` 不超过 ``2**63 - 1``；``what`` 写明它由哪些参数相乘而来。

    各尺寸都合法时，它们的乘积仍可能大于任何 tensor 能有的元素个数；报错时指出调用方给出的参数，
    而不是内部某个函数的参数。

    Examples
    --------
    >>> elements("batch * seq_q * seq_k", 2**81)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: batch * seq_q * seq_k must be at most ..., got about 2**81
    """
    if value > MAX_SIZE:
        raise InvalidArgument(
            what,
            f"must be at most 2**63 - 1 elements (a tensor size is an int64), "
            f"got about 2**{value.bit_length() - 1}",
        )
    return value


def count(name: str, value: object, *, minimum: int = 0) -> int:
    """``value`` 是 >= ``minimum`` 的整数时，以 Python ``int`` 返回；没有上限。

    用于 FLOPs、字节数这类由尺寸相乘得到的计数：它们可以远大于任何一个 tensor 的尺寸
    （:func:`size` 的上限）。布尔值、float 和字符串照样拒绝。
    """
    if type(value) is int and value >= minimum:  # the common case, first: a decode loop asks
        return value  # for millions of these (bool is not int's exact type)
    if is_bool(value) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentType(
            name, f"must be an integer >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    value = int(value)
    if value < minimum:
        raise InvalidArgument(name, f"must be an integer >= {minimum}, got {value}")
    return value


def positive(name: str, value: object) -> float:
    """``value`` 是 > 0 的有限实数时，以 ``float`` 返回。"""
    return _real(name, value, strict=True)


def non_negative(name: str, value: object) -> float:
    """``value`` 是 >= 0 的有限实数时，以 ``float`` 返回。"""
    return _real(name, value, strict=False)


def _real(name: str, value: object, *, strict: bool) -> float:
    if type(value) is float and (0 < value < math.inf or (value == 0 and not strict)):
        return value  # the common case, first (NaN fails both comparisons)
    relation = "> 0" if strict else ">= 0"
    if is_bool(value) or not isinstance(value, numbers.Real):
        raise InvalidArgumentType(
            name, f"must be a finite real number {relation}, got {value!r} ({type(value).__name__})"
        )
    try:
        value = float(value)
    except OverflowError:  # an int beyond any float
        raise InvalidArgument(
            name, f"must be a finite real number {relation}, got {value!r}"
        ) from None
    if not math.isfinite(value) or value < 0 or (strict and value == 0):
        raise InvalidArgument(name, f"must be a finite real number {relation}, got {value!r}")
    return value


def choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` 是 ``allowed`` 之一时，以小写返回。"""
    if not isinstance(value, str):
        raise InvalidArgumentType(name, f"must be one of {', '.join(allowed)}; got {value!r}")
    key = value.strip().lower()
    if key not in allowed:
        raise InvalidArgument(name, f"must be one of {', '.join(allowed)}; got {value!r}")
    return key


def known_keys(where: str, entry: Iterable[str], allowed: tuple[str, ...]) -> None:
    """数据文件的一个条目只含 ``allowed`` 中的键；否则报错，指出条目（``where``）与第一个未知的键。

    Examples
    --------
    >>> known_keys("my.toml: model 'm'", {"name": "m", "layrs": 2}, ("name", "layers"))
    Traceback (most recent call last):
    ...
    ValueError: my.toml: model 'm' has an unknown key 'layrs'; allowed: name, layers
    """
    for key in entry:  # a TOML table iterates its keys
        if key not in allowed:
            raise ValueError(f"{where} has an unknown key {key!r}; allowed: {', '.join(allowed)}")
