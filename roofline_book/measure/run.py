"""Running a suite: check then time each case, and assemble the run.

A run measures the ceilings first (memory bandwidth from a large copy, a
STREAM triad and the triad in place; peak FLOP/s per precision as the best
GEMM of a sweep), then each operator case of the suite. Method, per case:

1. Correct before fast: the result is compared with a float64 reference
   (``torch.allclose``); a wrong result is recorded as ``failed``, not timed.
2. Warm up, then time (:mod:`roofline_book.measure.timing`): on the CPU with
   ``torch.utils.benchmark``, with torch's threads; on CUDA with CUDA events,
   memory-bound cases writing a buffer larger than the L2 before every call
   (outside the timed region), so no call finds its data left in the cache by
   the one before.
3. Report the median and interquartile range of the per-call times, with the
   samples, the number of samples (``reps``) and calls per sample (``inner``).

A case that does not fit in memory, or that this PyTorch or device does not
support, is recorded as ``skipped`` with the reason. The result is a run (see
:mod:`roofline_book.measure.runfile`).
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from .. import _validate
from ..tables import text_table
from ..units import si
from . import machine, runfile
from .cases import BANDWIDTH_KINDS, is_out_of_memory, shape_text
from .registry import Case, Incorrect, Unsupported
from .suites import DEVICES, FALLBACK_CACHE_BYTES, SUITES, cases, suite_spec
from .timing import Timing, time_cpu, time_cuda

FLUSH_MIN_BYTES = 256 * 2**20
"""Smallest buffer written between calls to flush the GPU's L2 (byte)."""

MEMORY_HEADROOM = 0.5
"""A case is skipped when its tensors would take more than this fraction of the
memory free on the device: on Linux an over-committed CPU allocation ends in
the OOM killer rather than an exception."""


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(case: Case, device: Any = "cpu", *, min_run_time: float = 0.1, flush=None) -> dict:
    """Check, then time, one case; its run-file entry.

    Parameters
    ----------
    case : Case
    device : str or torch.device
    min_run_time : float
        Timed seconds, at least (second).
    flush : torch.Tensor, optional
        CUDA only: the L2 flush buffer, used if the case is memory-bound.

    Returns
    -------
    dict
        ``status`` is ``"ok"`` with ``time`` and ``check``; ``"skipped"`` with a
        ``reason`` (unsupported here, or too large for the free memory);
        ``"failed"`` with a ``reason`` if the result was wrong or the case
        raised an error (a run goes on past a broken case).
    """
    import torch

    if not isinstance(case, Case):
        kind = type(case).__name__
        raise TypeError(f"case must be a roofline_book.measure.registry.Case, got {kind}")
    device = torch.device(device)
    flushed = device.type == "cuda" and flush is not None and case.memory_bound
    entry: dict[str, Any] = {
        "id": case.id,
        "name": case.name,
        "shape": dict(case.shape),
        "precision": case.precision,
        "impl": case.impl,
        "status": "ok",
    }
    # the four counts always; which units and cache levels the work needs, where it needs any
    model = {
        k: v
        for k, v in dataclasses.asdict(case.cost).items()
        if k in ("flops", "bytes_read", "bytes_written", "kernels") or v
    }
    tail: dict[str, Any] = {"model": model}
    available = machine.available_memory(device)
    if available is not None and case.footprint > MEMORY_HEADROOM * available:
        reason = (
            f"needs about {si(case.footprint, 'B')}, more than {MEMORY_HEADROOM:.0%} "
            f"of the {si(available, 'B')} free"
        )
        return entry | {"status": "skipped", "reason": reason} | tail
    prepared = None
    timing: Timing
    try:
        prepared = case.build(device)
        check = prepared.check()
        _sync(device)
        if device.type == "cuda":
            timing = time_cuda(
                prepared.fn, min_run_time=min_run_time, flush=flush if flushed else None
            )
        else:
            timing = time_cpu(prepared.fn, min_run_time=min_run_time)
    except Unsupported as exc:
        return entry | {"status": "skipped", "reason": str(exc)} | tail
    except Incorrect as exc:
        return entry | {"status": "failed", "reason": f"wrong result: {exc}"} | tail
    except Exception as exc:  # one broken case must not lose the whole run
        text = str(exc).strip()
        first_line = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
        if is_out_of_memory(exc):
            return entry | {"status": "skipped", "reason": f"out of memory: {first_line}"} | tail
        return entry | {"status": "failed", "reason": f"error: {first_line}"} | tail
    finally:
        if prepared is not None:
            prepared.close()
        note = prepared.note if prepared is not None else ""
        del prepared
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if note:
        entry["note"] = note
    return entry | tail | {"time": timing.as_dict(), "check": check, "l2_flush": flushed}


def _ceilings(entries: list[dict], copy_case: Case) -> dict[str, Any]:
    peaks: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["name"] == "gemm" and entry["status"] == "ok":
            value = runfile.rates(entry)[0]
            best = peaks.get(entry["precision"])
            if best is None or value > best["value"]:
                peaks[entry["precision"]] = {"value": value, "entry": entry["id"]}
    bandwidth = {
        e["name"]: {"value": runfile.rates(e)[1], "entry": e["id"]}
        for e in entries
        if e["name"] in BANDWIDTH_KINDS and e["status"] == "ok"
    }
    return {"peak_flops": peaks, "bandwidth": bandwidth, "working_set_bytes": copy_case.cost.bytes}


