"""A ``torch.profiler`` result attributed to the package's models, op by op, against a roof.

The profiler says how long each operator took, how often it ran and with
which input shapes (``key_averages(group_by_input_shape=True)``); it counts
FLOPs only for matrix products and some elementwise operators, and bytes
never. :func:`attribute` groups the recorded calls the same way (name and
input shapes, and the dtypes beside them), gives each group the model of
:mod:`roofline_book.measure.atenops` summed over its calls, and holds it to
a :class:`Roof`: the measured ceilings of a run file or a catalog device.

Each row then has its calls, self time and share of the total, the model's
FLOPs and bytes, the intensity, the achieved FLOP/s and byte/s, the fraction
of the roof (the time lower bound over the measured time) and the resource
that binds. An operator with no model keeps its time and share and ``None``
for the rest. A composite operator (``aten::linear`` calling ``aten::mm``)
takes no model of its own: the kernels under it carry theirs, so nothing is
counted twice.

torch is imported inside the functions that need it.

Examples
--------
>>> from roofline_book import gemm, hardware
>>> roof = Roof.from_device(hardware("h100-sxm"))
>>> roof.name, roof.bound(gemm(4096, 4096, 4096), "bf16").resource
('h100-sxm', 'matrix')
"""

from __future__ import annotations

import math
import os
import runpy
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..hardware import Hardware
from ..ops import Cost
from ..roofline import TimeBound, time_bound
from ..tables import text_table
from ..units import si
from . import runfile
from .atenops import HELPERS, Call, model, precision_of
from .suites import CACHE_MARGIN

__all__ = [
    "Attribution",
    "OpRow",
    "Roof",
    "ScriptError",
    "attribute",
    "plot",
    "profile_script",
    "profiler",
]


@dataclass(frozen=True)
class Roof:
    """The ceilings operators are held to: a catalog device, or the measured ones of a run file.

    A catalog device holds each operator to every unit and memory level it
    uses (:func:`roofline_book.roofline.time_bound`). A run file measured a
    matrix-unit ceiling per precision (its best GEMM) and memory bandwidths,
    but no vector-unit or special-function ceiling: there an operator's
    matrix FLOPs are held to the GEMM peak of its precision and its bytes to
    a memory roof, and nothing else (for an elementwise operator the roof is
    the memory roof), which is still a bound no kernel beats.

    Which memory roof: in a program, an operator's inputs are often what the
    operator before it just wrote, so data that a cache can hold may be read
    from there. Where the run measured cache roofs (a CPU run), an operator
    whose working set (its bytes per kernel) is under
    :data:`~roofline_book.measure.suites.CACHE_MARGIN` times the last-level
    cache is held to the fastest measured cache roof (``"l2"``), one within
    a faster level without a roof (the L1) to no memory roof at all, and only
    one that streams to the DRAM roof (``"memory"``). Against the DRAM roof
    alone, the in-place AdamW steps of a small model's training step ran
    faster than the "bound" on a one-core run.
    """

    name: str
    device: Hardware | None = None
    matrix_peaks: Mapping[str, float] | None = None
    bandwidth: float | None = None
    threads: int | None = None
    """Threads the run file's ceilings were measured with (a CPU run), if recorded."""
    cache_roof: float | None = None
    """The fastest measured cache level's bandwidth, write-allocate bytes counted (byte/s)."""
    cache_level: str | None = None
    """That level's name (``"L2"``)."""
    streams_from: float | None = None
    """The working set from which an operator's data streams from DRAM (byte)."""
    unroofed: int | None = None
    """Size in bytes of the largest faster level without a measured roof; data within it
    is held to no memory roof."""

    @classmethod
    def from_device(cls, device: Hardware) -> Roof:
        return cls(device.key, device=device)

    @classmethod
    def from_run(cls, run: Mapping[str, Any]) -> Roof:
        peaks = {key: c["value"] for key, c in run["ceilings"]["peak_flops"].items()}
        bandwidth = runfile.memory_roof(run)
        if bandwidth is None:
            raise ValueError("run: the ceilings hold no measured bandwidth")
        name = f"{run['device']['name']} (measured {run['date']})"
        caches: dict[str, Any] = {}
        if run["ceilings"].get("cache_bandwidth") and "results" in run:
            from . import predict

            r = predict.roofs(run)
            level, _, rate = r.levels[0]
            caches = {
                "cache_roof": max(rate, bandwidth),
                "cache_level": level,
                "streams_from": CACHE_MARGIN * r.last_level if r.last_level else None,
                "unroofed": max(r.unprobed) if r.unprobed else None,
            }
        return cls(
            name,
            matrix_peaks=peaks,
            bandwidth=bandwidth,
            threads=run["device"].get("threads"),
            **caches,
        )

    def _memory(self, cost: Cost) -> tuple[str, float] | None:
        """The memory roof ``cost``'s bytes are held to: (resource, byte/s), or None."""
        assert self.bandwidth is not None
        working_set = cost.bytes / max(cost.kernels, 1)
        if self.cache_roof is None or (
            self.streams_from is not None and working_set >= self.streams_from
        ):
            return "memory", self.bandwidth
        if self.unroofed is not None and working_set <= self.unroofed:
            return None
        return "l2", self.cache_roof

    def bound(self, cost: Cost, precision: str) -> TimeBound | None:
        """The time lower bound of ``cost`` in ``precision`` under these ceilings (second);
        None where no measured ceiling holds it (no matrix FLOPs, data within the L1)."""
        if self.device is not None:
            return time_bound(cost, self.device, precision)
        assert self.matrix_peaks is not None
        times = {}
        memory = self._memory(cost)
        if memory is not None:
            times[memory[0]] = cost.bytes / memory[1]
        peak = self.matrix_peaks.get(precision)
        if cost.matrix_flops and peak:
            times["matrix"] = cost.matrix_flops / peak
        return TimeBound(times) if times else None

    def as_json(self) -> dict[str, Any]:
        if self.device is not None:
            return {"kind": "device", "name": self.name}
        return {
            "kind": "run",
            "name": self.name,
            "matrix_peaks": dict(self.matrix_peaks or {}),
            "bandwidth": self.bandwidth,
            "cache_roof": self.cache_roof,
            "cache_level": self.cache_level,
            "streams_from_bytes": self.streams_from,
            "threads": self.threads,
            "note": "no vector-unit or special-function ceiling measured: "
            "those FLOPs are not held to a roof",
        }


