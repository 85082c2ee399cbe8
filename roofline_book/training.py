"""训练一步的 roofline：FLOPs、每块设备的内存（按 ZeRO 阶段）、每步的通信，以及下界允许的 MFU。

一步训练在 ``dp x tp x pp`` 块设备上：DP 的梯度 all-reduce（ZeRO-2 换成 reduce-scatter 加
all-gather，ZeRO-3/FSDP 再加上 forward 与 backward 各一次权重 all-gather），Megatron TP 每层的
all-reduce，PP 的 stage hand-off 与流水线气泡 ``(p - 1) / (m + p - 1)``。集合通信的代价来自
:mod:`roofline_book.collectives`，链路与推理时相同（:mod:`roofline_book.parallel`）。

Examples
--------
Llama-3-8B 在 64 块 H100 上做纯 DP（ZeRO-3）：梯度同步跨节点，能与 backward 重叠：

>>> from roofline_book import hardware
>>> from roofline_book.inference import model
>>> s = train(model("llama-3-8b"), hardware("h100-sxm"), TrainSplit(dp=64, zero=3),
...           batch=512, seq=4096)
>>> [c.overlaps for c in s.comms]
[True]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _validate
from .collectives import CommTime, collective_time, hierarchical_all_reduce
from .decoders import ModelConfig
from .device import Hardware, Network
from .dtypes import bytes_per_element
from .hardware import network
from .parallel import DEFAULT_NETWORK, GPUS_PER_NODE, Comm, _link, _times, all_reduce

ADAM_BYTES_PER_PARAMETER = 12
"""混合精度 Adam 的优化器状态：FP32 主权重、一阶矩、二阶矩，各 4 字节（ZeRO 论文的 K = 12）。"""

ACTIVATION_BYTES_PER_LAYER = 34
"""每层每个 token 每个 hidden 元素保存的激活字节数（Korthikanti et al. 2022，arXiv 2205.05198，
表 2）；16 位激活、TP 加 sequence parallel 时为 ``34 / t``，不存 attention 分数（FlashAttention
重算它们）。"""


@dataclass(frozen=True)
class TrainSplit:
    """训练的切分：``dp`` 个数据并行副本，每个用 ``tp x pp`` 块设备；``zero`` 为 ZeRO 的阶段
    （0：不切；1：优化器状态；2：再加梯度；3：再加权重，即 FSDP）。"""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero: int = 0

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp"):
            _validate.size(name, getattr(self, name))
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero must be 0, 1, 2 or 3, got {self.zero!r}")

    @property
    def devices(self) -> int:
        return self.dp * self.tp * self.pp


def training_flops(config: ModelConfig, tokens: int, seq: int, *, recompute: bool = False) -> int:
    """一步训练的 FLOPs：每个 token ``6 N`` （forward 2N，backward 4N），加上 causal attention 的
    ``3 x 2 x seq x q_dim`` 每层每个 token；``recompute`` 时 backward 前再做一遍 forward（2N 与一份
    attention）。``N`` 是矩阵乘法的权重数：各层的（MoE 只计每个 token 用到的 expert）加 LM head，
    embedding 查表没有 FLOPs。

    Examples
    --------
    >>> from roofline_book.inference import model
    >>> m = model("llama-3-8b")
    >>> n = 32 * m.layer_matrix_parameters() + 128256 * 4096
    >>> training_flops(m, 4096, 4096) == 6 * n * 4096 + 3 * 2 * 4096 * 4096 * 32 * 4096
    True
    """
    tokens = _validate.size("tokens", tokens)
    seq = _validate.size("seq", seq)
    c = config
    n = c.layers * c.layer_matrix_parameters(active=True) + c.vocab * c.hidden
    attention = 2 * seq * c.q_dim * c.layers  # causal: 4 s d heads / 2, per token per layer
    forward = 2 * n + attention
    return tokens * forward * (4 if recompute else 3)


@dataclass(frozen=True)
class TrainingStep:
    """一步训练的下界。

    ``compute_s``：每块设备的 FLOPs 除以矩阵单元峰值，乘以流水线的 ``(m + p - 1) / m``；
    ``seconds``：它与每条链路上全部通信带宽项中最大的一个（一切能重叠的都重叠）；
    ``exposed_s``：TP 的 all-reduce 在关键路径上（Megatron 的默认做法），加在计算之后，再与其余
    通信取大。
    """

    compute_s: float
    bubble: float
    comms: tuple[Comm, ...]
    memory_bytes_per_device: Mapping[str, float]
    model_flops: int
    devices: int
    peak: float

    @property
    def communication_s(self) -> float:
        return math.fsum(c.time.bandwidth_s for c in self.comms)

    def _per_link(self) -> dict[str, float]:
        links: dict[str, float] = {}
        for c in self.comms:
            links[c.link] = links.get(c.link, 0.0) + c.time.bandwidth_s
        return links

    @property
    def seconds(self) -> float:
        return max([self.compute_s, *self._per_link().values()])

    @property
    def exposed_s(self) -> float:
        tp = math.fsum(c.time.bandwidth_s for c in self.comms if not c.overlaps)
        rest = [c.time.bandwidth_s for c in self.comms if c.overlaps]
        return max(self.compute_s + tp, math.fsum(rest))

    @property
    def mfu(self) -> float:
        """下界允许的最高 MFU：模型 FLOPs（不含 recompute）除以 ``devices x peak x seconds``。"""
        return self.model_flops / (self.devices * self.peak * self.seconds)

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory_bytes_per_device.values())


def train(
    config: ModelConfig,
    device: Hardware,
    split: TrainSplit,
    *,
    batch: int,
    seq: int,
    micro_batch: int = 1,
    recompute: bool = False,
    dtype: str = "bf16",
    per_node: int = GPUS_PER_NODE,
    net: Network | None = None,
) -> TrainingStep:
    """一步训练：``batch`` 条 ``seq`` 个 token 的序列（全局），在 ``split.devices`` 块设备上。

    每个 DP 副本做 ``batch / dp`` 条序列，分成 ``m = batch / (dp x micro_batch)`` 个 micro-batch
    走过 ``pp`` 个 stage（1F1B），流水线气泡占 ``(p - 1) / (m + p - 1)``。内存每块设备：16 位权重与
    梯度各 2 字节、Adam 状态 12 字节每个权重，按 ZeRO 阶段除以 ``dp``；激活每层
    ``34 s b h / t`` 字节（:data:`ACTIVATION_BYTES_PER_LAYER`），recompute 时只存每层的输入
    ``2 s b h / t``，1F1B 的第一个 stage 同时存 ``min(m, p)`` 个 micro-batch。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.inference import model
    >>> s = train(model("llama-3-8b"), hardware("h100-sxm"), TrainSplit(dp=64), batch=512, seq=4096)
    >>> 0.5 < s.mfu <= 1.0
    True
    """
    batch = _validate.size("batch", batch)
    seq = _validate.size("seq", seq)
    micro_batch = _validate.size("micro_batch", micro_batch)
    c, sp = config, split
    if c.heads % sp.tp or c.ffn % sp.tp:
        raise ValueError(f"tp ({sp.tp}) must divide the heads ({c.heads}) and MLP width ({c.ffn})")
    if sp.pp > c.layers:
        raise ValueError(f"pp ({sp.pp}) must be at most the model's {c.layers} layers")
    if batch % (sp.dp * micro_batch):
        raise ValueError(
            f"batch ({batch}) must be a multiple of dp x micro_batch ({sp.dp} x {micro_batch})"
        )
    if sp.tp > per_node:
        raise ValueError(f"tp ({sp.tp}) must fit in one node of {per_node} GPUs")
    a = bytes_per_element(dtype)
    peak = device.peak_flops(dtype)
    m = batch // (sp.dp * micro_batch)
    tokens = batch * seq
    hardware_flops = training_flops(c, tokens, seq, recompute=recompute)
    bubble = (sp.pp - 1) / (m + sp.pp - 1)
    compute = hardware_flops / sp.devices / peak / (1 - bubble)
    # memory per device
    phi = c.parameters() / (sp.tp * sp.pp)
    shard = {0: (1, 1, 1), 1: (1, 1, sp.dp), 2: (1, sp.dp, sp.dp), 3: (sp.dp, sp.dp, sp.dp)}
    w, g, o = shard[sp.zero]
    layers = math.ceil(c.layers / sp.pp)
    per_layer = (2 if recompute else ACTIVATION_BYTES_PER_LAYER) * seq * micro_batch * c.hidden
    held = min(m, sp.pp)
    activations = per_layer * layers * held / sp.tp
    if recompute:
        activations += ACTIVATION_BYTES_PER_LAYER * seq * micro_batch * c.hidden / sp.tp
    memory = {
        "weights": 2 * phi / w,
        "gradients": 2 * phi / g,
        "optimizer": ADAM_BYTES_PER_PARAMETER * phi / o,
        "activations": activations,
    }
    # communication per step
    bw, lat = _link(device)
    nic = net or network(DEFAULT_NETWORK)
    comms: list[Comm] = []
    if sp.dp > 1:
        grads = 2 * phi
        inside = max(1, per_node // (sp.tp * sp.pp))
        if sp.dp <= inside:
            t, link = all_reduce(grads, sp.dp, device), device.link
        elif sp.dp % inside == 0:  # whole nodes: inside the node, then across
            t = hierarchical_all_reduce(
                grads, inside, sp.dp // inside, bw, lat, nic.bandwidth, nic.latency
            )
            link = nic.key
        else:  # ranks that do not fill whole nodes: one ring, as fast as its slowest link
            t, link = (
                collective_time("all_reduce", grads, sp.dp, nic.bandwidth, nic.latency),
                nic.key,
            )
        what = {
            0: ("DP gradient all-reduce", "all_reduce", 1),
            1: ("DP gradient all-reduce", "all_reduce", 1),
            2: ("ZeRO-2 gradient reduce-scatter + weight all-gather", "reduce_scatter", 1),
            3: (
                "ZeRO-3/FSDP weight all-gathers (forward, backward) + gradient reduce-scatter",
                "all_gather",
                1.5,
            ),
        }[sp.zero]
        scaled = CommTime(latency_s=t.latency_s * what[2], bandwidth_s=t.bandwidth_s * what[2])
        comms.append(Comm(what[0], what[1], 1, grads, sp.dp, link, scaled, overlaps=True))
    if sp.tp > 1:
        act = micro_batch * seq * c.hidden * a
        per_micro = (6 if recompute else 4) * layers
        t = all_reduce(act, sp.tp, device)
        n = per_micro * m
        comms.append(
            Comm(
                "Megatron TP all-reduces (forward, backward)",
                "all_reduce",
                n,
                act,
                sp.tp,
                device.link,
                _times(t, n),
            )
        )
    if sp.pp > 1:
        act = micro_batch * seq * c.hidden * a
        across = sp.tp * sp.pp > per_node
        b, alpha, link = (nic.bandwidth, nic.latency, nic.key) if across else (bw, lat, device.link)
        t = collective_time("send_recv", act, 2, b, alpha)
        n = 2 * m  # each micro-batch: its activations forward, their gradients back
        comms.append(
            Comm(
                "PP hand-off (activations, gradients)",
                "send_recv",
                n,
                act,
                2,
                link,
                _times(t, n),
                overlaps=True,
            )
        )
    return TrainingStep(
        compute_s=compute,
        bubble=bubble,
        comms=tuple(comms),
        memory_bytes_per_device=MappingProxyType(memory),
        model_flops=training_flops(c, tokens, seq),
        devices=sp.devices,
        peak=peak,
    )


__all__ = [
    "ACTIVATION_BYTES_PER_LAYER",
    "ADAM_BYTES_PER_PARAMETER",
    "TrainSplit",
    "TrainingStep",
    "train",
    "training_flops",
]
