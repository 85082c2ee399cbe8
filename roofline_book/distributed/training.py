"""训练一步的 roofline：FLOPs、每块设备的内存（按 ZeRO 阶段）、每步的通信，以及下界允许的 MFU。

一步训练在 ``dp x tp x pp`` 块设备上。每个 DP 副本做 ``batch / dp`` 条序列，每次送进
``micro_batch`` 条：``m = batch / (dp x micro_batch)`` 个 micro-step（梯度累积，或流水线上的
micro-batch）。激活、流水线气泡、每个集合通信的次数与大小都由这同一个 micro-batch 决定：

- DP（ZeRO 0、1）：梯度只在最后一个 micro-batch 的 backward 中归约（此前 ``no_sync``），所以
  能盖住它的只有这一次 backward；
- ZeRO-2：每个 micro-step 把梯度 reduce-scatter 到各自的分片，优化器一步之后 all-gather 权重；
- ZeRO-3/FSDP：默认（PyTorch FSDP、FSDP2 的 ``reshard_after_forward=True``）每个 micro-step 的
  forward 与 backward 各 all-gather 一次权重，再 reduce-scatter 梯度；``reshard=False`` 时权重在
  整步内保持聚合（一次 all-gather），代价是每块设备放一份完整的 16 位权重，与 ZeRO-2 相同；
- Megatron TP 每个 micro-step 每层的 all-reduce，PP 每个 micro-step 的 stage hand-off，
  流水线气泡 ``(p - 1) / (m + p - 1)``。

集合通信的代价来自 :mod:`roofline_book.distributed.collectives`，链路与推理时相同
（:mod:`roofline_book.distributed.parallel`）。
每个 token 留下的激活按模型自己的层来数，在 :mod:`roofline_book.distributed.activations`。

Examples
--------
Llama-3-8B 在 64 块 H100 上做 FSDP（ZeRO-3），每块 GPU 8 条序列、每次 1 条：8 个 micro-step，
每个都 all-gather 两次权重、reduce-scatter 一次梯度：

>>> from roofline_book import hardware
>>> from roofline_book.llm.inference import model
>>> s = train(model("llama-3-8b"), hardware("h100-sxm"), TrainSplit(dp=64, zero=3),
...           batch=512, seq=4096)
>>> s.accumulation_steps, [(c.op, c.count) for c in s.comms]
(8, [('all_gather', 8), ('all_gather', 8), ('reduce_scatter', 8)])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.catalog import network
from ..devices.device import Hardware, Network
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from .activations import SAVINGS, head_activation_bytes, layer_activation_bytes
from .allreduce import multi_node_all_reduce
from .collectives import CommTime, collective_time
from .parallel import DEFAULT_NETWORK, GPUS_PER_NODE, Comm, Split, _link, _times, all_reduce

ADAM_BYTES_PER_PARAMETER = 12
"""混合精度 Adam 的优化器状态：FP32 主权重、一阶矩、二阶矩，各 4 字节（ZeRO 论文的 K = 12）。"""

GRAD_DTYPES = ("bf16", "fp32")
"""梯度的精度：它决定每块设备上梯度的字节数，也决定 DP 归约送出的字节数。"""

WHEN = ("micro-step", "last backward", "step")
"""一个集合通信在一步中何时发生：每个 micro-step 一次；只在最后一个 micro-batch 的 backward 中；
每步一次。"""


@dataclass(frozen=True)
class TrainSplit:
    """训练的切分：``dp`` 个数据并行副本，每个用 ``tp x pp`` 块设备；``zero`` 为 ZeRO 的阶段
    （0：不切；1：优化器状态；2：再加梯度；3：再加权重，即 FSDP）。``reshard`` 只对 ZeRO-3 有意义：
    True（PyTorch FSDP 的默认）每个 micro-step 用完就释放聚合的权重，下次再 all-gather；False 让
    权重在整步内保持聚合。"""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero: int = 0
    reshard: bool = True

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp"):
            _validate.size(name, getattr(self, name))
        if _validate.is_bool(self.zero) or self.zero not in (0, 1, 2, 3):
            raise InvalidArgument("zero", f"must be 0, 1, 2 or 3, got {self.zero!r}")
        if not isinstance(self.reshard, bool):
            raise InvalidArgumentType("reshard", f"must be True or False, got {self.reshard!r}")
        if not self.reshard and self.zero != 3:
            raise InvalidArgument("reshard", f"is an option of zero 3 (FSDP), not zero {self.zero}")

    @classmethod
    def over(
        cls,
        gpus: int,
        *,
        tp: int = 1,
        pp: int = 1,
        dp: int | None = None,
        zero: int = 0,
        reshard: bool = True,
    ) -> TrainSplit:
        """``gpus`` 块设备上的切分：``dp`` 缺省为 ``gpus / (tp x pp)``，给出时 ``dp x tp x pp``
        必须等于 ``gpus``。

        Examples
        --------
        >>> TrainSplit.over(64, tp=8).dp
        8
        >>> TrainSplit.over(64, tp=3)
        Traceback (most recent call last):
        ...
        roofline_book.InvalidArgument: gpus 64 must be a multiple of one replica's TP x PP = ... = 3
        """
        gpus = _validate.size("gpus", gpus)
        group = _validate.size("tp", tp) * _validate.size("pp", pp)
        if gpus % group:
            raise InvalidArgument(
                "gpus",
                f"{gpus} must be a multiple of one replica's TP x PP = {tp} x {pp} = {group}",
            )
        dp = gpus // group if dp is None else _validate.size("dp", dp)
        if dp * group != gpus:
            raise InvalidArgument(
                "dp", f"{dp} x TP {tp} x PP {pp} = {dp * group}, not the {gpus} GPUs"
            )
        return cls(dp=dp, tp=tp, pp=pp, zero=zero, reshard=reshard)

    @property
    def devices(self) -> int:
        return self.dp * self.tp * self.pp

    def check(self, config: ModelConfig, *, per_node: int | None = None) -> None:
        """这个模型能否这样切：TP 与 PP 的规则与推理相同
        （:meth:`~roofline_book.distributed.parallel.Split.check`）。"""
        Split(tp=self.tp, pp=self.pp).check(config, per_node=per_node)


def training_flops(config: ModelConfig, tokens: int, seq: int, *, recompute: bool = False) -> int:
    """一步训练的 FLOPs：每个 token ``6 N`` （forward 2N，backward 4N），加上 causal attention 的
    ``3 x 2 x seq x q_dim`` 每层每个 token；``recompute`` 时 backward 前再做一遍 forward（2N 与一份
    attention）。``N`` 是矩阵乘法的权重数：各层的（MoE 只计每个 token 用到的 expert）加 LM head，
    embedding 查表没有 FLOPs。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
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
class TrainComm(Comm):
    """训练一步中的一种集合通信：``when`` （:data:`WHEN`）说明它何时发生，``window_s`` 是能盖住它
    的计算时间：最后一个 backward 中的归约只有一个 micro-batch 的 backward，``math.inf`` 表示整步的
    计算都能盖住它。"""

    when: str = "step"
    window_s: float = math.inf