@dataclass(frozen=True)
class OpRow:
    """One operator with one set of input shapes: the profiler's figures and the model's.

    Times in seconds, FLOPs in FLOP, bytes in byte, rates per second; the
    model's figures are summed over ``calls`` and are None for an operator
    without a model (``cost is None``).
    """

    name: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    calls: int
    self_time_s: float
    share: float
    cost: Cost | None
    precision: str | None
    bound_time: TimeBound | None
    profiler_flops: int | None
    """What the profiler counted (``with_flops=True``), None where it counted none."""

    @property
    def flops(self) -> int | None:
        return None if self.cost is None else self.cost.flops

    @property
    def bytes(self) -> int | None:
        return None if self.cost is None else self.cost.bytes

    @property
    def intensity(self) -> float | None:
        return None if self.cost is None or not self.cost.bytes else self.cost.intensity

    def _per_second(self, amount: int | None) -> float | None:
        return None if amount is None or self.self_time_s <= 0 else amount / self.self_time_s

    @property
    def achieved_flops(self) -> float | None:
        """The model's FLOPs over the measured self time (FLOP/s)."""
        return self._per_second(self.flops)

    @property
    def achieved_bytes(self) -> float | None:
        """The model's bytes over the measured self time (byte/s)."""
        return self._per_second(self.bytes)

    @property
    def fraction_of_roof(self) -> float | None:
        """The time lower bound over the measured time, equal to the achieved rate over the roof."""
        if self.bound_time is None or self.self_time_s <= 0:
            return None
        return self.bound_time.seconds / self.self_time_s

    @property
    def bound(self) -> str | None:
        """The resource that sets the lower bound (``"matrix"``, ``"memory"``, ``"hbm"``, ...)."""
        return None if self.bound_time is None else self.bound_time.resource

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shapes": [list(s) for s in self.shapes],
            "dtypes": list(self.dtypes),
            "calls": self.calls,
            "self_time_s": self.self_time_s,
            "share": self.share,
            "flops": self.flops,
            "bytes": self.bytes,
            "intensity": self.intensity,
            "achieved_flops": self.achieved_flops,
            "achieved_bytes": self.achieved_bytes,
            "fraction_of_roof": self.fraction_of_roof,
            "bound": self.bound,
            "profiler_flops": self.profiler_flops,
        }


