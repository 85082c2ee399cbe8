"""roofline 上的 LLM 推理：prefill 与 decode、KV cache、GQA、量化权重、MoE。

一个 serving step 让 decoder 的每一层处理这一步的新 token：``prefill`` 把整段 prompt 推过去
（``tokens = prompt``），``decode`` 给每条序列加一个 token，对照它缓存的上下文。每一层是一个
:class:`~roofline_book.ops.Cost` 列表（norm、各投影、对 KV cache 的 attention、MLP 或其
experts、residual add）；模型再加上 embedding 查表、最后的 norm，以及对每条序列最后一个位置
的 language-model head。时间下界来自 :func:`roofline_book.roofline.time_bound`，kernel 一个
接一个。

模型配置连同出处保存在 ``roofline_book/data/models.toml`` 中；:func:`model` 按名称找到一个，
:func:`adhoc_model` 按你自己的尺寸建一个。

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

import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from . import _validate
from .dtypes import bytes_per_element, precision_name
from .hardware import Hardware, Source
from .ops import Cost, residual_add, rmsnorm, swiglu
from .ops.attn import SOFTMAX_FLOPS_PER_ELEMENT, _causal_pairs
from .roofline import time_bound

#: tensor dtype 之外唯一的权重格式：4 位整数（每个权重半个字节）。
INT4 = "int4"

#: 每个量化分组的权重个数；每组保存一个 FP16 scale（2 字节）。
QUANT_GROUP = 128

#: 计算 KV cache 能占多少时，为激活、CUDA context 和内存碎片预留的显存比例：vLLM 的
#: ``gpu_memory_utilization`` 默认为 0.9。
MEMORY_RESERVE = 0.1


@dataclass(frozen=True)
class ModelConfig:
    """一个 decoder-only 语言模型的形状。

    Parameters
    ----------
    key : str
        目录中的键（``"llama-2-7b"``）。
    name : str
        显示名称。
    hidden : int
        模型宽度。
    layers : int
        decoder 层数。
    heads : int
        query head 数。
    kv_heads : int
        key/value head 数（GQA 时少于 ``heads``，MQA 时为 1）。
    ffn : int
        MLP 宽度（MoE 时为每个 expert 的宽度）。
    vocab : int
        词表大小。
    head_dim : int, optional
        一个 head 的宽度；默认为 ``hidden // heads``。
    gated : bool
        SwiGLU 式的 MLP（gate、up、down 三个投影），否则是普通的两矩阵 MLP。
    tied_embeddings : bool
        LM head 与 embedding 共用一个矩阵。
    max_context : int
        模型训练时的最长上下文（token 数）。
    experts : int
        每个 MLP 中可路由的 expert 数（dense 模型为 1）。
    experts_per_token : int
        每个 token 用几个 expert（dense 模型为 1）。
    source : roofline_book.hardware.Source, optional
        这份配置发表在哪里。
    """

    key: str
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int | None = None
    gated: bool = True
    tied_embeddings: bool = False
    max_context: int = 4096
    experts: int = 1
    experts_per_token: int = 1
    source: Source | None = None

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "max_context"):
            _validate.size(field, getattr(self, field))
        _validate.size("experts", self.experts)
        _validate.size("experts_per_token", self.experts_per_token)
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be <= experts ({self.experts})"
            )
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(
                    f"hidden ({self.hidden}) must be divisible by heads ({self.heads})"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        _validate.size("head_dim", self.head_dim)

    @property
    def d(self) -> int:
        """一个 head 的宽度（``head_dim``，已补全）。"""
        assert self.head_dim is not None
        return self.head_dim

    @property
    def q_dim(self) -> int:
        """全部 query head 合起来的宽度，``heads * head_dim``。"""
        return self.heads * self.d

    @property
    def kv_dim(self) -> int:
        """全部 key（或 value）head 合起来的宽度，``kv_heads * head_dim``。"""
        return self.kv_heads * self.d

    def layer_parameters(self, *, active: bool = False) -> int:
        """一层的权重个数：attention、MLP（全部 expert，或 ``active`` 个）、router、norm。

        Examples
        --------
        >>> llama = model("llama-2-7b")
        >>> llama.layer_parameters()    # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        h = self.hidden
        attention = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        per_expert = (3 if self.gated else 2) * h * self.ffn
        experts = self.experts_per_token if active else self.experts
        router = h * self.experts if self.experts > 1 else 0
        return attention + experts * per_expert + router + 2 * h

    def parameters(self, *, active: bool = False) -> int:
        """全部权重个数：各层、embedding、最后的 norm，以及（不共用时的）LM head。

        Examples
        --------
        >>> round(model("llama-2-7b").parameters() / 1e9, 2)     # "7B"
        6.74
        """
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return (
            self.layers * self.layer_parameters(active=active)
            + self.vocab * self.hidden
            + (self.hidden + head)
        )


