"""流式读取权重的 GEMM 扫描：在这台机器上测量 decode 的核心结论。

``y = x W^T`` （``torch.nn.functional.linear``，即模型权重的布局），``x`` 为 ``batch x d``，``W``
为 ``d x d``，远大于末级 cache：batch 小时每次调用都从内存流式读取 ``W``，时间几乎不随 batch
变化；越过 ridge point 之后运算占了上风，时间随之增长。:func:`weight_streaming` 为这次扫描计时，
:class:`StreamingSweep` 把它与由机器实测上限得出的 roofline 预测对照。
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

#: 扫描的平坦部分：行数不超过这个数的 batch（每次调用都流式读取权重）。
FLAT_BATCH = 4

#: 默认扫描的各 batch，从一个 token 到远超 CPU 的 ridge point。
BATCHES = (1, 2, 4, 16, 64, 128)


@dataclass(frozen=True)
class StreamingPoint:
    """扫描中的一个 batch：模型代价与实测时间。"""

    batch: int
    cost: Cost
    timing: Timing


@dataclass(frozen=True)
class StreamingSweep:
    """一种精度下 ``(batch x d) @ (d x d)`` 的计时扫描。"""

    d: int
    precision: str
    points: tuple[StreamingPoint, ...]

    def predicted_seconds(self, peak_flops: float, bandwidth: float) -> list[float]:
        """在给定上限下每个 batch 两条 roof 的时间下界（秒）。"""
        return [time_lower_bound(p.cost, peak_flops, bandwidth).seconds for p in self.points]

    def predicted_crossing(self, peak_flops: float, bandwidth: float) -> float:
        """模型的计算时间超过其内存时间时的 batch。

        即 ridge point ``P / B`` 处的 :func:`roofline_book.roofline.gemm_tokens_to_ridge`。
        """
        ridge = _validate.positive("peak_flops", peak_flops) / _validate.positive(
            "bandwidth", bandwidth
        )
        return gemm_tokens_to_ridge(ridge, self.d, self.d, self.precision)

    def measured_crossing(self) -> tuple[float, float, float]:
        """实测的平坦部分与实测的上升部分的交点：(batch, low, high)。

        平坦部分是不超过 :data:`FLAT_BATCH` 的各 batch 的时间中位数（每次调用都流式读取权重）；
        上升部分是最大两个 batch 每个 token 的时间。两者之比就是两条线相交处的 batch。``low`` 与
        ``high`` 把每个时间取在其四分位区间的下端或上端，即这个估计的离散范围。
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
        """页面从扫描中引用的数字，都是普通的数。

        键：``d``、``weight_mb`` （权重，MB）、``margin`` （权重相对用来确定其大小的末级 cache 的
        倍数）、``flat_batch``、``predicted`` 与 ``measured`` 两个交点 batch、``low`` 与 ``high``
        （实测估计的离散范围）、``ratio`` （实测比预测）、``within`` （预测落在离散范围内）、
        ``flat_ms`` （流式读取时的实测时间）与 ``model_flat_ms`` （同一权重的模型内存时间）、
        ``flat_over_model``。
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
        """实测中位数（带 IQR）与模型下界随 batch 的变化，log-log。

        ``labels`` 依次命名实测点、模型下界、预测的交点和实测的交点（用页面的语言）。
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


#: 权重至少为末级 cache 的这么多倍。
STREAM_MARGIN = 2


def streaming_size(cache_bytes: int | None, precision: str = "fp32") -> int:
    """方形权重的边长 ``d``，使权重至少为 cache 的 :data:`STREAM_MARGIN` 倍。

    向上取整到 256 的倍数；cache 大小未知时为 4096。

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
    """在 CPU 上为每个 batch 计时 ``linear(x, W)``，``W`` 超出末级 cache。

    Parameters
    ----------
    batches : sequence of int
        ``x`` 的行数，递增；至少一个不超过 4，两个超过 4。
    precision : str
        ``x``、``W`` 与输出的精度。
    d : int, optional
        ``W`` 的边长；默认为按这台 CPU 的 cache 算出的 :func:`streaming_size`。
    min_run_time : float
        每个 batch 至少花的时间（秒），同 :func:`~roofline_book.measure.timing.time_cpu`。
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
