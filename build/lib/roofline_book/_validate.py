"""Argument checks shared by every public function.

Each check names the argument it rejects and says what is allowed, so a bad
call fails loudly instead of returning a wrong number.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def size(name: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` as a Python ``int`` if it is a whole number >= ``minimum``.

    Booleans, floats (even ``4096.0``), strings and NaN are refused: a size is
    a count of elements, and a silent conversion would hide a caller's bug.
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
    """Return ``value`` as a ``float`` if it is a finite real number > 0."""
    return _real(name, value, strict=True)


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a ``float`` if it is a finite real number >= 0."""
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
    """Return ``value`` as a float64 array whose entries are all finite and >= 0."""
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
    """Return ``value`` lower-cased if it is one of ``allowed``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    key = value.strip().lower()
    if key not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return key
