"""The vocabulary of a verdict: figures, checks, and comparisons that know their noise.

A claim (:mod:`roofline_book.measure.claims`) rests on :class:`Figure` values and
ends in a :class:`Check` whose verdict is ``pass``, ``fail``, ``inconclusive``
(the measurements' own spread straddles the rule) or ``not measured``.
:func:`order` compares two timings by their interquartile spans; :func:`against`
compares a ratio with a threshold beyond its noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..units import si

Verdict = Literal["pass", "fail", "inconclusive", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "inconclusive", "not measured")
"""``inconclusive``: the timings compared lie within each other's spread, so the run
cannot tell which is faster; ``not measured``: the run lacks the entries."""

SPEED_TOLERANCE = 0.05
"""Timing noise allowed when comparing medians: A is "at least as fast" as B if
``t_A <= (1 + tol) t_B``, and "faster" if ``(1 + tol) t_A < t_B``."""


@dataclass(frozen=True)
class Figure:
    """One number a verdict rests on, with its unit ("" for a plain ratio)."""

    label: str
    value: float
    unit: str = ""
    """An SI unit (``"FLOP/s"``, ``"B/s"``, ``"s"``, ``"FLOP/B"``), or how a plain
    number reads: ``"fraction"`` (shown as a percentage), ``"ratio"``, ``"count"``."""

    @property
    def text(self) -> str:
        """The value as a reader reads it: ``"0.0116%"``, ``"2.79x"``, ``"37"``, ``"1.2 ms"``.

        Examples
        --------
        >>> Figure("a", 0.000116, "fraction").text, Figure("b", 2.789, "ratio").text
        ('0.0116%', '2.79x')
        """
        if self.unit == "fraction":
            return f"{100 * self.value:.3g}%"
        if self.unit == "ratio":
            return f"{self.value:.3g}x"
        if self.unit == "count":
            return f"{self.value:.0f}"
        return si(self.value, self.unit) if self.unit else f"{self.value:.3g}"

    def __str__(self) -> str:
        return f"{self.label}: {self.text}"


@dataclass(frozen=True)
class Check:
    """One claim, the figures measured for it, and the verdict they give.

    Attributes
    ----------
    claim : str
        The claim, as the chapter makes it.
    verdict : {"pass", "fail", "not measured"}
    rule : str
        How the figures decide the verdict.
    figures : tuple of Figure
    """

    claim: str
    verdict: Verdict
    rule: str
    figures: tuple[Figure, ...] = ()
    key: str = ""
    """Which check made it (the function's name), for presentations that word it anew."""
    missing: str = ""
    """For ``not measured``: what the run lacks."""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")

    def __str__(self) -> str:
        lines = [f"[{self.verdict}] {self.claim}", f"    rule: {self.rule}"]
        lines += [f"    {f}" for f in self.figures]
        return "\n".join(lines)


def _verdict(ok: bool) -> Verdict:
    return "pass" if ok else "fail"


Order = Literal["faster", "slower", "overlap"]


def order(a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = SPEED_TOLERANCE) -> Order:
    """Whether timed entry ``a`` ran faster than ``b`` beyond both timings' spread.

    Each timing spans its median plus or minus half its interquartile range.
    ``a`` is ``"faster"`` when its span's top, times ``1 + tolerance``, is
    below the bottom of ``b``'s; ``"slower"`` in the mirror case; otherwise
    the spans overlap and the run cannot order them.

    Examples
    --------
    >>> t = lambda median, iqr: {"time": {"median_s": median, "iqr_s": iqr}}
    >>> order(t(1.0, 0.1), t(2.0, 0.1)), order(t(2.0, 0.1), t(1.0, 0.1))
    ('faster', 'slower')
    >>> order(t(18.2, 1.1), t(20.1, 1.1))    # 0.15 ms apart, IQRs of a millisecond
    'overlap'
    """
    ma, ia = a["time"]["median_s"], a["time"]["iqr_s"]
    mb, ib = b["time"]["median_s"], b["time"]["iqr_s"]
    if (1 + tolerance) * (ma + ia / 2) < mb - ib / 2:
        return "faster"
    if ma - ia / 2 > (1 + tolerance) * (mb + ib / 2):
        return "slower"
    return "overlap"


def _noise(*entries: Mapping[str, Any], ceilings: tuple[Mapping[str, Any], ...] = ()) -> float:
    """The relative spread a ratio of these timed entries (and ceilings) carries: half of
    each entry's IQR over its median, the spread of each ceiling's rounds (how much slower
    the machine ran at other times of the run), and :data:`SPEED_TOLERANCE`, added."""
    spread = sum(c.get("spread", 0.0) for c in ceilings)
    return (
        SPEED_TOLERANCE
        + spread
        + sum(e["time"]["iqr_s"] / e["time"]["median_s"] / 2 for e in entries)
    )


def against(value: float, threshold: float, noise: float, *, above: bool = True) -> Order:
    """Whether ``value`` clears ``threshold`` beyond its relative ``noise``.

    ``"faster"`` when it does (``value (1 - noise) >= threshold`` for ``above``, or
    ``value (1 + noise) <= threshold`` for a ceiling not to exceed), ``"slower"``
    when it misses beyond the noise, ``"overlap"`` when the noise straddles it.

    Examples
    --------
    >>> against(0.95, 0.8, 0.1), against(0.6, 0.8, 0.1), against(0.79, 0.8, 0.1)
    ('faster', 'slower', 'overlap')
    >>> against(0.1, 0.25, 0.1, above=False)
    'faster'
    """
    if above:
        if value * (1 - noise) >= threshold:
            return "faster"
        return "slower" if value * (1 + noise) < threshold else "overlap"
    if value * (1 + noise) <= threshold:
        return "faster"
    return "slower" if value * (1 - noise) > threshold else "overlap"


def _holds(condition: bool) -> Order:
    """A condition the noise cannot move (which side of the ridge, which size is best)."""
    return "faster" if condition else "slower"


def _verdict_of(orders: list[Order]) -> Verdict:
    """``fail`` if any comparison went the wrong way, ``inconclusive`` if any could not
    be told apart, ``pass`` if every one went the claimed way."""
    if "slower" in orders:
        return "fail"
    return "inconclusive" if "overlap" in orders else "pass"
