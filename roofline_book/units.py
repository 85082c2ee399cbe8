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
_RATES = ("FLOP/s", "byte/s")
_RATE_PREFIXES = "k, M, G, T, P, E"
_SUB_UNIT = {"m": "milli, 1e-3", "u": "micro, 1e-6", "n": "nano, 1e-9", "p": "pico, 1e-12"}


def si(value: float, unit: str = "", digits: int = 4) -> str:
    """给 ``value`` 加上 SI 前缀，保留 ``digits`` 位有效数字。

    时间（``unit="s"``）只用小于 1 的前缀（ms、us、ns、ps）：“Ms” 与 “ms” 只差一个大写字母，
    1000 秒以上写成秒，超过 ``digits`` 位时用科学记数法。大于 E 能写的值也写成不带前缀的
    科学记数法，而不是 “1e+22 E”。NaN 不是能打印的量，抛出 :class:`ValueError`。

    Examples
    --------
    >>> si(137438953472, "FLOP")
    '137.4 GFLOP'
    >>> si(999.7e9, "FLOP/s"), si(999.96e9, "FLOP/s")
    ('999.7 GFLOP/s', '1 TFLOP/s')
    >>> si(0, "B"), si(float("inf"), "s")
    ('0 B', 'inf s')
    >>> si(5.243e6, "s"), si(1234.5, "s"), si(1e40, "s"), si(1e40, "FLOP")
    ('5.243e+06 s', '1234 s', '1e+40 s', '1e+40 FLOP')
    """
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"cannot print NaN as a quantity in {unit or 'plain numbers'}")
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}".rstrip()
    magnitude = abs(value)
    # A value that rounds up to 1000 at this many digits takes the next prefix.
    threshold = 1 - 0.5 * 10.0**-digits
    prefixes = _PREFIXES[_PREFIXES.index(("", 1.0)) :] if unit == "s" else _PREFIXES
    if magnitude >= 1000 * prefixes[0][1] * threshold:  # beyond the largest prefix: scientific
        return f"{value:.{digits}g} {unit}".rstrip()
    prefix, scale = next(((p, v) for p, v in prefixes if magnitude >= v * threshold), prefixes[-1])
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
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"cannot print NaN as a quantity in {unit or 'plain numbers'}")
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
        速率（``quantity`` 为 ``"FLOP/s"`` 或 ``"byte/s"``）只接受 k 到 E：``100m`` 是
        0.1 FLOP/s，没有这样的设备，多半是想写 ``100M``，所以拒绝并说明 m 的意思。
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
    >>> parse_si("100m", "peak", quantity="FLOP/s")
    Traceback (most recent call last):
    ...
    ValueError: peak: '100m' has the prefix m (milli, 1e-3); a rate takes k, M, ... (mega: 100M)
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string such as '989.5T', got {text!r}")
    if quantity is not None and quantity not in UNITS:
        raise ValueError(f"quantity must be one of {', '.join(UNITS)}; got {quantity!r}")
    match = _NUMBER.match(text)
    unit = match[3] if match else ""
    if not match or (unit and unit not in _QUANTITY):
        units = ", ".join(UNITS[quantity] if quantity else _QUANTITY)
        prefixes = _RATE_PREFIXES if quantity in _RATES else "k, M, G, T, P, E, m, u, n, p"
        raise ValueError(
            f"{name}: cannot read {text!r}; write a number with an optional SI prefix "
            f"({prefixes}) and unit ({units}), e.g. 989.5T, 3.35TB/s or 2e12"
        )
    if quantity is not None and unit and _QUANTITY[unit] != quantity:
        flops = quantity == "FLOP/s"
        plain, example = ("989.5T", "989.5TFLOP/s") if flops else ("3.35T", "3.35TB/s")
        raise ValueError(
            f"{name}: {text!r} is in {_QUANTITY[unit]}; this takes {quantity} "
            f"(e.g. {plain} or {example})"
        )
    number, prefix = match[1], match[2]
    if quantity in _RATES and prefix in _SUB_UNIT:
        raise ValueError(
            f"{name}: {text!r} has the prefix {prefix} ({_SUB_UNIT[prefix]}); a rate takes "
            f"{_RATE_PREFIXES} (mega: {number}M)"
        )
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
SIZE_FORMS = (
    "e.g. 4096, 1_048_576, 4k (= 4000), 1.5M, 4Ki (= 4096) or 2^20; "
    "no exponent (1e3) and no decimal point without a suffix (4.0)"
)
""":func:`parse_size` 接受的写法，错误信息和帮助文字照此列出。"""

MAX_SIZE = 2**63 - 1
"""尺寸的上限：PyTorch 的 tensor 维度和元素个数是 int64，大于它的尺寸不是任何 tensor 的尺寸；
有了它，尺寸的乘积（FLOPs、字节数）也总能写成 float。"""
_MISPLACED_UNDERSCORE = re.compile(r"(^|\D)_|_(\D|$)")


def parse_size(text: str, minimum: int = 0) -> int:
    """读一个尺寸：>= ``minimum`` 的整数，可以直接写，可以带 SI 或二进制后缀，也可以写成幂。

    ``k`` 表示 1000，``Ki`` 表示 1024；算出来不是整数的值会被拒绝，
    不会四舍五入。规则与 Python API 一致：API 的尺寸只收 ``int``，拒绝 ``4.0`` 这样的 float，
    所以这里也不收写成 float 的数（``4.0``、``1e3``）；小数点只能出现在后缀之前（``1.5M``）。
    下划线只能像 Python 那样夹在数字之间；``0^0`` 没有定义；大于
    :data:`MAX_SIZE` 的尺寸不是任何 tensor 的尺寸，一律拒绝。

    Parameters
    ----------
    text : str
        键入的尺寸。
    minimum : int
        允许的最小值；命令行的尺寸都是 1。

    Raises
    ------
    ValueError
        读不懂或小于 ``minimum`` 时抛出，都是同一条信息：要什么（>= ``minimum`` 的整数）、
        可接受的写法（:data:`SIZE_FORMS`）和键入的原文。

    Examples
    --------
    >>> parse_size("4096"), parse_size("4k"), parse_size("4Ki"), parse_size("2^20")
    (4096, 4000, 4096, 1048576)
    >>> parse_size("1.5M"), parse_size("1_048_576")
    (1500000, 1048576)
    >>> parse_size("1.0001k")
    Traceback (most recent call last):
    ...
    ValueError: expected a whole number >= 0 (e.g. ...), got '1.0001k'
    >>> parse_size("-1", minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: expected a whole number >= 1 (e.g. ...), got '-1'
    """
    wrong = f"expected a whole number >= {minimum} ({SIZE_FORMS}), got {text!r}"
    stripped = str(text).strip()
    if _MISPLACED_UNDERSCORE.search(stripped):  # as in Python: 1_000, never _1 or 1__0
        raise ValueError(wrong)
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
    elif (match := _SIZE.match(flat)) and (match[2] or "." not in match[1]):
        value = Fraction(match[1]) * _SIZE_SCALE[match[2] or ""]
    if value is None or (isinstance(value, Fraction) and value.denominator != 1):
        raise ValueError(wrong)
    if value > MAX_SIZE:
        raise ValueError(f"{text!r} is too large a size (at most 2^63 - 1)")
    if value < minimum:
        raise ValueError(wrong)
    return int(value)
