"""Stderr never reaches a page (docs/_ext/roofline_stderr.py): a cell that writes to stderr,
shown or hidden, fails the build with the page, the cell and the first line it wrote."""

from __future__ import annotations

import pathlib
import subprocess

import nbformat.v4 as nbf
from sphinx_book import FRONT, build, conf, extension

stderr_lines = extension("roofline_stderr").stderr_lines

CONF = conf("roofline_stderr", nb_output_stderr="remove")

QUIET = "print(6 * 7)"
NOISY = 'import sys\nprint("\\ncareful: the font is missing\\nsecond line", file=sys.stderr)'
HIDDEN = ':tags: [remove-output]\nimport warnings\nwarnings.warn("a hidden warning")'


def _cells(*codes: str) -> str:
    return "".join(f"\n```{{code-cell}} ipython3\n{c}\n```\n" for c in codes)


def _build(book: pathlib.Path, pages: dict[str, str]) -> subprocess.CompletedProcess:
    (book / "conf.py").write_text(CONF)
    toc = "\n".join(pages)
    (book / "index.md").write_text(f"# Book\n\n```{{toctree}}\n{toc}\n```\n")
    for name, cells in pages.items():
        (book / f"{name}.md").write_text(f"{FRONT}\n# {name}\n{cells}")
    return build(book, "-q", out="_build/html")


def test_first_stderr_line_of_each_cell():
    nb = nbf.new_notebook(cells=[nbf.new_code_cell("a"), nbf.new_markdown_cell("b")])
    nb.cells.append(nbf.new_code_cell("c"))
    nb.cells[0].outputs = [nbf.new_output("stream", name="stdout", text="fine\n")]
    nb.cells[2].outputs = [
        nbf.new_output("stream", name="stderr", text="\n  first\nsecond\n"),
        nbf.new_output("stream", name="stderr", text="third\n"),
    ]
    assert stderr_lines(nb) == [(2, "first")]  # one line a cell; code cells counted


def test_a_cell_writing_to_stderr_fails_the_build(tmp_path):
    done = _build(tmp_path, {"a": _cells(QUIET, NOISY), "b": _cells(QUIET, HIDDEN)})
    assert done.returncode != 0
    assert "a.md, code cell 2: careful: the font is missing" in done.stderr
    assert "b.md, code cell 2: " in done.stderr and "a hidden warning" in done.stderr  # hidden
    assert "second line" not in done.stderr  # the first line only
    assert not (tmp_path / "_build" / "html" / "a.html").exists()  # no page shows it


def test_a_quiet_book_builds(tmp_path):
    done = _build(tmp_path, {"a": _cells(QUIET)})
    assert done.returncode == 0, done.stderr
    assert "42" in (tmp_path / "_build" / "html" / "a.html").read_text("utf-8")