@dataclass(frozen=True)
class TrainingStep:
    """一步训练的下界。

    ``compute_s``：每块设备的 FLOPs 除以矩阵单元峰值，乘以流水线的 ``(m + p - 1) / m``。
    ``seconds``：一切能重叠的都重叠时的下界：计算、每条链路上的通信之和，以及每个只能在一个窗口
    里重叠的通信（``compute - window + t``）中最大的一个。``exposed_s``：不重叠的通信（Megatron
    默认的 TP all-reduce）加在计算之后，其余照旧。``mfu`` 取 ``exposed_s``，即按默认做法配置的一步；
    ``mfu_all_overlap`` 取 ``seconds``。
    """

    compute_s: float
    bubble: float
    comms: tuple[TrainComm, ...]
    memory_bytes_per_device: Mapping[str, float]
    model_flops: int
    devices: int
    peak: float
    micro_batch: int = 1
    accumulation_steps: int = 1
    micro_backward_s: float = 0.0
    saving: str = "eager"
    grad_dtype: str = "bf16"

    @property
    def communication_s(self) -> float:
        return math.fsum(c.time.bandwidth_s for c in self.comms)

    def _bound(self, compute: float, comms: list[TrainComm]) -> float:
        links: dict[str, float] = {}
        for c in comms:
            links[c.link] = links.get(c.link, 0.0) + c.time.bandwidth_s
        windows = [
            compute - c.window_s + c.time.bandwidth_s for c in comms if c.window_s < math.inf
        ]
        return max([compute, *links.values(), *windows])

    @property
    def seconds(self) -> float:
        return self._bound(self.compute_s, list(self.comms))

    @property
    def exposed_s(self) -> float:
        tp = math.fsum(c.time.bandwidth_s for c in self.comms if not c.overlaps)
        return self._bound(self.compute_s + tp, [c for c in self.comms if c.overlaps])

    def _mfu(self, seconds: float) -> float:
        return self.model_flops / (self.devices * self.peak * seconds)

    @property
    def mfu(self) -> float:
        """下界允许的最高 MFU，按默认做法配置的一步（``exposed_s``）：模型 FLOPs（不含 recompute）
        除以 ``devices x peak x exposed_s``。"""
        return self._mfu(self.exposed_s)

    @property
    def mfu_all_overlap(self) -> float:
        """一切通信都与计算重叠时（``seconds``）的 MFU 上限。"""
        return self._mfu(self.seconds)

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory_bytes_per_device.values())


