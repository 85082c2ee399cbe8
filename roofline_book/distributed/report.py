"""一个语言模型按一种切分推理的回答：内存、装得下的 batch、prefill 与 decode 一步的下界。

:func:`inference_report` 对任何切分都给出同一种 :class:`InferenceReport`，``Split()`` （一块设备，
不需要链路）也一样：一块设备时数字来自 :mod:`roofline_book.llm.inference` 与
:mod:`roofline_book.llm.serving`，切开时来自 :func:`roofline_book.distributed.parallel.infer`。
``roofline-book infer`` 只解析参数、调用它、渲染它；装不下时，:func:`tp_that_fits` 找出能装下的
最小 TP。

Examples
--------
>>> from roofline_book import hardware
>>> from roofline_book.llm.inference import model
>>> r = inference_report(model("llama-3-8b"), hardware("h100-sxm"), batch=16)
>>> r.context, r.max_batch, r.weight_bytes_per_device == r.weight_bytes
(4096, 111, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base.validate import InvalidArgument
from ..devices.device import Hardware, Network
from ..llm.config import ModelConfig
from ..llm.inference import (
    Op,
    StepOp,
    decode_batch_to_ridge,
    kv_bytes_per_token,
    kv_cache_bytes,
    layer_ops,
    step_entries,
    step_floor,
    step_time,
    weight_bytes,
)
from ..llm.quantization import Precisions
from ..llm.serving import MEMORY_RESERVE, activation_peak, max_batch
from .parallel import GPUS_PER_NODE, Comm, ParallelStep, Split, _link, device_ops, infer

DEFAULT_CONTEXT = 4096
"""没有给出 ``context`` 时的上下文长度（token）；模型的窗口更短时取窗口。"""


@dataclass(frozen=True)
class StepReport:
    """prefill 或 decode 的一步：下界、通信，以及切分之前的算子。

    ``seconds``：算子一个接一个（切开时与通信带宽项取大者，见
    :class:`~roofline_book.distributed.parallel.ParallelStep`）；``floor_s``：任何实现的下界；
    ``communication_s``、``latency_s``：通信的带宽项（在下界中）与延迟项（估计，不在下界中），
    一块设备时为 0。``layer_ops`` 是一层（第 0 层）的算子，``ops`` 是整个模型的，都不切开；
    ``device_ops`` 是整个模型在一块设备上的那一份（:func:`~.parallel.device_ops`；一块设备时
    即 ``ops``）：TP 把 MLA absorbed attention 的 FLOPs 除以 ``tp``、latent cache 的字节不除，
    它的算术强度在这里才看得到。
    """

    seconds: float
    floor_s: float
    communication_s: float
    latency_s: float
    comms: tuple[Comm, ...]
    layer_ops: tuple[Op, ...]
    ops: tuple[StepOp, ...]
    device_ops: tuple[StepOp, ...] = ()


@dataclass(frozen=True)
class InferenceReport:
    """一个模型在 ``split.devices`` 块设备上推理：每块设备的内存、最大 batch 与两步的下界
    （byte、s）。"""

    config: ModelConfig
    device: Hardware
    split: Split
    precisions: Precisions
    batch: int
    context: int
    prompt: int
    weight_bytes: int
    """整个模型的权重。"""
    weight_bytes_per_device: int
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int
    kv_bytes_per_sequence_per_device: int
    activation_peak_bytes: int
    """整个模型（不切）的激活峰值估计；每块设备是它的 ``1 / tp``。"""
    max_batch: int | None
    """整组装得下的最大 batch；设备没有容量时为 None。"""
    decode_batch_to_ridge: float
    prefill: StepReport
    decode: StepReport
    per_node: int = GPUS_PER_NODE
    """一个节点的 GPU 数（NVLink 连起来的一组）。"""

    @property
    def kv_bytes(self) -> int:
        """整个 batch 的 KV cache。"""
        return self.batch * self.kv_bytes_per_sequence

    @property
    def batch_per_device(self) -> int:
        """每块设备的 attention 处理的序列数：DP attention（``ep > tp``）时为
        ``ceil(batch / (ep / tp))``，否则为整个 ``batch`` （TP 组的设备各算全部序列的一部分
        head）。"""
        return -(-self.batch // self.split.attention_dp)

    @property
    def nodes(self) -> int:
        """整组占的节点数：``ceil(devices / per_node)``。"""
        return -(-self.split.devices // self.per_node)

    @property
    def activation_bytes_per_device(self) -> int:
        return self.activation_peak_bytes // self.split.tp

    @property
    def fits(self) -> bool:
        """``batch`` 条序列装得下（设备没有容量时为 True）。"""
        return self.max_batch is None or self.batch <= self.max_batch

    @property
    def tokens_per_s(self) -> float:
        """decode 每秒的 token 数上限：``batch / decode.seconds``。"""
        return self.batch / self.decode.seconds

    @property
    def floor_tokens_per_s(self) -> float:
        """任何实现的 decode 每秒 token 数上限：``batch / decode.floor_s``。"""
        return self.batch / self.decode.floor_s


def _steps(
    config: ModelConfig, batch: int, new: int, context: int, p: Precisions
) -> tuple[tuple[Op, ...], tuple[StepOp, ...]]:
    layer = tuple(layer_ops(config, batch, new, context, p))
    return layer, tuple(step_entries(config, batch, new, context, p))


def inference_report(
    config: ModelConfig,
    device: Hardware,
    split: Split | None = None,
    *,
    batch: int = 1,
    context: int | None = None,
    prompt: int | None = None,
    precisions: Precisions | None = None,
    per_node: int = GPUS_PER_NODE,
    net: Network | None = None,
    reserve: float = MEMORY_RESERVE,
) -> InferenceReport:
    """``config`` 按 ``split`` （默认一块设备）在 ``device`` 上推理 ``batch`` 条序列的回答。

    ``context`` 默认 :data:`DEFAULT_CONTEXT` 与模型窗口中小的一个，``prompt`` 默认等于
    ``context``。切开（多于一块设备，或 EP）时设备要有链路，TP 组要在 ``per_node`` 块 GPU 的一个
    节点之内；切分的规则见 :meth:`~roofline_book.distributed.split.Split.check`。
    ``batch`` 装不下时照样给出下界，:attr:`InferenceReport.fits` 为 False。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> r = inference_report(model("llama-2-70b"), hardware("h100-sxm"), Split(tp=4))
    >>> round(r.weight_bytes_per_device / 1e9, 2), r.split.devices, r.fits
    (34.49, 4, True)
    >>> inference_report(model("llama-2-70b"), hardware("h100-sxm"), Split(tp=3))
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: tp (3) must divide the model's 64 attention heads
    """
    split = split or Split()
    p = precisions or Precisions()
    c = config
    context = min(DEFAULT_CONTEXT, c.max_context) if context is None else context
    prompt = context if prompt is None else prompt
    if context > c.max_context:
        raise InvalidArgument(
            "context", f"{context} is beyond {c.key}'s context window ({c.max_context})"
        )
    if prompt > context:
        raise InvalidArgument("prompt", f"({prompt}) must be <= context ({context})")
    split.check(c, per_node=per_node)
    whole = weight_bytes(c, p)
    per_sequence = kv_cache_bytes(c, context, p)
    prefill_ops, decode_ops = _steps(c, batch, prompt, prompt, p), _steps(c, batch, 1, context, p)
    if split.devices > 1 or split.ep > 1:
        _link(device)
        group = infer(
            c,
            device,
            split,
            batch=batch,
            context=context,
            prompt=prompt,
            precisions=p,
            per_node=per_node,
            net=net,
            reserve=reserve,
        )
        fits = group.max_batch
        weights, kv = group.weight_bytes_per_device, group.kv_bytes_per_sequence_per_device
        prefill = _of_group(group.prefill, prefill_ops, c, split, batch, prompt, prompt, p)
        decode = _of_group(group.decode, decode_ops, c, split, batch, 1, context, p)
    else:
        fits = None
        if device.memory_capacity is not None:
            fits = max_batch(c, device, context, p, reserve=reserve)
        weights, kv = whole, per_sequence
        prefill = _one_device(c, device, p, batch, prompt, prompt, prefill_ops)
        decode = _one_device(c, device, p, batch, 1, context, decode_ops)
    return InferenceReport(
        config=c,
        device=device,
        split=split,
        precisions=p,
        batch=batch,
        context=context,
        prompt=prompt,
        weight_bytes=whole,
        weight_bytes_per_device=weights,
        kv_bytes_per_token=kv_bytes_per_token(c, p),
        kv_bytes_per_sequence=per_sequence,
        kv_bytes_per_sequence_per_device=kv,
        activation_peak_bytes=activation_peak(c, p),
        max_batch=fits,
        decode_batch_to_ridge=decode_batch_to_ridge(c, device, p),
        prefill=prefill,
        decode=decode,
        per_node=per_node,
    )


def _one_device(
    config: ModelConfig,
    device: Hardware,
    p: Precisions,
    batch: int,
    new: int,
    context: int,
    ops: tuple[tuple[Op, ...], tuple[StepOp, ...]],
) -> StepReport:
    entries = [(e.label, e.cost) for e in ops[1]]  # the step's operators, computed once
    seconds = step_time(entries, device, p).seconds
    floor = step_floor(config, batch, new, context, device, p).seconds
    return StepReport(seconds, floor, 0.0, 0.0, (), *ops, device_ops=ops[1])


def _of_group(
    step: ParallelStep,
    ops: tuple[tuple[Op, ...], tuple[StepOp, ...]],
    config: ModelConfig,
    split: Split,
    batch: int,
    new: int,
    context: int,
    p: Precisions,
) -> StepReport:
    """切开的一步（:class:`~roofline_book.distributed.parallel.ParallelStep`）、切开前的算子，
    与一块设备上的那一份。"""
    shares = device_ops(config, split, batch, new, context, p)
    # device_ops lists the entries of step_entries for the attention group's sequences, in
    # their order: the same ids, layers and kinds, one device's cost
    local = -(-batch // split.attention_dp)
    entries = step_entries(config, local, new, context, p)
    assert [e.label for e in entries] == [label for label, _ in shares]
    mine = tuple(
        StepOp(e.id, e.name, e.layers, e.layer_kind, cost)
        for e, (_, cost) in zip(entries, shares, strict=True)
    )
    return StepReport(
        step.seconds,
        step.floor_s,
        step.communication_s,
        step.latency_s,
        step.comms,
        *ops,
        device_ops=mine,
    )


def tp_that_fits(
    config: ModelConfig,
    device: Hardware,
    split: Split,
    batch: int,
    *,
    context: int,
    prompt: int,
    precisions: Precisions | None = None,
    per_node: int = GPUS_PER_NODE,
) -> tuple[int, int] | None:
    """比 ``split.tp`` 更宽、仍在一个节点内、能装下 ``batch`` 条序列的最小 TP，与它装得下的最大
    batch；没有这样的 TP 时为 None。不允许的 TP（不整除 head 数，``ep`` 不整除它……）跳过。

    Examples
    --------
    Llama-2-70B 的 BF16 权重（138 GB）一块 H100 放不下，TP=2 时每块 69 GB，装得下 10 条 4096 token
    的序列：

    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> tp_that_fits(model("llama-2-70b"), hardware("h100-sxm"), Split(), 1, context=4096,
    ...              prompt=4096)
    (2, 10)
    """
    for tp in range(split.tp + 1, per_node + 1):
        try:
            wider = Split(tp=tp, pp=split.pp, ep=split.ep)
            wider.check(config, per_node=per_node)
        except InvalidArgument:  # tp does not divide the heads, ep does not divide tp, ...
            continue
        fits = _batch_that_fits(config, device, wider, context, prompt, precisions, per_node)
        if fits is not None and fits >= batch:
            return tp, fits
    return None


def ep_that_fits(
    config: ModelConfig,
    device: Hardware,
    split: Split,
    batch: int,
    *,
    context: int,
    prompt: int,
    precisions: Precisions | None = None,
    per_node: int = GPUS_PER_NODE,
) -> tuple[int, int] | None:
    """MoE 模型装不下时：``max(tp, ep)`` 的 2、4、8……倍中（不超过 expert 数）能以 DP attention
    装下 ``batch`` 条序列的最小 EP，与它装得下的最大 batch；没有时（或模型是 dense 的）为 None。
    每块设备的 routed expert 随 EP 变少，attention 与 dense 层的权重不变。

    Examples
    --------
    DeepSeek-V3 的 FP8 权重按 EP 8 分开，每块设备约 101 GB，H100 的 80 GB 放不下；EP 16 时约 62 GB：

    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> v3 = model("deepseek-v3")
    >>> ep_that_fits(v3, hardware("h100-sxm"), Split(tp=1, ep=8), 1, context=4096, prompt=4096,
    ...              precisions=v3.checkpoint)[0]
    16
    """
    if config.experts == 1:
        return None
    ep = 2 * max(split.ep, split.tp)
    while ep <= config.experts:
        wider = Split(tp=split.tp, pp=split.pp, ep=ep)
        fits = _batch_that_fits(config, device, wider, context, prompt, precisions, per_node)
        if fits is not None and fits >= batch:
            return ep, fits
        ep *= 2
    return None


def _batch_that_fits(config, device, split, context, prompt, precisions, per_node) -> int | None:
    """:func:`~roofline_book.distributed.parallel.infer` 的最大 batch（设备没有容量时为 None）。"""
    group = infer(
        config, device, split, batch=1, context=context, prompt=prompt,
        precisions=precisions, per_node=per_node,
    )  # fmt: skip
    return group.max_batch


__all__ = [
    "DEFAULT_CONTEXT",
    "InferenceReport",
    "StepReport",
    "ep_that_fits",
    "inference_report",
    "tp_that_fits",
]
