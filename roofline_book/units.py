"""SI 前缀与二进制前缀：把数字写成人读的形式，也把人敲进来的数字读回来。

Examples
--------
>>> si(989.5e12, "FLOP/s"), si(3.35e12, "B/s"), si(0.0015, "s")
('989.5 TFLOP/s', '3.35 TB/s', '1.5 ms')
>>> parse_si("989.5T"), parse_si("3.35TB/s"), parse_si("1e12")
(989500000000000.0, 3350000000000.0, 1000000000000.0)
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_PREFIXES = (
    ("E", 1e18),
    ("P", 1e15),
    ("T", 1e12),
    ("G", 1e9),
    ("M", 1e6),
    ("k", 1e3),
    ("", 1.0),
    ("m", 1e-3),
    ("u", 1e-6),
    ("n", 1e-9),
    ("p", 1e-12),
)
_SCALE = {p: v for p, v in _PREFIXES if p}
_SCALE["K"] = 1e3
_NUMBER = re.compile(
    r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([EPTGMkKmunp]?)\s*([A-Za-z/]*)\s*$"
)
#: :func:`parse_si` 认得的单位，按它们度量的量分组。给出 ``quantity=`` 时按这张表比较，
#: 所以写给 FLOP/s 的 ``100Tbyte/s`` 会被拒绝。
UNITS = {
    "FLOP/s": ("FLOP/s", "FLOPS", "flop/s", "OP/s", "OPS"),
    "byte/s": ("B/s", "byte/s", "bytes/s", "Bps"),
    "FLOP": ("FLOP", "flop", "OP"),
    "byte": ("B", "byte", "bytes"),
    "s": ("s",),
}
_QUANTITY = {unit: quantity for quantity, units in UNITS.items() for unit in units}


def si(value: float, unit: str = "", digits: int = 4) -> str:
    """给 ``value`` 加上 SI 前缀，保留 ``digits`` 位有效数字。

    Examples
    --------
    >>> si(137438953472, "FLOP")
    '137.4 GFLOP'
    >>> si(999.7e9, "FLOP/s"), si(999.96e9, "FLOP/s")
    ('999.7 GFLOP/s', '1 TFLOP/s')
    >>> si(0, "B"), si(float("inf"), "s")
    ('0 B', 'inf s')
    """
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}".rstrip()
    magnitude = abs(value)
    # A value that rounds up to 1000 at this many digits takes the next prefix.
    threshold = 1 - 0.5 * 10.0**-digits
    prefix, scale = next(
        ((p, v) for p, v in _PREFIXES if magnitude >= v * threshold), _PREFIXES[-1]
    )
    text = f"{value / scale:.{digits}g}"
    return f"{text} {prefix}{unit}".rstrip()


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10), ("", 1))


def binary(value: float, unit: str = "B", digits: int = 4) -> str:
    """给 ``value`` 加上二进制前缀（Ki = 1024，Mi = 1024^2，……），保留 ``digits`` 位有效数字。

    cache 与内存的容量是二进制的量：“228 KB”的 shared memory 是 228 x 1024 字节，
    :func:`si` 会把它写成 233.5 kB。

    Examples
    --------
    >>> binary(228 * 1024), binary(50 * 2**20), binary(81559 * 2**20)
    ('228 KiB', '50 MiB', '79.65 GiB')
    >>> binary(0), binary(512)
    ('0 B', '512 B')
    """
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}".rstrip()
    magnitude = abs(value)
    threshold = 1 - 0.5 * 10.0**-digits
    prefix, scale = next(((p, v) for p, v in _BINARY if magnitude >= v * threshold), _BINARY[-1])
    return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 3) -> str:
    """把 ``value`` 写成正文用的科学记数法，例如 ``1.37 × 10¹¹``。

    Examples
    --------
    >>> sci(2 * 4096**3)
    '1.37 × 10¹¹'
    >>> sci(0.00125, 2), sci(42.0)
    ('1.2 × 10⁻³', '42')
    """
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10**exponent, digits - 1)
    if abs(mantissa) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    if 0 <= exponent < 3:
        return f"{value:.{digits}g}"
    return f"{mantissa:.{digits - 1}f} × 10{str(exponent).translate(_SUPERSCRIPT)}"


def parse_si(text: str, name: str = "value", *, quantity: str | None = None) -> float:
    """把 ``"989.5T"``、``"3.35TB/s"``、``"2e12"`` 这样的写法读成 float。

    Parameters
    ----------
    text : str
        一个数，可带 SI 前缀（k、M、G、T、P、E 及 m、u、n、p）和单位（:data:`UNITS`）。
    name : str
        错误信息中的参数名。
    quantity : str, optional
        ``text`` 应当度量的量（:data:`UNITS` 的一个键，如 ``"FLOP/s"``）。给出时，写了单位的
        ``text`` 必须是这个量的单位：``100TB/s`` 不会被当作 FLOP/s。

    Raises
    ------
    ValueError
        读不懂，或单位与 ``quantity`` 不符时抛出，错误信息写明 ``name`` 和可接受的写法。

    Examples
    --------
    >>> parse_si("100 TFLOP/s"), parse_si("64k")
    (100000000000000.0, 64000.0)
    >>> parse_si("1Tbyte/s", "peak", quantity="FLOP/s")
    Traceback (most recent call last):
    ...
    ValueError: peak: '1Tbyte/s' is in byte/s; this takes FLOP/s (e.g. 989.5T or 989.5TFLOP/s)
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string such as '989.5T', got {text!r}")
    if quantity is not None and quantity not in UNITS:
        raise ValueError(f"quantity must be one of {', '.join(UNITS)}; got {quantity!r}")
    match = _NUMBER.match(text)
    unit = match[3] if match else ""
    if not match or (unit and unit not in _QUANTITY):
        units = ", ".join(UNITS[quantity] if quantity else _QUANTITY)
        raise ValueError(
            f"{name}: cannot read {text!r}; write a number with an optional SI prefix "
            f"(k, M, G, T, P, E) and unit ({units}), e.g. 989.5T, 3.35TB/s or 2e12"
        )
    if quantity is not None and unit and _QUANTITY[unit] != quantity:
        flops = quantity == "FLOP/s"
        plain, example = ("989.5T", "989.5TFLOP/s") if flops else ("3.35T", "3.35TB/s")
        raise ValueError(
            f"{name}: {text!r} is in {_QUANTITY[unit]}; this takes {quantity} "
            f"(e.g. {plain} or {example})"
        )
    number, prefix = match[1], match[2]
    return float(number) * _SCALE.get(prefix, 1.0)


