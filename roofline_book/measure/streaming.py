"""A weight-streaming GEMM sweep: decode's central claim, measured on this machine.

``y = x W^T`` (``torch.nn.functional.linear``, the layout of a model's
weights), ``x`` of ``batch x d`` and ``W`` of ``d x d``, far larger than the
last-level cache: at small batch every call streams ``W`` from memory and the time
hardly moves with the batch; past the ridge the arithmetic takes over and
the time grows with it. :func:`weight_streaming` times the sweep,
:class:`StreamingSweep` sets it against the roofline's prediction from the
machine's measured ceilings.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import _validate
from ..dtypes import bytes_per_element
from ..extras import require
from ..ops import Cost, gemm
from ..roofline import gemm_tokens_to_ridge, time_lower_bound
from . import machine
from .timing import Timing, time_cpu

#: The largest batch of the flat part in the simplest estimate (rows).
FLAT_BATCH = 4

#: Batches of the default sweep, from one token to well past a CPU's ridge.
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)

#: A flat part is flat when its slowest time is at most this many times its fastest.
FLAT_TOLERANCE = 1.3


@dataclass(frozen=True)
class StreamingPoint:
    """One batch of the sweep: the model's cost and the measured time."""

    batch: int
    cost: Cost
    timing: Timing


@dataclass(frozen=True)
class StreamingSweep:
    """The timed sweep of ``(batch x d) @ (d x d)`` in one precision."""

    d: int
    precision: str
    points: tuple[StreamingPoint, ...]
    threads: int | None = None
    """torch's intra-op threads during the sweep."""

    def predicted_seconds(self, peak_flops: float, bandwidth: float) -> list[float]:
        """The two-roof time lower bound of each batch with the given ceilings (second)."""
        return [time_lower_bound(p.cost, peak_flops, bandwidth).seconds for p in self.points]

    def predicted_crossing(self, peak_flops: float, bandwidth: float) -> float:
        """Batch at which the model's compute time overtakes its memory time.

        :func:`roofline_book.roofline.gemm_tokens_to_ridge` at the ridge ``P / B``.
        """
        ridge = _validate.positive("peak_flops", peak_flops) / _validate.positive(
            "bandwidth", bandwidth
        )
        return gemm_tokens_to_ridge(ridge, self.d, self.d, self.precision)

    def hinge(self) -> tuple[float, float, int]:
        """The fit of ``t(B) = max(t0, s B)`` to the medians: (``t0``, ``s``, flat points).

        Least squares in log time over every split of the batches into a flat
        part (the first ones, at least one) and a rising part (the rest, at
        least one): ``t0`` is the flat part's geometric mean time (second),
        ``s`` the rising part's geometric mean time per row (second per row).
        """
        points = sorted(self.points, key=lambda p: p.batch)
        if len(points) < 3:
            raise ValueError("the sweep needs at least three batches")
        logs = [math.log(p.timing.median_s) for p in points]
        per_row = [lt - math.log(p.batch) for lt, p in zip(logs, points, strict=True)]
        best: tuple[float, float, float, int] | None = None
        for k in range(1, len(points)):
            t0 = math.exp(statistics.fmean(logs[:k]))
            s = math.exp(statistics.fmean(per_row[k:]))
            fitted = (math.log(max(t0, s * p.batch)) for p in points)
            error = sum((lt - f) ** 2 for lt, f in zip(logs, fitted, strict=True))
            if best is None or error < best[0]:
                best = (error, t0, s, k)
        assert best is not None
        return best[1], best[2], best[3]

    def estimates(self) -> dict[str, float]:
        """The measured crossing by three estimators, in rows (batch).

        ``"hinge"``: :meth:`hinge`'s ``t0 / s``. ``"first"``: the batch-1 time
        over the per-row time of the two largest batches. ``"median"``: the
        median time of the batches up to :data:`FLAT_BATCH` over the same.
        """
        points = sorted(self.points, key=lambda p: p.batch)
        flat = [p.timing.median_s for p in points if p.batch <= FLAT_BATCH]
        tail = points[-2:]
        if not flat or len(points) < 3 or tail[0].batch <= FLAT_BATCH:
            raise ValueError(f"the sweep needs batches up to {FLAT_BATCH} and two larger ones")
        per_row = statistics.median(p.timing.median_s / p.batch for p in tail)
        t0, s, _ = self.hinge()
        return {
            "hinge": t0 / s,
            "first": points[0].timing.median_s / per_row,
            "median": statistics.median(flat) / per_row,
        }

    def measured_crossing(self) -> tuple[float, float, float]:
        """Where the measured flat part meets the measured rising part: (batch, low, high).

        The batch is the hinge fit's (:meth:`hinge`). ``low`` and ``high``
        span every estimator of :meth:`estimates`, each also with every time
        at the bottom or the top of its interquartile range: how far the
        answer moves with the way it is read from the data.
        """
        values = list(self.estimates().values())
        points = sorted(self.points, key=lambda p: p.batch)
        k = self.hinge()[2]
        for side in (-1.0, 1.0):
            # the flat part one way, the rising part the other: the widest the IQRs allow
            moved = tuple(
                StreamingPoint(p.batch, p.cost, _shifted(p.timing, side if i < k else -side))
                for i, p in enumerate(points)
            )
            values += list(StreamingSweep(self.d, self.precision, moved).estimates().values())
        return self.estimates()["hinge"], min(values), max(values)

    def flatness(self) -> tuple[bool, float, int]:
        """Whether the hinge fit's flat part is flat: (flat, slowest over fastest, points).

        Flat means at least two points whose medians are within
        :data:`FLAT_TOLERANCE` of each other.
        """
        points = sorted(self.points, key=lambda p: p.batch)
        _, _, k = self.hinge()
        times = [p.timing.median_s for p in points[:k]]
        spread = max(times) / min(times)
        return k >= 2 and spread <= FLAT_TOLERANCE, spread, k

    def figures(self, peak_flops: float, bandwidth: float) -> dict[str, float | int | bool]:
        """What a page quotes from the sweep, as plain numbers.

        Keys: ``d``, ``weight_mb`` (the weight, MB), ``margin`` (the weight
        over the last-level cache it was sized from), ``predicted`` and
        ``measured`` crossing batches, ``low`` and ``high`` (the spread of the
        measured estimate over estimators and IQRs), ``ratio`` (measured over
        predicted), ``within`` (the prediction lies inside the spread),
        ``flat`` (the flat part is flat), ``flat_spread`` (its slowest over
        its fastest time), ``flat_points`` and ``flat_batch`` (how many
        batches it has, and the largest), ``rise`` (the largest batch's time
        over the flat time), ``flat_ms`` (the fitted flat time) and
        ``model_flat_ms`` (the model's memory time for the same weight),
        ``flat_over_model``, ``slope_over_model`` (the fitted time per row
        over the model's compute time per row), ``first`` and ``median``
        (the other two estimators).
        """
        measured, low, high = self.measured_crossing()
        predicted = self.predicted_crossing(peak_flops, bandwidth)
        t0, s, _ = self.hinge()
        flat, spread, k = self.flatness()
        points = sorted(self.points, key=lambda p: p.batch)
        model_flat = points[0].cost.bytes / bandwidth
        model_slope = 2 * self.d * self.d / peak_flops
        others = self.estimates()
        return {
            "d": self.d,
            "margin": STREAM_MARGIN,
            "weight_mb": self.d * self.d * bytes_per_element(self.precision) / 1e6,
            "predicted": predicted,
            "measured": measured,
            "low": low,
            "high": high,
            "ratio": measured / predicted,
            "within": low <= predicted <= high,
            "flat": flat,
            "flat_spread": spread,
            "flat_points": k,
            "flat_batch": points[k - 1].batch,
            "rise": points[-1].timing.median_s / t0,
            "flat_ms": t0 * 1e3,
            "model_flat_ms": model_flat * 1e3,
            "flat_over_model": t0 / model_flat,
            "slope_over_model": s / model_slope,
            "first": others["first"],
            "median": others["median"],
        }

    def plot(self, ax, peak_flops: float, bandwidth: float, *, labels: tuple[str, str, str, str]):
        """Measured medians (with their IQR) and the model's bound against the batch, log-log.

        ``labels`` name the measured points, the model's bound, the predicted
        and the measured crossing (the page's language).
        """
        batches = [p.batch for p in self.points]
        medians = [p.timing.median_s * 1e3 for p in self.points]
        spread = [p.timing.iqr_s * 1e3 / 2 for p in self.points]
        drawn = [ax.errorbar(batches, medians, yerr=spread, marker="o", markersize=4,
                             linestyle="none", capsize=2, label=labels[0])]  # fmt: skip
        model = [t * 1e3 for t in self.predicted_seconds(peak_flops, bandwidth)]
        drawn += ax.plot(batches, model, linestyle="--", label=labels[1])
        measured = self.measured_crossing()[0]
        drawn.append(ax.axvline(self.predicted_crossing(peak_flops, bandwidth), linestyle=":",
                                color="#555555", label=labels[2]))  # fmt: skip
        drawn.append(ax.axvline(measured, linestyle="-.", color="#555555", label=labels[3]))
        ax.set(xscale="log", yscale="log", xlabel="batch B", ylabel="time per call [ms]")
        return drawn


