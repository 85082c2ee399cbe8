"""Code a page shows runs as printed.

A reader copies a page's visible cells, in order, into a fresh Python. Each page
under docs/chapters and docs/appendix is read as myst-nb reads it
(:func:`myst_nb.core.read.read_myst_markdown_notebook`); every ``{code-cell}`` not
tagged ``remove-cell`` or ``remove-input`` (the cells the page shows) is executed,
in order, in one plain ``python`` process: no hidden cell runs first, no IPython
(``%magic``, ``!shell`` and a bare ``display`` fail here as they fail for that
reader), the page's folder as working directory, the repository on ``PYTHONPATH``,
matplotlib on ``Agg`` and no ``$ROOFLINE_CPU_RUN`` (the build sets it; a reader
does not), so a page finds the CPU run with :func:`roofline_book.book.cpu_run`.

Pages whose shown code reads the CPU run need a built book (the run is
``_build/bench/cpu-quick.json``) and are marked ``site``. Pages run two at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BUILD, ROOT
from myst_nb.core.read import read_myst_markdown_notebook

DOCS = ROOT / "docs"
#: Tags that keep a cell's code off the page (myst-nb's).
HIDDEN = frozenset({"remove-cell", "remove-input"})
#: The call a shown cell makes to read the build's CPU run.
READS_RUN = "cpu_run("
#: Seconds a page may take (the build's nb_execution_timeout).
TIMEOUT_S = 300

# Executes the cells it reads from stdin (JSON) in one __main__ module; on the first
# error, writes {"cell": i, "error": ...} as the last line of stderr and exits 1.
_RUNNER = """
import json, sys, traceback, types
cells = json.load(sys.stdin)
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
for i, (name, source) in enumerate(cells):
    try:
        exec(compile(source, name, "exec"), main.__dict__)
    except BaseException as exc:
        sys.stderr.write(traceback.format_exc())
        kind = type(exc).__name__
        sys.stderr.write("\\n" + json.dumps({"cell": i, "error": f"{kind}: {exc}"}) + "\\n")
        sys.exit(1)
"""


@dataclass(frozen=True)
class Cell:
    """A shown code cell: its source and the line of its opening fence in the page (1-based)."""

    source: str
    line: int

    @property
    def first_line(self) -> str:
        return next((s for s in self.source.splitlines() if s.strip()), "")


def shown_cells(page: Path) -> list[Cell]:
    """The code cells ``page`` shows, in order, as myst-nb reads them."""
    nb = read_myst_markdown_notebook(page.read_text("utf-8"), add_source_map=True)
    lines = nb.metadata.get("source_map", [])
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or HIDDEN & set(cell.metadata.get("tags", [])):
            continue
        cells.append(Cell(cell.source, lines[i] if i < len(lines) else 0))
    return cells


def _pages() -> list[Path]:
    pages = sorted([*(DOCS / "chapters").glob("*.md"), *(DOCS / "appendix").glob("*.md")])
    return [p for p in pages if shown_cells(p)]


PAGES = _pages()


def _reads_run(page: Path) -> bool:
    return any(READS_RUN in c.source for c in shown_cells(page))


def _param(page: Path) -> object:
    marks = [pytest.mark.site] if _reads_run(page) else []
    return pytest.param(page, id=str(page.relative_to(DOCS)), marks=marks)


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stderr: str


def run_page(page: Path) -> Outcome:
    """Execute the cells ``page`` shows in a fresh interpreter, as a reader would."""
    cells = shown_cells(page)
    env = {k: v for k, v in os.environ.items() if k not in ("ROOFLINE_CPU_RUN", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    if BUILD != ROOT / "_build":  # the run is not where a reader's checkout keeps it
        env["ROOFLINE_CPU_RUN"] = str(BUILD / "bench" / "cpu-quick.json")
    named = [(f"{page.name}, line {c.line}", c.source) for c in cells]
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RUNNER],
            input=json.dumps(named),
            capture_output=True,
            text=True,
            cwd=page.parent,
            env=env,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return Outcome(-1, f"timed out after {TIMEOUT_S} s")
    return Outcome(done.returncode, done.stderr)


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest) -> dict[Path, Outcome]:
    """Every selected page's outcome, two pages at a time."""
    chosen = {
        item.callspec.params.get("page")
        for item in request.session.items
        if isinstance(item, pytest.Function) and hasattr(item, "callspec")
    }
    selected = [page for page in PAGES if page in chosen]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(selected, pool.map(run_page, selected), strict=True))


@pytest.mark.parametrize("page", [_param(p) for p in PAGES])
def test_shown_cells_run_in_order(page: Path, outcomes: dict[Path, Outcome]) -> None:
    if _reads_run(page) and not (BUILD / "bench" / "cpu-quick.json").exists():
        pytest.fail(f"{BUILD}/bench/cpu-quick.json is missing: build the book first (make html)")
    outcome = outcomes[page]
    if outcome.returncode == 0:
        return
    cells = shown_cells(page)
    where = "the interpreter"
    last = outcome.stderr.strip().splitlines()[-1] if outcome.stderr.strip() else ""
    try:
        failed = json.loads(last)
        cell = cells[failed["cell"]]
        where = f"the shown cell at line {cell.line} ({cell.first_line!r})"
        error = failed["error"]
    except (ValueError, KeyError, IndexError, TypeError):
        error = f"exit status {outcome.returncode}"
    pytest.fail(
        f"{page.relative_to(ROOT)}: {where} raised {error} when the page's shown cells run "
        f"in order in a fresh Python\n{outcome.stderr[-3000:]}",
        pytrace=False,
    )


def test_shown_cells_skip_hidden_ones_and_read_tags_as_myst_nb_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\nhidden = 1\n```\n"
        "```{code-cell} ipython3\n---\ntags: [remove-input]\n---\nalso_hidden = 2\n```\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\nshown = 3\n```\n"
        "```{code-cell} ipython3\nuses = hidden\n```\n",
        "utf-8",
    )
    cells = shown_cells(page)
    assert [c.first_line for c in cells] == ["shown = 3", "uses = hidden"]
    assert [c.line for c in cells] == [16, 20]  # the fences' lines in the page
    outcome = run_page(page)
    assert outcome.returncode == 1
    assert "NameError: name 'hidden' is not defined" in outcome.stderr


def test_ipython_syntax_fails_as_it_does_in_plain_python(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n"
        "```{code-cell} ipython3\n%time x = 1\n```\n",
        "utf-8",
    )
    assert "SyntaxError" in run_page(page).stderr
