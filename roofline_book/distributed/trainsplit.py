"""训练的切分与它一步中的通信：DP（按 ZeRO 阶段）、CP 的 K/V all-gather 与 reduce-scatter、EP 的
all-to-all，各走哪条链路、要多久。

rank 的排列取 Llama 3 的 ``[TP, CP, PP, DP]`` （TP 最里层，相邻的 rank 在一个节点内），EP 取 DP 中
紧挨着 CP 的 ``ep`` 个 rank：``[TP, CP, EP, PP, DP / EP]``。一个组的 rank 都在一个节点内时走节点内的
链路，否则跨节点的字节走网卡。一步训练怎样用它们在 :mod:`roofline_book.distributed.training`。
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.device import Hardware, Network
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from .allreduce import multi_node_all_reduce
from .collectives import NCCL_BASE_LATENCY, CommTime, collective_time
from .parallel import Comm, Split, _link, _nccl, _times, all_reduce, dispatch_copies

_FP32 = 4

WHEN = ("micro-step", "last backward", "step")
"""一个集合通信在一步中何时发生：每个 micro-step 一次；只在最后一个 micro-batch 的 backward 中；
每步一次。"""


@dataclass(frozen=True)
class TrainSplit:
    """训练的切分：``dp`` 个数据并行副本，每个用 ``tp x pp x cp`` 块设备；``zero`` 为 ZeRO 的阶段
    （0：不切；1：优化器状态；2：再加梯度；3：再加权重，即 FSDP）。``reshard`` 只对 ZeRO-3 有意义：
    True（PyTorch FSDP 的默认）每个 micro-step 用完就释放聚合的权重，下次再 all-gather；False 让
    权重在整步内保持聚合。

    ``cp``：context parallel，每条序列切到 ``cp`` 块设备上，它们权重相同，ZeRO 的分片与梯度归约都
    在 ``dp x cp`` 个 rank 上。``ep``：expert parallel，MoE 层的 routed expert 分到 DP 组中的
    ``ep`` 个 rank 上（``ep`` 整除 ``dp``）；expert 的权重、梯度与优化器状态除以 ``ep``，它们的分片
    与归约在其余 ``dp x cp / ep`` 个 rank 上；attention、dense 层与 shared expert 不切。
    ``vpp``：每块设备上的虚拟 stage 数（Megatron 的 interleaved 1F1B），气泡缩为
    ``(p - 1) / (v m + p - 1)``，stage 之间的 hand-off 多 ``v`` 倍。"""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero: int = 0
    reshard: bool = True
    cp: int = 1
    ep: int = 1
    vpp: int = 1

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "cp", "ep", "vpp"):
            _validate.size(name, getattr(self, name))
        if self.vpp > 1 and self.pp == 1:
            raise InvalidArgument("vpp", f"({self.vpp}) interleaves pipeline stages: set pp > 1")
        if self.dp % self.ep:
            raise InvalidArgument(
                "ep", f"({self.ep}) must divide dp ({self.dp}): experts spread over DP ranks"
            )
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
        cp: int = 1,
        ep: int = 1,
        vpp: int = 1,
    ) -> TrainSplit:
        """``gpus`` 块设备上的切分：``dp`` 缺省为 ``gpus / (tp x pp x cp)``，给出时
        ``dp x tp x pp x cp`` 必须等于 ``gpus``。

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
        group = _validate.size("tp", tp) * _validate.size("pp", pp) * _validate.size("cp", cp)
        names = f"TP x PP = {tp} x {pp}" if cp == 1 else f"TP x PP x CP = {tp} x {pp} x {cp}"
        if gpus % group:
            raise InvalidArgument(
                "gpus", f"{gpus} must be a multiple of one replica's {names} = {group}"
            )
        dp = gpus // group if dp is None else _validate.size("dp", dp)
        if dp * group != gpus:
            cps = "" if cp == 1 else f" x CP {cp}"
            raise InvalidArgument(
                "dp", f"{dp} x TP {tp} x PP {pp}{cps} = {dp * group}, not the {gpus} GPUs"
            )
        return cls(dp=dp, tp=tp, pp=pp, zero=zero, reshard=reshard, cp=cp, ep=ep, vpp=vpp)

    @property
    def devices(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    def check(self, config: ModelConfig, *, per_node: int | None = None) -> None:
        """这个模型能否这样切：TP 与 PP 的规则与推理相同
        （:meth:`~roofline_book.distributed.split.Split.check`）；``ep`` 要一个 MoE 模型，且整除
        它的 routed expert 数。"""
        Split(tp=self.tp, pp=self.pp).check(config, per_node=per_node)
        if self.pp * self.vpp > config.layers:
            raise InvalidArgument(
                "vpp",
                f"({self.vpp}) x pp ({self.pp}) virtual stages exceed the model's "
                f"{config.layers} layers",
            )
        if self.ep > 1 and config.experts == 1:
            raise InvalidArgument(
                "ep", f"({self.ep}) needs a mixture-of-experts model; {config.key} is dense"
            )
        if config.experts % self.ep:
            raise InvalidArgument(
                "ep", f"({self.ep}) must divide the model's {config.experts} experts"
            )

    def _dims(self) -> tuple[tuple[str, int], ...]:
        return (("tp", self.tp), ("cp", self.cp), ("ep", self.ep), ("pp", self.pp),
                ("dp", self.dp // self.ep))  # fmt: skip

    def group(self, names: tuple[str, ...], per_node: int) -> tuple[int, int]:
        """由 ``names`` 中的维（``"tp"``、``"cp"``、``"ep"``、``"pp"``、``"dp"``，``"dp"`` 指
        ``dp / ep``）组成的通信组：它的 rank 数，以及其中有几个与 rank 0 在同一个节点
        （``per_node`` 块设备）内。rank 按 ``[TP, CP, EP, PP, DP / EP]`` 排列，TP 在最里层。

        Examples
        --------
        Llama 3 405B 的 TP 8、CP 16：一个 CP 组的 16 个 rank 在 16 个节点上，每个节点一个：

        >>> TrainSplit(dp=8, tp=8, pp=16, cp=16).group(("cp",), 8)
        (16, 1)
        >>> TrainSplit(dp=64, tp=1, pp=16, ep=64).group(("ep",), 8)
        (64, 8)
        """
        dims = self._dims()
        size = math.prod(n for k, n in dims if k in names)
        inside = 0
        for rank in range(min(per_node, self.devices)):
            same = True
            for k, n in dims:
                rank, index = divmod(rank, n)
                same = same and (k in names or index == 0)
            inside += same
        return size, inside


@dataclass(frozen=True)
class TrainComm(Comm):
    """训练一步中的一种集合通信：``when``
    （:data:`~roofline_book.distributed.trainsplit.WHEN`）说明它何时发生，``window_s`` 是能盖住它
    的计算时间：最后一个 backward 中的归约只有一个 micro-batch 的 backward，``math.inf`` 表示整步的
    计算都能盖住它。"""

    when: str = "step"
    window_s: float = math.inf


def _group_time(
    op: str,
    nbytes: float,
    group: tuple[int, int],
    device: Hardware,
    nic: Network,
    remote: float | None = None,
) -> tuple[CommTime, str]:
    """一个组（``group`` 为 rank 数与一个节点内的 rank 数）做 ``op`` 的时间与最忙的链路。

    all-reduce：一个节点内走节点内的链路；整节点时取分层与 NCCL 扁平 ring 中最忙链路最短的
    （:func:`~roofline_book.distributed.allreduce.multi_node_all_reduce`）；不足整节点时一个环，
    快不过最慢的链路（网卡）。all-gather、reduce-scatter 跨节点时：一个节点要从外面拿到其余
    ``n - g`` 块（每块 ``S / n``），分给它的 ``g`` 块网卡；all-to-all 跨节点时：每个 rank 的发送
    buffer 中给其他节点的一份（``remote``，缺省 ``(n - g) / n``）都走它自己的网卡。带宽项取网卡与
    节点内链路中较忙的一条（下界）；延迟项是 NCCL 的 ``baseLat`` 加 ring 的 ``n - 1`` 步网络延迟
    （估计）。
    """
    n, g = group
    bw, lat = _link(device)
    if n <= g:
        if op == "all_reduce":
            return all_reduce(nbytes, n, device), device.link
        return _nccl(collective_time(op, nbytes, n, bw, lat), n), device.link
    if op == "all_reduce":
        if n % g == 0:  # whole nodes: inside the node, then across
            t = multi_node_all_reduce(
                nbytes, g, n // g, bw, lat, nic.bandwidth, nic.latency,
                intra_reduces=device.link_reduces,
            )  # fmt: skip
            return t, nic.key
        return collective_time("all_reduce", nbytes, n, nic.bandwidth, nic.latency), nic.key
    if op == "all_to_all":
        share = (n - g) / n if remote is None else remote
        outside, inside = share * nbytes, (g - 1) / n * nbytes
    else:  # all_gather, reduce_scatter
        outside = (n - g) / (n * g) * nbytes
        inside = ((n - 1) - (n - g) / g) / n * nbytes
    t_nic, t_link = outside / nic.bandwidth, inside / bw
    latency = NCCL_BASE_LATENCY + (n - 1) * nic.latency
    return CommTime(latency_s=latency, bandwidth_s=max(t_nic, t_link)), (
        nic.key if t_nic >= t_link else device.link
    )


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
    group: tuple[int, int],
    device: Hardware,
    nic: Network,
    whose: str = "",
) -> list[TrainComm]:
    """ZeRO 阶段 ``split.zero`` 在一步中的 DP 通信：``weights``、``grads`` 是每块设备（TP、PP、EP
    切过之后）16 位权重与梯度的字节数，``m`` 个 micro-step，``window`` 是一个 micro-batch 的
    backward，``group`` 是归约它们的组（:meth:`TrainSplit.group`），``whose`` 加在名字前。"""
    n = group[0]

    def comm(what: str, op: str, count: int, nbytes: float, when: str, w: float) -> TrainComm:
        t, link = _group_time("all_reduce", nbytes, group, device, nic)
        t = t if op == "all_reduce" else _half(t)
        return TrainComm(whose + what, op, count, nbytes, n, link, _times(t, count), True, when, w)

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


def _expert_parameters(c: ModelConfig) -> int:
    """routed expert 的权重个数（EP 切的那一部分）：每个 MoE 层 ``experts`` 个 MLP。"""
    moe = sum(c.moe_layer(i) for i in range(c.layers))
    return moe * c.experts * (3 if c.gated else 2) * c.hidden * c.ffn


FP8_BLOCK = 128
"""FP8 激活的缩放块：每 128 个元素一个 FP32 scale（DeepSeek-V3 的 1 x 128 tile）。"""


def _cp_comms(c, sp, m, micro_batch, seq, a, recompute, device, per_node, nic) -> list[TrainComm]:
    """CP 每层的 K、V all-gather（forward，recompute 时再一次）与其梯度的 reduce-scatter
    （backward）。每块设备的一段是 ``micro_batch x seq / cp`` 个 token 的 K、V：GQA 每个 token
    ``kv_heads x (head_dim + v_head_dim)`` 个元素，MLA 是展开后每个 head 的 K、V；TP 把 head 分开
    （KV head 少于 ``tp`` 时每份复制）。buffer ``S`` 是 ``cp`` 段合起来的（all-gather 的输出、
    reduce-scatter 的输入）。"""
    heads = c.heads if c.mla else c.kv_heads
    width = heads * (c.d + c.vd)
    local = micro_batch * seq / sp.cp * width * a / min(sp.tp, heads)
    nbytes = sp.cp * local
    layers = math.ceil(c.layers / sp.pp)
    group = sp.group(("cp",), per_node)
    out = []
    for what, op, count in (
        ("CP K/V all-gather (forward)", "all_gather", layers * m * (2 if recompute else 1)),
        ("CP K/V gradient reduce-scatter (backward)", "reduce_scatter", layers * m),
    ):
        t, link = _group_time(op, nbytes, group, device, nic)
        out.append(TrainComm(what, op, count, nbytes, sp.cp, link, _times(t, count), True,
                             "micro-step"))  # fmt: skip
    return out


def _ep_comms(c, sp, m, micro_batch, seq, dtype, recompute, device, per_node, nic):
    """EP 每个 MoE 层每个 micro-step 的 all-to-all：forward 的 dispatch 与 combine，backward 各
    一次（recompute 时 forward 的两次再来一遍）。每块设备送出它的 ``micro_batch x seq / (cp x tp)``
    个 token（TP 时按 sequence parallel 各送一份），每份 ``hidden`` 个 BF16 元素；FP8 时 forward 的
    dispatch 送 FP8 与每 128 个元素一个 FP32 scale（DeepSeek-V3 的做法），其余仍是 BF16。

    一个 token 对每块命中的 GPU 只送一份，跨节点时对每个命中的节点只过一次网卡，到了再走节点内的
    链路分发（DeepEP 的做法；combine 反过来先在节点内归约）；份数按分组路由取期望
    （:func:`~roofline_book.distributed.routing.dispatch_copies`：DeepSeek-V3 的 token 只从 8 组
    中的 4 组里挑 expert，EP 64 时一组恰是一个节点，即 node-limited routing）。带宽项取网卡与节点
    内链路中较忙的一条。"""
    tokens = micro_batch * seq / (sp.cp * sp.tp)
    layers = min(math.ceil(c.layers / sp.pp), c.layers - c.dense_layers)
    forward = layers * m * (2 if recompute else 1)
    n, g = sp.group(("ep",), per_node)
    intra, inter = dispatch_copies(c, n, g)
    bf16 = tokens * c.hidden * bytes_per_element("bf16")
    if dtype == "fp8":
        fp8 = tokens * (c.hidden + _FP32 * math.ceil(c.hidden / FP8_BLOCK))
        parts = [
            ("EP dispatch all-to-all, forward (FP8)", forward, fp8),
            ("EP combine and backward all-to-alls (BF16)", forward + 2 * layers * m, bf16),
        ]
    else:
        parts = [("EP dispatch and combine all-to-alls (forward, backward)",
                  2 * forward + 2 * layers * m, bf16)]  # fmt: skip
    bw, lat = _link(device)
    out = []
    for what, count, row in parts:
        t_nic, t_link = inter * row / nic.bandwidth, intra * row / bw
        if n > g:
            latency = NCCL_BASE_LATENCY + (n - 1) * nic.latency
            link = nic.key if t_nic >= t_link else device.link
        else:
            latency, link = NCCL_BASE_LATENCY + (n - 1) * lat, device.link
        t = CommTime(latency_s=latency, bandwidth_s=max(t_nic, t_link))
        sent = (intra + inter) * row
        out.append(TrainComm(what, "all_to_all", count, sent, sp.ep, link, _times(t, count),
                             True, "micro-step"))  # fmt: skip
    return out


__all__ = ["FP8_BLOCK", "WHEN", "TrainComm", "TrainSplit"]
