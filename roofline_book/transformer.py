"""The operators of one Transformer decoder block, and the optimizer step over its weights.

The block is the Llama-style pre-norm block: RMSNorm, a fused QKV projection,
the rotary embedding of Q and K (RoPE), attention, the output projection and a
residual add; then RMSNorm, the gate and up projections of a SwiGLU MLP, the
gated activation, the down projection and a second residual add. Forward pass
only. The optimizer step over the block's parameters is a separate list, since
it runs once per training step, not once per forward pass. On a device, these become tables
(:func:`roofline_book.tables.block_table`, :func:`roofline_book.tables.optimizer_table`).

Examples
--------
>>> [name for name, _ in block_ops(LLAMA2_7B)][:4]
['attention norm (RMSNorm)', 'QKV projection', 'rotary embedding (RoPE)', 'attention (flash)']
>>> [name for name, _ in optimizer_ops(LLAMA2_7B)]
['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)']
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _validate
from .dtypes import Precision, precision_name
from .ops import (
    ADAMW_IMPLS,
    DEFAULT_SRAM_BYTES,
    Cost,
    FlashTile,
    adamw,
    attention,
    gemm,
    residual_add,
    rmsnorm,
    rope,
    swiglu,
)


@dataclass(frozen=True)
class DecoderConfig:
    """Sizes of one decoder block and of the batch it processes.

    Parameters
    ----------
    batch, seq : int
        Sequences and tokens per sequence.
    hidden : int
        Model width ``d_model``; must be divisible by ``heads``.
    heads : int
        Attention heads.
    ffn : int
        Width of the MLP's hidden layer.
    dtype : str
        Precision of weights and activations.
    causal : bool
        Causal self-attention (a decoder's default).
    """

    batch: int
    seq: int
    hidden: int
    heads: int
    ffn: int
    dtype: str = "bf16"
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("batch", "seq", "hidden", "heads", "ffn"):
            _validate.size(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        object.__setattr__(self, "dtype", precision_name(self.dtype))
        if not isinstance(self.causal, bool):
            raise TypeError(f"causal must be True or False, got {self.causal!r}")

    @property
    def tokens(self) -> int:
        """Rows of every activation, ``batch * seq``."""
        return self.batch * self.seq

    @property
    def head_dim(self) -> int:
        """Width of one head, ``hidden / heads``."""
        return self.hidden // self.heads

    @property
    def parameters(self) -> int:
        """Weights of the block (QKV, output, gate, up, down projections, two norm weights).

        Examples
        --------
        >>> LLAMA2_7B.parameters             # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        h, f = self.hidden, self.ffn
        return 4 * h * h + 3 * h * f + 2 * h


#: A Llama-2-7B block at sequence length 4096, batch 1, BF16.
LLAMA2_7B = DecoderConfig(batch=1, seq=4096, hidden=4096, heads=32, ffn=11008)


def block_ops(
    config: DecoderConfig,
    *,
    attention_impl: str = "flash",
    sram_bytes: int = DEFAULT_SRAM_BYTES,
    tile: FlashTile | None = None,
) -> list[tuple[str, Cost]]:
    """The forward operators of one block, in execution order, with their costs.

    Each operator is its own kernel. RoPE is a row of its own, as Hugging
    Face's eager code runs it; fused kernels often apply it in the QKV
    projection's epilogue or inside the attention kernel, which removes its
    traffic (one more read and write of Q and K) but not its FLOPs.
    ``sram_bytes`` and ``tile`` go to the flash kernel
    (:func:`roofline_book.ops.attention`).

    Examples
    --------
    The projections' FLOPs add up to 2 x tokens x weights:

    >>> ops = dict(block_ops(LLAMA2_7B))
    >>> gemms = [c for name, c in ops.items() if "projection" in name]
    >>> sum(c.flops for c in gemms) == 2 * 4096 * (4 * 4096**2 + 3 * 4096 * 11008)
    True
    """
    if not isinstance(config, DecoderConfig):
        raise TypeError(f"config must be a DecoderConfig, got {type(config).__name__}")
    t, h, f, s = config.tokens, config.hidden, config.ffn, config.dtype
    attn = attention(
        config.batch,
        config.heads,
        config.seq,
        config.seq,
        config.head_dim,
        s,
        impl=attention_impl,
        causal=config.causal,
        sram_bytes=sram_bytes,
        tile=tile,
    )
    return [
        ("attention norm (RMSNorm)", rmsnorm(t, h, s)),
        ("QKV projection", gemm(t, h, 3 * h, s)),
        ("rotary embedding (RoPE)", rope(t, config.heads, config.head_dim, s)),
        (f"attention ({attention_impl.strip().lower()})", attn),
        ("output projection", gemm(t, h, h, s)),
        ("residual add", residual_add(t * h, s)),
        ("MLP norm (RMSNorm)", rmsnorm(t, h, s)),
        ("MLP gate projection", gemm(t, h, f, s)),
        ("MLP up projection", gemm(t, h, f, s)),
        ("activation (SwiGLU)", swiglu(t * f, s)),
        ("MLP down projection", gemm(t, f, h, s)),
        ("residual add (MLP)", residual_add(t * h, s)),
    ]


def optimizer_ops(
    config: DecoderConfig,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
) -> list[tuple[str, Cost]]:
    """One AdamW step over the block's parameters, in each implementation, with its cost.

    The block's weights are 7 tensors (5 projections, 2 norm weights).

    Examples
    --------
    The three implementations do the same FLOPs:

    >>> len({c.flops for _, c in optimizer_ops(LLAMA2_7B)})
    1
    """
    if not isinstance(config, DecoderConfig):
        raise TypeError(f"config must be a DecoderConfig, got {type(config).__name__}")
    return [
        (
            f"AdamW ({impl})",
            adamw(
                config.parameters,
                impl,
                tensors=7,
                param_dtype=param_dtype,
                grad_dtype=grad_dtype,
                state_dtype=state_dtype,
                model_dtype=model_dtype,
            ),
        )
        for impl in ADAMW_IMPLS
    ]
