"""计算器页面的表单：命令行的算子、参数、模型与设备，写进页面供 ``calculator.js`` 读取。

页面在构建时执行 :func:`form`，得到表单的说明（:func:`spec`，一段 JSON）；浏览器里的
``calculator.js`` 据此画出表单，再用 Pyodide 运行本包的命令行
（:mod:`roofline_book.cli.calculator`）。
算子与参数直接取自命令行的 :data:`~roofline_book.cli.operators.OPERATORS`，设备与模型取自
目录：命令行多一个算子或参数，表单也就多一项。
"""

from __future__ import annotations

import html
import json
from typing import Any

from .. import __version__
from ..cli.operators import OPERATORS
from ..devices.catalog import catalog
from ..dtypes import BYTES
from ..llm.config import models
from ..present.plotting.ceilings import RESOURCE_COLORS
from ..present.plotting.style import PALETTE, TEXTS

#: 每个算子参数在表单上的中文标签，按参数名索引（命令行的 ``--NAME``）。
ARG_LABELS = {
    "m": "m（A 与 C 的行数）",
    "k": "k（归约维度）",
    "n": "n（B 与 C 的列数）",
    "batch": "batch",
    "dtype": "精度",
    "out_dtype": "C 的精度",
    "numel": "每个张量的元素数",
    "inputs": "读取的张量数",
    "outputs": "写入的张量数",
    "flops_per_element": "每个元素的 FLOPs",
    "rows": "行数",
    "d": "归一化的特征数 d",
    "weight_dtype": "norm 的 weight（与 bias）的精度",
    "cols": "每行的元素数",
    "params": "参数个数",
    "impl": "实现",
    "tensors": "参数张量的个数",
    "param_dtype": "参数的精度",
    "grad_dtype": "梯度的精度",
    "state_dtype": "两个矩的精度",
    "model_dtype": "优化器另写的权重副本的精度",
    "heads": "head 数",
    "seq_q": "query 的序列长度",
    "seq_k": "key 的序列长度",
    "head_dim": "head dim",
    "causal": "causal mask",
    "sram_bytes": "一个 thread block 的片上存储（字节）",
    "tile": "输出 tile 的边长",
    "tokens": "token 数",
    "in_features": "输入特征数",
    "out_features": "输出特征数",
    "upcast": "中间结果用 FP32",
    "kv_heads": "KV head 数",
}

#: 必填尺寸在表单上的初始值（一个 Llama-2-7B 规模的例子），按参数名索引。
EXAMPLES = {
    "m": 4096,
    "k": 4096,
    "n": 4096,
    "numel": 4096 * 4096,
    "rows": 4096,
    "d": 4096,
    "cols": 4096,
    "params": 6_738_415_616,
    "batch": 1,
    "heads": 32,
    "seq_q": 4096,
    "head_dim": 128,
    "tile": 128,
    "tokens": 4096,
    "in_features": 4096,
    "out_features": 11008,
}

#: 每个算子在表单下拉框里的中文说明。
OPERATOR_LABELS = {
    "gemm": "矩阵乘法 C = A @ B",
    "add": "逐元素加法",
    "residual_add": "residual add",
    "relu": "ReLU",
    "gelu": "GELU（tanh 近似）",
    "swiglu": "SwiGLU 的门控激活",
    "elementwise": "通用的 elementwise kernel",
    "rmsnorm": "RMSNorm（融合为一个 kernel）",
    "layernorm": "LayerNorm",
    "softmax": "softmax（沿最后一维）",
    "adamw": "AdamW 的一步",
    "attention": "attention 前向",
    "attention_backward": "attention 反向",
    "tiled_gemm": "分块 GEMM（tile 之间不经 cache 共享）",
    "linear_backward": "线性层的反向（两个 GEMM）",
    "rmsnorm_eager": "RMSNorm（eager，每个运算一个 kernel）",
    "rope": "RoPE",
}

#: 模型推理表单的初始值。
DEFAULTS = {"device": "h100-sxm", "model": "llama-2-7b", "operator": "gemm"}
WEIGHT_FORMATS = ("bf16", "fp8", "int8", "int4")


def spec() -> dict[str, Any]:
    """表单的说明：算子及其参数、设备、模型、精度，以及图中各资源的颜色。

    Returns
    -------
    dict
        可直接写成 JSON 的对象。

    Raises
    ------
    KeyError
        命令行的某个算子或参数在这里没有中文标签。

    Examples
    --------
    >>> s = spec()
    >>> [a["flag"] for a in s["operators"][0]["args"]][:3]
    ['--m', '--k', '--n']
    >>> s["operators"][0]["args"][0]["required"], s["operators"][0]["args"][0]["example"]
    (True, 4096)
    """
    operators = []
    for key, operator in OPERATORS.items():
        args = []
        for arg in operator.args:
            required = operator.is_required(arg)
            default = None if required or arg.required is False else operator.default(arg.name)
            args.append(
                {
                    "name": arg.name,
                    "flag": arg.flag,
                    "kind": arg.kind,
                    "required": required,
                    "label": ARG_LABELS[arg.name],
                    "default": default,
                    "example": EXAMPLES.get(arg.name) if required else None,
                }
            )
        operators.append({"key": key, "label": OPERATOR_LABELS[key], "args": args})
    return {
        "version": __version__,
        "operators": operators,
        "devices": [{"key": k, "name": d.name} for k, d in catalog().items()],
        "models": [{"key": k, "name": m.name} for k, m in models().items()],
        "precisions": [*BYTES, "fp8"],
        "weight_formats": list(WEIGHT_FORMATS),
        "defaults": dict(DEFAULTS),
        "colors": dict(RESOURCE_COLORS),
        # the points' colour and legend, by what they are (cli.calculator.points' groups)
        "groups": {
            "op": [PALETTE["vermillion"], "算子"],
            "prefill": [PALETTE["orange"], "prefill 的算子"],
            "decode": [PALETTE["sky"], "decode 的算子"],
        },
        # the book's figures' axis titles, in Chinese
        "axes": {
            "x": TEXTS["zh"]["intensity axis"],
            "y": TEXTS["zh"]["attainable axis"].format(unit="FLOP/s"),
        },
    }


class Form:
    """计算器页面的表单：网页上是表单与它的说明；PDF 上是一句话。"""

    def __init__(self) -> None:
        self.spec = spec()

    def _repr_html_(self) -> str:
        data = json.dumps(self.spec, ensure_ascii=False).replace("</", "<\\/")
        version = html.escape(self.spec["version"])
        return (
            '<div id="roofline-calculator" class="roofline-calculator">'
            f'<p class="calc-status" role="status">正在载入计算器（roofline_book {version}，'
            "由 Pyodide 在浏览器中运行）……</p>"
            '<noscript><p class="calc-error">计算器需要启用 JavaScript。</p></noscript>'
            "</div>"
            f'<script type="application/json" id="roofline-calculator-spec">{data}</script>'
        )

    def _repr_markdown_(self) -> str:
        return "计算器在网页版中运行：它需要浏览器执行本包的代码，PDF 里无法交互。"

    def __repr__(self) -> str:
        return self._repr_markdown_()


def form() -> Form:
    """计算器页面的表单（在页面的代码单元中显示）。"""
    return Form()
