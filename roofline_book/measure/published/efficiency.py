"""serving 估计用的效率：已发表的测量达到它们下界的比例。

``roofline-book serve --efficiency`` 默认把每一步的下界换成估计：计算项除以 GEMM 的效率，内存项
除以 decode 的效率。两个数都来自 ``published_measurements.toml`` 中的行，各带出处：

- 计算：Stas Bekman 的 MAMF（mamf-finder 在这块设备上搜到的最快 BF16 GEMM）除以厂商的稠密峰值；
- 内存：gpt-fast 在 batch 1 的 decode 达到它的下界的比例（只在 A100 上发表过），按 STREAM copy
  在这块设备与在 A100 上达到的带宽比例换算：假定 decode 在各设备上达到 STREAM 带宽的同一个比例。

设备本身没有某一行时，取同一架构（``Hardware.architecture``）中有这一行的设备，并在出处里写明。
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware, catalog
from .rows import Measurement, row

#: 内存效率所用的 decode 测量（gpt-fast，Llama-3.1-8B，BF16 权重，batch 1）。
DECODE_ROW = ("gptfast-llama31-8b", {"weights": "bf16"})


@dataclass(frozen=True)
class Efficiency:
    """一步的计算项与内存项各能达到下界的比例，以及它们的出处（行的 id 与设备）。"""

    compute: float
    memory: float
    compute_source: str
    memory_source: str


def _on(device: Hardware, prefix: str, **swept: str) -> tuple[Measurement, str] | None:
    """``device`` 上（没有就同一架构的设备上）id 以 ``prefix`` 开头的测量，与注明设备的出处。"""
    from .rows import rows

    def find(key: str) -> Measurement | None:
        for published in rows():
            if published.id.startswith(prefix) and published.device == key:
                for m in published.measurements():
                    if all(m.config.get(k) == v for k, v in swept.items()):
                        return m
        return None

    got = find(device.key)
    if got is not None:
        return got, got.id
    same = [
        k
        for k, d in catalog().items()
        if device.architecture and d.architecture == device.architecture and k != device.key
    ]
    for key in sorted(same):
        got = find(key)
        if got is not None:
            return got, f"{got.id} (on {key}, the same architecture as {device.key})"
    return None


def serving_efficiency(device: Hardware) -> Efficiency:
    """``device`` 上 serving 估计的默认效率（见模块说明）。

    Examples
    --------
    H100 SXM：MAMF 794.5 / 989.4 = 0.803；gpt-fast 的 decode 在 A100 上达到下界的 0.69，
    STREAM copy 在 H100 上达到 2.9 / 3.35 = 0.866、在 A100 上 1.61 / 2.039 = 0.790，
    所以内存效率 0.69 x 0.866 / 0.790 = 0.76：

    >>> from roofline_book import hardware
    >>> e = serving_efficiency(hardware("h100-sxm"))
    >>> round(e.compute, 3), round(e.memory, 2)
    (0.803, 0.76)
    >>> e.compute_source
    'mamf-bf16-h100'
    """
    gemm = _on(device, "mamf-bf16")
    stream = _on(device, "stream-", kernel="copy")
    decode_id, swept = DECODE_ROW
    decode = row(decode_id).measurements()
    chosen = [m for m in decode if all(m.config.get(k) == v for k, v in swept.items())]
    if gemm is None or stream is None or not chosen:
        missing = "MAMF" if gemm is None else "STREAM"
        raise InvalidArgument(
            "efficiency",
            f"has no published {missing} measurement for {device.key} or its architecture; "
            "give it as a number, e.g. --efficiency 0.7",
        )
    d = chosen[0]
    base = _on(d.device, "stream-", kernel="copy")
    assert base is not None, "the decode row's device has a STREAM row"
    memory = d.eta() * stream[0].eta() / base[0].eta()
    return Efficiency(
        compute=gemm[0].eta(),
        memory=min(memory, 1.0),
        compute_source=gemm[1],
        memory_source=f"{d.id} x {stream[1]} / {base[1]}",
    )


__all__ = ["DECODE_ROW", "Efficiency", "serving_efficiency"]
