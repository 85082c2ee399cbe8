"""已发表测量的数据：读入的行、按 sweep 拆开的一个个测量，以及每个测量在 roofline 上的点。

全貌与例子见 :mod:`roofline_book.measure.published`。
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware, hardware
from ...devices.kernels import device_sram_bytes
from ...llm.inference import Precisions, model, step_ops
from ...ops import ZERO, Cost, attention, elementwise, gemm
from ...roofline.roofs import attainable

#: 数据文件在包内的位置（相对 ``roofline_book.measure``）。
DATA = ("data", "published_measurements.toml")

#: 每个单位换成 SI 基本单位（FLOP/s、byte/s、token/s、秒、字节；训练的代价按每个 token 的 GPU 秒）
#: 的倍数。
UNITS: Mapping[str, float] = MappingProxyType(
    {
        "TFLOP/s": 1e12,
        "TB/s": 1e12,
        "GB/s": 1e9,
        "tok/s": 1.0,
        "req/s": 1.0,
        "ms": 1e-3,
        "us": 1e-6,
        "s": 1.0,
        "GPU-h/Ttok": 3600 / 1e12,  # GPU-hours per 10^12 tokens, as GPU-seconds per token
        "B": 1.0,
        "MiB": 2.0**20,
        "GiB": 2.0**30,
    }
)

#: BabelStream 的 kernel：(读的数组个数, 写的数组个数, 每个元素的 FLOPs)。
#: copy ``c = a``，mul ``b = q * c``，add ``c = a + b``，triad ``a = b + q * c``，dot ``sum(a b)``
#: （q 是一个标量）。
STREAM_KERNELS: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {
        "copy": (1, 1, 0),
        "mul": (1, 1, 1),
        "add": (2, 1, 1),
        "triad": (2, 1, 2),
        "dot": (2, 0, 2),
    }
)

#: 有 roofline 位置的 ``kind``。
POINT_KINDS = ("gemm", "stream", "attention_forward", "generation", "prefill")


@dataclass(frozen=True)
class RooflinePoint:
    """一个实测在 roofline 上的点。

    Parameters
    ----------
    intensity : float
        算子的算术强度 ``I = FLOPs / bytes`` （FLOP/byte），由本包的算子模型算出；
        bytes 是必需流量（每个输入读一次、每个输出写一次）。
    flops_per_s : float
        实测的速率，按本包的 FLOPs 计（FLOP/s）：``cost.flops / seconds``。
    bytes_per_s : float
        实测的有效带宽（byte/s）：``cost.bytes / seconds``。
    seconds : float
        实测配置跑一次的时间（s），由发表的数字推出。
    cost : Cost
        本包对这个配置的模型。
    dtype : str
        roof 取哪种精度的峰值（矩阵乘法的输入精度；decode 取激活精度）。
    """

    intensity: float
    flops_per_s: float
    bytes_per_s: float
    seconds: float
    cost: Cost
    dtype: str


@dataclass(frozen=True)
class Measurement:
    """一个已发表的数字，以及测它时的完整配置。

    Parameters
    ----------
    row : Published
        它所在的行。
    config : Mapping
        完整配置：行的 ``config`` 加上扫描字段此处的取值。
    value : float
        发表的数字，单位为 ``row.unit``。
    """

    row: Published
    config: Mapping[str, Any]
    value: float

    @property
    def id(self) -> str:
        """行的 id，扫描过的字段附在方括号里，如 ``stream-h100[kernel=copy]``。"""
        swept = {k: v for k, v in self.config.items() if k not in self.row.config}
        return self.row.id + "".join(f"[{k}={v}]" for k, v in swept.items())

    @property
    def si(self) -> float:
        """发表的数字换成 SI 基本单位（FLOP/s、byte/s、token/s、s、byte）。"""
        return self.value * UNITS[self.row.unit]

    @property
    def device(self) -> Hardware:
        """测量所用的设备（目录条目）。"""
        return hardware(self.row.device)

    @property
    def source(self) -> str:
        """出处（论文的图表，或仓库 / 文件 @ commit）。"""
        return self.row.source

    def point(self) -> RooflinePoint | None:
        """它在 roofline 上的点；``kind`` 不在 :data:`POINT_KINDS` 中时为 None。

        - ``gemm``：:func:`~roofline_book.ops.gemm` （方阵 ``n``，或 ``m`` 与 ``nk``），
          时间 = ``2 m k n`` / 发表的 FLOP/s。
        - ``stream``：:func:`~roofline_book.ops.elementwise`，按 :data:`STREAM_KERNELS` 的读写
          数组个数，时间 = 字节数 / 发表的 byte/s。
        - ``attention_forward``：:func:`~roofline_book.ops.attention` （flash，设备每个 SM 的
          shared memory）；时间 = 论文的 FLOPs（每条序列 ``4 n^2 d h``，n 为序列长度，causal 时
          减半）/ 发表的 FLOP/s，没给 batch 与 heads 时取论文的约定（batch × n = 16384，
          heads × d = 2048）。
        - ``generation``：:func:`~roofline_book.llm.inference.step_ops`，prompt 的 prefill 加上
          此后每个 token 一步 decode，时间 = batch × generated / 发表的 token/s。
        - ``prefill``：prompt 的 prefill 一步，时间就是发表的毫秒数。

        Examples
        --------
        H100 的 STREAM triad ``a = b + q * c`` （q 是标量），FP64：每个元素读 2 个、写 1 个
        8 字节的数、做 2 次运算，``I = 2 / 24 = 1/12`` FLOP/byte；2.97 TB/s 对应
        2.97 / 12 = 0.2475 TFLOP/s：

        >>> p = measurement("stream-h100", kernel="triad").point()
        >>> round(p.intensity, 4), round(p.flops_per_s / 1e12, 4), p.bytes_per_s / 1e12
        (0.0833, 0.2475, 2.97)

        copy 没有运算（``I = 0``），它在 roofline 上只给出一条实测的 memory roof：

        >>> measurement("stream-h100", kernel="copy").point().intensity
        0.0

        FlashAttention-3，head dim 128，序列长度 16384，不加 mask：batch 1、16 个 head，
        必需流量是 Q、K、V 各读一次、O 写一次，``4 × 16384 × 128 × 16 × 2`` 字节 = 256 MiB；
        矩阵 FLOPs ``4 n^2 d h`` = 2.2 × 10^12，所以矩阵部分的 ``I = n / s = 8192`` FLOP/byte
        （softmax 每个得分再加几次向量运算，不到 2%）：

        >>> p = measurement("fa3-bf16-d128", seqlen=16384).point()
        >>> p.cost.bytes == 256 * 2**20, p.cost.matrix_flops / p.cost.bytes
        (True, 8192.0)

        没有 roofline 位置的行（容量、集合通信）：

        >>> measurement("capacity-h100-nvsmi").point() is None
        True
        """
        kind, c = self.row.kind, self.config
        if kind == "gemm":
            if "m" in c:
                m, (n, k) = c["m"], c["nk"]
            else:
                m = n = k = c["n"]
            cost = gemm(m, k, n, c["dtype"], out_dtype=c.get("out_dtype"))
            return _point(cost, cost.flops / self.si, c["dtype"])
        if kind == "stream":
            reads, writes, flops = STREAM_KERNELS[c["kernel"]]
            cost = elementwise(
                c["numel"], c["dtype"], inputs=reads, outputs=writes, flops_per_element=flops
            )
            return _point(cost, cost.bytes / self.si, c["dtype"])
        if kind == "attention_forward":
            seqlen, d, causal = c["seqlen"], c["head_dim"], c["causal"]
            batch, heads = c.get("batch", 16384 // seqlen), c.get("heads", 2048 // d)
            sram = device_sram_bytes(self.device)
            cost = attention(
                batch, heads, seqlen, seqlen, d, c["dtype"], causal=causal, sram_bytes=sram
            )
            paper_flops = 4 * seqlen**2 * d * heads * batch / (2 if causal else 1)
            return _point(cost, paper_flops / self.si, c["dtype"])
        if kind in ("generation", "prefill"):
            config, p = model(c["model"]), _precisions(c)
            if kind == "prefill":
                ops = step_ops(config, c["batch"], c["prompt"], c["prompt"], p)
                return _point(sum((x for _, x in ops), ZERO), self.si, p.activations)
            batch, prompt, generated = _shape(c)
            steps = [step_ops(config, batch, prompt, prompt, p)]
            steps += [
                step_ops(config, batch, 1, ctx, p) for ctx in range(prompt + 1, prompt + generated)
            ]
            cost = sum((x for ops in steps for _, x in ops), ZERO)
            return _point(cost, batch * generated / self.si, p.activations)
        return None

    def eta(self, device: Hardware | None = None) -> float:
        """达到的 roof 比例 ``η``：roofline 的时间下界 ``max(F / P, Q / B)`` 除以实测时间。

        ``P`` 是 ``device`` （默认为测量所用的设备）在 :attr:`RooflinePoint.dtype` 下的 dense 峰值，
        ``B`` 是它的内存带宽；等价于实测速率除以 ``min(P, B I)``。

        Examples
        --------
        H100 的 STREAM copy：2.90 TB/s 对 3.35 TB/s，``η = 0.866``：

        >>> round(measurement("stream-h100", kernel="copy").eta(), 3)
        0.866

        Raises
        ------
        InvalidArgument
            这一行没有 roofline 位置时。
        """
        p = self.point()
        if p is None:
            raise InvalidArgument("kind", f"{self.row.kind!r} has no roofline point ({self.id})")
        device = device or self.device
        peak, band = device.peak_flops(p.dtype), device.memory_bandwidth
        return max(p.cost.flops / peak, p.cost.bytes / band) / p.seconds

    def roof(self, device: Hardware | None = None) -> float:
        """它的算术强度处的 roof ``min(P, B I)`` （FLOP/s），``device`` 默认为测量所用的设备。

        Examples
        --------
        H100 的 STREAM triad：``I = 1/12``，roof 是 3.35 TB/s × 1/12 = 0.279 TFLOP/s：

        >>> round(measurement("stream-h100", kernel="triad").roof() / 1e12, 3)
        0.279
        """
        p = self.point()
        if p is None:
            raise InvalidArgument("kind", f"{self.row.kind!r} has no roofline point ({self.id})")
        device = device or self.device
        return float(attainable(p.intensity, device.peak_flops(p.dtype), device.memory_bandwidth))


@dataclass(frozen=True)
class Published:
    """数据文件的一行：一个已发表的数字，或沿一个配置字段扫描的一组数字。

    Parameters
    ----------
    id : str
        行的唯一名字。
    kind : str
        它是什么量（``gemm``、``stream``、``attention_forward``、``generation``、``prefill``、
        ``peak_rate``、``capacity``、``all_reduce_busbw`` 等）。
    what : str
        测的是什么（英文，照出处）。
    device : str
        设备在目录中的键（:func:`roofline_book.hardware`）。
    config : Mapping
        配置（扫描字段除外）。
    sweep : tuple or None
        ``(字段名, 取值)``：这一行沿哪个字段扫描；单个数字时为 None。
    values : tuple of float
        发表的数字，每个扫描取值一个（单个数字时只有一个），单位为 ``unit``。
    unit : str
        :data:`UNITS` 的一个键。
    source : str
        出处：论文的图表，或仓库 / 文件 @ commit。
    url : str
        在哪里能读到它。
    note : str
        读数的方式，以及比较时的注意事项。
    """

    id: str
    kind: str
    what: str
    device: str
    config: Mapping[str, Any]
    sweep: tuple[str, tuple[Any, ...]] | None
    values: tuple[float, ...]
    unit: str
    source: str
    url: str
    note: str

    def measurements(self) -> tuple[Measurement, ...]:
        """每个发表的数字一个 :class:`Measurement`，按扫描的顺序。

        Examples
        --------
        >>> [m.id for m in row("cublas-bf16-h100").measurements()]
        ['cublas-bf16-h100[n=4096]', 'cublas-bf16-h100[n=8192]']
        """
        if self.sweep is None:
            return (Measurement(self, self.config, self.values[0]),)
        field, swept = self.sweep
        return tuple(
            Measurement(self, MappingProxyType({**self.config, field: v}), x)
            for v, x in zip(swept, self.values, strict=True)
        )


def _point(cost: Cost, seconds: float, dtype: str) -> RooflinePoint:
    return RooflinePoint(
        intensity=cost.flops / cost.bytes,
        flops_per_s=cost.flops / seconds,
        bytes_per_s=cost.bytes / seconds,
        seconds=seconds,
        cost=cost,
        dtype=dtype,
    )


def _precisions(c: Mapping[str, Any]) -> Precisions:
    if "precision" in c:
        p = c["precision"]
        return Precisions(weights=p, activations=p, kv=p)
    return Precisions(weights=c.get("weights", "bf16"))


def _shape(c: Mapping[str, Any]) -> tuple[int, int, int]:
    if "batch_prompt_generated" in c:
        batch, prompt, generated = c["batch_prompt_generated"]
        return batch, prompt, generated
    return c["batch"], c["prompt"], c["generated"]


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    return value


def data_text() -> str:
    """数据文件的全文（TOML）。"""
    return resources.files("roofline_book.measure").joinpath(*DATA).read_text("utf-8")


@cache
def rows() -> tuple[Published, ...]:
    """数据文件中的全部行，按文件中的顺序。

    Examples
    --------
    >>> all(r.url.startswith("https://") for r in rows())
    True
    """
    out = []
    for r in tomllib.loads(data_text())["measurement"]:
        sweep = None
        if "sweep" in r:
            ((field, swept),) = r["sweep"].items()
            sweep = (field, _frozen(swept))
        values = r["value"] if isinstance(r["value"], list) else [r["value"]]
        if len(values) != (1 if sweep is None else len(sweep[1])):
            raise ValueError(f"{r['id']}: the values do not match the sweep")
        out.append(
            Published(
                id=r["id"],
                kind=r["kind"],
                what=r["what"],
                device=r["device"],
                config=_frozen(r["config"]),
                sweep=sweep,
                values=tuple(float(v) for v in values),
                unit=r["unit"],
                source=r["source"],
                url=r["url"],
                note=r["note"],
            )
        )
    return tuple(out)


def row(id: str) -> Published:
    """按 id 取一行。

    Examples
    --------
    >>> row("stream-h100").unit
    'TB/s'
    >>> row("nope")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: id 'nope' is not a published measurement; see rows()
    """
    for r in rows():
        if r.id == id:
            return r
    raise InvalidArgument("id", f"{id!r} is not a published measurement; see rows()")


def measurement(id: str, **swept: Any) -> Measurement:
    """一个发表的数字：行 ``id``，扫描字段取 ``swept`` 给出的值（单个数字的行不给）。

    Examples
    --------
    >>> measurement("stream-h100", kernel="copy").value
    2.9
    >>> measurement("fa3-bf16-d128-causal", seqlen=16384).value
    616.0
    """
    r = row(id)
    found = [m for m in r.measurements() if all(m.config.get(k) == v for k, v in swept.items())]
    if len(found) != 1:
        field = r.sweep[0] if r.sweep else None
        raise InvalidArgument(
            "swept", f"{id!r} has {len(found)} values for {swept!r}; its sweep is {field!r}"
        )
    return found[0]


#: 图上 STREAM kernel 的中文名。
