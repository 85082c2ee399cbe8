"""Timing a call on the CPU or on CUDA: a :class:`Timing` that keeps its samples.

Warm up, synchronize, repeat until the timer's overhead is negligible, and
report the median with the interquartile range, as ``torch.utils.benchmark``
and ``triton.testing.do_bench`` do. The samples stay in the result, so a
reader can ask whether the median is to be trusted
(:meth:`Timing.meets_confidence`, after
``torch.utils.benchmark.Measurement.meets_confidence``).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import _validate

MIN_SAMPLES = 5
"""Fewest timed samples behind a median on the CPU."""

CPU_IQR_TARGET = 0.1
"""On the CPU, sampling goes on while the IQR exceeds this fraction of the median ..."""

CPU_MAX_RUN_FACTOR = 4
"""... up to this many times the least timed duration."""

CUDA_MIN_REPS = 10
"""Fewest timed samples behind a median on CUDA."""

CUDA_MAX_REPS = 2000
"""Most timed samples per case on CUDA."""

CUDA_SAMPLE_S = 1e-3
"""On CUDA, calls that need no cache flush are batched until a sample lasts
this long (second), so the events' own cost is negligible."""

IQR_WARN_THRESHOLD = 0.1
"""A timing whose IQR is at least this fraction of its median does not meet
confidence (the threshold ``torch.utils.benchmark`` warns at)."""

_WARMUP_S = 0.02  # warm-up calls continue until this long has passed (at least one call)
_WARMUP_CALLS = 10  # ... or this many calls


@dataclass(frozen=True)
class Timing:
    """一次计时得到的单次调用时间（秒），连同背后的样本。

    Attributes
    ----------
    samples_s : tuple of float
        每个样本的单次调用时间（样本的总时间除以其中的调用次数）。
    inner : int
        每个样本包含的调用次数。

    Examples
    --------
    >>> t = Timing((1e-3, 1.1e-3, 1.2e-3, 0.9e-3, 1e-3), inner=4)
    >>> round(t.median_s, 6), round(t.iqr_s, 6), t.reps
    (0.001, 0.0001, 5)
    >>> t.meets_confidence(0.2), t.meets_confidence(0.05)
    (True, False)
    """

    samples_s: tuple[float, ...]
    inner: int

    def __post_init__(self) -> None:
        if not self.samples_s:
            raise ValueError("samples_s must hold at least one sample")
        if any(not math.isfinite(s) or s < 0 for s in self.samples_s):
            raise ValueError(f"samples_s must be finite and >= 0; got {self.samples_s}")
        _validate.size("inner", self.inner)

    @property
    def median_s(self) -> float:
        """样本的中位数（秒）。"""
        return float(np.median(self.samples_s))

    @property
    def iqr_s(self) -> float:
        """样本的四分位距（秒）。"""
        q1, q3 = np.percentile(self.samples_s, [25, 75])
        return float(q3 - q1)

    @property
    def reps(self) -> int:
        """样本个数。"""
        return len(self.samples_s)

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        """离散程度相对中位数是否足够小：``iqr / median < threshold``。"""
        threshold = _validate.positive("threshold", threshold)
        return self.median_s > 0 and self.iqr_s / self.median_s < threshold

    def as_dict(self) -> dict[str, float | int | list[float]]:
        """run file 中的 ``time`` 记录。"""
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "reps": self.reps,
            "inner": self.inner,
            "samples_s": list(self.samples_s),
        }


def _samples(times: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(t) for t in times)


def _warm_up(fn: Callable[[], object], sync: Callable[[], None]) -> float:
    """Call ``fn`` until warm; return the fastest single call seen (second)."""
    fastest, start = math.inf, time.perf_counter()
    for _ in range(_WARMUP_CALLS):
        t0 = time.perf_counter()
        fn()
        sync()
        fastest = min(fastest, time.perf_counter() - t0)
        if time.perf_counter() - start >= _WARMUP_S:
            break
    return fastest


CPU_BLOCK_S = 0.005
"""On the CPU, calls are batched until a sample lasts about this long (second), so
the timer's own cost is negligible against it."""


def time_cpu(
    fn: Callable[[], object],
    *,
    min_run_time: float = 0.2,
    min_samples: int = MIN_SAMPLES,
    settle: bool = True,
) -> Timing:
    """Time ``fn`` on the CPU in blocks of calls, in the manner of
    ``torch.utils.benchmark.Timer.adaptive_autorange``.

    After a warm-up, calls are batched until a block lasts about
    :data:`CPU_BLOCK_S` (a sample is a block's time over its calls), with the
    garbage collector paused as ``timeit`` does. Sampling runs for at least
    ``min_run_time`` seconds and :data:`MIN_SAMPLES` samples; while the
    samples' IQR exceeds :data:`CPU_IQR_TARGET` of their median it goes on, up
    to :data:`CPU_MAX_RUN_FACTOR` times as long, so that a burst of work from
    another process moves the median less. torch's threads are whatever the
    caller set (:func:`roofline_book.measure.run.run_suite` sets one).

    A ceiling probe, timed in several rounds of which the best is kept, passes
    ``min_samples=3, settle=False``: its rounds, not a longer round, absorb the
    noise.

    Examples
    --------
    >>> t = time_cpu(lambda: time.sleep(0.001), min_run_time=0.02)
    >>> 0.001 <= t.median_s < 0.01, t.reps >= MIN_SAMPLES
    (True, True)
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    min_run_time = _validate.positive("min_run_time", min_run_time)
    once = max(_warm_up(fn, lambda: None), 1e-9)
    inner = max(1, math.floor(CPU_BLOCK_S / once))
    min_samples = _validate.size("min_samples", min_samples)
    least = max(min_run_time, min_samples * once * inner)
    samples: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples.append((time.perf_counter() - t0) / inner)
            spent = time.perf_counter() - start
            if len(samples) < min_samples or spent < least:
                continue
            timing = Timing(_samples(samples), inner)
            if not settle or spent >= CPU_MAX_RUN_FACTOR * least:
                return timing
            if timing.meets_confidence(CPU_IQR_TARGET):
                return timing
    finally:
        if enabled:
            gc.enable()


def time_cuda(fn: Callable[[], object], *, min_run_time: float = 0.2, flush=None) -> Timing:
    """Time ``fn`` on the current CUDA device with CUDA events.

    Parameters
    ----------
    fn : callable
        Launches the work; it is not synchronized inside.
    min_run_time : float
        Timed seconds, at least (second); between :data:`CUDA_MIN_REPS` and
        :data:`CUDA_MAX_REPS` samples.
    flush : torch.Tensor, optional
        A buffer larger than the L2, zeroed before every call outside the
        timed region. Without it, calls are batched until a sample lasts
        :data:`CUDA_SAMPLE_S`.
    """
    import torch

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    min_run_time = _validate.positive("min_run_time", min_run_time)
    _warm_up(fn, torch.cuda.synchronize)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(3):
        fn()
    end.record()
    torch.cuda.synchronize()
    once = max(begin.elapsed_time(end) * 1e-3 / 3, 1e-7)
    inner = 1 if flush is not None else max(1, math.ceil(CUDA_SAMPLE_S / once))
    reps = min(CUDA_MAX_REPS, max(CUDA_MIN_REPS, math.ceil(min_run_time / (once * inner))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, stop in zip(starts, ends, strict=True):
        if flush is not None:
            flush.zero_()
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e-3 / inner for s, e in zip(starts, ends, strict=True)]
    return Timing(_samples(times), inner)