def _dp_all_reduce(
    nbytes: float, split: TrainSplit, device: Hardware, per_node: int, nic: Network
) -> tuple[CommTime, str]:
    """DP 组 all-reduce ``nbytes`` 的时间与走的链路：一个节点内走节点内的链路；整节点时取分层与
    NCCL 扁平 ring 中最忙链路最短的
    （:func:`~roofline_book.distributed.allreduce.multi_node_all_reduce`）；
    不足整节点时一个环，快不过最慢的链路（网卡）。"""
    bw, lat = _link(device)
    inside = max(1, per_node // (split.tp * split.pp))
    if split.dp <= inside:
        return all_reduce(nbytes, split.dp, device), device.link
    if split.dp % inside == 0:  # whole nodes: inside the node, then across
        nodes = split.dp // inside
        t = multi_node_all_reduce(
            nbytes,
            inside,
            nodes,
            bw,
            lat,
            nic.bandwidth,
            nic.latency,
            intra_reduces=device.link_reduces,
        )
        return t, nic.key
    t = collective_time("all_reduce", nbytes, split.dp, nic.bandwidth, nic.latency)
    return t, nic.key


def _half(t: CommTime) -> CommTime:
    """reduce-scatter 或 all-gather：同样的链路上 all-reduce 的一半（ring 上恰好一半；交换芯片会归约
    时，一半是更宽松的下界）。"""
    return CommTime(latency_s=t.latency_s / 2, bandwidth_s=t.bandwidth_s / 2)


def _dp_comms(
    split: TrainSplit,
    m: int,
    weights: float,
    grads: float,
    window: float,
    device: Hardware,
    per_node: int,
    nic: Network,
) -> list[TrainComm]:
    """ZeRO 阶段 ``split.zero`` 在一步中的 DP 通信：``weights``、``grads`` 是每块设备（TP、PP
    切过之后）16 位权重与梯度的字节数，``m`` 个 micro-step，``window`` 是一个 micro-batch 的
    backward。"""
    dp = split.dp

    def comm(what: str, op: str, count: int, nbytes: float, when: str, w: float) -> TrainComm:
        t, link = _dp_all_reduce(nbytes, split, device, per_node, nic)
        t = t if op == "all_reduce" else _half(t)
        return TrainComm(what, op, count, nbytes, dp, link, _times(t, count), True, when, w)

    after_step = "weight all-gather after the optimizer step"
    if split.zero == 0:
        return [comm("DP gradient all-reduce", "all_reduce", 1, grads, "last backward", window)]
    if split.zero == 1:
        return [
            comm("gradient reduce-scatter", "reduce_scatter", 1, grads, "last backward", window),
            comm(after_step, "all_gather", 1, weights, "step", math.inf),
        ]
    if split.zero == 2:
        return [
            comm("gradient reduce-scatter", "reduce_scatter", m, grads, "micro-step", math.inf),
            comm(after_step, "all_gather", 1, weights, "step", math.inf),
        ]
    scatter = comm("gradient reduce-scatter", "reduce_scatter", m, grads, "micro-step", math.inf)
    if not split.reshard:
        kept = comm("FSDP weight all-gather, kept for the step", "all_gather", 1, weights, "step",
                    math.inf)  # fmt: skip
        return [kept, scatter]
    return [
        comm("FSDP weight all-gather, forward", "all_gather", m, weights, "micro-step", math.inf),
        comm("FSDP weight all-gather, backward", "all_gather", m, weights, "micro-step", math.inf),
        scatter,
    ]


def _activations(
    c: ModelConfig,
    tokens: int,
    split: TrainSplit,
    m: int,
    saving: str,
    recompute: bool,
) -> dict[str, float]:
    """每块设备最多的激活：``tokens`` 是一个 micro-batch 的 token 数。1F1B 的第一个 stage 同时
    存 ``min(m, pp)`` 个 micro-batch 的层，最后一个 stage 存一个 micro-batch 的层与 logits；取
    两者中总量大的一个。TP 时假定 sequence parallel，各项除以 ``tp``。"""
    layers = math.ceil(c.layers / split.pp)
    full = sum(layer_activation_bytes(c, saving=saving).values()) * tokens / split.tp
    head = head_activation_bytes(c, saving=saving)
    logits = sum(head.values()) * tokens / split.tp
    if recompute:  # each layer's BF16 input, and one layer's activations while it runs backward
        kept = bytes_per_element("bf16") * c.hidden * tokens / split.tp * layers + full
    else:
        kept = full * layers
    first = kept * min(m, split.pp) if not recompute else (kept - full) * min(m, split.pp) + full
    last = kept + logits
    if split.pp > 1 and first > last:
        return {"activations": first, "logits and loss": 0.0}
    return {"activations": kept, "logits and loss": logits}


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
    saving: str = "eager",
    grad_dtype: str = "bf16",
    per_node: int = GPUS_PER_NODE,
    net: Network | None = None,
) -> TrainingStep:
    """一步训练：``batch`` 条 ``seq`` 个 token 的序列（全局），在 ``split.devices`` 块设备上。

    每个 DP 副本做 ``batch / dp`` 条序列，每次 ``micro_batch`` 条，共
    ``m = batch / (dp x micro_batch)`` 个 micro-step（PP 时即走过 ``pp`` 个 stage 的 micro-batch，
    1F1B，气泡 ``(p - 1) / (m + p - 1)``）。

    内存每块设备：16 位权重 2 字节、梯度 2 或 4 字节（``grad_dtype``：Megatron 的 FP32
    ``main_grad``、Llama 3 的 FP32 reduce-scatter 取 ``"fp32"``）、Adam 状态 12 字节每个权重，按
    ZeRO 阶段除以 ``dp``（ZeRO-3 ``reshard=False`` 时权重不除）；激活按模型自己的层
    （:mod:`~roofline_book.distributed.activations`，``saving`` 选写法），
    ``micro_batch x seq`` 个 token，recompute 时每层只存 BF16 的输入；TP 时按 Megatron 的 sequence
    parallel，各项除以 ``tp``。FSDP 当前与预取的一两层聚合后
    的权重不计。

    通信见模块说明：每个集合通信的次数按 micro-step 计，DP 的梯度归约（ZeRO 0、1）只能与最后一个
    micro-batch 的 backward 重叠。``seq`` 不能超过模型的上下文窗口。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> s = train(model("llama-3-8b"), hardware("h100-sxm"), TrainSplit(dp=64), batch=512, seq=4096)
    >>> s.accumulation_steps, [c.when for c in s.comms]
    (8, ['last backward'])
    >>> 0.5 < s.mfu <= 1.0
    True
    """
    batch = _validate.size("batch", batch)
    seq = _validate.size("seq", seq)
    micro_batch = _validate.size("micro_batch", micro_batch)
    saving = _validate.choice("saving", saving, SAVINGS)
    grad_dtype = _validate.choice("grad_dtype", grad_dtype, GRAD_DTYPES)
    c, sp = config, split
    if sp.devices > 1:
        _link(device)
    if seq > c.max_context:
        raise InvalidArgument("seq", f"{seq} is beyond {c.key}'s context window ({c.max_context})")
    sp.check(c, per_node=per_node)
    if batch % (sp.dp * micro_batch):
        raise InvalidArgument(
            "batch", f"{batch} must be a multiple of DP x micro-batch ({sp.dp} x {micro_batch})"
        )
    a = bytes_per_element(dtype)
    peak = device.peak_flops(dtype)
    m = batch // (sp.dp * micro_batch)
    tokens = batch * seq
    hardware_flops = training_flops(c, tokens, seq, recompute=recompute)
    bubble = (sp.pp - 1) / (m + sp.pp - 1)
    busy = hardware_flops / sp.devices / peak
    compute = busy / (1 - bubble)
    backward = busy / m * (3 / 4 if recompute else 2 / 3)  # one micro-batch's backward
    # memory per device
    phi = c.parameters() / (sp.tp * sp.pp)
    g_bytes = bytes_per_element(grad_dtype)
    shard = {0: (1, 1, 1), 1: (1, 1, sp.dp), 2: (1, sp.dp, sp.dp), 3: (sp.dp, sp.dp, sp.dp)}
    w, g, o = shard[sp.zero]
    if sp.zero == 3 and not sp.reshard:
        w = 1
    memory = {
        "weights": 2 * phi / w,
        "gradients": g_bytes * phi / g,
        "optimizer": ADAM_BYTES_PER_PARAMETER * phi / o,
        **_activations(c, micro_batch * seq, sp, m, saving, recompute),
    }
    # communication per step, counted per micro-step
    nic = net or network(DEFAULT_NETWORK)
    comms: list[TrainComm] = []
    if sp.dp > 1:
        comms += _dp_comms(sp, m, 2 * phi, g_bytes * phi, backward, device, per_node, nic)
    layers = math.ceil(c.layers / sp.pp)
    act = micro_batch * seq * c.hidden * a
    if sp.tp > 1:
        n = (6 if recompute else 4) * layers * m
        t = _times(all_reduce(act, sp.tp, device), n)
        what = "Megatron TP all-reduces (forward, backward)"
        comms.append(
            TrainComm(what, "all_reduce", n, act, sp.tp, device.link, t, False, "micro-step")
        )
    if sp.pp > 1:
        bw, lat = _link(device)
        across = sp.tp * sp.pp > per_node
        b, alpha, link = (nic.bandwidth, nic.latency, nic.key) if across else (bw, lat, device.link)
        n = 2 * m  # each micro-batch: its activations forward, their gradients back
        t = _times(collective_time("send_recv", act, 2, b, alpha), n)
        what = "PP hand-off (activations, gradients)"
        comms.append(TrainComm(what, "send_recv", n, act, 2, link, t, True, "micro-step"))
    return TrainingStep(
        compute_s=compute,
        bubble=bubble,
        comms=tuple(comms),
        memory_bytes_per_device=MappingProxyType(memory),
        model_flops=training_flops(c, tokens, seq),
        devices=sp.devices,
        peak=peak,
        micro_batch=micro_batch,
        accumulation_steps=m,
        micro_backward_s=backward,
        saving=saving,
        grad_dtype=grad_dtype,
    )


__all__ = [
    "ADAM_BYTES_PER_PARAMETER",
    "GRAD_DTYPES",
    "WHEN",
    "TrainComm",
    "TrainSplit",
    "TrainingStep",
    "train",
    "training_flops",
]