@dataclass(frozen=True)
class Precisions:
    """一个上线模型的各种精度：权重、激活（以及计算）、KV cache。

    只量化权重时 ``weights`` 也可以是 ``"int4"`` （每个权重半个字节）；比激活窄的权重按
    :data:`QUANT_GROUP` 个一组存放，每组一个 FP16 scale，乘法按激活的精度进行。

    Examples
    --------
    >>> Precisions(weights="int4").weight_bytes(4096 * 4096)   # 0.5 B + 2 B per 128 weights
    8650752
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv: str = "bf16"

    def __post_init__(self) -> None:
        if not (isinstance(self.weights, str) and self.weights.strip().lower() == INT4):
            object.__setattr__(self, "weights", precision_name(self.weights))
        else:
            object.__setattr__(self, "weights", INT4)
        object.__setattr__(self, "activations", precision_name(self.activations))
        object.__setattr__(self, "kv", precision_name(self.kv))

    @property
    def quantized(self) -> bool:
        """权重存得比激活窄，带分组 scale。"""
        if self.weights == INT4:
            return True
        return bytes_per_element(self.weights) < bytes_per_element(self.activations)

    def weight_bytes(self, count: int) -> int:
        """``count`` 个权重的字节数，含分组 scale（byte）。"""
        count = _validate.size("count", count, minimum=0)
        per = 0.5 if self.weights == INT4 else bytes_per_element(self.weights)
        scales = 2 * math.ceil(count / QUANT_GROUP) if self.quantized else 0
        return math.ceil(per * count) + scales


def kv_bytes_per_token(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """一个 token 保存的 KV cache 字节数：``2 x layers x kv_heads x head_dim x s_kv`` （byte）。

    Examples
    --------
    >>> kv_bytes_per_token(model("llama-2-7b"), Precisions(kv="fp8"))
    262144
    """
    p = precisions or Precisions()
    return 2 * config.layers * config.kv_dim * bytes_per_element(p.kv)


def _linear(tokens: int, k: int, n: int, p: Precisions) -> Cost:
    """``(tokens x k) @ (k x n)``：激活的精度为 ``p.activations``，权重的精度为 ``p.weights``。"""
    a = bytes_per_element(p.activations)
    return Cost(2 * tokens * k * n, a * tokens * k + p.weight_bytes(k * n), a * tokens * n)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """``tokens`` 个 token 各随机选 ``per_token`` 个 expert 时，一步会用到的不同 expert 的个数。

    均匀路由下，一个 expert 不被某个 token 选中的概率是 ``1 - k/E``，所以要读
    ``E (1 - (1 - k/E)^tokens)`` 个 expert。

    Examples
    --------
    >>> round(expected_experts(8, 2, 1), 3), round(expected_experts(8, 2, 16), 2)
    (2.0, 7.92)
    """
    experts = _validate.size("experts", experts)
    per_token = _validate.size("per_token", per_token)
    tokens = _validate.size("tokens", tokens)
    if per_token > experts:
        raise ValueError(f"per_token ({per_token}) must be <= experts ({experts})")
    return experts * (1 - (1 - per_token / experts) ** tokens)


def _attention(config: ModelConfig, batch: int, new: int, context: int, p: Precisions) -> Cost:
    """一层对 cache 的 attention：每条序列 ``new`` 个 query，``context`` 个 key。

    causal，右下对齐（最后一个 query 看到每一个 key）。必需流量：读入新的 query，每个缓存的
    key 和 value 读一次（flash-decoding 式的 kernel 每个 KV head 读一次 cache，不论共用它的
    query head 有几个），写出输出。
    """
    a, s_kv, d = bytes_per_element(p.activations), bytes_per_element(p.kv), config.d
    pairs = batch * config.heads * _causal_pairs(new, context)
    return Cost(
        flops=pairs * (4 * d + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=batch * (a * config.q_dim * new + 2 * s_kv * config.kv_dim * context),
        bytes_written=batch * a * config.q_dim * new,
        vector_flops=pairs * (SOFTMAX_FLOPS_PER_ELEMENT - 1),
        special_flops=pairs,
    )


def layer_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
) -> list[tuple[str, Cost]]:
    """一个 decoder 层处理 ``batch`` 条序列、每条 ``new`` 个 token，对照 ``context`` 个 key。

    prefill 是 ``new = context = prompt``；一步 decode 是 ``new = 1``，``context`` 为缓存的
    token 数加上这个新 token。新的 key 和 value 随 QKV 投影的输出一起产生，再复制进 cache
    （按激活的精度读、按 cache 的精度写），这是一个单独的 kernel（``"KV cache write"``，即 vLLM
    的 ``reshape_and_cache``）。MoE 的 MLP 读取一步所用到的 :func:`expected_experts` 个 expert
    的权重。

    Examples
    --------
    >>> ops = dict(layer_ops(model("llama-2-7b"), 1, 1, 4096))
    >>> ops["attention"].bytes_read     # the whole cache of one layer: 2 x 4096 x 4096 x 2
    67117056
    """
    p = precisions or Precisions()
    batch = _validate.size("batch", batch)
    new = _validate.size("new", new)
    context = _validate.size("context", context)
    if new > context:
        raise ValueError(f"new ({new}) must be <= context ({context})")
    tokens, h, a = batch * new, config.hidden, p.activations
    qkv = _linear(tokens, h, config.q_dim + 2 * config.kv_dim, p)
    new_kv = batch * new * 2 * config.kv_dim
    kv_write = Cost(0, new_kv * bytes_per_element(a), new_kv * bytes_per_element(p.kv), 1)
    ops = [
        ("attention norm", rmsnorm(tokens, h, a)),
        ("QKV projection", qkv),
        ("KV cache write", kv_write),
        ("attention", _attention(config, batch, new, context, p)),
        ("output projection", _linear(tokens, config.q_dim, h, p)),
        ("residual add", residual_add(tokens * h, a)),
        ("MLP norm", rmsnorm(tokens, h, a)),
    ]
    k = config.experts_per_token
    width = (2 if config.gated else 1) * config.ffn
    if config.experts > 1:
        ops.append(("router", _linear(tokens, h, config.experts, p)))
        touched = expected_experts(config.experts, k, tokens)
        up = _linear(tokens * k, h, width, p)
        down = _linear(tokens * k, config.ffn, h, p)
        # up and down above read one expert's weights; a step reads those of every expert
        # its tokens touch
        per_expert = p.weight_bytes(h * width) + p.weight_bytes(config.ffn * h)
        ops.append(("experts up", up + Cost(0, round((touched - 1) * per_expert), 0, 0)))
    else:
        up = _linear(tokens, h, width, p)
        down = _linear(tokens, config.ffn, h, p)
        ops.append(("MLP up (gate, up)" if config.gated else "MLP up", up))
    if config.gated:
        ops.append(("activation (SwiGLU)", swiglu(tokens * k * config.ffn, a)))
    ops.append(("MLP down" if config.experts == 1 else "experts down", down))
    ops.append(("residual add (MLP)", residual_add(tokens * h, a)))
    return ops


def step_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
) -> list[tuple[str, Cost]]:
    """整个模型的一步：embedding、每一层、最后的 norm、LM head。

    每层的算子对所有层求和（``"<op> (x layers)"``）；LM head 只计算每条序列最后一个位置的 logits。

    Examples
    --------
    >>> names = [n for n, _ in step_ops(model("llama-2-7b"), 1, 1, 4096)]
    >>> names[0], names[-1]
    ('embedding', 'LM head')
    """
    p = precisions or Precisions()
    if context > config.max_context:
        raise ValueError(
            f"context ({context}) must be <= the model's context window ({config.max_context})"
        )
    a = bytes_per_element(p.activations)
    tokens = batch * new
    embed = Cost(0, p.weight_bytes(tokens * config.hidden), a * tokens * config.hidden, 1)
    layer = layer_ops(config, batch, new, context, p)
    ops = [("embedding", embed)]
    ops += [(f"{name} (x {config.layers})", cost * config.layers) for name, cost in layer]
    ops += [
        ("final norm", rmsnorm(tokens, config.hidden, p.activations)),
        ("LM head", _linear(batch, config.hidden, config.vocab, p)),
    ]
    return ops


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

    计算上限取激活精度下的上限，乘法按激活精度进行（量化的权重在运行时展宽）。
    """
    times = {name: time_bound(cost, device, precisions.activations) for name, cost in ops}
    return StepBound(
        seconds=sum(t.seconds for t in times.values()),
        by_op=MappingProxyType({n: t.seconds for n, t in times.items()}),
        compute=sum(t.seconds for t in times.values() if t.bound == "compute"),
        memory=sum(t.seconds for t in times.values() if t.bound == "memory"),
    )


