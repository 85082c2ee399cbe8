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


def layer_activation_bytes(
    config: ModelConfig, *, saving: str = "eager", layer: int | None = None
) -> Mapping[str, int]:
    """一个 token 在第 ``layer`` 个 decoder 层里为 backward 留下的字节数（不切 TP），按部分；
    ``layer`` 为 None 时取最后一层（MoE 模型的一个 MoE 层）。

    激活为 BF16，算子自己升到 FP32 的地方按 FP32 计；Llama 的层没有 dropout；attention 走
    FlashAttention 式的 kernel（PyTorch 的 SDPA），只留 q、k、v、输出和每个 head 一个 FP32 的
    log-sum-exp，不留 ``s x s`` 的分数；K、V 按 GQA 的宽度。``h`` 为模型宽度，``q``、``kv`` 为 query
    与 key（value）的总宽度，``F`` 为 MLP 宽度。

    ``"eager"``（Hugging Face 的 ``LlamaDecoderLayer``，逐个算子）：

    - 每个 RMSNorm ``8h + 4``：升到 FP32 的输入 ``4h`` （``pow`` 与乘法都留它），FP32 的
      ``1/rms`` 每个 token 4 字节，转回 BF16 的归一化结果 ``2h`` （乘权重时留），输出 ``2h``
      （后面的 linear 留它）；
    - attention ``4q + 4kv + 4 heads``：RoPE 之后的 q ``2q``、k ``2kv``，v ``2kv``，输出 ``2q``
      （``o_proj`` 的输入与它共用存储），log-sum-exp ``4 heads``；value 与 query 宽度不同时 v 与
      输出按 value 的宽度；
    - SwiGLU ``8F``：gate 的输出（SiLU 留）、SiLU 的输出与 up 的输出（乘法各留一个）、乘积
      （down 的输入），各 ``2F``。普通 MLP ``4F``。

    ``"fused"``（Megatron-Core 的 ``SwiGLUFunction`` 只留它的输入、backward 时重算 SiLU；
    Transformer Engine 的 RMSNorm 留 BF16 输入与 FP32 的 ``1/rms``）：

    - 每个 RMSNorm ``4h + 4``：输入 ``2h``、``1/rms``、输出 ``2h``；
    - attention 同上；
    - SwiGLU ``6F``：gate 与 up 拼在一起的输出 ``4F``，down 的输入 ``2F``。

    MLA（DeepSeek-V2/V3 的 ``DeepseekV3Attention``）：压缩后的 query（宽 ``q_lora_rank``）与
    latent（宽 ``kv_lora_rank``）各过一个 RMSNorm，按上面 RMSNorm 的写法计入 ``"norms"`` （它们的
    输出就是展开投影的输入）；attention 留展开后的 q（``heads x head_dim``）、k（同宽，RoPE 的
    一段复制到每个 head）、v 与输出（``heads x v_head_dim``）与 log-sum-exp，即 GQA 的公式取
    ``kv_heads = heads``。

    MoE 层（``"mlp"``）：每个 token 的 ``k`` 个 routed expert 与 shared expert 各按上面的 MLP 计；
    另有 router 的 FP32 分数 ``4E`` （``E`` 个 expert），送到 expert 的 ``k`` 份 token 副本
    ``2kh`` （expert 的第一个 linear 留它）；``"eager"`` 还留 ``k`` 个 expert 的输出 ``2kh``
    （乘路由权重时留）。

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
    layer = c.layers - 1 if layer is None else layer
    h = c.hidden
    a = bytes_per_element("bf16")

    def norm(width: int) -> int:
        return (a * width + _FP32 * width if saving == "eager" else a * width) + _FP32 + a * width

    norms = 2 * norm(h)
    if c.mla:
        norms += norm(c.kv_lora_rank or 0) + (norm(c.q_lora_rank) if c.q_lora_rank else 0)
        k, v = c.heads * c.d, c.heads * c.vd
    else:
        k, v = c.kv_dim, c.kv_heads * c.vd
    attention = a * (c.q_dim + k + v + c.o_dim) + _FP32 * c.heads
    if c.gated:
        per = (4 if saving == "eager" else 3) * a
    else:
        per = 2 * a
    if not c.moe_layer(layer):
        mlp = per * (c.dense_ffn or c.ffn)
    else:
        k_ = c.experts_per_token
        routed = per * c.ffn * k_ + a * h * k_ * (2 if saving == "eager" else 1)
        mlp = routed + per * c.ffn * c.shared_experts + _FP32 * c.experts
    return MappingProxyType({"norms": norms, "attention": attention, "mlp": mlp})


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
