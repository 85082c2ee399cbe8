"""多块 GPU 上的推理：TP、PP、EP 切分下每块设备的算子、权重与 KV cache，以及每一步的集合通信。

一种切分把每块设备的工作（FLOPs、HBM 字节）除以它的份数，同时加上设备之间必须搬运的字节。通信
的代价来自 :mod:`roofline_book.distributed.collectives` 的 alpha-beta
模型：带宽项（字节除以每个方向的链路
带宽）计入时间下界，与计算取大者（两者可以重叠）；延迟项（NCCL 调优模型的 ``baseLat`` 加每一步
``alpha``）单独列出，是估计，不计入下界，因为 one-shot all-reduce kernel（TensorRT-LLM 的、sglang
沿用的，和 vLLM 自己的 custom all-reduce）与 NVLink SHARP 把小消息的延迟压到 ring 模型之下。

链路：一个节点内（至多 ``per_node`` 块 GPU）走设备的 ``link_bandwidth``（NVLink、Infinity Fabric
或 PCIe），跨节点走一个 NIC（:func:`roofline_book.devices.catalog.network`）。交换芯片能在网络中归约
（``link_reduces``，NVLink SHARP）时，all-reduce 的带宽项取每块设备送出、收回整个缓冲区一次的
下限（``f = 1``：rank i 输入的每个元素都影响其他每个 rank 的输出，它至少要送出 ``S``、收进 ``S``）；
否则取 ring 的 ``2(n-1)/n``，这是不在网络中归约的任何算法的下限。通信的 roofline（每送出一个字节
要做多少 FLOPs，计算才盖得住通信）在 :mod:`roofline_book.distributed.comm`。

Examples
--------
Llama-3-70B 在 8 块 H100 上做 TP=8：每块设备存 1/8 的权重。

>>> from roofline_book import hardware
>>> from roofline_book.llm.inference import model
>>> s = infer(model("llama-3-70b"), hardware("h100-sxm"), Split(tp=8), batch=1, context=4096)
>>> round(s.weight_bytes_per_device / 1e9, 2)
17.64
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..devices.catalog import network
from ..devices.device import Hardware, Network
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from ..llm.inference import (
    StepOp,
    kv_cache_bytes,
    step_entries,
    step_time,
    traffic_parts,
)
from ..llm.quantization import Precisions
from ..llm.serving import MEMORY_RESERVE, activation_peak
from ..ops import ZERO, Cost
from ..ops.attn import attention_keys
from ..roofline.roofs import time_bound
from .collectives import NCCL_BASE_LATENCY, CommTime, collective_time, switch_share

# re-exported: the split, the node size and the dispatch's copies are part of this module's API
from .routing import GPUS_PER_NODE as GPUS_PER_NODE
from .routing import dispatch_copies as dispatch_copies
from .split import Split as Split

DEFAULT_NETWORK = "ib-ndr"
"""节点之间默认的网络：每块 GPU 一个 400 Gb/s InfiniBand NDR 端口（DGX H100 的做法）。"""


def _link(device: Hardware) -> tuple[float, float]:
    if device.link_bandwidth is None or device.link_latency is None:
        raise InvalidArgument("device", f"{device.key} has no interconnect in the catalog")
    return device.link_bandwidth, device.link_latency


def _nccl(t: CommTime, devices: int) -> CommTime:
    """加上 NCCL 调优模型中 ring 集合通信的固定延迟 ``baseLat``（只有一块设备时不通信）。"""
    base = NCCL_BASE_LATENCY if devices > 1 else 0.0
    return CommTime(latency_s=base + t.latency_s, bandwidth_s=t.bandwidth_s)


def all_reduce(nbytes: float, devices: int, device: Hardware) -> CommTime:
    """``devices`` 块 ``device`` 在节点内 all-reduce ``nbytes`` 字节（每块设备的缓冲区）的时间。

    带宽项：交换芯片会归约时取 ``nbytes / B``（每块设备把缓冲区送出一次、收回一次，``f = 1``），
    否则取 ring 的 ``2(n-1)/n x nbytes / B``；延迟项是 NCCL 调优模型对 ring（LL 协议）的估计
    ``baseLat + 2(n-1) alpha``
    （:data:`~roofline_book.distributed.collectives.NCCL_BASE_LATENCY`）。

    Examples
    --------
    8 块 H100 all-reduce 16 KiB：NVLink SHARP 让每块设备送出 16384 字节、收回 16384 字节，450 GB/s：

    >>> from roofline_book import hardware
    >>> t = all_reduce(16384, 8, hardware("h100-sxm"))
    >>> round(t.bandwidth_s * 1e9, 1), round(t.latency_s * 1e6, 2)   # 16384 / 450e9; 6.6 + 14 x 0.6
    (36.4, 15.0)
    """
    bw, lat = _link(device)
    ring = _nccl(collective_time("all_reduce", nbytes, devices, bw, lat), devices)
    if not device.link_reduces:
        return ring
    return CommTime(latency_s=ring.latency_s, bandwidth_s=switch_share(devices) * nbytes / bw)


def _shard(cost: Cost, flops: int, nbytes: int) -> Cost:
    """``cost`` 的 FLOPs 除以 ``flops``，字节除以 ``nbytes``（向下取整，下界只会更低）。"""
    return Cost(
        cost.flops // flops,
        cost.bytes_read // nbytes,
        cost.bytes_written // nbytes,
        cost.kernels,
        vector_flops=cost.vector_flops // flops,
        special_flops=cost.special_flops // flops,
        vector_fma_flops=cost.vector_fma_flops // (2 * flops) * 2,
    )


def _is_expert(config: ModelConfig, entry: StepOp) -> bool:
    """这一项是否是 routed expert 的工作（它们的 GEMM 与其间的激活函数）。"""
    if entry.id.startswith("experts"):
        return True
    return entry.id == "activation" and config.experts > 1 and entry.layer_kind != "dense"


def _window(config: ModelConfig, entry: StepOp) -> int | None:
    local = entry.layer_kind == "local" or (
        entry.layer_kind is None and config.layer_kind(0) == "local"
    )
    return config.sliding_window if local else None


def device_ops(
    config: ModelConfig,
    split: Split,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
) -> list[tuple[str, Cost]]:
    """整个模型一步的算子，每个算子是一块设备上的那一份，所有 stage 依次排开（一个 batch 走完每个
    stage：PP 不缩短一步的时间）。

    TP 把每个算子的 FLOPs 与字节除以 ``tp``（norm 与 residual 按 sequence parallel 也分开），只有
    KV cache 的字节除以 ``min(tp, kv_heads)``：``tp`` 超过 KV head 数时，KV head 被复制；MLA 的
    absorbed attention 每块设备读整份 latent cache，所以它的 FLOPs 除以 ``tp``，cache 的字节不除。
    ``ep > tp`` 时，attention 一侧的算子处理 ``ceil(batch / (ep / tp))`` 条序列，routed expert
    处理整组的 token、除以 ``ep``。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
    >>> m = model("llama-3-70b")
    >>> one = dict(device_ops(m, Split(), 1, 1, 4096))
    >>> eight = dict(device_ops(m, Split(tp=8), 1, 1, 4096))
    >>> one["QKV projection (x 80)"].bytes // eight["QKV projection (x 80)"].bytes
    8
    """
    p = precisions or Precisions()
    split.check(config)
    tp, kvs = split.tp, split.kv_shards(config)
    local = math.ceil(batch / split.attention_dp)
    s_kv = bytes_per_element(p.kv)
    entries = step_entries(config, local, new, context, p)
    whole = {e.key: e for e in step_entries(config, batch, new, context, p)}
    ops = []
    for e in entries:
        if _is_expert(config, e):
            n = split.expert_shards
            part = _shard(whole[e.key].cost, n, n)
        elif e.id == "attention" and "expanded" not in e.name:
            layers = e.layers or 1
            keys = attention_keys(new, context, _window(config, e))
            kv = local * s_kv * config.kv_elements * keys * layers
            cost = e.cost
            rest = Cost(
                cost.flops,
                cost.bytes_read - kv,
                cost.bytes_written,
                cost.kernels,
                vector_flops=cost.vector_flops,
                special_flops=cost.special_flops,
            )
            part = _shard(rest, tp, tp) + Cost(0, kv // kvs, 0, 0)
        elif e.id == "kv_cache_write":
            part = _shard(e.cost, 1, kvs)
        else:
            part = _shard(e.cost, tp, tp)
        ops.append((e.label, part))
    return ops


@dataclass(frozen=True)
class Comm:
    """一次集合通信在一步中的总代价。"""

    what: str
    op: str
    count: int
    nbytes: float
    """每次、每块设备的缓冲区（byte）。"""
    devices: int
    link: str
    time: CommTime
    """``count`` 次合计。"""
    overlaps: bool = False
    """能否与计算重叠（数据依赖允许时）。"""


def _times(t: CommTime, count: int) -> CommTime:
    return CommTime(latency_s=t.latency_s * count, bandwidth_s=t.bandwidth_s * count)


def inference_comms(
    config: ModelConfig,
    split: Split,
    batch: int,
    new: int,
    device: Hardware,
    precisions: Precisions | None = None,
    *,
    per_node: int = GPUS_PER_NODE,
    net: Network | None = None,
) -> list[Comm]:
    """一步推理中的通信：每层 TP 的 all-reduce（attention 输出与 MLP 输出各一次；EP 时 MoE 的 MLP
    换成 dispatch 与 combine 两次 all-to-all），vocab-parallel embedding 的 all-reduce、LM head 的
    logits all-gather，以及 ``pp - 1`` 次 stage 之间的 hand-off。

    ``ep > tp`` 时，每块设备把自己那些 token 送到它们的 expert 所在的设备（dispatch，按激活的
    精度），再收回结果（combine，BF16 或更宽）；每个 token 对每块命中的设备只送一份
    （:func:`dispatch_copies`）。节点内走 NVLink，跨节点走网络（每块 GPU 一个 NIC）；两部分同时
    进行，带宽项取大的一个。"""
    split.check(config, per_node=per_node)
    p = precisions or Precisions()
    a = bytes_per_element(p.activations)
    local = math.ceil(batch / split.attention_dp)
    tokens, h, tp = local * new, config.hidden, split.tp
    act = tokens * h * a
    bw, lat = _link(device)
    nic = net or network(DEFAULT_NETWORK)
    out: list[Comm] = []
    moe_layers = sum(config.moe_layer(i) for i in range(config.layers))
    ep_moe = config.experts > 1 and split.ep > 1
    if tp > 1:
        layers = config.layers + (config.layers - moe_layers) + (0 if ep_moe else moe_layers) + 1
        ar = all_reduce(act, tp, device)
        out.append(
            Comm(
                "TP all-reduce of the activations",
                "all_reduce",
                layers,
                act,
                tp,
                device.link,
                _times(ar, layers),
            )
        )
    if ep_moe and split.ep <= tp:
        sent = tokens * config.experts_per_token * h * a / split.ep
        t = collective_time("all_to_all", sent, split.ep, bw, lat)
        n = 2 * moe_layers
        out.append(
            Comm(
                "EP all-to-all (dispatch, combine)",
                "all_to_all",
                n,
                sent,
                split.ep,
                device.link,
                _times(t, n),
            )
        )
    elif ep_moe:
        intra, inter = dispatch_copies(config, split.ep, per_node)
        for what, width in (("dispatch", a), ("combine", max(a, 2))):
            row = tokens * h * width
            inside = intra * row / bw
            across = inter * row / nic.bandwidth
            steps = min(split.ep, per_node) - 1
            latency = (lat * steps + (nic.latency if inter else 0.0)) * moe_layers
            link = device.link if not inter else f"{device.link}+{nic.key}"
            t = CommTime(latency_s=latency, bandwidth_s=max(inside, across) * moe_layers)
            sent = (intra + inter) * row
            out.append(
                Comm(f"EP all-to-all ({what})", "all_to_all", moe_layers, sent, split.ep, link, t)
            )
    if tp > 1:
        logits = local * config.vocab * a
        t = _nccl(collective_time("all_gather", logits, tp, bw, lat), tp)
        out.append(Comm("LM head logits all-gather", "all_gather", 1, logits, tp, device.link, t))
    if split.pp > 1:
        across = split.devices > per_node
        link, b, alpha = (nic.key, nic.bandwidth, nic.latency) if across else (device.link, bw, lat)
        t = collective_time("send_recv", act, 2, b, alpha)
        n = split.pp - 1
        out.append(Comm("PP stage hand-off", "send_recv", n, act, 2, link, _times(t, n)))
    return out


@dataclass(frozen=True)
class ParallelStep:
    """一步推理在一组设备上的下界。

    ``device_s``：一块设备上算子一个接一个的时间（:func:`roofline_book.llm.inference.step_time`）。
    ``seconds`` = ``device_s`` 与通信带宽项中大的一个：通信与计算可以重叠（GEMM 与 all-reduce 融合的
    kernel 就这样做），所以两者之和不是下界；
    ``floor_s`` = 一块设备上任何实现（融合、重叠）的下界 ``device_floor_s`` 与通信带宽项中大的一个；
    ``serial_s`` = ``device_s`` 加通信带宽项，是计算与通信不重叠时的估计，不是下界。
    ``latency_s`` 是通信的延迟项，不计入以上任何一个。

    Examples
    --------
    设备 3 ms、通信带宽项 1 ms：下界 max(3, 1) = 3 ms，不重叠时的估计 3 + 1 = 4 ms，通信占 1/4。

    >>> s = ParallelStep(3e-3, 2e-3, 1e-3, 5e-3, ())
    >>> s.seconds, s.serial_s, s.floor_s, s.share
    (0.003, 0.004, 0.002, 0.25)
    """

    device_s: float
    device_floor_s: float
    communication_s: float
    latency_s: float
    comms: tuple[Comm, ...]

    @property
    def seconds(self) -> float:
        return max(self.device_s, self.communication_s)

    @property
    def serial_s(self) -> float:
        return self.device_s + self.communication_s

    @property
    def floor_s(self) -> float:
        return max(self.device_floor_s, self.communication_s)

    @property
    def share(self) -> float:
        """通信带宽项占不重叠时的估计 ``serial_s`` 的比例。"""
        return self.communication_s / self.serial_s


@dataclass(frozen=True)
class ParallelInference:
    """一组设备上的推理：每块设备的内存、最大 batch、prefill 与 decode 一步的下界。"""

    split: Split
    weight_bytes_per_device: int
    kv_bytes_per_sequence_per_device: int
    activation_bytes_per_device: int
    capacity: float | None
    max_batch: int | None
    prefill: ParallelStep
    decode: ParallelStep


def weight_bytes_per_device(
    config: ModelConfig, split: Split, precisions: Precisions | None = None
) -> int:
    """权重最多的那块设备上的权重字节数（byte）。

    每层的权重除以 ``tp``，但 K、V 投影只除以 ``min(tp, kv_heads)``（被复制的 KV head 连同权重一起
    复制）；``ep > tp`` 时 routed expert 不按 TP 切，每块设备放 ``ceil(experts / ep)`` 个整的；每个
    stage 有 ``ceil(layers / pp)`` 层（取权重最多的 stage）；embedding 与 LM head 按词表切成 ``tp``
    份，``pp > 1`` 时分别在第一个与最后一个 stage，取大的一个。

    Examples
    --------
    >>> from roofline_book.llm.inference import model, weight_bytes
    >>> m = model("llama-3-70b")
    >>> round(weight_bytes_per_device(m, Split(tp=8)) / 1e9, 2), round(weight_bytes(m) / 8e9, 2)
    (17.64, 17.64)
    """
    p = precisions or Precisions()
    split.check(config)
    c, h = config, config.hidden
    kv = 0 if c.mla else p.weight_bytes(h * c.kv_elements)
    norms = p.table_bytes(c.norm_parameters())
    per_expert = (3 if c.gated else 2) * h * c.ffn
    layers = []
    for i in range(c.layers):
        matrices = p.weight_bytes(c.layer_matrix_parameters(layer=i)) - kv
        if c.moe_layer(i) and split.ep > split.tp:
            routed = p.weight_bytes(c.experts * per_expert)
            held = p.weight_bytes(math.ceil(c.experts / split.ep) * per_expert)
            matrices, extra = matrices - routed, held
        else:
            extra = 0
        layers.append(matrices // split.tp + kv // split.kv_shards(c) + norms + extra)
    size = math.ceil(c.layers / split.pp)
    stage = max(sum(layers[j : j + size]) for j in range(0, c.layers, size))
    table = p.table_bytes(c.vocab * h) // split.tp
    tables = table * (1 if c.tied_embeddings else 2) if split.pp == 1 else table
    return stage + tables + p.table_bytes(h)


def _step(config, split, batch, new, context, device, p, per_node, net) -> ParallelStep:
    ops = device_ops(config, split, batch, new, context, p)
    comms = inference_comms(config, split, batch, new, device, p, per_node=per_node, net=net)
    total = sum((cost for _, cost in ops), ZERO)
    # the compulsory traffic of one device: its share of the attention side (its sequences, the
    # weights / tp, the cache / tp; MLA's latent, which every TP rank reads whole, / 1) and of
    # the experts (the group's tokens' experts / shards); KV heads replicated when tp exceeds
    # them move more than this, so the floor stays below every implementation
    local = math.ceil(batch / split.attention_dp)
    mine = traffic_parts(config, local, new, context, p)
    experts = traffic_parts(config, batch, new, context, p).experts // split.expert_shards
    cache = mine.cache // (1 if config.mla else split.tp)
    traffic = (mine.weights + mine.tables + mine.logits) // split.tp + cache + experts
    floor = total.fused(traffic)
    return ParallelStep(
        device_s=step_time(ops, device, p).seconds,
        device_floor_s=time_bound(floor, device, p.activations).seconds,
        communication_s=math.fsum(c.time.bandwidth_s for c in comms),
        latency_s=math.fsum(c.time.latency_s for c in comms),
        comms=tuple(comms),
    )


def infer(
    config: ModelConfig,
    device: Hardware,
    split: Split,
    *,
    batch: int = 1,
    context: int = 4096,
    prompt: int | None = None,
    precisions: Precisions | None = None,
    per_node: int = GPUS_PER_NODE,
    net: Network | None = None,
    reserve: float = MEMORY_RESERVE,
) -> ParallelInference:
    """按 ``split`` 切开的 ``config`` 在 ``split.devices`` 块设备上的内存、最大 batch 与下界。

    最大 batch 对整组而言：每块设备 ``(1 - reserve) x capacity`` 减去它的权重与激活峰值的 ``1/tp``，
    余下的除以每条序列在这块设备上的 KV cache（它的 stage 的层、``1 / min(tp, kv_heads)`` 的 KV
    head），再乘 attention 数据并行的组数（``ep > tp`` 时各组存各自序列的 cache）。``batch`` 是
    整组的序列数。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> r = infer(model("llama-3-70b"), hardware("h100-sxm"), Split(tp=8))
    >>> r.decode.communication_s < 0.01 * r.decode.seconds     # bandwidth: a sliver
    True
    >>> r.decode.latency_s > 0.2 * r.decode.seconds            # latency: not a sliver
    True
    """
    p = precisions or Precisions()
    split.check(config, per_node=per_node)
    prompt = context if prompt is None else _validate.size("prompt", prompt)
    weights = weight_bytes_per_device(config, split, p)
    layers = math.ceil(config.layers / split.pp)
    kv = kv_cache_bytes(config, context, p) * layers // config.layers // split.kv_shards(config)
    act = activation_peak(config, p) // split.tp
    fits = None
    if device.memory_capacity is not None:
        free = (1 - reserve) * device.memory_capacity - weights - act
        fits = max(0, math.floor(free / kv)) * split.attention_dp
    args = (device, p, per_node, net)
    return ParallelInference(
        split=split,
        weight_bytes_per_device=weights,
        kv_bytes_per_sequence_per_device=kv,
        activation_bytes_per_device=act,
        capacity=device.memory_capacity,
        max_batch=fits,
        prefill=_step(config, split, batch, prompt, prompt, *args),
        decode=_step(config, split, batch, 1, context, *args),
    )


__all__ = [
    "DEFAULT_NETWORK",
    "GPUS_PER_NODE",
    "Comm",
    "ParallelInference",
    "ParallelStep",
    "Split",
    "all_reduce",
    "device_ops",
    "dispatch_copies",
    "inference_comms",
    "infer",
    "weight_bytes_per_device",
]
