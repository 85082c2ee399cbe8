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
    r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([EPTGMkKmunp]?)\s*"
    r"(FLOP/s|FLOPS|FLOP|B/s|byte/s|bytes|byte|B|OP/s|s)?\s*$"
)


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


def parse_si(text: str, name: str = "value") -> float:
    """把 ``"989.5T"``、``"3.35TB/s"``、``"2e12"`` 这样的写法读成 float。

    Raises
    ------
    ValueError
        读不懂时抛出，错误信息写明 ``name`` 和可接受的写法。

    Examples
    --------
    >>> parse_si("100 TFLOP/s"), parse_si("64k")
    (100000000000000.0, 64000.0)
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string such as '989.5T', got {text!r}")
    match = _NUMBER.match(text)
    if not match:
        raise ValueError(
            f"{name}: cannot read {text!r}; write a number with an optional SI prefix "
            "(k, M, G, T, P, E) and unit, e.g. 989.5T, 3.35TB/s or 2e12"
        )
    number, prefix, _ = match.groups()
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


def parse_size(text: str) -> int:
    """读一个尺寸：>= 0 的整数，可以直接写，可以带 SI 或二进制后缀，也可以写成幂。

    ``k`` 表示 1000，``Ki`` 表示 1024；算出来不是整数的值会被拒绝，
    不会四舍五入。

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
    flat = str(text).strip().replace("_", "")
    power = _POWER.match(flat)
    if power:
        base, exponent = int(power[1]), int(power[2])
        if base > 1 and exponent * math.log10(base) > 300:
            raise ValueError(f"{text!r} is too large a size")
        return base**exponent
    match = _SIZE.match(flat)
    if match:
        value = Fraction(match[1]) * _SIZE_SCALE[match[2] or ""]
        if value.denominator == 1:
            return int(value)
    raise ValueError(f"expected a whole number ({SIZE_FORMS}), got {text!r}")
