"""Optional dependencies: import one, or say in one line which extra to install.

The models need NumPy (and ``tabulate`` for text tables) only. Figures need
matplotlib, data frames pandas, measuring torch, reading run files jsonschema;
each comes with an extra of the package, named for what it enables.

Examples
--------
>>> EXTRAS["plot"]
('matplotlib',)
>>> require("math", "arithmetic").sqrt(4.0)
2.0
>>> require("no_such_module_here", "this")
Traceback (most recent call last):
...
roofline_book.extras.MissingExtra: this needs no_such_module_here, which is not installed
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS: dict[str, tuple[str, ...]] = {
    "plot": ("matplotlib",),
    "table": ("pandas",),
    "report": ("pandas", "matplotlib", "jsonschema"),
    "bench": ("torch", "tqdm", "jsonschema"),
}
"""Each extra of ``pip install 'roofline-book[EXTRA]'`` and the modules it brings;
``pyproject.toml`` declares the same (a test holds the two together)."""

_FOR_MODULE = {"matplotlib": "plot", "pandas": "table", "jsonschema": "report", "torch": "bench",
               "tqdm": "bench"}  # fmt: skip


class MissingExtra(ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""


def install_hint(module: str) -> str:
    """``pip install 'roofline-book[EXTRA]'`` for the extra that brings ``module`` (or "")."""
    extra = _FOR_MODULE.get(module.split(".")[0])
    return f"pip install 'roofline-book[{extra}]'" if extra else ""


def require(module: str, what: str) -> ModuleType:
    """Import ``module`` for ``what`` (e.g. ``"plot"``), or raise :class:`MissingExtra`.

    The message reads ``"<what> needs <module>: pip install 'roofline-book[<extra>]'"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        hint = install_hint(module)
        tail = f": {hint}" if hint else ", which is not installed"
        raise MissingExtra(f"{what} needs {module.split('.')[0]}{tail}") from None