@dataclass(frozen=True)
class Attribution:
    """Every operator a profile recorded, as :class:`OpRow`, largest self time first."""

    rows: tuple[OpRow, ...]
    total_time_s: float
    roof: Roof | None
    clock: str
    """Whose time the rows hold, ``"cpu"`` or ``"device"`` (the kernels' time on the GPU)."""

    @property
    def explained(self) -> float:
        """The share of the total self time spent in operators that have a model."""
        return sum(r.share for r in self.rows if r.cost is not None)

    def modelled(self) -> list[OpRow]:
        return [r for r in self.rows if r.cost is not None]

    def total(self) -> Cost:
        """The modelled operators' costs summed."""
        return sum((r.cost for r in self.rows if r.cost is not None), Cost(0, 0, 0, 0))

    def as_json(self) -> dict[str, Any]:
        return {
            "ops": [r.as_json() for r in self.rows],
            "total_self_time_s": self.total_time_s,
            "explained_share": self.explained,
            "clock": self.clock,
            "roof": None if self.roof is None else self.roof.as_json(),
        }

    def table(self, limit: int | None = None) -> str:
        """The rows as an aligned text table (SI prefixes), at most ``limit`` of them."""
        body = []
        for r in self.rows[:limit]:
            shapes = ",".join("x".join(map(str, s)) or "-" for s in r.shapes)
            if r.cost is None:
                figures = ("-",) * 6
            else:
                figures = (
                    si(r.cost.flops, "FLOP"),
                    si(r.cost.bytes, "B"),
                    "-" if r.intensity is None else f"{r.intensity:.3g}",
                    si(r.achieved_flops or 0.0, "FLOP/s"),
                    "-" if r.fraction_of_roof is None else f"{r.fraction_of_roof:.0%}",
                    r.bound or "-",
                )
            body.append((r.name, shapes[:48], str(r.calls), si(r.self_time_s, "s"),
                         f"{r.share:.1%}", *figures))  # fmt: skip
        header = ("op", "shapes", "calls", "self", "share", "FLOPs", "bytes", "FLOP/B",
                  "achieved", "of roof", "bound")  # fmt: skip
        return text_table(header, body, right={2, 3, 4, 5, 6, 7, 8, 9})


def _shapes(event: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(int(d) for d in s) if isinstance(s, list) else () for s in event.input_shapes
    )


def _call(event: Any) -> Call:
    return Call(
        event.name,
        _shapes(event),
        tuple(str(d) for d in (getattr(event, "input_dtypes", None) or ())),
        tuple(getattr(event, "concrete_inputs", None) or ()),
    )


def _has_model(call: Call) -> bool:
    return model(call) is not None


def _events(prof: Any, region: str | None) -> list[Any]:
    """The operator events (CPU side) of the profile, only those under ``region`` if given."""
    from torch.autograd import DeviceType

    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    if region is None:
        return events
    inside = []
    for e in events:
        node = e
        while node is not None and node.name != region:
            node = node.cpu_parent
        if node is not None:
            inside.append(e)
    if not inside:
        names = sorted({e.name for e in events if not e.name.startswith("aten::")})[:8]
        raise ValueError(
            f"region {region!r} was not recorded; record_function ranges seen: "
            f"{', '.join(names) or 'none'}"
        )
    return inside


def _composite(event: Any, modelled: dict[int, bool]) -> bool:
    """Whether a modelled kernel runs under it: any, under a helper that fills or copies
    (``zero_`` is a ``fill_``); under another operator, one that is not such a helper."""
    helper = event.name in HELPERS
    stack = list(event.cpu_children)
    while stack:
        child = stack.pop()
        if modelled.get(id(child)) and (helper or child.name not in HELPERS):
            return True
        stack.extend(child.cpu_children)
    return False


