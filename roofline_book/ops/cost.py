"""每个算子模型的结果：:class:`Cost`，按单元分的 FLOPs 与按存储层级分的字节数。"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .._base import records
from .._base import validate as _validate
from .._base.validate import InvalidArgument

UNITS = ("matrix", "vector", "special")
"""算子的 FLOPs 可以在哪些计算单元上运行：Tensor Core / Matrix Core（``"matrix"``），
普通的 FP32/FP64 lane（``"vector"``，即 CUDA core），以及计算 exp、tanh、rsqrt 等的特殊
函数单元（``"special"``）。
"""


_COUNT_FIELDS = (
    "flops",
    "bytes_read",
    "bytes_written",
    "kernels",
    "vector_flops",
    "special_flops",
    "reread_bytes",
    "reread_footprint",
    "vector_fma_flops",
    "fp32_vector_slots",
)


@dataclass(frozen=True)
class Cost:
    """一个或多个 kernel 的 FLOPs 与搬运的字节数，以及它们需要哪些单元和层级。

    代价可以相加，所以三个分开的 kernel 的代价可以与一个融合 kernel 的代价并列比较。

    Parameters
    ----------
    flops : int
        浮点运算次数（FLOP），所有单元合计。
    bytes_read : int
        每个 kernel 必须从主存读取的字节数（byte）：它的输入，各一次。这是必需流量，
        即 cache 为冷时 HBM 处的下界。
    bytes_written : int
        每个 kernel 必须写入主存的字节数（byte）：它的输出，各一次。
    kernels : int
        这些工作需要 launch 几次 kernel。
    vector_flops : int
        ``flops`` 中在向量单元上运行的部分（elementwise 运算、归约、softmax 的 max 与 sum）。
    vector_fma_flops : int
        ``vector_flops`` 中能配成 fused multiply-add 的部分，每个 FMA 计 2 FLOP（所以是偶数）。
        厂商的向量峰值把一个 FMA 算作一个 lane slot 里的 2 FLOP；其余向量 FLOP（加、乘、max、比较）
        各占一个 lane slot，所以向量时间按 :attr:`vector_slots` 计。公式是先乘后加的每一对都要标上：
        编译器会把它合成一个 FMA，不标的话这一对会算成两个 slot，而 kernel 只花一个，
        下界就可能高过真实的 kernel。其他运算配不成对。
    special_flops : int
        ``flops`` 中在特殊函数单元上运行的部分，每次求值计 1（exp、tanh、erf、rsqrt、sqrt，
        以及 IEEE 除法编译成的倒数）。其余的 ``flops - vector_flops - special_flops``
        在矩阵单元上运行（:attr:`matrix_flops`）；不给这两项构造的 Cost 全是矩阵单元的工作，
        也就是最快的单元，所以由它得出的下界只会偏低。
    reread_bytes : int
        必需读取之外的读取（byte）：kernel 再次取来的数据，可能由 cache 供给
        （FlashAttention 的 K 和 V，每个 query 块一次）。
    reread_footprint : int
        要让这些重读命中 cache，cache 必须装下的字节数（byte）；装得进设备的 L2 时，
        roofline 把重读算在 L2 上，否则算在 HBM 上。
    fp32_vector_slots : int
        :attr:`vector_slots` 中无论数据是什么精度都按 FP32 运行的 lane slot 数：它们按 FP32 的
        lane 速率计时（FlashAttention 在 FP32 累加器里做 softmax，输入是 BF16 也一样）。其余 slot
        按算子数据的精度计时。

    Examples
    --------
    >>> c = Cost(flops=10, bytes_read=40, bytes_written=20)
    >>> c.bytes, c.intensity, c.matrix_flops
    (60, 0.16666666666666666, 10)
    >>> (c + c).kernels
    2
    >>> sum([c, c, c]) == 3 * c
    True
    >>> Cost(6, 12, 6, vector_flops=4, special_flops=1).flops_by_unit
    {'matrix': 1, 'vector': 4, 'special': 1}

    两个 multiply-add 加一个 add：5 个向量 FLOP 占 3 个 lane slot。

    >>> Cost(5, 4, 4, vector_flops=5, vector_fma_flops=4).vector_slots
    3
    >>> Cost(5, 4, 4, vector_flops=5, fp32_vector_slots=6)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: fp32_vector_slots must be <= vector_slots (5), got 6
    """

    flops: int
    bytes_read: int
    bytes_written: int
    kernels: int = 1
    vector_flops: int = 0
    special_flops: int = 0
    reread_bytes: int = 0
    reread_footprint: int = 0
    vector_fma_flops: int = 0
    fp32_vector_slots: int = 0

    def __post_init__(self) -> None:
        counts = (
            self.flops,
            self.bytes_read,
            self.bytes_written,
            self.kernels,
            self.vector_flops,
            self.special_flops,
            self.reread_bytes,
            self.reread_footprint,
            self.vector_fma_flops,
            self.fp32_vector_slots,
        )
        # the common case in one pass (a decode loop builds millions); else each field by name
        if not all(type(v) is int and v >= 0 for v in counts):
            for field in _COUNT_FIELDS:
                _validate.count(field, getattr(self, field))
        if self.vector_fma_flops > self.vector_flops or self.vector_fma_flops % 2:
            raise InvalidArgument(
                "vector_fma_flops",
                f"must be an even number <= vector_flops ({self.vector_flops}), "
                f"2 FLOP per FMA; got {self.vector_fma_flops}",
            )
        if self.fp32_vector_slots > self.vector_slots:
            raise InvalidArgument(
                "fp32_vector_slots",
                f"must be <= vector_slots ({self.vector_slots}), got {self.fp32_vector_slots}",
            )
        if self.vector_flops + self.special_flops > self.flops:
            raise InvalidArgument(
                "vector_flops",
                f"+ special_flops ({self.vector_flops} + {self.special_flops}) "
                f"must not exceed flops ({self.flops})",
            )

    @property
    def bytes(self) -> int:
        """必需字节数，读与写之和（byte）；不含重读。"""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """算术强度，每个必需字节对应的 FLOPs（FLOP/byte）。"""
        if self.bytes == 0:
            raise ValueError("this Cost moves no bytes, so its intensity is undefined")
        return self.flops / self.bytes

    @property
    def matrix_flops(self) -> int:
        """矩阵单元上的 FLOPs，``flops - vector_flops - special_flops`` （FLOP）。"""
        return self.flops - self.vector_flops - self.special_flops

    @property
    def vector_slots(self) -> int:
        """向量 FLOPs 所占的 lane slot 数：每个 FMA 一个，其他每个 FLOP 一个。

        即 ``vector_flops - vector_fma_flops / 2``；向量时间是它除以 lane 速率，也就是厂商按 FMA 计
        的峰值的一半（:meth:`roofline_book.devices.device.Hardware.vector_op_rate`）。
        """
        return self.vector_flops - self.vector_fma_flops // 2

    @property
    def flops_by_unit(self) -> dict[str, int]:
        """每种计算单元的 FLOPs，以 :data:`~roofline_book.ops.cost.UNITS` 为键（FLOP）。"""
        return {
            "matrix": self.matrix_flops,
            "vector": self.vector_flops,
            "special": self.special_flops,
        }

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.kernels + other.kernels,
            vector_flops=self.vector_flops + other.vector_flops,
            special_flops=self.special_flops + other.special_flops,
            reread_bytes=self.reread_bytes + other.reread_bytes,
            reread_footprint=max(self.reread_footprint, other.reread_footprint),
            vector_fma_flops=self.vector_fma_flops + other.vector_fma_flops,
            fp32_vector_slots=self.fp32_vector_slots + other.fp32_vector_slots,
        )

    def __radd__(self, other: object) -> Cost:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # lets sum() start from 0
        return NotImplemented

    def __mul__(self, times: object) -> Cost:
        if isinstance(times, bool) or not isinstance(times, int):
            return NotImplemented
        times = _validate.count("times", times)
        return Cost(
            self.flops * times,
            self.bytes_read * times,
            self.bytes_written * times,
            self.kernels * times,
            vector_flops=self.vector_flops * times,
            special_flops=self.special_flops * times,
            reread_bytes=self.reread_bytes * times,
            reread_footprint=self.reread_footprint,
            vector_fma_flops=self.vector_fma_flops * times,
            fp32_vector_slots=self.fp32_vector_slots * times,
        )

    __rmul__ = __mul__

    def fused(self, traffic: int) -> Cost:
        """同样的 FLOPs（按单元）在一个 kernel 里做完、只搬运 ``traffic`` 字节时的代价。

        一整步的下界用它：算子之间的激活留在片上，只有必须经 HBM 的字节（``traffic``，计入
        ``bytes_read``）要搬运。

        Examples
        --------
        >>> Cost(100, 40, 20, 3, vector_flops=10).fused(50)
        Cost(flops=100, bytes_read=50, bytes_written=0, kernels=1, vector_flops=10, ...)
        """
        return Cost(
            self.flops,
            traffic,
            0,
            1,
            vector_flops=self.vector_flops,
            special_flops=self.special_flops,
            vector_fma_flops=self.vector_fma_flops,
        )


ZERO = Cost(0, 0, 0, 0)
"""什么都不做的代价，用作代价求和的起点。"""

COST_REQUIRED = ("flops", "bytes_read", "bytes_written", "kernels")
"""JSON 中一个 :class:`Cost` 总带的字段；其余字段不为零时才写。"""


def cost_mapping(cost: Cost) -> dict[str, int]:
    """JSON 中的一个 Cost：四个计数总写，其余字段不为零时才写。

    Examples
    --------
    >>> cost_mapping(Cost(10, 40, 20, vector_flops=10))
    {'flops': 10, 'bytes_read': 40, 'bytes_written': 20, 'kernels': 1, 'vector_flops': 10}
    """
    return {k: v for k, v in dataclasses.asdict(cost).items() if k in COST_REQUIRED or v}


def _cost_schema() -> dict[str, Any]:
    names = [f.name for f in dataclasses.fields(Cost)]
    return {
        "type": "object",
        "required": list(COST_REQUIRED),
        "additionalProperties": False,
        "properties": {name: {"type": "integer", "minimum": 0} for name in names},
    }


records.codec(Cost, cost_mapping, lambda value: Cost(**value), _cost_schema)
