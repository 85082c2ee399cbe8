"""计算器页面的表单：命令行的算子、参数、模型与设备，写进页面供 ``calculator.js`` 读取。

页面在构建时执行 :func:`form`，得到表单的说明（:func:`spec`，一段 JSON）；浏览器里的
``calculator.js`` 据此画出表单，再用 Pyodide 运行本包的命令行
（:mod:`roofline_book.cli.calculator`）。
算子与参数取自算子登记表 :data:`~roofline_book.ops.registry.REGISTRY`（中文标签与示例值也在
那里），设备与模型取自目录：登记表多一个算子或参数，表单也就多一项。
"""

from __future__ import annotations

import html
import json
from typing import Any

from .. import __version__
from ..devices.catalog import catalog
from ..dtypes import BYTES
from ..llm.config import models
from ..ops.registry import REGISTRY
from ..present.plotting.ceilings import RESOURCE_COLORS
from ..present.plotting.style import PALETTE, TEXTS
from ..serving.simulate import SCHEDULERS

#: 模型推理表单的初始值。
DEFAULTS = {"device": "h100-sxm", "model": "llama-2-7b", "operator": "gemm"}
WEIGHT_FORMATS = ("bf16", "fp8", "int8", "int4")


def spec() -> dict[str, Any]:
    """表单的说明：算子及其参数、设备、模型、精度，以及图中各资源的颜色。

    Returns
    -------
    dict
        可直接写成 JSON 的对象。

    Examples
    --------
    >>> s = spec()
    >>> [a["flag"] for a in s["operators"][0]["args"]][:3]
    ['--m', '--k', '--n']
    >>> s["operators"][0]["args"][0]["required"], s["operators"][0]["args"][0]["example"]
    (True, 4096)
    """
    operators = []
    for key, operator in REGISTRY.items():
        args = [
            {
                "name": arg.name,
                "flag": arg.flag,
                "kind": arg.kind,
                "required": arg.required,
                "label": arg.label,
                "default": arg.default,
                "example": arg.example if arg.required else None,
            }
            for arg in operator.params
        ]
        operators.append({"key": key, "label": operator.label, "args": args})
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
        # the serving form: its schedulers, and the lines of its Pareto curve
        "schedulers": list(SCHEDULERS),
        "serve_lines": {
            "ttft": [PALETTE["vermillion"], "p90 TTFT"],
            "tpot": [PALETTE["blue"], "p90 TPOT"],
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