def _shifted(timing: Timing, side: float) -> Timing:
    """``timing`` with its median moved by half its IQR, up (``side = 1``) or down."""
    median = timing.median_s + side * timing.iqr_s / 2
    return Timing((max(median, timing.median_s / 2),) * 5, 1)


#: The weight is at least this many times the last-level cache.
STREAM_MARGIN = 2


def streaming_size(cache_bytes: int | None, precision: str = "fp32") -> int:
    """Edge ``d`` of a square weight at least :data:`STREAM_MARGIN` times the cache.

    Rounded up to a multiple of 256; 4096 when the cache size is unknown.

    Examples
    --------
    >>> streaming_size(32 * 2**20)      # 2 x 32 MiB of FP32: d = 4096
    4096
    """
    if cache_bytes is None:
        return 4096
    cache_bytes = _validate.size("cache_bytes", cache_bytes)
    d = math.sqrt(STREAM_MARGIN * cache_bytes / bytes_per_element(precision))
    return 256 * math.ceil(d / 256)


def weight_streaming(
    batches: Sequence[int] = BATCHES,
    precision: str = "fp32",
    *,
    d: int | None = None,
    min_run_time: float = 0.05,
    threads: int | None = None,
) -> StreamingSweep:
    """Time ``linear(x, W)`` on the CPU for each batch, ``W`` beyond the last-level cache.

    Parameters
    ----------
    batches : sequence of int
        Rows of ``x``, increasing; at least one up to :data:`FLAT_BATCH` and two above it.
    precision : str
        Of ``x``, ``W`` and the output.
    d : int, optional
        Edge of ``W``; by default :func:`streaming_size` of this CPU's cache.
    min_run_time : float
        Least time spent on each batch (second), as in
        :func:`~roofline_book.measure.timing.time_cpu`.
    threads : int, optional
        torch's intra-op threads for the sweep, restored afterwards: pass the
        ``device.threads`` of the run file whose ceilings the sweep is held
        to, so both measure the same cores. None: whatever is set.
    """
    torch = require("torch", "the weight-streaming sweep")

    batches = [_validate.size("batch", b) for b in batches]
    if batches != sorted(set(batches)):
        raise ValueError(f"batches must increase, got {list(batches)}")
    d = streaming_size(machine.cpu_cache_bytes(), precision) if d is None else d
    d = _validate.size("d", d)
    table = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if precision not in table:
        raise ValueError(f"precision must be one of {', '.join(table)}; got {precision!r}")
    dtype = table[precision]
    # the values do not change a GEMM's time on the CPU (no denormals): fill, do not draw
    if threads is not None:
        threads = _validate.size("threads", threads)
    weight = torch.full((d, d), 0.5, dtype=dtype)
    linear = torch.nn.functional.linear
    points = []
    before = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        for b in batches:
            x = torch.full((b, d), 0.25, dtype=dtype)
            out = torch.empty(b, d, dtype=dtype)

            def call(x: Any = x, out: Any = out) -> Any:
                return linear(x, weight, out=out)

            timing = time_cpu(call, min_run_time=min_run_time)
            points.append(StreamingPoint(b, gemm(b, d, d, precision), timing))
    finally:
        torch.set_num_threads(before)
    return StreamingSweep(d, precision, tuple(points), threads or before)
