"""MLA（multi-head latent attention）的 attention kernel：query/key 与 value 宽度不同，value 可以
就是缓存的 key 行的一部分（DeepSeek 的 absorbed decode，FlashMLA）。

Examples
--------
>>> mla_attention(1, 128, 1, 4096, 576, 512, value_in_key=True, kv_heads=1).bytes_written
131072
"""

from __future__ import annotations

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, bytes_per_element, precision_name
from .attn import _causal_pairs, _kv_heads, attention_keys
from .cost import Cost
from .pointwise import SOFTMAX_FLOPS_PER_ELEMENT


def mla_attention(
    batch: int,
    heads: int,
    seq_q: int,
    seq_k: int,
    d_qk: int,
    d_v: int,
    dtype: Precision = "bf16",
    *,
    kv_heads: int | None = None,
    value_in_key: bool = False,
    kv_dtype: Precision | None = None,
    causal: bool = True,
) -> Cost:
    """query/key 宽 ``d_qk``、value 宽 ``d_v`` 的 attention kernel 的必需代价（一块装下全部 query，
    每个看到的 key 行读一次），用于 MLA（multi-head latent attention）。

    - **absorbed** （decode，FlashMLA）：``heads`` 个 query head 对同一份
      latent cache 做 attention，即 ``kv_heads=1``、
      ``d_qk = kv_lora_rank + rope_head_dim`` （576）、``d_v = kv_lora_rank``
      （512）；value 就是 key 行的前 ``d_v`` 列（``value_in_key=True``），
      所以每个 key 只读 ``d_qk`` 个元素。一个 key 一个 head 的 FLOPs 是
      ``2 (d_qk + d_v)``，BF16 cache 每个字节上的 FLOPs 约为
      ``heads x seq_q x (d_qk + d_v) / d_qk``：``heads x seq_q`` 越大越高。
    - **expanded** （prefill）：latent 先展开成每个 head 的 key（``d_qk``）与 value（``d_v``），
      ``kv_heads = heads``，与普通 attention 相同，只是 key 与 value 宽度不同。

    softmax 的指数按特殊函数单元计，其余按 FLOPs 计；不计 FP32 lane 的占用（这是任何 kernel 的
    下界，与 :func:`roofline_book.llm.layers.layer_ops` 的 serving attention 一致）。

    Examples
    --------
    DeepSeek-V3 一步 decode，一条序列，128 个 head 对 4096 个 key 的 latent cache：

    >>> c = mla_attention(1, 128, 1, 4096, 576, 512, value_in_key=True, kv_heads=1)
    >>> c.bytes_read == 2 * (4096 * 576 + 128 * 576)     # the cache once, and q
    True
    >>> round(c.intensity)       # 128 x (576 + 512) / 576 = 242, less q and the output
    229
    """
    batch = _validate.size("batch", batch)
    heads = _validate.size("heads", heads)
    seq_q = _validate.size("seq_q", seq_q)
    seq_k = _validate.size("seq_k", seq_k)
    d_qk = _validate.size("d_qk", d_qk)
    d_v = _validate.size("d_v", d_v)
    if not isinstance(causal, bool):
        raise InvalidArgumentType("causal", f"must be True or False, got {causal!r}")
    if not isinstance(value_in_key, bool):
        raise InvalidArgumentType("value_in_key", f"must be True or False, got {value_in_key!r}")
    kv = _kv_heads(heads, kv_heads)
    if value_in_key and d_v > d_qk:
        raise InvalidArgument("d_v", f"({d_v}) must be <= d_qk ({d_qk}) when value_in_key")
    s = bytes_per_element(dtype)
    s_kv = s if kv_dtype is None else bytes_per_element(precision_name(kv_dtype, "kv_dtype"))
    pairs = _causal_pairs(seq_q, seq_k) if causal else seq_q * seq_k
    seen = attention_keys(seq_q, seq_k)
    per_key = d_qk + (0 if value_in_key else d_v)
    bh = batch * heads
    softmax_vector = SOFTMAX_FLOPS_PER_ELEMENT - 1
    return Cost(
        flops=bh * pairs * (2 * d_qk + 2 * d_v + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=batch * (s * heads * seq_q * d_qk + s_kv * kv * seen * per_key),
        bytes_written=bh * s * d_v * seq_q,
        vector_flops=bh * pairs * softmax_vector,
        special_flops=bh * pairs,
    )