def run_suite(device: str = "cpu", suite: str = "quick", *, progress: bool = False) -> dict:
    """Measure the ceilings and every case of a suite; the run, validated.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        ``"cuda"`` runs on the current CUDA device.
    suite : {"tiny", "quick", "full"}
        Sizes; see :func:`~roofline_book.measure.suites.suite_spec`. ``tiny``
        is for tests: its bandwidth ceilings fit in cache and mean little.
    progress : bool
        Show a progress bar (tqdm) on stderr.

    Raises
    ------
    ValueError
        For an unknown device or suite, or ``device="cuda"`` without CUDA.
    """
    device = _validate.choice("device", device, DEVICES)
    suite = _validate.choice("suite", suite, SUITES)
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(machine.no_cuda_message())
    dev = (
        torch.device("cuda", torch.cuda.current_device())
        if device == "cuda"
        else torch.device("cpu")
    )
    load = [machine.load_average()]
    now = datetime.now(timezone.utc)  # noqa: UP017 - datetime.UTC needs Python >= 3.11
    date = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    info = machine.describe_device(dev)
    spec = suite_spec(device, suite)
    todo = cases(device, suite, cache_bytes=info["cache_bytes"] or FALLBACK_CACHE_BYTES)
    flush = None
    if device == "cuda":
        size = max(FLUSH_MIN_BYTES, 2 * (info["cache_bytes"] or FALLBACK_CACHE_BYTES))
        flush = torch.empty(size, dtype=torch.int8, device=dev)
    entries = [
        measure(case, dev, min_run_time=spec.min_run_time, flush=flush)
        for case in _progress(todo, progress)
    ]
    stability = _stability(
        entries[0], measure(todo[0], dev, min_run_time=spec.min_run_time, flush=flush)
    )
    load.append(machine.load_average())
    run = {
        "format": runfile.FORMAT,
        "version": runfile.VERSION,
        "date": date,
        "host": socket.gethostname(),
        "suite": suite,
        "device": info,
        "software": machine.describe_software(dev),
        "ceilings": _ceilings(entries, todo[0]),
        "results": entries,
    }
    if None not in load:
        run["load_average"] = load
    if stability is not None:
        run["stability"] = stability
    runfile.validate_run(run, require_schema=False)
    return run


#: A run is stable when its first case, timed again at the end, is within this fraction
#: of its first time.
DRIFT_TOLERANCE = 0.1


def _stability(first: dict, last: dict) -> dict[str, Any] | None:
    """The drift of the reference probe between the start and the end of a run."""
    if first["status"] != "ok" or last["status"] != "ok":
        return None
    a, b = first["time"]["median_s"], last["time"]["median_s"]
    return {
        "probe": first["id"],
        "first_s": a,
        "last_s": b,
        "drift": b / a,
        "stable": abs(b / a - 1) <= DRIFT_TOLERANCE,
    }


def _progress(todo: list[Case], enabled: bool) -> Iterator[Case]:
    """Yield the cases, with a tqdm bar on stderr (a line per case where tqdm is missing)."""
    if not enabled:
        yield from todo
        return
    try:
        from tqdm import tqdm
    except ImportError:
        for i, case in enumerate(todo, 1):
            print(f"bench [{i}/{len(todo)}] {case.id}", file=sys.stderr, flush=True)
            yield case
        return
    with tqdm(todo, file=sys.stderr, unit="case", mininterval=0.5) as bar:
        for case in bar:
            bar.set_postfix_str(case.id, refresh=False)
            yield case


def summary_table(run: Mapping[str, Any]) -> str:
    """The ceilings and one line per entry: time and the model's rates."""
    lines = [
        f"{run['device']['name']} ({run['device']['type']}), {run['suite']} suite, {run['date']}"
    ]
    for precision, c in run["ceilings"]["peak_flops"].items():
        label = f"peak {precision}"
        lines.append(f"  {label:<14}{si(c['value'], 'FLOP/s'):>14}   best: {c['entry']}")
    for kind, c in run["ceilings"]["bandwidth"].items():
        lines.append(f"  {kind:<14}{si(c['value'], 'B/s'):>14}   {c['entry']}")
    head = ("operator", "shape", "prec", "impl", "median", "IQR", "FLOP/s", "B/s", "status")
    rows = []
    for e in run["results"]:
        row = [e["name"], shape_text(e["name"], e["shape"]), e["precision"], e["impl"]]
        if e["status"] == "ok":
            flops, bytes_ = runfile.rates(e)
            t = e["time"]
            row += [
                si(t["median_s"], "s"),
                f"{100 * t['iqr_s'] / t['median_s']:.0f}%",
                si(flops, "FLOP/s"),
                si(bytes_, "B/s"),
                "ok",
            ]
        else:
            row += ["", "", "", "", f"{e['status']}: {e['reason']}"]
        rows.append(row)
    lines.append(text_table(head, rows, right={4, 5, 6, 7}))
    return "\n".join(lines)
