"""训练一步的 roofline：FLOPs、每块设备的内存（按 ZeRO 阶段）、每步的通信，以及下界允许的 MFU。

一步训练在 ``dp x tp x pp x cp`` 块设备上。每个 DP 副本做 ``batch / dp`` 条序列，每次送进
``micro_batch`` 条：``m = batch / (dp x micro_batch)`` 个 micro-step（梯度累积，或流水线上的
micro-batch）。激活、流水线气泡、每个集合通信的次数与大小都由这同一个 micro-batch 决定：

- DP（ZeRO 0、1）：梯度只在最后一个 micro-batch 的 backward 中归约（此前 ``no_sync``），所以
  能盖住它的只有这一次 backward；
- ZeRO-2：每个 micro-step 把梯度 reduce-scatter 到各自的分片，优化器一步之后 all-gather 权重；
- ZeRO-3/FSDP：默认（PyTorch FSDP、FSDP2 的 ``reshard_after_forward=True``）每个 micro-step 的
  forward 与 backward 各 all-gather 一次权重，再 reduce-scatter 梯度；``reshard=False`` 时权重在
  整步内保持聚合（一次 all-gather），代价是每块设备放一份完整的 16 位权重，与 ZeRO-2 相同；
- Megatron TP 每个 micro-step 每层的 all-reduce，PP 每个 micro-step 的 stage hand-off，
  流水线气泡 ``(p - 1) / (m + p - 1)`` （每块设备 ``v`` 个虚拟 stage 时
  ``(p - 1) / (v m + p - 1)``）；
- CP（context parallel，Llama 3 与 Megatron 的做法）把每条序列切成 ``2 cp`` 段，每块设备拿首尾
  对称的两段（causal mask 下各设备的 attention 一样多）：每层 forward all-gather K、V，backward
  reduce-scatter 它们的梯度；CP 的各 rank 权重相同，梯度在 ``dp x cp`` 个 rank 上归约；
- EP（expert parallel）把 MoE 层的 routed expert 分到 DP 组中的 ``ep`` 个 rank 上：每个 MoE 层
  每个 micro-step 的 dispatch 与 combine 两次 all-to-all，forward、backward 各一遍。

切分、rank 的排列与各种通信走哪条链路在 :mod:`roofline_book.distributed.trainsplit`。

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
from .._base.validate import InvalidArgument
from ..devices.catalog import network
from ..devices.device import Hardware, Network
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from .activations import SAVINGS, head_activation_bytes, layer_activation_bytes
from .collectives import collective_time
from .parallel import DEFAULT_NETWORK, GPUS_PER_NODE, _link, _times, all_reduce
from .trainsplit import (
    FP8_BLOCK,
    WHEN,
    TrainComm,
    TrainSplit,
    _cp_comms,
    _dp_comms,
    _ep_comms,
    _expert_parameters,
)

ADAM_BYTES_PER_PARAMETER = 12
"""混合精度 Adam 的优化器状态：FP32 主权重、一阶矩、二阶矩，各 4 字节（ZeRO 论文的 K = 12）。"""

GRAD_DTYPES = ("bf16", "fp32")
"""梯度的精度：它决定每块设备上梯度的字节数，也决定 DP 归约送出的字节数。"""


def _forward_flops(config: ModelConfig, tokens: int, seq: int) -> tuple[int, int, int]:
    """``tokens`` 个 token 一次 forward 的 FLOPs，分三部分：各层的矩阵乘法、LM head、attention。"""
    c = config
    layers = 2 * c.matrix_parameters(active=True) * tokens
    head = 2 * c.vocab * c.hidden * tokens
    # causal: a query sees seq / 2 keys on average; 2 d_qk a key for QK^T, 2 d_v for PV
    attention = seq * c.heads * (c.d + c.vd) * c.layers * tokens
    return layers, head, attention


def training_flops(config: ModelConfig, tokens: int, seq: int, *, recompute: bool = False) -> int:
    """一步训练的 FLOPs：每个 token ``6 N`` （forward 2N，backward 4N），加上 causal attention 每层
    每个 token 的 ``3 x seq x heads x (d_qk + d_v)``；``recompute`` 时 backward 前再做一遍 forward
    （2N 与一份 attention）。``N`` 是矩阵乘法的权重数：各层的
    （:meth:`~roofline_book.llm.shape.ModelConfig.matrix_parameters`，MoE 只计每个 token 用到的
    expert 与 shared expert，dense 的前几层按 dense 计；MLA 的压缩与展开投影都在其中）加 LM head，
    embedding 查表没有 FLOPs。

    attention 的 forward：一个 query 与 ``seq`` 个 key 的分数 ``q k^T`` 每个 head 要 ``2 d_qk`` 个
    FLOP，按分数加权 value 要 ``2 d_v``；causal mask 下一个 query 平均看 ``seq / 2`` 个 key，每个
    token 每层 ``seq x heads x (d_qk + d_v)``。``d_qk`` 是 query/key 的宽度（``head_dim``，MLA 是
    不带位置的一段加 RoPE 的一段，DeepSeek-V3 为 128 + 64），``d_v`` 是 value 的宽度
    （``v_head_dim``）；两者相等时即 ``2 x seq x heads x d``。MLA 训练时把 latent 展开成每个 head 的
    K、V 再做 attention（展开的投影在 ``N`` 里），所以按展开的宽度计。

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
    return sum(_forward_flops(config, tokens, seq)) * (4 if recompute else 3)