def attribute(prof: Any, roof: Roof | None = None, *, region: str | None = None) -> Attribution:
    """Attribute a finished ``torch.profiler.profile`` (``record_shapes=True``) to the models.

    Parameters
    ----------
    prof : torch.profiler.profile
        Run with ``record_shapes=True`` (and ``with_flops=True`` for the
        profiler's own FLOPs beside the model's).
    roof : Roof, optional
        The ceilings each operator is held to; without one the rows carry
        the model's figures and no bound.
    region : str, optional
        Only the operators under ``torch.profiler.record_function(region)``
        ranges; the total is then the time inside them.

    Returns
    -------
    Attribution
        One row per (operator, input shapes, dtypes), largest self time first.
        The self times add up to the total (``total_time_s``): the time of
        the recorded region, every operator's own time once.
    """
    events = _events(prof, region)
    device_clock = any(getattr(e, "self_device_time_total", 0) > 0 for e in events)
    clock = "device" if device_clock else "cpu"
    calls = {id(e): _call(e) for e in events}
    modelled = {id(e): _has_model(calls[id(e)]) for e in events}
    groups: dict[Call, dict[str, Any]] = {}
    for e in events:
        call = calls[id(e)]
        key = Call(call.name, call.shapes, call.dtypes)
        group = groups.setdefault(key, {"calls": 0, "us": 0.0, "flops": 0, "cost": None})
        group["calls"] += 1
        group["us"] += e.self_device_time_total if device_clock else e.self_cpu_time_total
        group["flops"] += int(getattr(e, "flops", 0) or 0)
        if modelled[id(e)] and not _composite(e, modelled):
            cost = model(call)
            group["cost"] = cost if group["cost"] is None else group["cost"] + cost
    total_s = sum(g["us"] for g in groups.values()) * 1e-6
    rows = []
    for key, g in groups.items():
        seconds = g["us"] * 1e-6
        cost = g["cost"]
        precision = next((p for p in map(precision_of, key.dtypes) if p), None)
        held = cost is not None and precision is not None and roof is not None
        bound = roof.bound(cost, precision) if held else None  # type: ignore[union-attr,arg-type]
        rows.append(
            OpRow(
                key.name, key.shapes, key.dtypes, g["calls"], seconds,
                seconds / total_s if total_s > 0 else 0.0, cost, precision, bound,
                g["flops"] or None,
            )
        )  # fmt: skip
    rows.sort(key=lambda r: (-r.self_time_s, r.name, r.shapes))
    return Attribution(tuple(rows), total_s, roof, clock)


