"""可选依赖：导入一个，或用一行说明该装哪个 extra。

模型是纯 Python（命令行的文本表格还要 ``tabulate``），没有 NumPy 也能导入和运行；只有把数组
传给 :func:`~roofline_book.roofline.roofs.attainable` 这类函数时才需要 NumPy。作图需要 matplotlib，
DataFrame 需要 pandas，测量需要 torch，读 run file 需要 jsonschema，图上的中文需要
Noto Sans CJK SC 字体（``noto_cjk_sans_otc``）；每项都有包的一个 extra，按它启用的功能命名，
需要 NumPy 的 extra 都带上它。

Examples
--------
>>> EXTRAS["plot"]
('numpy', 'matplotlib')
>>> require("math", "arithmetic").sqrt(4.0)
2.0
>>> require("no_such_module_here", "this")
Traceback (most recent call last):
...
roofline_book._base.extras.MissingExtra: this needs no_such_module_here, which is not installed
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS: dict[str, tuple[str, ...]] = {
    "plot": ("numpy", "matplotlib"),
    "table": ("numpy", "pandas"),
    "report": ("numpy", "pandas", "matplotlib", "jsonschema"),
    "bench": ("numpy", "torch", "tqdm", "jsonschema"),
    "zh": ("numpy", "matplotlib", "noto_cjk_sans_otc"),
}
"""``pip install 'roofline-book[EXTRA]'`` 的每个 extra 及其带来的模块；``pyproject.toml`` 声明的
与此相同（有测试保证两者一致）。
"""

_FOR_MODULE = {"matplotlib": "plot", "pandas": "table", "jsonschema": "report", "torch": "bench",
               "tqdm": "bench", "noto_cjk_sans_otc": "zh"}  # fmt: skip


class MissingExtra(ImportError):
    """缺少一个可选依赖；错误信息写明装哪个 extra 能补上。"""


def install_hint(module: str) -> str:
    """带来 ``module`` 的那个 extra 的 ``pip install 'roofline-book[EXTRA]'`` （没有时为 ""）。"""
    extra = _FOR_MODULE.get(module.split(".")[0])
    return f"pip install 'roofline-book[{extra}]'" if extra else ""


def require(module: str, what: str) -> ModuleType:
    """为 ``what`` （例如 ``"plot"``）导入 ``module``，否则抛出 :class:`MissingExtra`。

    错误信息为 ``"<what> needs <module>: pip install 'roofline-book[<extra>]'"``。
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        hint = install_hint(module)
        tail = f": {hint}" if hint else ", which is not installed"
        raise MissingExtra(f"{what} needs {module.split('.')[0]}{tail}") from None
