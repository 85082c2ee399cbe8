"""训练时每个 token 为 backward 留下的激活字节：一个 decoder 层里的，与最后的 norm、LM head、
交叉熵里的。

按模型自己的层来数（GQA 的 K、V 宽度，SwiGLU 或普通 MLP，MoE 每个 token 用到的 expert），不是 GPT
层的 ``34 s b h``；两种写法（:data:`SAVINGS`）留下的不同。一步训练如何用它们（micro-batch、流水线
stage、recompute、TP 的 sequence parallel）在 :mod:`roofline_book.distributed.training`。
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._base import validate as _validate
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig

SAVINGS = ("eager", "fused")
"""激活保存的两种写法：``"eager"``，Hugging Face 的 Llama 层在 eager PyTorch 中逐个算子执行；
``"fused"``，Megatron-Core 与 Transformer Engine 的融合 kernel（RMSNorm、SwiGLU）。"""

_FP32 = 4


def layer_activation_bytes(config: ModelConfig, *, saving: str = "eager") -> Mapping[str, int]:
    """一个 token 在一个 decoder 层里为 backward 留下的字节数（不切 TP），按部分。

    激活为 BF16，算子自己升到 FP32 的地方按 FP32 计；Llama 的层没有 dropout；attention 走
    FlashAttention 式的 kernel（PyTorch 的 SDPA），只留 q、k、v、输出和每个 head 一个 FP32 的
    log-sum-exp，不留 ``s x s`` 的分数；K、V 按 GQA 的宽度。``h`` 为模型宽度，``q``、``kv`` 为 query
    与 key（value）的总宽度，``F`` 为 MLP 宽度（MoE 时乘每个 token 用到的 expert 数）。

    ``"eager"``（Hugging Face 的 ``LlamaDecoderLayer``，逐个算子）：

    - 每个 RMSNorm ``8h + 4``：升到 FP32 的输入 ``4h`` （``pow`` 与乘法都留它），FP32 的
      ``1/rms`` 每个 token 4 字节，转回 BF16 的归一化结果 ``2h`` （乘权重时留），输出 ``2h``
      （后面的 linear 留它）；
    - attention ``4q + 4kv + 4 heads``：RoPE 之后的 q ``2q``、k ``2kv``，v ``2kv``，输出 ``2q``
      （``o_proj`` 的输入与它共用存储），log-sum-exp ``4 heads``；
    - SwiGLU ``8F``：gate 的输出（SiLU 留）、SiLU 的输出与 up 的输出（乘法各留一个）、乘积
      （down 的输入），各 ``2F``。普通 MLP ``4F``。

    ``"fused"``（Megatron-Core 的 ``SwiGLUFunction`` 只留它的输入、backward 时重算 SiLU；
    Transformer Engine 的 RMSNorm 留 BF16 输入与 FP32 的 ``1/rms``）：

    - 每个 RMSNorm ``4h + 4``：输入 ``2h``、``1/rms``、输出 ``2h``；
    - attention 同上；
    - SwiGLU ``6F``：gate 与 up 拼在一起的输出 ``4F``，down 的输入 ``2F``。

    Examples
    --------
    Llama-3-8B（h 4096，q 4096，kv 1024，32 个 head，F 14336）的一层在 eager PyTorch 中每个
    token 约留 ``49 h`` 字节，融合 kernel 约 ``34 h``：

    >>> from roofline_book.llm.inference import model
    >>> m = model("llama-3-8b")
    >>> eager = layer_activation_bytes(m)
    >>> dict(eager)
    {'norms': 65544, 'attention': 20608, 'mlp': 114688}
    >>> fused = layer_activation_bytes(m, saving="fused")
    >>> round(sum(eager.values()) / 4096, 2), round(sum(fused.values()) / 4096, 2)
    (49.03, 34.03)
    """
    saving = _validate.choice("saving", saving, SAVINGS)
    c = config
    h, q, kv = c.hidden, c.q_dim, c.kv_dim
    a = bytes_per_element("bf16")
    norm = (a * h + _FP32 * h if saving == "eager" else a * h) + _FP32 + a * h
    attention = 2 * a * q + 2 * a * kv + _FP32 * c.heads
    if c.gated:
        mlp = (4 if saving == "eager" else 3) * a * c.ffn
    else:
        mlp = 2 * a * c.ffn
    return MappingProxyType(
        {"norms": 2 * norm, "attention": attention, "mlp": mlp * c.experts_per_token}
    )


def head_activation_bytes(config: ModelConfig, *, saving: str = "eager") -> Mapping[str, int]:
    """一个 token 在最后的 RMSNorm、LM head 与交叉熵里留下的字节数（不切 TP）。

    ``norm`` 同 :func:`layer_activation_bytes`；``logits`` 是模型返回的 BF16 logits，``2 V``；
    ``loss`` 是交叉熵为 backward 留下的 FP32 log-softmax，``4 V`` （logits 先升到 FP32：Hugging
    Face 的 loss 与 Megatron 的 vocab-parallel 交叉熵都这样做）。标签的 8 字节不计。

    Examples
    --------
    Llama-3-8B 一条 4096 token 的序列：BF16 logits ``4096 x 128256 x 2`` 字节，FP32 再加一倍：

    >>> from roofline_book.llm.inference import model
    >>> b = head_activation_bytes(model("llama-3-8b"))
    >>> b["logits"] * 4096, b["loss"] * 4096
    (1050673152, 2101346304)
    """
    saving = _validate.choice("saving", saving, SAVINGS)
    h, a = config.hidden, bytes_per_element("bf16")
    norm = (a * h + _FP32 * h if saving == "eager" else a * h) + _FP32 + a * h
    return MappingProxyType(
        {"norm": norm, "logits": a * config.vocab, "loss": _FP32 * config.vocab}
    )


__all__ = ["SAVINGS", "head_activation_bytes", "layer_activation_bytes"]
