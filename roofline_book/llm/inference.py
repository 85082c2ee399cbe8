"""roofline 上的 LLM 推理：一个 serving step（prefill 或 decode）在一块设备上的代价与时间下界。

一步让 decoder 的每一层（:func:`roofline_book.llm.layers.layer_ops`）处理这一步的新 token，再加上
embedding、最后的 norm 与 LM head；时间下界来自 :func:`roofline_book.roofline.roofs.time_bound`。
模型的形状与目录见 :mod:`roofline_book.llm.config`，权重格式见
:mod:`roofline_book.llm.quantization`，内存里放得下的 batch 与 speculative decoding 见
:mod:`roofline_book.llm.serving`。章节从这里取整个推理模型，所以这里也重新导出那些名字。

Examples
--------
BF16 的 Llama-2-7B 每个 token 保存 2 x 32 层 x 32 个 KV head x 128 x 2 字节的 KV cache：

>>> llama = model("Llama-2-7B")
>>> kv_bytes_per_token(llama)
524288
>>> kv_bytes_per_token(model("llama-3-8b"))  # GQA: 8 KV heads for 32 query heads
131072
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware
from ..dtypes import bytes_per_element
from ..ops import ZERO, Cost, rmsnorm
from ..ops.attn import attention_keys
from ..roofline.roofs import TimeBound, time_bound

# re-exported: the chapters and the command line take the whole inference model from here
from .config import ModelConfig as ModelConfig
from .config import adhoc_model as adhoc_model
from .config import model as model
from .config import model_from_config as model_from_config
from .config import models as models
from .layers import LAYER_KERNELS as LAYER_KERNELS
from .layers import Op as Op
from .layers import check_step, linear
from .layers import expected_experts as expected_experts
from .layers import layer_ops as layer_ops
from .quantization import INT4 as INT4
from .quantization import QUANT_GROUP as QUANT_GROUP
from .quantization import Precisions as Precisions


def kv_bytes_per_token(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """一个 token 在所有层中保存的 KV cache 字节数：``2 x layers x kv_heads x head_dim x s_kv``；
    MLA 模型为 ``layers x (kv_lora_rank + rope_head_dim) x s_kv``。

    这是一个缓存的 token 处在每一层的窗口之内时的代价；sliding-window 层只保留最后
    ``sliding_window`` 个 token（:func:`kv_cache_bytes`）。

    Examples
    --------
    >>> kv_bytes_per_token(model("llama-2-7b"), Precisions(kv="fp8"))
    262144
    """
    p = precisions or Precisions()
    return config.layers * config.kv_elements * bytes_per_element(p.kv)


def kv_cache_bytes(config: ModelConfig, context: int, precisions: Precisions | None = None) -> int:
    """一条 ``context`` 个 token 的序列的 KV cache 字节数（byte）。

    global 层保留每一个 token；local 层保留最后 ``min(context, sliding_window)`` 个
    （Mistral 的 rolling buffer、Gemma 2 的 local 层）。

    Examples
    --------
    Mistral-7B 在 8192 个 token 时，32 层都保留它 4096 个 token 的窗口：

    >>> kv_cache_bytes(model("mistral-7b"), 8192) == 4096 * kv_bytes_per_token(model("mistral-7b"))
    True
    """
    p = precisions or Precisions()
    context = _validate.size("context", context)
    per_layer_token = config.kv_elements * bytes_per_element(p.kv)
    kept = sum(min(context, config.window(i) or context) for i in range(config.layers))
    return per_layer_token * kept


def layer_groups(config: ModelConfig) -> dict[tuple[str, bool], list[int]]:
    """各层按（层的种类，MLP 是否是 MoE）分组：同一组的层代价相同。

    Examples
    --------
    >>> {k: len(v) for k, v in layer_groups(model("gemma-2-9b")).items()}
    {('local', False): 21, ('global', False): 21}
    """
    groups: dict[tuple[str, bool], list[int]] = {}
    for i in range(config.layers):
        groups.setdefault((config.layer_kind(i), config.moe_layer(i)), []).append(i)
    return groups


def _merged_ids(layers: list[list[Op]]) -> list[str]:
    """各组算子标识的并集，保持每组内的先后。"""
    out: list[str] = []
    for ops in layers:
        at = 0
        for op in ops:
            if op.id in out:
                at = out.index(op.id) + 1
            else:
                out.insert(at, op.id)
                at += 1
    return out


@dataclass(frozen=True)
class StepOp:
    """一步中的一个算子：名字、稳定标识、它代表的层数与层的种类，以及这些层合起来的代价。"""

    id: str
    """稳定标识（命令行 ``--json`` 的 ``id``），例如 ``"attention"``、``"lm_head"``。"""
    name: str
    """算子在一层（或整个模型）中的名字，例如 ``"attention"``、``"LM head"``。"""
    layers: int | None
    """代价合计了多少层；不在层内的算子（embedding、final norm、LM head）为 None。"""
    layer_kind: str | None
    """local 层与 global 层不同的算子所属的那一种（``"local"``、``"global"``），dense 层与 MoE
    层不同的算子所属的那一种（``"dense"``、``"moe"``），否则为 None。"""
    cost: Cost

    @property
    def key(self) -> str:
        """稳定标识，local/global 不同的算子加上 ``_local``、``_global``。"""
        return self.id if self.layer_kind is None else f"{self.id}_{self.layer_kind}"

    @property
    def label(self) -> str:
        """显示用的名字，带层数：``"attention (x 32)"``、``"attention, sliding window (x 21)"``。"""
        if self.layers is None:
            return self.name
        kinds = {
            "local": ", sliding window",
            "global": ", global",
            "dense": ", dense",
            "moe": ", MoE",
        }
        kind = kinds.get(self.layer_kind or "", "")
        return f"{self.name}{kind} (x {self.layers})"


def step_entries(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> list[StepOp]:
    """:func:`step_ops` 的各项，带稳定标识与层数（:class:`StepOp`）。

    Examples
    --------
    >>> [(e.key, e.layers) for e in step_entries(model("llama-2-7b"), 1, 1, 4096)][:3]
    [('embedding', None), ('attention_norm', 32), ('qkv_projection', 32)]
    >>> [e.key for e in step_entries(model("gemma-2-9b"), 1, 1, 8192) if e.name == "attention"]
    ['attention_local', 'attention_global']
    """
    p = precisions or Precisions()
    batch, new, context = check_step(batch, new, context)
    logits = _validate.size("logits", logits)
    if logits > new:
        raise InvalidArgument("logits", f"({logits}) must be <= new ({new})")
    if context > config.max_context:
        raise InvalidArgument(
            "context", f"({context}) must be <= the model's context window ({config.max_context})"
        )
    a = bytes_per_element(p.activations)
    tokens = batch * new
    embed = Cost(0, p.table_bytes(tokens * config.hidden), a * tokens * config.hidden, 1)
    groups = [
        (
            key,
            len(idx),
            {op.id: op for op in layer_ops(config, batch, new, context, p, layer=idx[0])},
        )
        for key, idx in layer_groups(config).items()
    ]
    entries = [StepOp("embedding", "embedding", None, None, embed)]
    for op_id in _merged_ids([list(ops.values()) for _, _, ops in groups]):
        having = [(kind, n, ops[op_id]) for kind, n, ops in groups if op_id in ops]
        name = having[0][2].name
        if len({op.cost for _, _, op in having}) == 1:
            n = sum(n for _, n, _ in having)
            entries.append(StepOp(op_id, name, n, None, having[0][2].cost * n))
            continue
        for split in (0, 1):  # by the layers' kind, else by their MLP (dense or MoE)
            by_kind: dict[str, tuple[int, Cost]] = {}
            for kind, n, op in having:
                key = kind[0] if split == 0 else ("moe" if kind[1] else "dense")
                before = by_kind.get(key, (0, op.cost))
                if before[1] != op.cost:
                    break
                by_kind[key] = (before[0] + n, op.cost)
            else:
                entries += [StepOp(op_id, name, n, k, c * n) for k, (n, c) in by_kind.items()]
                break
        else:
            raise AssertionError(f"{op_id}: layers of one kind differ in cost")
    lm_head = linear(batch * logits, config.hidden, config.vocab, p, table=True)
    entries += [
        StepOp(
            "final_norm", "final norm", None, None, rmsnorm(tokens, config.hidden, p.activations)
        ),
        StepOp("lm_head", "LM head", None, None, lm_head),
    ]
    return entries


def step_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> list[tuple[str, Cost]]:
    """整个模型的一步：embedding、每一层、最后的 norm、LM head。

    每层的算子对所有层求和（``"<op> (x layers)"``）；local 层与 global 层不同之处（它们的
    attention）各占一行（``"attention, sliding window (x 21)"``）。LM head 计算每条序列最后
    ``logits`` 个位置的 logits（通常为 1；speculative 验证步需要它的全部位置）。

    Examples
    --------
    >>> names = [n for n, _ in step_ops(model("llama-2-7b"), 1, 1, 4096)]
    >>> names[0], names[4], names[-1]
    ('embedding', 'attention (x 32)', 'LM head')
    >>> [n for n, _ in step_ops(model("gemma-2-9b"), 1, 1, 8192) if n.startswith("attention,")]
    ['attention, sliding window (x 21)', 'attention, global (x 21)']
    """
    entries = step_entries(config, batch, new, context, precisions, logits=logits)
    return [(e.label, e.cost) for e in entries]


@dataclass(frozen=True)
class StepBound:
    """一个 serving step 在一块设备上的时间下界：各算子的下界之和（秒）。"""

    seconds: float
    by_op: Mapping[str, float]
    compute: float
    """下界由计算单元决定的那些算子的秒数。"""
    memory: float
    """下界由存储层级决定的那些算子的秒数。"""


def step_time(ops: list[tuple[str, Cost]], device: Hardware, precisions: Precisions) -> StepBound:
    """各算子时间下界之和，kernel 一个接一个（秒）。

    这是让这些 kernel 一个接一个运行、每个都经 HBM 搬运自己的输入与输出的实现的下界。融合 kernel
    （把 norm 并入 residual add、把激活函数并入 GEMM）或让 memory-bound 的 kernel 与 compute-bound
    的 kernel 重叠，可以低于它，但不会低于 :func:`step_floor`。计算上限取激活精度下的上限，
    乘法按激活精度进行（只量化权重的格式在运行时展宽）。
    """
    times = {name: time_bound(cost, device, precisions.activations) for name, cost in ops}
    return StepBound(
        seconds=math.fsum(t.seconds for t in times.values()),
        by_op=MappingProxyType({n: t.seconds for n, t in times.items()}),
        compute=math.fsum(t.seconds for t in times.values() if t.bound == "compute"),
        memory=math.fsum(t.seconds for t in times.values() if t.bound == "memory"),
    )


def weight_bytes(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """模型全部权重的字节数（byte）。

    linear 层按 ``precisions.weights``；embedding 表、LM head 与 norm 按
    ``precisions.table_precision`` （量化权重时为 BF16，除非 ``quantize_embeddings``）。

    Examples
    --------
    >>> round(weight_bytes(model("llama-2-7b")) / 1e9, 2)
    13.48
    >>> round(weight_bytes(model("llama-3-8b"), Precisions(weights="int4")) / 1e9, 2)
    5.7
    """
    p = precisions or Precisions()
    c = config
    tables = c.vocab * c.hidden * (1 if c.tied_embeddings else 2)
    norms = c.layers * c.norm_parameters() + c.hidden
    return p.weight_bytes(c.matrix_parameters()) + p.table_bytes(tables + norms)


@dataclass(frozen=True)
class Traffic:
    """一步的必需流量，按来源分开（byte）：:func:`step_traffic` 是它们的和。"""

    weights: int
    """各层中除 routed expert 之外的 linear 层权重：attention、dense MLP、router、shared expert。"""
    experts: int
    """这一步的 token 用到的 routed expert 的权重：每个 MoE 层
    :func:`~roofline_book.llm.layers.expected_experts` 个。"""
    tables: int
    """norm、LM head 与每个 token 一行 embedding。"""
    cache: int
    """query 看到的缓存 key 与 value（MLA：latent），以及写入的新的。"""
    logits: int

    @property
    def total(self) -> int:
        return self.weights + self.experts + self.tables + self.cache + self.logits


def traffic_parts(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> Traffic:
    """:func:`step_traffic` 的各部分（:class:`Traffic`）。多块设备各分一份时，它们的分法不同。"""
    p = precisions or Precisions()
    batch, new, context = check_step(batch, new, context)
    c, s_kv = config, bytes_per_element(p.kv)
    h, tokens = c.hidden, batch * new
    weights = experts = 0
    for (_, moe), idx in layer_groups(c).items():
        layer = p.weight_bytes(c.attention_parameters())
        if moe:
            per = (3 if c.gated else 2) * h * c.ffn
            touched = expected_experts(c.experts, c.experts_per_token, tokens)
            layer += p.weight_bytes(h * c.experts + c.shared_experts * per)
            experts += round(touched * p.weight_bytes(per)) * len(idx)
        else:
            layer += p.weight_bytes(c.mlp_parameters(idx[0]))
        weights += layer * len(idx)
    tables = p.table_bytes(c.layers * c.norm_parameters() + h + c.vocab * h + tokens * h)
    cache = 0
    for i in range(c.layers):
        window = c.window(i)
        cached = attention_keys(new, context, window) - new
        written = new if window is None else min(new, window)
        cache += batch * c.kv_elements * s_kv * (max(cached, 0) + written)
    out = batch * logits * c.vocab * bytes_per_element(p.activations)
    return Traffic(weights, experts, tables, cache, out)


def step_traffic(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> int:
    """这一步的任何实现都必须经 HBM 搬运的字节数（byte）。

    这一步读的权重（linear 层、它的 token 用到的 MoE expert、norm、LM head、每个 token 一行
    embedding），它的 query 看到的缓存 key 与 value，它写入的新 key 与 value，以及 logits。
    算子之间的激活不计：融合的 kernel 把它们留在片上。各部分见 :func:`traffic_parts`。
    """
    return traffic_parts(config, batch, new, context, precisions, logits=logits).total


def step_floor(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    device: Hardware,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> TimeBound:
    """这一步的任何实现（融合的或重叠的）的时间下界（second）。

    对整步取 ``max(FLOPs / P, bytes / B)``：每种计算单元上所有算子的 FLOPs 除以该单元的上限，
    以及 :func:`step_traffic` 除以带宽。让 memory-bound 的 attention 与 compute-bound 的 GEMM 重叠
    （NanoFlow）或融合小算子的 kernel 会接近它，但没有一个低于它。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> m, h100 = model("llama-2-7b"), hardware("h100-sxm")
    >>> p = Precisions()
    >>> step_floor(m, 1, 4096, 4096, h100).seconds < step_time(
    ...     step_ops(m, 1, 4096, 4096), h100, p).seconds
    True
    """
    p = precisions or Precisions()
    ops = step_ops(config, batch, new, context, p, logits=logits)
    total = sum((cost for _, cost in ops), ZERO)
    traffic = step_traffic(config, batch, new, context, p, logits=logits)
    floor = total.fused(traffic)
    return time_bound(floor, device, p.activations)


def decode_batch_to_ridge(
    config: ModelConfig, device: Hardware, precisions: Precisions | None = None
) -> float:
    """MLP 的 up 投影达到矩阵单元 ridge point 时的 decode batch。

    流式读取权重的 GEMM ``(B x k) @ (k x n)`` 的算术强度为 ``2Bkn / (w kn + a B (k + n))``，``w``
    与 ``a`` 是权重与激活每个元素的字节数；令它等于激活精度的 ridge point ``R``，得 ``B* = R w kn /
    (2kn - R a (k + n))``，约为 ``R w / 2``。只量化权重的格式在 BF16 的 ridge point 下降低 ``w``，所
    以 ``B*`` 随之下降；W8A8 FP8 把 ``w`` 减半但把 ``R`` 加倍，所以 ``B*`` 不变。MoE 层中每个
    expert 的 GEMM 约分到 ``B k / E`` 行（均匀路由），所以 batch 要大 ``E / k`` 倍。

    Examples
    --------
    >>> from roofline_book.devices.catalog import adhoc
    >>> gpu = adhoc("example", 1e15, 5e12)        # ridge 200 FLOP/byte
    >>> round(decode_batch_to_ridge(model("llama-2-7b"), gpu))   # 200 x 2 / 2, and a little
    212
    """
    p = precisions or Precisions()
    k, n = config.hidden, (2 if config.gated else 1) * config.ffn
    ridge = device.ridge_point(p.activations)
    w = p.weight_bytes(k * n) / (k * n)
    a = bytes_per_element(p.activations)
    denominator = 2 * k * n - ridge * a * (k + n)
    rows = ridge * w * k * n / denominator if denominator > 0 else math.inf
    return rows * config.experts / config.experts_per_token
