"""数组参数：模型中唯一导入 NumPy 的模块。

模型在导入时是纯 Python，同一份代码在没有 NumPy 的环境里（例如浏览器中 Pyodide 的核心）照样运行。
只有调用方真的传入数组时，:func:`roofline_book.roofline.roofs.attainable` 才导入本模块；标量走纯
Python
的路径，得到相同的 float。

Examples
--------
>>> attainable([1, 10, 100, 1000], 100e12, 1e12) / 1e12
array([  1.,  10., 100., 100.])
"""

from __future__ import annotations

import numpy as np


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


def attainable(intensity: object, peak_flops: float, bandwidth: float) -> float | np.ndarray:
    """``min(P, B * I)`` （FLOP/s）逐项计算；``P`` 与 ``B`` 是调用方已检查过的 float。

    0 维的输入返回 float，否则返回同 shape 的 float64 数组。``B * I`` 超过 1e308 时为 inf，
    ``min(P, inf) = P``，与标量的路径相同。
    """
    values = non_negative_array("intensity", intensity)
    with np.errstate(over="ignore"):
        result = np.minimum(peak_flops, bandwidth * values)
    return float(result) if result.ndim == 0 else result
