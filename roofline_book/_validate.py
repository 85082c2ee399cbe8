"""所有公开函数共用的参数检查。

每项检查都写明它拒绝的是哪个参数、允许什么值，所以错误的调用会明确地失败，而不是返回一个错误的数。
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np


def size(name: str, value: object, *, minimum: int = 1) -> int:
    """``value`` 是 >= ``minimum`` 的整数时，以 Python ``int`` 返回。

    拒绝布尔值、float（即使是 ``4096.0``）、字符串和 NaN：尺寸是元素的个数，
    悄悄转换会掩盖调用方的 bug。
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def positive(name: str, value: object) -> float:
    """``value`` 是 > 0 的有限实数时，以 ``float`` 返回。"""
    return _real(name, value, strict=True)


def non_negative(name: str, value: object) -> float:
    """``value`` 是 >= 0 的有限实数时，以 ``float`` 返回。"""
    return _real(name, value, strict=False)


def _real(name: str, value: object, *, strict: bool) -> float:
    relation = "> 0" if strict else ">= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a finite real number {relation}, "
            f"got {value!r} ({type(value).__name__})"
        )
    value = float(value)
    if not math.isfinite(value) or value < 0 or (strict and value == 0):
        raise ValueError(f"{name} must be a finite real number {relation}, got {value!r}")
    return value


def non_negative_array(name: str, value: object) -> np.ndarray:
    """``value`` 的各项都有限且 >= 0 时，以 float64 数组返回。"""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a number or an array of numbers: {exc}") from None
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.number):
        raise TypeError(f"{name} must hold real numbers, got an array of dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"{name} must hold real numbers, got complex values")
    array = array.astype(np.float64)
    if array.size and not (np.all(np.isfinite(array)) and np.all(array >= 0)):
        raise ValueError(f"{name} must hold finite numbers >= 0, got {value!r}")
    return array


def choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` 是 ``allowed`` 之一时，以小写返回。"""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    key = value.strip().lower()
    if key not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
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
