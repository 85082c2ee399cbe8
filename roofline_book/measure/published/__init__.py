"""已发表的测量：别人在真实 GPU 上测得的数字，作为本书的实测一侧。

数据在 ``roofline_book/measure/data/published_measurements.toml``：每个 ``[[measurement]]`` 是一个
已发表的数字（或同一个数字沿一个配置字段的一组取值，``sweep``），带着它的出处（``source``、
``url``）和读数时的说明（``note``）。:func:`rows` 把它读成 :class:`Published`，
:meth:`Published.measurements` 把一组取值拆成一个个 :class:`Measurement`。

对有 roofline 位置的几种（:data:`POINT_KINDS`），:meth:`Measurement.point` 用本包自己的算子
模型从行的配置算出它在 roofline 上的点（:class:`RooflinePoint`）：算子的
算术强度 ``I = FLOPs / bytes`` （FLOP/byte）和实测的速率（FLOP/s 与
byte/s）。:meth:`Measurement.eta` 是它达到的 roof 比例 ``η``：

.. math:: \\eta = \\frac{\\max(F / P_{\\text{peak}},\\; Q / B_{\\text{peak}})}{T_{\\text{measured}}}
          = \\frac{P_{\\text{achieved}}}{\\min(P_{\\text{peak}},\\; B_{\\text{peak}} I)}

（``F`` 是 FLOPs，``Q`` 是字节数；对 FLOPs 为零的 STREAM copy，就是实测带宽除以 ``B_peak``）。
:func:`plot` 把这些点放在一块设备的 roofline 上。

Examples
--------
H100 SXM 上 cuBLAS 的 BF16 方阵 GEMM，n = 8192，发表的是 795 TFLOP/s。方阵 GEMM 的
``I = 2n^3 / (3 s n^2) = n / 3`` （s = 2 字节），即 8192 / 3 = 2730.7 FLOP/byte，远在 ridge point
右边，所以 roof 是 989.4 TFLOP/s 的峰值，``η = 795 / 989.4 = 0.80``：

>>> m = measurement("cublas-bf16-h100", n=8192)
>>> p = m.point()
>>> round(p.intensity, 1), p.flops_per_s / 1e12
(2730.7, 795.0)
>>> round(m.eta(), 3)
0.804
>>> m.source.startswith("pranjalssh/fast.cu")
True
"""

from .figure import label, plot, points
from .rows import (
    DATA,
    POINT_KINDS,
    STREAM_KERNELS,
    UNITS,
    Measurement,
    Published,
    RooflinePoint,
    data_text,
    measurement,
    row,
    rows,
)

__all__ = [
    "DATA",
    "POINT_KINDS",
    "STREAM_KERNELS",
    "UNITS",
    "Measurement",
    "Published",
    "RooflinePoint",
    "data_text",
    "label",
    "measurement",
    "plot",
    "points",
    "row",
    "rows",
]
