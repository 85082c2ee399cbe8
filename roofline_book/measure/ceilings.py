"""A run's ceilings and stability, from the entries of its probes and sentinel.

The probes (:func:`roofline_book.measure.suites.probes`) are timed in
interleaved rounds; each ceiling is its probe's best round, with the spread of
the rounds beside it. The sentinel, timed between the operator cases, says
whether the machine stayed the same through the run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .registry import Case
from .runfile import rates

SENTINEL_TOLERANCE = 0.3
"""A run is stable when its sentinel's checkpoints lie within this fraction of each
other, ``max / min - 1``. Each checkpoint is the sentinel's fastest sample, so a
passing stall (which widens the cases' own spreads, and makes their comparisons
inconclusive) does not move it, while a sustained change does: a slower clock, a
process sharing the core, a second thread waiting on a busy one. On the shared
2-core VM the book is built on, an idle run's checkpoints spread 15 to 25% (other
tenants share the host), so a tighter limit would flag every run."""


def _spread(entry: Mapping[str, Any]) -> float:
    """``max / min - 1`` of an entry's round medians (0 for a single round)."""
    rounds = entry.get("rounds_s") or [entry["time"]["median_s"]]
    return max(rounds) / min(rounds) - 1


def _ceiling(entry: Mapping[str, Any], which: int) -> dict[str, Any]:
    return {"value": rates(entry)[which], "entry": entry["id"], "spread": _spread(entry)}


def record(
    entries: Sequence[Mapping[str, Any]],
    sets: Mapping[str, Sequence[Case]],
    levels: Mapping[str, tuple[int, Case]] | None = None,
) -> dict:
    """The run file's ``ceilings`` from the probes' entries.

    Parameters
    ----------
    entries : sequence of dict
        The probes' entries, as :func:`roofline_book.measure.run.measure_rounds`
        returns them.
    sets : mapping
        The probes by role, as :func:`~roofline_book.measure.suites.probes` returns them.
    levels : mapping, optional
        The cache levels probed: name to (bytes, copy case), as
        :func:`~roofline_book.measure.suites.cache_probes` gives them.

    Returns
    -------
    dict
        ``peak_flops`` per precision (the best of its peak GEMMs' rates), ``bandwidth`` per
        kind (copy, triad, in-place triad: model bytes over time),
        ``working_set_bytes`` (what the copy touches), and on the CPU
        ``cache_bandwidth`` per level (a copy that stays in it) with its working set
        and the cache's size.
        On the CPU also ``vector_flops`` per precision (an add within the L2:
        the vector units' rate on elementwise work). Each ceiling names its entry
        and the spread of its rounds.
    """
    by_id = {e["id"]: e for e in entries if e["status"] == "ok"}
    peaks: dict[str, dict[str, Any]] = {}
    for c in sets["peak"]:  # the best of a precision's peak probes
        if c.id in by_id and (
            c.precision not in peaks or rates(by_id[c.id])[0] > peaks[c.precision]["value"]
        ):
            peaks[c.precision] = _ceiling(by_id[c.id], 0)
    bandwidth = {c.name: _ceiling(by_id[c.id], 1) for c in sets["bandwidth"] if c.id in by_id}
    out: dict[str, Any] = {
        "peak_flops": peaks,
        "bandwidth": bandwidth,
        "working_set_bytes": sets["bandwidth"][0].cost.bytes,
    }
    vector = {
        c.precision: _ceiling(by_id[c.id], 0) for c in sets.get("vector", ()) if c.id in by_id
    }
    if vector:
        out["vector_flops"] = vector
    found = {}
    for level, (size, case) in (levels or {}).items():
        if case.id in by_id:
            extra = {"working_set_bytes": case.cost.bytes, "cache_bytes": size}
            found[level] = _ceiling(by_id[case.id], 1) | extra
    if found:
        out["cache_bandwidth"] = found
    return out


def _drift(entry: Mapping[str, Any]) -> float:
    """The last round's median over the best of the earlier ones (1: no change)."""
    *earlier, last = entry["rounds_s"]
    return last / min(earlier)


def stability(
    probe: str,
    checkpoints: Sequence[float],
    probes: Sequence[Mapping[str, Any]] = (),
    judged: Collection[str] = (),
) -> dict[str, Any] | None:
    """The run file's ``stability`` record.

    Parameters
    ----------
    probe : str
        The sentinel's entry id.
    checkpoints : sequence of float
        The sentinel's time at each checkpoint (second).
    probes : sequence of dict
        The ceiling probes' entries, with their last round.
    judged : Collection of str
        The probes whose drift is recorded (the peak GEMMs and the DRAM bandwidth
        probes): the largest enters the record as ``ceiling_drift``, for the
        reader; it does not decide ``stable``, since the ceilings are the best of
        rounds taken before and after the cases (on this VM a single round of the
        BF16 peak GEMM varies by 2.7 times on an idle machine).

    Examples
    --------
    >>> r = stability("copy", [1.0, 1.02, 0.99, 1.25])
    >>> round(r["spread"], 3), r["stable"], r["drift"]
    (0.263, True, 1.25)
    >>> stability("copy", [1.0, 1.5])["stable"]
    False
    >>> stability("copy", [1.0]) is None
    True
    """
    if len(checkpoints) < 2:
        return None
    first, last = checkpoints[0], checkpoints[-1]
    spread = max(checkpoints) / min(checkpoints) - 1
    out = {
        "probe": probe,
        "first_s": first,
        "last_s": last,
        "drift": last / first,
        "checkpoints_s": list(checkpoints),
        "spread": spread,
        "stable": spread <= SENTINEL_TOLERANCE,
    }
    drifts = [
        _drift(e)
        for e in probes
        if e["status"] == "ok" and len(e.get("rounds_s", ())) >= 2 and e["id"] in judged
    ]
    if drifts:
        out["ceiling_drift"] = max(drifts, key=lambda d: abs(d - 1))
    return out
