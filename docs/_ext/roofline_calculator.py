"""The calculator page's files: the package itself, run in the reader's browser by Pyodide.

Everything the page loads is served from the site (``_static/calculator/``), with no
request outside its origin:

- ``pyodide/``: the Pyodide core, which ``make pyodide`` copies from the npm package (its
  ``package.json`` too, which names the version: the page does not load it);
- ``wheels/deps/``: the base install's pure-Python dependencies, which ``make pyodide``
  downloads from PyPI at the versions requirements.txt pins;
- ``wheels/roofline_book-VERSION-py3-none-any.whl``: the package's own wheel, built here
  (``builder-inited``) from a copy of its sources whenever their digest changes, so the page
  always runs the code the chapters ran;
- ``manifest.json``: the wheels to install, in order, with their sizes, and the versions.

The role ``{calculator}`op gemm --m 4096 --k 4096 --n 4096``` links the page with that
command line prefilled (``calculator.html?cmd=...``); in the PDF it is the command itself.

``html-page-context`` adds ``calculator.js`` and ``calculator.css`` to the calculator page
only: no other page loads a byte of it.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from typing import Any

from docutils import nodes
from roofline_build import package_digest
from sphinx.application import Sphinx
from sphinx.errors import ConfigError
from sphinx.util import logging

logger = logging.getLogger(__name__)

PAGE = "calculator"  # the page (docs/calculator.md) that loads the script
SCRIPT = "calculator.js"  # in docs/_static, with its style sheet
STYLE = "calculator.css"
#: What the page loads of the Pyodide npm package (the Makefile's PYODIDE_FILES).
PYODIDE_FILES = (
    "pyodide.js",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
#: The sources a wheel is built from, beside the package folder.
_PROJECT_FILES = ("pyproject.toml", "README.md")


def _folder(app: Sphinx) -> pathlib.Path:
    return pathlib.Path(app.config.roofline_calculator) / "calculator"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _requirements(wheel: pathlib.Path) -> list[str]:
    """The wheel's required distributions (``Requires-Dist`` with no extra), normalized."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(archive.read(meta).decode("utf-8"))
    names = []
    for line in message.get_all("Requires-Dist") or []:
        if "extra ==" in line:
            continue
        names.append(_normalize(re.split(r"[\s;<>=!~\[(]", line.strip(), maxsplit=1)[0]))
    return names


def _build_wheel(root: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """Build the package's wheel from a copy of its sources (a build inside the tree would
    reuse setuptools' ``build/`` folder, which keeps files the sources no longer have)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp) / "src"
        shutil.copytree(
            root / "roofline_book",
            source / "roofline_book",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        for name in _PROJECT_FILES:
            shutil.copy2(root / name, source / name)
        built = pathlib.Path(tmp) / "wheel"
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
            + ["--no-build-isolation", "--no-index", "--wheel-dir", str(built), str(source)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        (wheel,) = built.glob("roofline_book-*.whl")
        for old in out.glob("roofline_book-*.whl"):
            old.unlink()
        out.mkdir(parents=True, exist_ok=True)
        return pathlib.Path(shutil.copy2(wheel, out / wheel.name))


def _prepare(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    root = pathlib.Path(app.config.roofline_root)
    folder = _folder(app)
    missing = [
        f for f in (*PYODIDE_FILES, "package.json") if not (folder / "pyodide" / f).is_file()
    ]
    deps = folder / "wheels" / "deps"
    if missing or not deps.is_dir():
        raise ConfigError(
            f"{folder} lacks the calculator's Pyodide files or dependency wheels "
            f"({', '.join(missing) or 'wheels/deps'}): run `make html` (or `make pyodide`)"
        )
    wheels = folder / "wheels"
    stamp = folder.parent.parent / "calculator-wheel.sha256"  # not a static file
    digest = package_digest(root / "roofline_book")
    for name in _PROJECT_FILES:
        digest += hashlib.sha256((root / name).read_bytes()).hexdigest()
    built = sorted(wheels.glob("roofline_book-*.whl"))
    if len(built) != 1 or not stamp.is_file() or stamp.read_text().strip() != digest:
        logger.info("building the package's wheel for the calculator page ...")
        try:
            wheel = _build_wheel(root, wheels)
        except subprocess.CalledProcessError as exc:
            raise ConfigError(
                f"the package's wheel did not build:\n{exc.stderr.decode()}"
            ) from None
        stamp.write_text(digest + "\n")
    else:
        wheel = built[0]
    available = {_normalize(w.name.split("-")[0]): w for w in deps.glob("*.whl")}
    needed = _requirements(wheel)
    absent = [n for n in needed if n not in available]
    if absent:
        raise ConfigError(
            f"the package requires {', '.join(absent)}, which {deps} has no wheel of: add it "
            "to the Makefile's CALCULATOR_DEPS (a pure-Python wheel) and run `make pyodide`"
        )
    order = [available[n] for n in needed] + [wheel]
    npm = json.loads((folder / "pyodide" / "package.json").read_text("utf-8"))
    manifest = {
        "roofline_book": wheel.name.split("-")[1],
        "pyodide": npm["version"],
        "wheels": [
            {"path": w.relative_to(folder).as_posix(), "bytes": w.stat().st_size} for w in order
        ],
        "pyodide_files": [
            {"path": f"pyodide/{f}", "bytes": (folder / "pyodide" / f).stat().st_size}
            for f in PYODIDE_FILES
        ],
    }
    text = json.dumps(manifest, indent=1) + "\n"
    target = folder / "manifest.json"
    if not target.is_file() or target.read_text("utf-8") != text:
        target.write_text(text, "utf-8")


def calculator_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{calculator}`COMMAND```: the command line, linked to the calculator page with it
    prefilled. ``COMMAND`` is what follows ``roofline-book`` (``op ...``, ``infer ...`` or
    ``serve ...``: the commands the page has a form for)."""
    command = " ".join(text.split())
    if command.split(" ", 1)[0] not in ("op", "infer", "serve"):
        message = inliner.reporter.error(
            f"calculator: the command must start with op, infer or serve, got {command!r}",
            line=lineno,
        )
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    shown = nodes.literal(rawtext, f"roofline-book {command}")
    env = inliner.document.settings.env
    if env.app.builder.format != "html":
        return [shown], []
    uri = env.app.builder.get_relative_uri(env.docname, PAGE)
    query = urllib.parse.urlencode({"cmd": command}, quote_via=urllib.parse.quote)
    link = nodes.reference(rawtext, "", shown, refuri=f"{uri}?{query}", internal=True)
    link["classes"].append("calc-link")
    return [link], []


def _add_script(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    if pagename == PAGE:
        app.add_js_file(SCRIPT, loading_method="defer")
        app.add_css_file(STYLE)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("roofline_calculator", "", "env", str)
    app.add_role("calculator", calculator_role)
    app.connect("builder-inited", _prepare)
    app.connect("html-page-context", _add_script)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
