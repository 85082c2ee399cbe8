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

from ..._base import validate as _validate
from ..._base.extras import require
from ..._base.validate import InvalidArgument
from ...dtypes import bytes_per_element
from ...ops import Cost, gemm
from ...roofline.roofs import gemm_tokens_to_ridge, time_lower_bound
from . import machine
from .timing import Timing, time_cpu

#: 最简单的估计中平坦部分最大的 batch（行数）。
FLAT_BATCH = 4

#: 默认扫描的各 batch，从一个 token 到远超 CPU 的 ridge point。
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)

#: 平坦部分最慢的时间不超过最快的这么多倍时，才算平坦。
FLAT_TOLERANCE = 1.3


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
    threads: int | None = None
    """扫描时 torch 的 intra-op 线程数。"""

    def predicted_seconds(self, peak_flops: float, bandwidth: float) -> list[float]:
        """在给定上限下每个 batch 两条 roof 的时间下界（秒）。"""
        return [time_lower_bound(p.cost, peak_flops, bandwidth).seconds for p in self.points]

    def predicted_crossing(self, peak_flops: float, bandwidth: float) -> float:
        """模型的计算时间超过其内存时间时的 batch。

        即 ridge point ``P / B`` 处的 :func:`roofline_book.roofline.roofs.gemm_tokens_to_ridge`。
        """
        ridge = _validate.positive("peak_flops", peak_flops) / _validate.positive(
            "bandwidth", bandwidth
        )
        return gemm_tokens_to_ridge(ridge, self.d, self.d, self.precision)

    def hinge(self) -> tuple[float, float, int]:
        """用 ``t(B) = max(t0, s B)`` 拟合各中位数：(``t0``, ``s``, 平坦部分的点数)。

        在把各 batch 分成平坦部分（前面的若干个，至少一个）与上升部分（其余的，至少一个）的每一种
        分法上，对 log 时间做最小二乘：``t0`` 是平坦部分时间的几何平均（秒），``s`` 是上升部分每行
        时间的几何平均（秒每行）。
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
        """用三种估计得到的实测交点，以行数（batch）计。

        ``"hinge"``：:meth:`hinge` 的 ``t0 / s``。``"first"``：batch 为 1 的时间除以最大两个 batch
        每行的时间。``"median"``：不超过 :data:`FLAT_BATCH` 的各 batch 的时间中位数除以同一个量。
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
        """实测的平坦部分与实测的上升部分的交点：(batch, low, high)。

        batch 取折线拟合（:meth:`hinge`）的结果。``low`` 与 ``high`` 覆盖 :meth:`estimates` 的每一种
        估计，每种还把每个时间分别取在其四分位区间的下端或上端：答案随读数据的方式移动多少。
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
        """折线拟合的平坦部分是否平坦：(是否平坦, 最慢与最快之比, 点数)。

        平坦指至少有两个点，且它们的中位数彼此相差不超过 :data:`FLAT_TOLERANCE` 倍。
        """
        points = sorted(self.points, key=lambda p: p.batch)
        _, _, k = self.hinge()
        times = [p.timing.median_s for p in points[:k]]
        spread = max(times) / min(times)
        return k >= 2 and spread <= FLAT_TOLERANCE, spread, k

    def figures(self, peak_flops: float, bandwidth: float) -> dict[str, float | int | bool]:
        """页面从扫描中引用的数字，都是普通的数。

        键：``d``、``weight_mb`` （权重，MB）、``margin`` （权重相对用来确定其大小的末级 cache 的倍
        数）、``predicted`` 与 ``measured`` 两个交点 batch、``low`` 与 ``high`` （实测估计在各种估计
        与四分位区间上的离散范围）、``ratio`` （实测比预测）、``within`` （预测落在离散范围内）、
        ``flat`` （平坦部分确实平坦）、``flat_spread`` （它最慢与最快时间之比）、``flat_points`` 与
        ``flat_batch`` （它有几个 batch，以及最大的一个）、``rise`` （最大 batch 的时间与平坦时间之
        比）、``flat_ms`` （拟合出的平坦时间）与 ``model_flat_ms`` （同一权重的模型内存时间）、
        ``flat_over_model``、``slope_over_model`` （拟合出的每行时间与模型每行计算时间之比）、
        ``first`` 与 ``median`` （另外两种估计）。
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


def _shifted(timing: Timing, side: float) -> Timing:
    """把 ``timing`` 的中位数移动半个四分位距，向上（``side = 1``）或向下。"""
    median = timing.median_s + side * timing.iqr_s / 2
    return Timing((max(median, timing.median_s / 2),) * 5, 1)


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
    threads: int | None = None,
) -> StreamingSweep:
    """在 CPU 上为每个 batch 计时 ``linear(x, W)``，``W`` 超出末级 cache。

    Parameters
    ----------
    batches : sequence of int
        ``x`` 的行数，递增；至少一个不超过 :data:`FLAT_BATCH`，两个超过它。
    precision : str
        ``x``、``W`` 与输出的精度。
    d : int, optional
        ``W`` 的边长；默认为按这台 CPU 的 cache 算出的 :func:`streaming_size`。
    min_run_time : float
        每个 batch 至少花的时间（秒），同 :func:`~roofline_book.measure.bench.timing.time_cpu`。
    threads : int, optional
        扫描时 torch 的 intra-op 线程数，扫描后恢复：传入给扫描设上限的那个 run file 的
        ``device.threads``，这样两者测的是同一组核。None：沿用当前设置。
    """
    torch = require("torch", "the weight-streaming sweep")

    batches = [_validate.size("batch", b) for b in batches]
    if batches != sorted(set(batches)):
        raise InvalidArgument("batches", f"must increase, got {list(batches)}")
    d = streaming_size(machine.cpu_cache_bytes(), precision) if d is None else d
    d = _validate.size("d", d)
    table = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if precision not in table:
        raise InvalidArgument("precision", f"must be one of {', '.join(table)}; got {precision!r}")
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