def weight_bytes(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """模型全部权重按权重精度计的字节数（byte）。

    Examples
    --------
    >>> round(weight_bytes(model("llama-2-7b")) / 1e9, 2)
    13.48
    """
    return (precisions or Precisions()).weight_bytes(config.parameters())


def max_batch(
    config: ModelConfig,
    device: Hardware,
    context: int,
    precisions: Precisions | None = None,
    *,
    reserve: float = MEMORY_RESERVE,
) -> int:
    """权重之外还放得下 KV cache 的、长度为 ``context`` 个 token 的序列的最大条数。

    ``floor(((1 - reserve) x capacity - weight bytes) / (context x KV bytes per token))``；
    连权重都放不下时为 0。

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> max_batch(model("llama-2-7b"), hardware("h100-sxm"), 4096)   # (72e9 - 13.5e9) / 2.1 GB
    27
    """
    p = precisions or Precisions()
    if device.memory_capacity is None:
        raise ValueError(f"{device.key} has no published memory capacity")
    context = _validate.size("context", context)
    reserve = _validate.non_negative("reserve", reserve)
    if reserve >= 1:
        raise ValueError(f"reserve must be below 1, got {reserve}")
    free = (1 - reserve) * device.memory_capacity - weight_bytes(config, p)
    return max(0, math.floor(free / (context * kv_bytes_per_token(config, p))))


def decode_batch_to_ridge(
    config: ModelConfig, device: Hardware, precisions: Precisions | None = None
) -> float:
    """MLP 的 up 投影达到矩阵单元 ridge point 时的 decode batch。

    流式读取权重的 GEMM ``(B x k) @ (k x n)`` 的算术强度为 ``2Bkn / (w kn + a B (k + n))``，
    ``w`` 与 ``a`` 是权重与激活每个元素的字节数；令它等于 ridge point ``R``，得
    ``B* = R w kn / (2kn - R a (k + n))``，约为 ``R w / 2``。MoE 层中每个 expert 的 GEMM 约分到
    ``B k / E`` 行（均匀路由），所以 batch 要大 ``E / k`` 倍。

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> round(decode_batch_to_ridge(model("llama-2-7b"), hardware("h100-sxm")))
    323
    """
    p = precisions or Precisions()
    k, n = config.hidden, (2 if config.gated else 1) * config.ffn
    ridge = device.ridge_point(p.activations)
    w = p.weight_bytes(k * n) / (k * n)
    a = bytes_per_element(p.activations)
    denominator = 2 * k * n - ridge * a * (k + n)
    rows = ridge * w * k * n / denominator if denominator > 0 else math.inf
    return rows * config.experts / config.experts_per_token


def speculative_tokens(acceptance: float, draft: int) -> float:
    """一次验证步期望产出的 token 数：``(1 - a^(g+1)) / (1 - a)``。

    有 ``g`` 个 draft token、每个以概率 ``a`` 被接受时（Leviathan et al. 2023），目标模型一步
    检查 ``g + 1`` 个位置。

    Examples
    --------
    >>> round(speculative_tokens(0.8, 4), 3)
    3.362
    >>> speculative_tokens(0.0, 4)
    1.0
    """
    a = _validate.non_negative("acceptance", acceptance)
    if a >= 1:
        raise ValueError(f"acceptance must be below 1, got {acceptance}")
    g = _validate.size("draft", draft, minimum=0)
    return (1 - a ** (g + 1)) / (1 - a)


# --------------------------------------------------------------------------
# The catalog


def _key(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").split())


_FIELDS = (
    "hidden",
    "layers",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "head_dim",
    "gated",
    "tied_embeddings",
    "max_context",
    "experts",
    "experts_per_token",
)


@functools.cache
def models() -> Mapping[str, ModelConfig]:
    """数据文件中的全部模型，按键索引。"""
    text = resources.files(__package__).joinpath("data/models.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = {k: Source(key=k, **v) for k, v in data["sources"].items()}
    out = {}
    for key, entry in data["models"].items():
        if entry.get("source") not in sources:
            raise ValueError(f"models.toml: {key} names no known source")
        fields = {f: entry[f] for f in _FIELDS if f in entry}
        out[key] = ModelConfig(
            key=key, name=entry["name"], source=sources[entry["source"]], **fields
        )
    return MappingProxyType(out)


def model(name: str) -> ModelConfig:
    """按名称取目录中的模型；大小写、空格和下划线都不影响。

    Examples
    --------
    >>> model("Mixtral 8x7B").experts
    8
    >>> model("gpt-5")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'gpt-5'; allowed: llama-2-7b, ...
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a model name such as 'llama-2-7b', got {name!r}")
    catalog = models()
    key = _key(name)
    if key not in catalog:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(catalog)}")
    return catalog[key]


def adhoc_model(name: str, **sizes: int | bool) -> ModelConfig:
    """按你自己的尺寸建一个模型（字段即 :class:`ModelConfig` 的字段）。

    Examples
    --------
    >>> tiny = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    >>> tiny.kv_dim, kv_bytes_per_token(tiny)
    (128, 1024)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    unknown = set(sizes) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(_FIELDS)}")
    return ModelConfig(key=_key(name), name=name, **sizes)  # type: ignore[arg-type]
