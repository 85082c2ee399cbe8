"""Precisions of a served language model: weight formats, their scales and zero points.

Three deployments cover most of what runs on one GPU:

- **weight-only** (W8A16, W4A16): weights stored in int8, int4 or FP8, widened
  on the fly and multiplied in the activations' BF16, so the GEMMs run at the
  BF16 peak. GPTQ and AWQ checkpoints store integer weights in groups of
  :data:`QUANT_GROUP` along the input dimension, each group with one FP16 scale
  and, when quantized asymmetrically (AWQ, GPTQ with ``sym=False``), one zero
  point of the weights' own width. Symmetric quantization stores no zero point.
  FP8 weight-only (vLLM's Marlin kernel, the fallback on GPUs without FP8
  Tensor Cores) keeps one scale per channel or per tensor.
- **W8A8 FP8** (vLLM's FP8 on Hopper and Ada): the linear layers' weights in
  FP8 E4M3 with a per-tensor scale, their input activations quantized to FP8
  as well, and the product on the FP8 Tensor Cores at the FP8 peak. Write it
  ``Precisions(weights="fp8", activations="fp8")``.
- **unquantized** BF16.

Per-tensor and per-channel scales add a few bytes per matrix, not per weight:
they are not counted. The embedding table, the LM head and the norms stay in
BF16 unless ``quantize_embeddings`` is set, as vLLM's FP8 (``lm_head``
excluded) and AWQ/GPTQ checkpoints (``lm_head`` unquantized by default) keep them.

Examples
--------
>>> Precisions(weights="int4").weight_bytes(128)             # 64 B of weights, a 2-byte scale
66
>>> Precisions(weights="int4", zero_point=True).weight_bytes(256)   # and a 4-bit zero point
133
>>> Precisions(weights="fp8", activations="fp8").scheme
'W8A8'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _validate
from .dtypes import bytes_per_element, precision_name

#: The one weight format beyond the tensor dtypes, 4-bit integers (half a byte per weight).
INT4 = "int4"

#: Weights per quantization group of the integer formats (GPTQ and AWQ's usual group size);
#: each group stores one FP16 scale (2 bytes) and, if asymmetric, one zero point.
QUANT_GROUP = 128

#: Bytes of one group scale (FP16).
SCALE_BYTES = 2

#: The precision of what weight quantization leaves alone (the embedding table, the LM
#: head and the norms).
UNQUANTIZED = "bf16"


def _weight_format(name: object) -> str:
    if isinstance(name, str) and name.strip().lower() == INT4:
        return INT4
    return precision_name(name)  # type: ignore[arg-type]


def _bits(name: str) -> int:
    return 4 if name == INT4 else 8 * bytes_per_element(name)


@dataclass(frozen=True)
class Precisions:
    """Precisions of a served model: weights, activations (and the compute), the KV cache.

    Parameters
    ----------
    weights : str
        Format of the linear layers' weights: a tensor dtype (``"bf16"``,
        ``"fp8"``, ``"int8"``) or ``"int4"``.
    activations : str
        Precision of the activations, and of the products: the weight GEMMs
        run on the matrix units at this precision's peak. ``"fp8"`` with
        ``weights="fp8"`` is W8A8. The whole step is then held to FP8: the
        norms, residuals and attention, which vLLM keeps in BF16, get fewer
        bytes and a higher peak than they have, so the step's bound can only
        be lower, by their few megabytes of activations.
    kv : str
        Precision of the KV cache.
    zero_point : bool
        Integer weights quantized asymmetrically: one zero point per group,
        of the weights' width (AWQ; GPTQ with ``sym=False``). Default symmetric.
    quantize_embeddings : bool
        Store the embedding table and the LM head in the weights' format too
        (default: they stay in :data:`UNQUANTIZED`, BF16, as do the norms).
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv: str = "bf16"
    zero_point: bool = False
    quantize_embeddings: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", _weight_format(self.weights))
        object.__setattr__(self, "activations", precision_name(self.activations))
        object.__setattr__(self, "kv", precision_name(self.kv))
        for flag in ("zero_point", "quantize_embeddings"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")

    @property
    def quantized(self) -> bool:
        """Weights narrower than 16 bits (int8, int4, FP8)."""
        return _bits(self.weights) < 16

    @property
    def grouped(self) -> bool:
        """Whether the weights are integers narrower than the activations, in GPTQ/AWQ groups."""
        integer = self.weights == INT4 or self.weights.startswith("int")
        return self.quantized and integer and _bits(self.weights) < _bits(self.activations)

    @property
    def scheme(self) -> str:
        """``"W<bits>A<bits>"``: weight and activation widths, e.g. ``"W4A16"``, ``"W8A8"``."""
        return f"W{_bits(self.weights)}A{_bits(self.activations)}"

    def per_weight(self) -> float:
        """Bytes one linear-layer weight takes, with its share of scales and zero points (byte).

        Examples
        --------
        >>> Precisions(weights="int4").per_weight()      # 0.5 + 2/128
        0.515625
        >>> Precisions(weights="int4", zero_point=True).per_weight()   # + 0.5/128: AWQ
        0.51953125
        >>> Precisions(weights="fp8").per_weight()       # per-channel scales: not counted
        1.0
        """
        per = 0.5 if self.weights == INT4 else float(bytes_per_element(self.weights))
        if not self.grouped:
            return per
        return per + (SCALE_BYTES + (per if self.zero_point else 0)) / QUANT_GROUP

    def weight_bytes(self, count: int) -> int:
        """Bytes of ``count`` linear-layer weights, group scales and zero points included (byte).

        Whole groups of :data:`QUANT_GROUP`; a partial last group still stores its scale;
        rounded up to whole bytes.
        """
        count = _validate.size("count", count, minimum=0)
        per = 0.5 if self.weights == INT4 else bytes_per_element(self.weights)
        if not self.grouped:
            return math.ceil(per * count)
        groups = math.ceil(count / QUANT_GROUP)
        zero = per if self.zero_point else 0
        return math.ceil(per * count + groups * (SCALE_BYTES + zero))

    @property
    def table_precision(self) -> str:
        """Precision of the embedding table, the LM head and the norms."""
        if self.quantized and not self.quantize_embeddings:
            return UNQUANTIZED
        return self.weights

    def table_bytes(self, count: int) -> int:
        """Bytes of ``count`` embedding, LM-head or norm weights (byte)."""
        if self.table_precision == self.weights:
            return self.weight_bytes(count)
        return bytes_per_element(self.table_precision) * _validate.size("count", count, minimum=0)