_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(k|K|M|G|T|Ki|Mi|Gi|Ti)?$")
_POWER = re.compile(r"^(\d+)(?:\^|\*\*)(\d+)$")
_SIZE_SCALE = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
SIZE_FORMS = "e.g. 4096, 1_048_576, 4k (= 4000), 4Ki (= 4096) or 2^20"
""":func:`parse_size` 接受的写法，错误信息和帮助文字照此列出。"""

MAX_SIZE = 2**63 - 1
"""尺寸的上限：PyTorch 的 tensor 维度和元素个数是 int64，大于它的尺寸不是任何 tensor 的尺寸；
有了它，尺寸的乘积（FLOPs、字节数）也总能写成 float。"""
_MISPLACED_UNDERSCORE = re.compile(r"(^|\D)_|_(\D|$)")


def parse_size(text: str) -> int:
    """读一个尺寸：>= 0 的整数，可以直接写，可以带 SI 或二进制后缀，也可以写成幂。

    ``k`` 表示 1000，``Ki`` 表示 1024；算出来不是整数的值会被拒绝，
    不会四舍五入。下划线只能像 Python 那样夹在数字之间；``0^0`` 没有定义；大于
    :data:`MAX_SIZE` 的尺寸不是任何 tensor 的尺寸，一律拒绝。

    Raises
    ------
    ValueError
        读不懂时抛出，错误信息列出可接受的写法（:data:`SIZE_FORMS`）。

    Examples
    --------
    >>> parse_size("4096"), parse_size("4k"), parse_size("4Ki"), parse_size("2^20")
    (4096, 4000, 4096, 1048576)
    >>> parse_size("1.5M"), parse_size("1_048_576")
    (1500000, 1048576)
    >>> parse_size("1.0001k")
    Traceback (most recent call last):
    ...
    ValueError: expected a whole number (e.g. ...), got '1.0001k'
    """
    stripped = str(text).strip()
    if _MISPLACED_UNDERSCORE.search(stripped):  # as in Python: 1_000, never _1 or 1__0
        raise ValueError(f"expected a whole number ({SIZE_FORMS}), got {text!r}")
    flat = stripped.replace("_", "")
    power = _POWER.match(flat)
    value: Fraction | int | None = None
    if power:
        base, exponent = int(power[1]), int(power[2])
        if base == 0 and exponent == 0:
            raise ValueError(f"{text!r} is undefined (0^0); write the size itself")
        if base > 1 and exponent * math.log10(base) > 64:
            raise ValueError(f"{text!r} is too large a size (at most 2^63 - 1)")
        value = base**exponent
    elif match := _SIZE.match(flat):
        value = Fraction(match[1]) * _SIZE_SCALE[match[2] or ""]
    if value is None or (isinstance(value, Fraction) and value.denominator != 1):
        raise ValueError(f"expected a whole number ({SIZE_FORMS}), got {text!r}")
    if value > MAX_SIZE:
        raise ValueError(f"{text!r} is too large a size (at most 2^63 - 1)")
    return int(value)
