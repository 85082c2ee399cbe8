"""上线语言模型的各种精度：权重格式，以及它们的 scale 与 zero point。

三种部署方式涵盖了单个 GPU 上运行的大多数情形：

- **只量化权重** （W8A16、W4A16）：权重以 int8、int4 或 FP8 存放，运行时展宽，按激活的 BF16
  相乘，所以 GEMM 按 BF16 峰值运行。GPTQ 与 AWQ 的 checkpoint 沿输入维度把整数权重按
  :data:`QUANT_GROUP` 个一组存放，每组一个 FP16 scale；非对称量化时（AWQ，``sym=False`` 的 GPTQ）
  每组再加一个与权重同宽的 zero point。对称量化不存 zero point。只量化权重的 FP8（vLLM 的
  Marlin kernel，没有 FP8 Tensor Core 的 GPU 上的退路）每个 channel 或每个 tensor 一个 scale。
- **W8A8 FP8** （vLLM 在 Hopper 与 Ada 上的 FP8）：linear 层的权重为 FP8 E4M3，每个 tensor 一个
  scale，它们的输入激活也量化为 FP8，乘法在 FP8 Tensor Core 上按 FP8 峰值进行。写作
  ``Precisions(weights="fp8", activations="fp8")``。
- **不量化** 的 BF16。

每个 tensor 或每个 channel 的 scale 每个矩阵只多几个字节，而不是每个权重多几个字节：不计入。
DeepSeek-V3 的 FP8 checkpoint 按 128 x 128 的权重块各存一个 FP32 scale（``weight_block=128``），
计入：每个权重多 4/16384 字节。
embedding 表、LM head 与 norm 保持 BF16，除非设置 ``quantize_embeddings``；vLLM 的 FP8
（不含 ``lm_head``）与 AWQ/GPTQ 的 checkpoint（默认不量化 ``lm_head``）都是这样保留它们的。

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

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import bytes_per_element, precision_name

#: tensor dtype 之外唯一的权重格式：4 位整数（每个权重半个字节）。
INT4 = "int4"

#: 整数格式每个量化分组的权重个数（GPTQ 与 AWQ 常用的分组大小）；每组保存一个 FP16 scale
#: （2 字节），非对称时再保存一个 zero point。
QUANT_GROUP = 128

#: 一个分组 scale 的字节数（FP16）。
SCALE_BYTES = 2

#: 一个权重块 scale 的字节数（FP32，DeepSeek-V3 的 ``weight_scale_inv``）。
BLOCK_SCALE_BYTES = 4

#: 权重量化不触及的部分（embedding 表、LM head 与 norm）的精度。
UNQUANTIZED = "bf16"


def _weight_format(name: object, field: str = "weights") -> str:
    if isinstance(name, str) and name.strip().lower() == INT4:
        return INT4
    try:
        return precision_name(name, field)  # type: ignore[arg-type]
    except InvalidArgument as exc:  # a weight may also be int4, which is no element type
        raise InvalidArgument(exc.name, f"{exc.detail}; weights may also be {INT4}") from None


def _bits(name: str) -> int:
    return 4 if name == INT4 else 8 * bytes_per_element(name)


@dataclass(frozen=True)
class Precisions:
    """一个上线模型的各种精度：权重、激活（以及计算）、KV cache。

    Parameters
    ----------
    weights : str
        linear 层权重的格式：一种 tensor dtype（``"bf16"``、``"fp8"``、``"int8"``）或 ``"int4"``。
    activations : str
        激活以及乘法的精度：权重 GEMM 在矩阵单元上按这个精度的峰值运行。``"fp8"`` 配上
        ``weights="fp8"`` 即 W8A8。这时整步都按 FP8 计：vLLM 保持为 BF16 的 norm、residual 与
        attention 得到的字节数比实际少、峰值比实际高，所以这一步的下界只会偏低，差的是它们那几 MB 激
        活。
    kv : str
        KV cache 的精度。
    zero_point : bool
        整数权重按非对称量化：每组一个与权重同宽的 zero point（AWQ；``sym=False`` 的 GPTQ）。
        默认为对称量化。
    quantize_embeddings : bool
        embedding 表与 LM head 也按权重的格式存放（默认它们保持 :data:`UNQUANTIZED`，即 BF16，
        norm 也是）。
    weight_block : int, optional
        权重按 ``weight_block x weight_block`` 的块各存一个 FP32 scale（DeepSeek-V3 的 FP8：128）。
        None：每个 tensor 或每个 channel 一个 scale，或按分组（整数格式）。
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv: str = "bf16"
    zero_point: bool = False
    quantize_embeddings: bool = False
    weight_block: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", _weight_format(self.weights))
        if self.weight_block is not None:
            _validate.size("weight_block", self.weight_block)
            if not self.quantized:
                raise InvalidArgument("weight_block", "needs quantized weights (fp8, int8, int4)")
        object.__setattr__(self, "activations", precision_name(self.activations, "activations"))
        object.__setattr__(self, "kv", precision_name(self.kv, "kv"))
        for flag in ("zero_point", "quantize_embeddings"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidArgumentType(
                    flag, f"must be True or False, got {getattr(self, flag)!r}"
                )

    @property
    def quantized(self) -> bool:
        """权重窄于 16 位（int8、int4、FP8）。"""
        return _bits(self.weights) < 16

    @property
    def grouped(self) -> bool:
        """权重是否是比激活窄的整数，按 GPTQ/AWQ 的方式分组。"""
        integer = self.weights == INT4 or self.weights.startswith("int")
        return self.quantized and integer and _bits(self.weights) < _bits(self.activations)

    @property
    def scheme(self) -> str:
        """``"W<bits>A<bits>"``：权重与激活的位宽，例如 ``"W4A16"``、``"W8A8"``。"""
        return f"W{_bits(self.weights)}A{_bits(self.activations)}"

    def per_weight(self) -> float:
        """一个 linear 层权重所占的字节数，含它分摊的 scale 与 zero point（byte）。

        Examples
        --------
        >>> Precisions(weights="int4").per_weight()      # 0.5 + 2/128
        0.515625
        >>> Precisions(weights="int4", zero_point=True).per_weight()   # + 0.5/128: AWQ
        0.51953125
        >>> Precisions(weights="fp8").per_weight()       # per-channel scales: not counted
        1.0
        >>> Precisions(weights="fp8", weight_block=128).per_weight()   # + 4 / (128 x 128)
        1.000244140625
        """
        per = 0.5 if self.weights == INT4 else float(bytes_per_element(self.weights))
        if self.weight_block is not None:
            return per + BLOCK_SCALE_BYTES / self.weight_block**2
        if not self.grouped:
            return per
        return per + (SCALE_BYTES + (per if self.zero_point else 0)) / QUANT_GROUP

    def weight_bytes(self, count: int) -> int:
        """``count`` 个 linear 层权重的字节数，含分组 scale 与 zero point（byte）。

        按 :data:`QUANT_GROUP` 个一整组计；最后不满的一组仍保存它的 scale；向上取整到整字节。
        """
        count = _validate.size("count", count, minimum=0)
        per = 0.5 if self.weights == INT4 else bytes_per_element(self.weights)
        if self.weight_block is not None:
            blocks = math.ceil(count / self.weight_block**2)
            return math.ceil(per * count + blocks * BLOCK_SCALE_BYTES)
        if not self.grouped:
            return math.ceil(per * count)
        groups = math.ceil(count / QUANT_GROUP)
        zero = per if self.zero_point else 0
        return math.ceil(per * count + groups * (SCALE_BYTES + zero))

    @property
    def table_precision(self) -> str:
        """embedding 表、LM head 与 norm 的精度。"""
        if self.quantized and not self.quantize_embeddings:
            return UNQUANTIZED
        return self.weights

    def table_bytes(self, count: int) -> int:
        """``count`` 个 embedding、LM head 或 norm 权重的字节数（byte）。"""
        if self.table_precision == self.weights:
            return self.weight_bytes(count)
        return bytes_per_element(self.table_precision) * _validate.size("count", count, minimum=0)
