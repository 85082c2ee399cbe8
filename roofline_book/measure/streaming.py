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

#: The flat part of a sweep: batches up to this many rows (each call streams the weight).
FLAT_BATCH = 4

#: Batches of the default sweep, from one token to well past a CPU's ridge.
BATCHES = (1, 2, 4, 16, 64, 128)


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

    def measured_crossing(self) -> tuple[float, float, float]:
        """Where the measured flat part meets the measured rising part: (batch, low, high).

        The flat part is the median time of the batches up to :data:`FLAT_BATCH` (each call
        streams the weight); the rising part is the time per token of the two
        largest batches. Their ratio is the batch at which the two lines meet.
        ``low`` and ``high`` take each time at the bottom or top of its
        interquartile range, the spread of the estimate.
        """
        flat = [p.timing for p in self.points if p.batch <= FLAT_BATCH]
        tail = sorted(self.points, key=lambda p: p.batch)[-2:]
        if not flat or len(tail) < 2 or tail[0].batch <= FLAT_BATCH:
            raise ValueError(f"the sweep needs batches up to {FLAT_BATCH} and two larger ones")

        def estimate(side: float) -> float:
            t0 = statistics.median(t.median_s + side * t.iqr_s / 2 for t in flat)
            per_token = statistics.median(
                (p.timing.median_s - side * p.timing.iqr_s / 2) / p.batch for p in tail
            )
            return t0 / per_token

        return estimate(0.0), estimate(-1.0), estimate(1.0)

    def figures(self, peak_flops: float, bandwidth: float) -> dict[str, float | int | bool]:
        """What a page quotes from the sweep, as plain numbers.

        Keys: ``d``, ``weight_mb`` (the weight, MB), ``margin`` (the weight
        over the last-level cache it was sized from), ``flat_batch``, ``predicted`` and
        ``measured`` crossing batches, ``low`` and ``high`` (the measured
        estimate's spread), ``ratio`` (measured over predicted), ``within``
        (the prediction lies inside the spread), ``flat_ms`` (the measured
        time while streaming) and ``model_flat_ms`` (the model's memory time
        for the same weight), ``flat_over_model``.
        """
        measured, low, high = self.measured_crossing()
        predicted = self.predicted_crossing(peak_flops, bandwidth)
        flat = statistics.median(p.timing.median_s for p in self.points if p.batch <= FLAT_BATCH)
        model_flat = self.points[0].cost.bytes / bandwidth
        return {
            "d": self.d,
            "margin": STREAM_MARGIN,
            "flat_batch": FLAT_BATCH,
            "weight_mb": self.d * self.d * bytes_per_element(self.precision) / 1e6,
            "predicted": predicted,
            "measured": measured,
            "low": low,
            "high": high,
            "ratio": measured / predicted,
            "within": low <= predicted <= high,
            "flat_ms": flat * 1e3,
            "model_flat_ms": model_flat * 1e3,
            "flat_over_model": flat / model_flat,
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
        ax.set(xscale="log", yscale="log", xlabel="batch B", ylabel="每次调用的时间 [ms]")
        return drawn


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
) -> StreamingSweep:
    """Time ``linear(x, W)`` on the CPU for each batch, ``W`` beyond the last-level cache.

    Parameters
    ----------
    batches : sequence of int
        Rows of ``x``, increasing; at least one up to 4 and two above it.
    precision : str
        Of ``x``, ``W`` and the output.
    d : int, optional
        Edge of ``W``; by default :func:`streaming_size` of this CPU's cache.
    min_run_time : float
        Least time spent on each batch (second), as in
        :func:`~roofline_book.measure.timing.time_cpu`.
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
    weight = torch.full((d, d), 0.5, dtype=dtype)
    linear = torch.nn.functional.linear
    points = []
    for b in batches:
        x = torch.full((b, d), 0.25, dtype=dtype)
        out = torch.empty(b, d, dtype=dtype)

        def call(x: Any = x, out: Any = out) -> Any:
            return linear(x, weight, out=out)

        timing = time_cpu(call, min_run_time=min_run_time)
        points.append(StreamingPoint(b, gemm(b, d, d, precision), timing))
    return StreamingSweep(d, precision, tuple(points))
