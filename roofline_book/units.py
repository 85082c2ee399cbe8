"""SI prefixes: format figures for people, and parse figures people type.

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
    """``value`` with an SI prefix and ``digits`` significant digits.

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


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 3) -> str:
    """``value`` in scientific notation for prose, e.g. ``1.37 × 10¹¹``.

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
    """Parse ``"989.5T"``, ``"3.35TB/s"``, ``"2e12"`` into a float.

    Raises
    ------
    ValueError
        Naming ``name`` and the accepted forms.

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
