"""The book's notebook executor (docs/_ext/roofline_notebooks.py) on a two-page book:
it executes what the read would, the read then takes every page from the cache, and
a failing cell stops the build with its error."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest
from sphinx_book import FRONT, build, conf, extension

CONF = conf("roofline_notebooks", nb_execution_timeout=30)


def _page(title: str, code: str) -> str:
    return f"{FRONT}\n# {title}\n\n```{{code-cell}} ipython3\n{code}\n```\n"


def _book(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "conf.py").write_text(CONF)
    (tmp_path / "index.md").write_text("# Book\n\n```{toctree}\na\nb\n```\n")
    (tmp_path / "a.md").write_text(_page("A", "print(6 * 7)"))
    (tmp_path / "b.md").write_text(_page("B", "import time\ntime.sleep(0.2)\nprint('b')"))
    return tmp_path


def _build(book: pathlib.Path) -> subprocess.CompletedProcess:
    return build(book, "-j", "2")


def test_every_page_is_executed_once_and_read_from_the_cache(tmp_path):
    """Each page runs once, through myst-nb's client, so its execution options hold: a
    temporary folder as the kernel's cwd (nb_execution_in_temp) and a notebook's own
    ``execution: allow_errors``, each as myst-nb would honour them during the read; the read
    then takes every page from the cache, and a changed page alone runs again."""
    book = _book(tmp_path)
    with (book / "conf.py").open("a") as conf:
        conf.write("nb_execution_in_temp = True\nsuppress_warnings = ['mystnb.exec']\n")
    (book / "a.md").write_text(_page("A", "import os\nprint(6 * 7, 'cwd', os.getcwd())"))
    slow = "import time\ntime.sleep(0.2)\nprint('b')\n1 / 0"
    more = "\n```{code-cell} ipython3\nprint('ran on')\n```\n"
    (book / "b.md").write_text(_with_metadata(_page("B", slow), allow_errors=True) + more)
    first = _build(book)
    assert first.returncode == 0, first.stderr
    assert "executing 2 notebooks, 2 at a time" in first.stdout
    assert first.stdout.count(": executed in ") == 2
    assert "Executing notebook" not in first.stdout + first.stderr  # myst-nb ran none itself
    html = (book / "_build" / "a.html").read_text("utf-8")
    assert "42" in html
    (cwd,) = re.findall(r"cwd (\S+)", html)
    assert pathlib.Path(cwd) != book and not pathlib.Path(cwd).exists()  # a temporary folder
    b = (book / "_build" / "b.html").read_text("utf-8")
    assert "ZeroDivisionError" in b and "ran on" in b  # the error shown, the next cell run
    durations = json.loads((book / "_cache" / "roofline-durations.json").read_text())
    assert set(durations) == {"a.md", "b.md"}
    assert durations["b.md"] >= 0.2  # it slept that long

    (book / "a.md").write_text(_page("A", "print(6 * 9)"))
    second = _build(book)
    assert second.returncode == 0, second.stderr
    assert "executing 1 notebooks" in second.stdout
    assert "a: executed in " in second.stdout and "b: executed in " not in second.stdout
    assert "54" in (book / "_build" / "a.html").read_text("utf-8")


def _failed_build(tmp_path: pathlib.Path, code: str) -> tuple[pathlib.Path, str]:
    """A build whose page b runs ``code``, which must stop it: the book and stderr."""
    book = _book(tmp_path)
    (book / "b.md").write_text(_page("B", code))
    done = _build(book)
    assert done.returncode != 0
    return book, done.stderr


def test_a_failing_cell_stops_the_build_with_its_error(tmp_path):
    # longer than page a, so it is queued first
    book, stderr = _failed_build(tmp_path, "x = 1\nx / 0  # b fails")
    assert "b.md: executing the notebook failed" in stderr
    assert "ZeroDivisionError" in stderr
    assert not (book / "_build" / "b.html").exists()
    assert "x / 0" in stderr  # the failing line
    # the page that ran is kept: with b mended, only b runs again
    (book / "b.md").write_text(_page("B", "print('b')"))
    again = _build(book)
    assert again.returncode == 0, again.stderr
    assert "b: executed in " in again.stdout and "a: executed in " not in again.stdout


def test_a_page_never_run_is_guessed_from_what_slows_it(tmp_path):
    executor = extension("roofline_notebooks")
    config = type("Config", (), {"roofline_run_pages": ("measured.md",)})()
    app = type("App", (), {"srcdir": tmp_path, "config": config})()
    plain, torch_page, measured = (tmp_path / n for n in ("plain.md", "t.md", "measured.md"))
    guess = {}
    pages = ((plain, "import numpy"), (torch_page, "import torch"), (measured, "import numpy"))
    for path, code in pages:
        text = _page("T", code)  # the same length each
        guess[path.name] = executor._expected_seconds(app, path, text, {})
    assert guess["t.md"] == pytest.approx(guess["plain.md"] + 4.0)
    assert guess["measured.md"] == pytest.approx(guess["plain.md"] + 5.0)
    assert executor._expected_seconds(app, plain, "", {"plain.md": 1.5}) == 1.5  # remembered


def _with_metadata(page: str, **execution: object) -> str:
    """``page`` with its own ``execution:`` metadata in the front matter."""
    lines = "".join(f"  {key}: {str(value).lower()}\n" for key, value in execution.items())
    return page.replace("---\njupytext", f"---\nexecution:\n{lines}jupytext", 1)


def test_every_failing_page_is_reported_with_its_error(tmp_path):
    """A failing cell, a kernel that dies and a notebook past its own timeout: all three
    pages are named, each with its error, not only the first."""
    book = _book(tmp_path)
    (book / "index.md").write_text("# Book\n\n```{toctree}\na\nb\nc\n```\n")
    (book / "a.md").write_text(_page("A", "x = 1\nx / 0  # a fails"))
    (book / "b.md").write_text(_page("B", "import os\nos._exit(3)"))
    (book / "c.md").write_text(_with_metadata(_page("C", "import time\ntime.sleep(5)"), timeout=1))
    done = _build(book)
    assert done.returncode != 0
    assert "3 of 3 notebooks failed" in done.stderr
    assert "a.md: executing the notebook failed (CellExecutionError)" in done.stderr
    assert "ZeroDivisionError" in done.stderr and "x / 0" in done.stderr
    assert "b.md: executing the notebook failed (DeadKernelError)" in done.stderr
    # c's metadata asked for 1 s (the book's default is 30 s)
    assert "c.md: executing the notebook failed (CellTimeoutError)" in done.stderr


def _executor():
    return extension("roofline_notebooks")


def test_an_unsupported_myst_nb_is_refused_by_name(monkeypatch):
    executor = _executor()
    executor._check_versions()  # the installed versions are the supported ones
    versions = {"myst-nb": "1.5.0", "jupyter-cache": "1.0.1"}
    monkeypatch.setattr(executor, "version", versions.__getitem__)
    with pytest.raises(Exception, match=r"needs myst-nb>=1\.4,<1\.5 .*found 1\.5\.0"):
        executor._check_versions()


def test_a_kernel_that_never_answered_is_started_once_more(monkeypatch):
    """A kernel that died at start (a TCP port taken between jupyter-client's pick and the
    kernel's bind: seen in a fresh clone, where section 15's torch.distributed ran beside
    it) ran none of its page, so the page is run again, once; a failing cell is not."""
    import myst_nb.core.execute as execute

    executor = _executor()
    starts: list[str] = []

    def client(errors):
        class Client:
            exec_metadata: dict = {}

            def __init__(self, *args, **kwargs):
                starts.append("start")

            def __enter__(self):
                if errors:
                    raise errors.pop(0)
                return self

            def __exit__(self, *exc):
                return False

        return Client

    def job():
        return executor._Job("p", pathlib.Path("p.md"), None, None, 1.0)

    died = RuntimeError("Kernel didn't respond in 30 seconds")
    monkeypatch.setattr(execute, "NotebookClientCache", client([died]))
    ran = job()
    executor._execute_one(ran, None)
    assert ran.error is None and len(starts) == 2
    starts.clear()
    monkeypatch.setattr(execute, "NotebookClientCache", client([died, died]))
    twice = job()
    executor._execute_one(twice, None)
    assert twice.error is died and len(starts) == 2  # once more, not forever
    starts.clear()
    cell = RuntimeError("ZeroDivisionError in a cell")
    monkeypatch.setattr(execute, "NotebookClientCache", client([cell]))
    failed = job()
    executor._execute_one(failed, None)
    assert failed.error is cell and len(starts) == 1
