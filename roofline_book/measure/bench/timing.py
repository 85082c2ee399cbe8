"""在 CPU 或 CUDA 上为一次调用计时：得到一个保留全部样本的 :class:`Timing`。

预热、同步、重复到计时器自身的开销可以忽略，报告中位数和四分位距，做法同
``torch.utils.benchmark`` 与 ``triton.testing.do_bench``。样本保留在结果中，读者可以问中位数
是否可信（:meth:`Timing.meets_confidence`，仿照
``torch.utils.benchmark.Measurement.meets_confidence``）。
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..._base import validate as _validate
from ..._base.validate import InvalidArgument, InvalidArgumentType

MIN_SAMPLES = 5
"""CPU 上一个中位数至少依据的样本数。"""

CPU_IQR_TARGET = 0.1
"""在 CPU 上，只要 IQR 超过中位数的这个比例，就继续采样……"""

CPU_MAX_RUN_FACTOR = 4
"""……最多采到最短计时时长的这么多倍。"""

CUDA_MIN_REPS = 10
"""CUDA 上一个中位数至少依据的样本数。"""

CUDA_MAX_REPS = 2000
"""CUDA 上每个 case 最多的样本数。"""

CUDA_SAMPLE_S = 1e-3
"""在 CUDA 上，不需要冲刷 cache 的调用被成批执行，直到一个样本持续这么长时间（秒），使 event
自身的开销可以忽略。
"""

IQR_WARN_THRESHOLD = 0.1
"""IQR 至少为中位数这个比例的计时不满足置信要求（``torch.utils.benchmark`` 发出警告的阈值）。"""

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
            raise InvalidArgument("samples_s", "must hold at least one sample")
        if any(not math.isfinite(s) or s < 0 for s in self.samples_s):
            raise InvalidArgument("samples_s", f"must be finite and >= 0; got {self.samples_s}")
        _validate.size("inner", self.inner)

    @property
    def median_s(self) -> float:
        """样本的中位数（秒）。"""
        import numpy as np  # here, not at the top: the command line's models run without NumPy

        return float(np.median(self.samples_s))

    @property
    def iqr_s(self) -> float:
        """样本的四分位距（秒）。"""
        import numpy as np

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


def _samples(times: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(t) for t in times)


def _warm_up(fn: Callable[[], object], sync: Callable[[], None]) -> float:
    """反复调用 ``fn`` 直到预热完成；返回见到的最快单次调用时间（秒）。"""
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
"""在 CPU 上，调用被成批执行，直到一个样本持续约这么长时间（秒），
使计时器自身的开销相对它可以忽略。
"""


def time_cpu(
    fn: Callable[[], object],
    *,
    min_run_time: float = 0.2,
    min_samples: int = MIN_SAMPLES,
    settle: bool = True,
) -> Timing:
    """在 CPU 上按调用块为 ``fn`` 计时，方式同 ``torch.utils.benchmark.Timer.adaptive_autorange``。

    预热之后，调用被成批执行，直到一个块持续约 :data:`CPU_BLOCK_S` （一个样本是块的时间除以其中的
    调用次数），并像 ``timeit`` 那样暂停垃圾回收。采样至少持续 ``min_run_time`` 秒、至少
    :data:`MIN_SAMPLES` 个样本；只要样本的 IQR 超过其中位数的 :data:`CPU_IQR_TARGET`，就继续采样，
    最长到 :data:`CPU_MAX_RUN_FACTOR` 倍的时长，这样别的进程突发的工作对中位数的影响更小。torch 的
    线程数沿用调用方的设置（:func:`roofline_book.measure.run.run_suite` 设为一个）。

    上限探针分几轮计时、保留最好的一轮，它传入 ``min_samples=3, settle=False``：吸收噪声的是这几轮，
    而不是更长的一轮。

    Examples
    --------
    >>> t = time_cpu(lambda: time.sleep(0.001), min_run_time=0.02)
    >>> 0.001 <= t.median_s < 0.01, t.reps >= MIN_SAMPLES
    (True, True)
    """
    if not callable(fn):
        raise InvalidArgumentType("fn", f"must be callable, got {type(fn).__name__}")
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
    """用 CUDA event 在当前 CUDA 设备上为 ``fn`` 计时。

    Parameters
    ----------
    fn : callable
        发起工作；内部不做同步。
    min_run_time : float
        计时的总时长下限（秒）；样本数在 :data:`CUDA_MIN_REPS` 与 :data:`CUDA_MAX_REPS` 之间。
    flush : torch.Tensor, optional
        一个比 L2 大的缓冲区，每次调用前在计时区间之外清零。不给时，调用被成批执行，直到一个样本持续
        :data:`CUDA_SAMPLE_S`。
    """
    import torch

    if not callable(fn):
        raise InvalidArgumentType("fn", f"must be callable, got {type(fn).__name__}")
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
