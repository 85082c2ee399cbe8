"""The operators of one Transformer decoder block, as a table of costs on a device.

The block is the Llama-style pre-norm block: RMSNorm, a fused QKV projection,
attention, the output projection and a residual add; then RMSNorm, the gate
and up projections of a SwiGLU MLP, the gated activation, the down
projection and a second residual add. Forward pass only. The optimizer step
over the block's parameters is a separate table, since it runs once per
training step, not once per forward pass.

Examples
--------
>>> from roofline_book.hardware import hardware
>>> rows = block_table(LLAMA2_7B, hardware("h100-sxm"))
>>> [r.name for r in rows][:4]
['attention norm (RMSNorm)', 'QKV projection', 'attention (flash)', 'output projection']
>>> round(sum(r.share for r in rows), 6)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _validate
from .dtypes import Precision, precision_name
from .hardware import Hardware
from .ops import (
    ADAMW_IMPLS,
    DEFAULT_SRAM_BYTES,
    Cost,
    adamw,
    attention,
    gemm,
    residual_add,
    rmsnorm,
    swiglu,
)
from .roofline import Row as Row  # re-exported: Row and table_frame lived here first
from .roofline import cost_table
from .roofline import table_frame as table_frame


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
    config: DecoderConfig, *, attention_impl: str = "flash", sram_bytes: int = DEFAULT_SRAM_BYTES
) -> list[tuple[str, Cost]]:
    """The forward operators of one block, in execution order, with their costs.

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
    )
    return [
        ("attention norm (RMSNorm)", rmsnorm(t, h, s)),
        ("QKV projection", gemm(t, h, 3 * h, s)),
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


def block_table(
    config: DecoderConfig,
    device: Hardware,
    *,
    attention_impl: str = "flash",
    sram_bytes: int = DEFAULT_SRAM_BYTES,
) -> list[Row]:
    """The block's forward operators on ``device``, each with bound, time lower bound and share.

    The compute roof is the device's dense peak in ``config.dtype``.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> rows = {r.name: r for r in block_table(LLAMA2_7B, hardware("h100-sxm"))}
    >>> rows["MLP up projection"].bound, rows["residual add"].bound
    ('compute', 'memory')
    """
    return cost_table(
        block_ops(config, attention_impl=attention_impl, sram_bytes=sram_bytes),
        device,
        config.dtype,
    )


def optimizer_table(
    config: DecoderConfig,
    device: Hardware,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
) -> list[Row]:
    """One AdamW step over the block's parameters, in each implementation, on ``device``.

    The block's weights are 7 tensors (5 projections, 2 norm weights). The
    compute roof is the device's peak in ``param_dtype``; the share column
    compares the three implementations with each other.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> rows = optimizer_table(LLAMA2_7B, hardware("h100-sxm"), grad_dtype="bf16")
    >>> [r.name for r in rows], {r.bound for r in rows}
    (['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)'], {'memory'})
    """
    if not isinstance(config, DecoderConfig):
        raise TypeError(f"config must be a DecoderConfig, got {type(config).__name__}")
    named = [
        (
            f"AdamW ({impl})",
            adamw(
                config.parameters,
                impl,
                tensors=7,
                param_dtype=param_dtype,
                grad_dtype=grad_dtype,
                state_dtype=state_dtype,
            ),
        )
        for impl in ADAMW_IMPLS
    ]
    return cost_table(named, device, param_dtype)
