"""Stderr never reaches a page: a cell that writes to stderr fails the build.

conf.py keeps every stderr output off the pages (``nb_output_stderr = "remove"``). This
extension reads each executed notebook's outputs (from the notebook cache, so a cell whose
outputs are hidden counts too) and logs an error for every cell that wrote to stderr, naming
the page, the cell and the first line it wrote; after reading, the build fails if any did.
A warning that is expected is silenced where it is raised, with the reason beside it.
"""

from __future__ import annotations

import pathlib
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import SphinxError
from sphinx.util import logging

logger = logging.getLogger(__name__)


class StderrError(SphinxError):
    category = "Cells wrote to stderr"


def stderr_lines(notebook: Any) -> list[tuple[int, str]]:
    """``(code cell number from 1, first line written)`` for each code cell that wrote to
    stderr; a page's code cells are numbered in order, as its ``{code-cell}`` blocks are.

    Examples
    --------
    >>> import nbformat.v4 as nbf
    >>> nb = nbf.new_notebook(cells=[nbf.new_markdown_cell("# A"), nbf.new_code_cell("1")])
    >>> nb.cells.append(nbf.new_code_cell("2"))
    >>> nb.cells[2].outputs = [nbf.new_output("stream", name="stderr", text="\nwarn: x\nmore")]
    >>> stderr_lines(nb)
    [(2, 'warn: x')]
    """
    found = []
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                text = output.get("text", "")
                lines = [line for line in text.splitlines() if line.strip()]
                found.append((number, lines[0].strip() if lines else repr(text)))
                break
    return found


def _executed(app: Sphinx, docname: str) -> Any | None:
    """The page's notebook with the outputs its execution left (None if not a notebook)."""
    import nbformat
    from jupyter_cache import get_cache

    config = app.env.mystnb_config  # type: ignore[attr-defined]
    executed = pathlib.Path(config.output_folder) / f"{docname}.ipynb"
    if not executed.is_file():
        return None
    notebook = nbformat.read(executed, as_version=4)
    if not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"):
        try:  # in cache mode the outputs live in the cache
            _, notebook = get_cache(config.execution_cache_path).merge_match_into_notebook(notebook)
        except KeyError:  # not in the cache (executed with nb_execution_mode=force)
            pass
    return notebook


def _check(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    docname = env.docname
    notebook = _executed(app, docname)
    found = stderr_lines(notebook) if notebook is not None else []
    records = _records(env)
    records.pop(docname, None)
    if found:
        source = pathlib.Path(env.doc2path(docname)).relative_to(app.confdir)
        records[docname] = [f"{source}, code cell {n}: {line}" for n, line in found]
        for message in records[docname]:
            logger.error("stderr in %s", message, location=docname)


def _records(env: BuildEnvironment) -> dict[str, list[str]]:
    if not hasattr(env, "roofline_stderr"):
        env.roofline_stderr = {}  # type: ignore[attr-defined]
    return env.roofline_stderr  # type: ignore[attr-defined]


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _records(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: Any) -> None:
    theirs = _records(other)
    _records(env).update({d: theirs[d] for d in docnames if d in theirs})


def _fail(app: Sphinx, env: BuildEnvironment) -> None:
    records = _records(env)
    if any(records.values()):
        listed = "\n".join(m for d in sorted(records) for m in records[d])
        raise StderrError(f"no page may show stderr; silence each at its source:\n{listed}")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", _check)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _fail)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