def plot(ax, attribution: Attribution, *, labelled: int = 6, unit: str = "GFLOP/s"):
    """The modelled operators as dots under the roof, at (intensity, achieved FLOP/s).

    The roof is the attribution's: a catalog device's every ceiling, or a run
    file's matrix ceiling (in the precision most of the time ran in) over its
    memory roof. Dots are coloured by the resource that binds them; the
    ``labelled`` operators with the most self time are named beside theirs.

    Returns
    -------
    list of matplotlib artists
    """
    from ..plotting import PALETTE, RESOURCE_COLORS, UNITS, ceilings, roofline, text

    rows = [r for r in attribution.modelled() if r.intensity and r.achieved_flops]
    if not rows:
        raise ValueError("attribution: no modelled operator with FLOPs to place")
    by_time: dict[str, float] = {}
    for r in rows:
        by_time[r.precision or "fp32"] = by_time.get(r.precision or "fp32", 0.0) + r.self_time_s
    precision = max(by_time, key=by_time.__getitem__)
    xs = [r.intensity for r in rows if r.intensity]
    span = (10 ** math.floor(math.log10(min(xs)) - 1), 10 ** math.ceil(math.log10(max(xs)) + 1))
    roof, drawn = attribution.roof, []
    if roof is not None and roof.device is not None:
        drawn += ceilings(ax, roof.device, precision, intensity_range=span, unit=unit)
    elif roof is not None and roof.matrix_peaks and precision in roof.matrix_peaks:
        assert roof.bandwidth is not None
        drawn += roofline(ax, roof.matrix_peaks[precision], roof.bandwidth, intensity_range=span,
                          label=text("measured roof", precision=precision), unit=unit)  # fmt: skip
        if roof.cache_roof is not None:  # what data a cache may hold is held to
            drawn += roofline(ax, roof.matrix_peaks[precision], roof.cache_roof,
                              intensity_range=span, unit=unit, linestyle=":", ridge=False,
                              color=RESOURCE_COLORS["l2"],
                              label=text("cache roof", level=roof.cache_level))  # fmt: skip
    scale = UNITS[unit]
    groups: dict[str, list[OpRow]] = {}
    for r in rows:
        groups.setdefault(r.bound or "", []).append(r)
    for bound, members in groups.items():  # one scatter per colour: hundreds of rows stay quick
        color = RESOURCE_COLORS.get(bound, PALETTE["vermillion"])
        xs = [r.intensity or 0.0 for r in members]
        ys = [(r.achieved_flops or 0.0) / scale for r in members]
        label = text(bound) if bound in ("matrix", "hbm") else None
        drawn.append(ax.scatter(xs, ys, color=color, s=22, zorder=5, edgecolor="white",
                                linewidth=0.4, label=label))  # fmt: skip
    for r in rows[:labelled]:
        xy = (r.intensity, (r.achieved_flops or 0.0) / scale)
        name = r.name.removeprefix("aten::")
        drawn.append(ax.annotate(name, xy, xytext=(4, 4), textcoords="offset points",
                                 fontsize=7, color="#222222"))  # fmt: skip
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("achieved axis", unit=unit))
    return drawn


def profiler(*, cuda: bool | None = None) -> Any:
    """A ``torch.profiler.profile`` that records what :func:`attribute` reads.

    CPU activity, and CUDA too when CUDA is available (``cuda=None``); input
    shapes (``record_shapes=True``) and the profiler's FLOPs
    (``with_flops=True``). Kineto writes a notice to stderr whenever a
    profile starts and stops; ``KINETO_LOG_LEVEL=6`` (set here unless it is
    set already) silences kineto's log, errors in Python still raise.
    """
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    import torch
    from torch.profiler import ProfilerActivity, profile

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    return profile(activities=activities, record_shapes=True, with_flops=True)


class ScriptError(RuntimeError):
    """The profiled script could not be run, raised, or ran no torch operator."""


def profile_script(path: str, argv: Sequence[str] = (), *, cuda: bool | None = None) -> Any:
    """Run the Python script at ``path`` under ``torch.profiler`` and return the profile.

    The script runs as ``__main__`` (``runpy.run_path``) with
    ``sys.argv = [path, *argv]``; the profiler records CPU activity, and CUDA
    activity too when CUDA is available (``cuda=None``), with input shapes
    and FLOPs. Kineto's own start and stop notices, which it writes to
    stderr, are silenced through ``KINETO_LOG_LEVEL`` unless that is set.

    Raises
    ------
    ScriptError
        If the file does not exist, the script raises (or exits with a
        status other than 0), or it runs no torch operator.
    """
    if not os.path.isfile(path):
        raise ScriptError(f"script {path!r} does not exist or is not a file")
    import torch

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    saved = sys.argv[:]
    sys.argv = [path, *argv]
    try:
        with profiler(cuda=use_cuda) as prof:
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise ScriptError(f"script {path!r} exited with status {exc.code}") from None
            except Exception as exc:  # the user's script: any error it raises is reported
                where = _last_frame(exc, path)
                raise ScriptError(
                    f"script {path!r} raised {type(exc).__name__}: {exc}{where}"
                ) from None
            if use_cuda:
                torch.cuda.synchronize()
    finally:
        sys.argv = saved
    if not any(e.name.startswith("aten::") for e in prof.events()):
        raise ScriptError(f"script {path!r} ran no torch operator: nothing to attribute")
    return prof


def _last_frame(exc: BaseException, path: str) -> str:
    """`` (line N)`` of the deepest frame of the traceback in the script, or nothing."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else f" (line {line})"
