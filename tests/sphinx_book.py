"""A tiny Sphinx book in a temporary folder, for the tests of the book's extensions
(docs/_ext): the pages' MyST front matter, a conf.py that loads the extensions under test, a
build in a fresh interpreter, and the extension modules themselves."""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXT = ROOT / "docs" / "_ext"

#: The front matter that makes a Markdown page a MyST notebook.
FRONT = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
"""


def conf(*extensions: str, **settings: object) -> str:
    """A conf.py: myst-nb and ``extensions`` (from docs/_ext), the notebooks executed into a
    cache in the book's ``_cache`` folder, a failing cell failing the build; ``settings`` are
    further configuration values."""
    lines = [
        "import sys",
        f"sys.path.insert(0, {str(EXT)!r})",
        f"extensions = {['myst_nb', *extensions]!r}",
        'nb_execution_mode = "cache"',
        'nb_execution_cache_path = "_cache"',
        "nb_execution_raise_on_error = True",
        'exclude_patterns = ["_build", "_cache"]',
        *(f"{name} = {value!r}" for name, value in settings.items()),
    ]
    return "\n".join(lines) + "\n"


def build(book: pathlib.Path, *options: str, out: str = "_build") -> subprocess.CompletedProcess:
    """``sphinx-build -b html BOOK BOOK/OUT`` in a fresh interpreter, run in the book's folder."""
    command = [sys.executable, "-m", "sphinx", *options, "-b", "html", str(book), str(book / out)]
    return subprocess.run(command, capture_output=True, text=True, cwd=book, timeout=300)


def extension(name: str) -> ModuleType:
    """The book's extension module ``name`` (docs/_ext/NAME.py), imported."""
    sys.path.insert(0, str(EXT))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXT))