@dataclass(frozen=True)
class TrainingStep:
    """一步训练的下界。

    ``compute_s``：每块设备的 FLOPs 除以矩阵单元峰值（FP8 时各层的矩阵乘法按 FP8 峰值
    ``gemm_peak``，其余按 BF16 峰值 ``peak``），乘以流水线的 ``(m + p - 1) / m``。
    ``seconds``：一切能重叠的都重叠时的下界：计算、每条链路上的通信之和，以及每个只能在一个窗口
    里重叠的通信（``compute - window + t``）中最大的一个。``exposed_s``：不重叠的通信（Megatron
    默认的 TP all-reduce）加在计算之后，其余照旧。``mfu`` 取 ``exposed_s``，即按默认做法配置的一步；
    ``mfu_all_overlap`` 取 ``seconds``。MFU 都对 ``peak`` （FP8 训练时也是 BF16 的峰值）；
    ``mfu_at_gemm_peak`` 对矩阵乘法所用精度的峰值。
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
    dtype: str = "bf16"
    gemm_peak: float = 0.0
    """各层矩阵乘法所用精度的峰值；0 表示等于 ``peak``。"""

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
    def floor_s(self) -> float:
        """任何流水线调度下的下界：与 ``seconds`` 相同，但不计流水线气泡（zero-bubble 调度与
        DualPipe 几乎把它消掉），所以它不依赖 1F1B 或 interleaved 的选择。"""
        return self._bound(self.compute_s * (1 - self.bubble), list(self.comms))

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
    def mfu_at_gemm_peak(self) -> float:
        """同 :attr:`mfu`，但对矩阵乘法所用精度的峰值（FP8 时是 FP8 的峰值）。"""
        return self.mfu * self.peak / (self.gemm_peak or self.peak)

    @property
    def flops_per_device_s(self) -> float:
        """下界允许的每块设备的模型 FLOP/s：模型 FLOPs 除以 ``devices x exposed_s``，即论文里的
        “TFLOPs/GPU”。"""
        return self.model_flops / (self.devices * self.exposed_s)

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory_bytes_per_device.values())


def _activations(
    c: ModelConfig,
    tokens: float,
    split: TrainSplit,
    m: int,
    saving: str,
    recompute: bool,
) -> dict[str, float]:
    """每块设备最多的激活：``tokens`` 是一个 micro-batch 在一块设备上的 token 数（CP 时是序列的
    ``1 / cp``）。1F1B 的第一个 stage 同时存 ``min(m, pp)`` 个 micro-batch 的层，最后一个 stage 存
    一个 micro-batch 的层与 logits；取两者中总量大的一个。TP 时假定 sequence parallel，各项除以
    ``tp``。dense 的前几层与 MoE 层留的不同时，每层按大的一种计。"""
    layers = math.ceil(c.layers / split.pp)
    kinds = {0, c.layers - 1}
    per_layer = max(sum(layer_activation_bytes(c, saving=saving, layer=i).values()) for i in kinds)
    full = per_layer * tokens / split.tp
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
    1F1B，气泡 ``(p - 1) / (m + p - 1)``；``split.vpp`` 个虚拟 stage 时
    ``(p - 1) / (v m + p - 1)``）。CP 时每条序列分到 ``cp`` 块设备上，``seq`` 必须是
    ``2 cp`` 的倍数（每块设备拿首尾对称的两段，causal mask 下负载相同）；每块设备的激活、TP 与 PP
    的通信都按 ``seq / cp`` 个 token。

    内存每块设备：16 位权重 2 字节、梯度 2 或 4 字节（``grad_dtype``：Megatron 的 FP32
    ``main_grad``、Llama 3 的 FP32 reduce-scatter 取 ``"fp32"``）、Adam 状态 12 字节每个权重，按
    ZeRO 阶段除以 ``dp x cp`` （routed expert 的除以 ``ep``，再按 ZeRO 除以 ``dp x cp / ep``；
    ZeRO-3 ``reshard=False`` 时权重不除）；激活按模型自己的层
    （:mod:`~roofline_book.distributed.activations`，``saving`` 选写法），
    ``micro_batch x seq / cp`` 个 token，recompute 时每层只存 BF16 的输入；TP 时按 Megatron 的
    sequence parallel，各项除以 ``tp``。FSDP 当前与预取的一两层聚合后的权重不计。

    ``dtype="fp8"``：各层的矩阵乘法按 FP8 的 dense 峰值（W8A8、按块缩放，DeepSeek-V3 的训练
    做法），attention、LM head、norm 与优化器仍按 BF16/FP32，激活、权重与梯度的字节不变（FP8 为
    backward 留下的激活副本不计，内存偏多）；MFU 仍对 BF16 的峰值，``mfu_at_gemm_peak`` 对 FP8 的。

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
    if sp.cp > 1 and seq % (2 * sp.cp):
        raise InvalidArgument(
            "cp",
            f"({sp.cp}) needs seq ({seq}) to be a multiple of 2 x cp = {2 * sp.cp}: each device "
            "takes two of the 2 x cp chunks, balanced under the causal mask",
        )
    sp.check(c, per_node=per_node)
    if batch % (sp.dp * micro_batch):
        raise InvalidArgument(
            "batch", f"{batch} must be a multiple of DP x micro-batch ({sp.dp} x {micro_batch})"
        )
    fp8 = dtype == "fp8"
    a = bytes_per_element("bf16" if fp8 else dtype)
    peak = device.peak_flops("bf16" if fp8 else dtype)
    gemm_peak = device.peak_flops(dtype)
    m = batch // (sp.dp * micro_batch)
    tokens = batch * seq
    times = 4 if recompute else 3
    layer_flops, head_flops, attention_flops = _forward_flops(c, tokens, seq)
    bubble = (sp.pp - 1) / (sp.vpp * m + sp.pp - 1)
    busy = times * (layer_flops / gemm_peak + (head_flops + attention_flops) / peak) / sp.devices
    compute = busy / (1 - bubble)
    backward = busy / m * (3 / 4 if recompute else 2 / 3)  # one micro-batch's backward
    # memory per device: the routed experts split over ep, the rest not
    experts = _expert_parameters(c) if sp.ep > 1 else 0
    g_bytes = bytes_per_element(grad_dtype)
    parts: list[tuple[int, int, tuple[str, ...]]] = [
        (c.parameters() - experts, 1, ("cp", "ep", "dp"))
    ]
    if experts:
        parts.append((experts, sp.ep, ("cp", "dp")))
    memory = {"weights": 0.0, "gradients": 0.0, "optimizer": 0.0}
    for n, ep, _ in parts:
        phi = n / (sp.tp * sp.pp * ep)
        ranks = sp.dp * sp.cp // ep
        w, g, o = {0: (1, 1, 1), 1: (1, 1, ranks), 2: (1, ranks, ranks),
                   3: (ranks, ranks, ranks)}[sp.zero]  # fmt: skip
        if sp.zero == 3 and not sp.reshard:
            w = 1
        memory["weights"] += 2 * phi / w
        memory["gradients"] += g_bytes * phi / g
        memory["optimizer"] += ADAM_BYTES_PER_PARAMETER * phi / o
    memory.update(_activations(c, micro_batch * seq / sp.cp, sp, m, saving, recompute))
    # communication per step, counted per micro-step
    nic = net or network(DEFAULT_NETWORK)
    comms: list[TrainComm] = []
    for n, ep, dims in parts:
        group = sp.group(dims, per_node)
        if group[0] > 1:
            phi = n / (sp.tp * sp.pp * ep)
            whose = "experts' " if ep > 1 else ""
            comms += _dp_comms(sp, m, 2 * phi, g_bytes * phi, backward, group, device, nic, whose)
    layers = math.ceil(c.layers / sp.pp)
    act = micro_batch * seq / sp.cp * c.hidden * a
    if sp.tp > 1:
        n = (6 if recompute else 4) * layers * m
        t = _times(all_reduce(act, sp.tp, device), n)
        what = "Megatron TP all-reduces (forward, backward)"
        comms.append(
            TrainComm(what, "all_reduce", n, act, sp.tp, device.link, t, False, "micro-step")
        )
    if sp.cp > 1:
        comms += _cp_comms(c, sp, m, micro_batch, seq, a, recompute, device, per_node, nic)
    if sp.ep > 1:
        comms += _ep_comms(c, sp, m, micro_batch, seq, dtype, recompute, device, per_node, nic)
    if sp.pp > 1:
        bw, lat = _link(device)
        across = sp.tp * sp.cp * sp.ep * sp.pp > per_node
        b, alpha, link = (nic.bandwidth, nic.latency, nic.key) if across else (bw, lat, device.link)
        n = 2 * m * sp.vpp  # each micro-batch, each virtual stage: activations on, gradients back
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
        dtype=dtype,
        gemm_peak=gemm_peak,
    )


__all__ = [
    "ADAM_BYTES_PER_PARAMETER",
    "FP8_BLOCK",
    "GRAD_DTYPES",
    "WHEN",
    "TrainComm",
    "TrainSplit",
    "TrainingStep",
    "train",
    "training_flops",
]
